// `shardscope redistribute`: the plan that turns one layout into another.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/mesh_options.h"
#include "cli/option_checks.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::cli {
namespace {

struct RedistributeOptions {
  MeshOptions mesh;
  std::string from, to;
  std::vector<int64_t> to_mesh;
  std::vector<std::string> to_axes;
  int64_t element_bytes = 4;
  bool json = false;
};

int RunRedistribute(const RedistributeOptions& o) {
  auto mesh = o.mesh.MakeMesh();
  if (!mesh.ok()) return Fail(kExitBadInput, mesh.status().message());
  auto tensor = o.mesh.TensorShape(o.element_bytes);
  if (!tensor.ok()) return Fail(kExitBadInput, tensor.status().message());
  const Shape& shape = *tensor;
  auto from = ParseLayoutOption("--from", o.from, *mesh, shape);
  if (!from.ok()) return Fail(kExitBadInput, from.status().message());
  DeviceMesh target_mesh = *mesh;
  if (!o.to_mesh.empty()) {
    MeshOptions t;
    t.mesh = o.to_mesh;
    t.axes = o.to_axes;
    auto m = t.MakeMesh();
    if (!m.ok()) return Fail(kExitBadInput, m.status().WithContext("--to-mesh").message());
    target_mesh = *m;
  }
  auto to = ParseLayoutOption("--to", o.to, target_mesh, shape);
  if (!to.ok()) return Fail(kExitBadInput, to.status().message());
  RedistOptions options;
  options.element_bytes = o.element_bytes;
  auto plan = PlanRedistribution(*from, *to, CostModel{}, options);
  if (!plan.ok()) return Fail(kExitBadInput, plan.status().message());
  std::fputs((o.json ? plan->ToJson() + "\n" : plan->ToString()).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddRedistributeCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<RedistributeOptions>();
  CLI::App* app = root.add_subcommand(
      "redistribute",
      "Plan the collectives that turn a tensor from one layout into another, with the bytes\n"
      "each step moves, the total against the lower bound, and why each step exists.\n"
      "\n"
      "Example (seed 002): shardscope redistribute --mesh 4 --axes dp --shape 8,8 --from dp,- --to "
      "-,-\n"
      "Layouts as for `shardscope layout`; partial sums as |P(axis). --to-mesh/--to-axes give\n"
      "the target its own mesh over the same ranks (e.g. another operator's device matrix).");
  o->mesh.Add(app);
  app->add_option("--from", o->from, "Source layout, e.g. \"dp,-|P(mp)\"")->required();
  app->add_option("--to", o->to, "Target layout, e.g. \"-,(dp,mp)\"")->required();
  app->add_option("--to-mesh", o->to_mesh, "Target mesh shape (default: --mesh)")->delimiter(',');
  app->add_option("--to-axes", o->to_axes, "Target mesh axis names")->delimiter(',');
  app->add_option("--element-bytes", o->element_bytes, "Bytes per element (default 4)")
      ->check(AtLeast(1));
  app->add_flag("--json", o->json, "Print JSON instead of text");
  commands.push_back({app, [o] { return RunRedistribute(*o); }});
}

}  // namespace shardscope::cli
