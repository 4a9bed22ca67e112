// A run file summarised as text or JSON: what `shardscope inspect RUN [--json]` prints.
//
// Both hold the same things: the file and its schema version, the run (status, times,
// mode, search, devices, versions, config), the meshes, every operator's strategy with its
// provenance, cost and runners-up, every redistribution with its bytes against the lower
// bound, the loss table (steps and evaluations), the per-rank figures summed over the
// steps, and the last events.
#pragma once

#include <cstdint>
#include <string>

#include "shardscope/store/reader.h"
#include "shardscope/store/status.h"

namespace shardscope::store {

struct SummaryOptions {
  // Row limits for the text form (< 0: all). The JSON form always has every row, except
  // `max_events` (the newest are kept).
  int64_t max_operators = -1;
  int64_t max_redistributions = -1;
  int64_t max_steps = 40;  // loss table rows; beyond it, evenly spaced steps and the last one
  int64_t max_events = 20;
  int max_candidates = 3;  // runners-up shown per operator in the text form
};

// Human-readable, aligned columns, ends with a newline.
Result<std::string> FormatRunSummary(const RunReader& reader, const SummaryOptions& options = {});
// One JSON object (indented 2); NaN losses are null.
Result<std::string> RunSummaryJson(const RunReader& reader, const SummaryOptions& options = {});

}  // namespace shardscope::store
