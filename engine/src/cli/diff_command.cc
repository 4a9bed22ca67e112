// `shardscope diff A B`: what differs between two runs (store/run_diff.h), as text or JSON.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "shardscope/store/reader.h"
#include "shardscope/store/run_diff.h"

namespace shardscope::cli {
namespace {

struct DiffOptions {
  std::string a, b;
  bool json = false;
};

int RunDiffCommand(const DiffOptions& o) {
  auto a = store::RunReader::Open(o.a);
  if (!a.ok()) return FailStore(a.status());
  auto b = store::RunReader::Open(o.b);
  if (!b.ok()) return FailStore(b.status());
  auto diff = store::DiffRuns(**a, **b);
  if (!diff.ok()) return FailStore(diff.status());
  const std::string text = o.json ? store::RunDiffJson(*diff) : store::FormatRunDiff(*diff);
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddDiffCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* app = root.add_subcommand(
      "diff",
      "Compare two runs: their settings, loss and step time (mean over the steps: the\n"
      "slowest rank's wall time, compute and communication), the operators whose strategy\n"
      "differs (by name), and every redistribution added, removed or changed (matched by\n"
      "tensor, consumer and input; changed: other layouts, collectives or bytes).\n"
      "\n"
      "Example: shardscope diff runs/ffn-dp.db runs/ffn-searched.db\n"
      "Exit codes: 0 ok (also when the runs differ); 2 a file is missing or not a run file.");
  app->add_option("a", o->a, "First run file (column A)")->required();
  app->add_option("b", o->b, "Second run file (column B)")->required();
  app->add_flag("--json", o->json, "Print JSON instead of text");
  commands.push_back({app, [o] { return RunDiffCommand(*o); }});
}

}  // namespace shardscope::cli
