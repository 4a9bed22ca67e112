// `shardscope inspect RUN`: what a run file holds, as text or JSON.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "shardscope/store/display_text.h"
#include "shardscope/store/rank_summary.h"
#include "shardscope/store/reader.h"
#include "shardscope/store/summary.h"
#include "shardscope/store/writer.h"

namespace shardscope::cli {
namespace {

struct InspectOptions {
  std::string run;
  bool json = false;
  int64_t steps = 40;
  int64_t rank = -1;
  int64_t step = -1;  // with --rank: the timed step shown (-1: the last)
};

int RunInspect(const InspectOptions& o) {
  // A finished run that a reader kept in WAL mode past its end becomes one file again; best
  // effort (a read-only directory, or a connection still open, leaves it as it is).
  (void)store::SettleRunFile(o.run);
  if (o.step >= 0 && o.rank < 0) {
    std::fprintf(stderr, "shardscope inspect: --step needs --rank (the timed step of one rank)\n");
    return kExitBadInput;
  }
  auto reader = store::RunReader::Open(o.run);
  if (!reader.ok()) return FailStore(reader.status());
  store::SummaryOptions options;
  options.max_steps = o.steps;
  auto text = o.rank >= 0 ? store::FormatRankSummary(**reader, o.rank, o.json,
                                                     o.step >= 0 ? o.step : store::kNone)
              : o.json    ? store::RunSummaryJson(**reader, options)
                          : store::FormatRunSummary(**reader, options);
  if (!text.ok()) return FailStore(text.status());
  // The summary escapes what it takes from the file; this pass guards every other line.
  const std::string shown = store::EscapeControls(*text, {.keep_newlines = true});
  std::fputs(shown.c_str(), stdout);
  if (!shown.empty() && shown.back() != '\n') std::fputc('\n', stdout);
  return kExitOk;
}

}  // namespace

void AddInspectCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* app = root.add_subcommand(
      "inspect",
      "Show what a run file holds: the run's settings and status, meshes, each operator's\n"
      "strategy and why, every redistribution with its bytes against the lower bound, the\n"
      "loss table and per-rank figures. Works on a run that is still being written.\n"
      "\n"
      "Example: shardscope inspect runs/lenet5-20261122-101500.db\n"
      "The file is SQLite: docs/run-format.md shows how to query it with sqlite3.\n"
      "Names from the file are printed with control characters escaped (\\u001b).\n"
      "Exit codes: 0 ok; 2 missing, not a run file, damaged or written by a newer version;\n"
      "1 other failures.");
  app->add_option("run", o->run, "Run file (runs/*.db)")->required();
  app->add_flag("--json", o->json, "Print JSON instead of text");
  app->add_option("--steps", o->steps, "Rows of the loss table (text; < 0: all)");
  app->add_option("--rank", o->rank,
                  "Only what rank (worker) R holds and does: memory by kind, its parameters\n"
                  "with their layouts, traffic, and its timed instructions (train\n"
                  "--timing-every): compute against communication, the slowest ones")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--step", o->step,
                  "With --rank: the timed step S whose instructions are shown (default: the\n"
                  "last timed one; train --timing-every N times every Nth step)")
      ->check(CLI::NonNegativeNumber);
  commands.push_back({app, [o] { return RunInspect(*o); }});
}

}  // namespace shardscope::cli
