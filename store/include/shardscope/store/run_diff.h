// What differs between two runs (`shardscope diff A B`, the GUI's Compare view): operators
// whose strategy differs (matched by name), redistributions added, removed or changed
// (matched by tensor, consumer and input; changed: other layouts, steps or bytes), and the
// loss and step-time figures of each (store/figures.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/store/reader.h"
#include "shardscope/store/status.h"

namespace shardscope::store {

struct RunSideSummary {
  std::string name, path, mode, search, status;
  int64_t devices = 0, operators = 0, redistributions = 0, steps = 0;
  double first_loss = kMissing, last_loss = kMissing, min_loss = kMissing;
  double mean_step_seconds = kMissing;  // over the steps (FiguresOf), missing without steps
  double mean_compute_seconds = kMissing, mean_comm_seconds = kMissing;
  int64_t bytes_per_step = 0;              // planned received bytes of the busiest rank
  std::vector<double> loss, step_seconds;  // per recorded step, for overlaid curves
  std::vector<int64_t> step_numbers;
};

struct StrategyDiff {
  std::string op;    // operator name
  std::string a, b;  // strategy in each run ("" when the operator is missing there)
};

struct RedistributionDiff {
  enum class Change { kAdded, kRemoved, kChanged };
  Change change = Change::kChanged;
  std::string tensor, consumer;  // names ("" for none)
  int64_t consumer_input = kNone;
  bool is_backward = false;
  // The redistribution in one run (id kNone where it is absent).
  struct Side {
    int64_t id = kNone;
    std::string from, to, steps;  // layouts; steps: "all-gather, all-to-all"
    int64_t bytes = 0;            // planned max bytes received
  };
  Side a, b;
};
const char* ChangeName(RedistributionDiff::Change change);  // "added", "removed", "changed"

struct RunDiff {
  RunSideSummary a, b;
  std::vector<StrategyDiff> strategies;
  std::vector<RedistributionDiff> redistributions;
  int64_t same_redistributions = 0;
};

Result<RunDiff> DiffRuns(const RunReader& a, const RunReader& b);
// Text with the runs' names as column headers; ends with a newline.
std::string FormatRunDiff(const RunDiff& diff);
// One JSON object (indented 2); missing numbers are null.
std::string RunDiffJson(const RunDiff& diff);

}  // namespace shardscope::store
