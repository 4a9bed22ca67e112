// Uses the installed Shardscope through its public headers only: plans one redistribution and
// searches the strategies of a model file. Prints what it found; exits 1 on any failure.
#include <cstdio>
#include <string>

#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/model_file.h"
#include "shardscope/redistribution/redistribution.h"
#include "shardscope/search.h"

namespace ss = shardscope;

int Fail(const std::string& what, const ss::Status& status) {
  std::fprintf(stderr, "consumer: %s: %s\n", what.c_str(), status.message().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer MODEL.yaml\n");
    return 2;
  }
  // Rows split over dp to columns split over mp on a 2x2 mesh: an all-to-all's worth of data.
  auto mesh = ss::DeviceMesh::Create({2, 2}, {"dp", "mp"});
  if (!mesh.ok()) return Fail("mesh", mesh.status());
  auto from = ss::ParseLayoutSpec("dp,-", *mesh, {8, 8});
  auto to = ss::ParseLayoutSpec("-,mp", *mesh, {8, 8});
  if (!from.ok() || !to.ok()) return Fail("layout", from.ok() ? to.status() : from.status());
  auto plan = ss::PlanRedistribution(*from, *to, ss::CostModel{});
  if (!plan.ok()) return Fail("redistribution", plan.status());
  std::printf("redistribution %s -> %s: %zu steps, %lld bytes received by the busiest rank\n",
              from->ToString().c_str(), to->ToString().c_str(), plan->steps.size(),
              static_cast<long long>(plan->planned_bytes));

  auto model = ss::LoadModelFile(argv[1], ss::ModelLoadOptions{.weights = false});
  if (!model.ok()) return Fail(argv[1], model.status());
  auto graph = model->Build(32);
  if (!graph.ok()) return Fail("build", graph.status());
  ss::SearchOptions options;
  options.mode = ss::SearchMode::kDynamicProgramming;
  options.devices = 8;
  auto searched = ss::SearchStrategies(graph->graph, options);
  if (!searched.ok()) return Fail("search", searched.status());
  std::printf("searched %s on %d devices (%s): %zu operators, predicted step %.3g s\n",
              model->name().c_str(), searched->devices, ss::SearchModeName(searched->mode),
              searched->operators.size(), searched->step_seconds);
  for (const ss::OperatorChoice& c : searched->operators)
    std::printf("  %-20s %s\n", c.name.c_str(), c.strategy.c_str());
  return 0;
}
