// Internal: `train --json`, the run's summary as one JSON object on stdout (the console's
// lines go to stderr meanwhile). Rank 0 of the run fills it as training goes: the settings
// (from the run's RunInfo), each epoch's mean loss, the result and the per-rank figures, then
// the ending (status, exit code, run file).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardscope/store/records.h"

namespace shardscope::cli {

// Starts a report for this process's `train` (when `wanted`); the other calls do nothing
// unless one was started. While a report is wanted, stdout is redirected to stderr.
void BeginTrainReport(bool wanted);
// The run's settings, as the run file gets them.
void ReportRunInfo(const store::RunInfo& info);
void ReportEpoch(int64_t epoch, double mean_loss);
// The evaluation after training: `steps` steps in `seconds`, the mean step time.
void ReportResult(int64_t steps, double seconds, double step_seconds, double accuracy,
                  int64_t test_examples);
// Per-rank figures: `all` holds `names.size()` figures per rank, rank after rank, each
// divided by `per` (steps) when its name ends in "_per_step".
void ReportRanks(const std::string& word, const std::vector<std::string>& names,
                 const std::vector<float>& all, double per);
void ReportEnding(const std::string& status, const std::string& message,
                  const std::string& run_file);
// Restores stdout and, on the rank that reported the run's settings, prints the report with
// the exit code; returns `code`.
int EndTrainReport(int code);

}  // namespace shardscope::cli
