// Chart series of a run's training steps, as plain data (the GUI draws them with QtCharts).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "shardscope/viewer/run_document.h"

namespace shardscope::viewer {

struct ChartsData {
  std::vector<double> step;        // x for the per-step series
  std::vector<double> loss;        // NaN where missing
  std::vector<double> step_ms;     // the slowest rank's wall time of the step
  std::vector<double> compute_ms;  // max over ranks
  std::vector<double> comm_ms;     // max over ranks
  std::vector<double> bytes;       // received by the busiest rank (store::FiguresOf)
  // (rank, max over steps) by rank; sparse, as a damaged file may hold rank 2^60.
  std::vector<std::pair<int64_t, double>> peak_bytes_by_rank;
};

ChartsData BuildChartsData(const RunData& run);

}  // namespace shardscope::viewer
