#include "shardscope/viewer/charts.h"

#include <algorithm>

#include "shardscope/store/figures.h"

namespace shardscope::viewer {

ChartsData BuildChartsData(const RunData& run) {
  ChartsData data;
  for (const auto& s : run.steps) {
    data.step.push_back(static_cast<double>(s.step));
    data.loss.push_back(s.loss);
    const store::StepFigures f = store::FiguresOf(s);
    data.step_ms.push_back(f.seconds * 1e3);
    data.compute_ms.push_back(f.compute_seconds * 1e3);
    data.comm_ms.push_back(f.comm_seconds * 1e3);
    data.bytes.push_back(static_cast<double>(f.bytes_recv));
  }
  for (const auto& t : run.rank_totals) {
    if (t.rank < 0) continue;
    data.peak_bytes_by_rank.emplace_back(t.rank, static_cast<double>(t.peak_bytes));
  }
  return data;
}

}  // namespace shardscope::viewer
