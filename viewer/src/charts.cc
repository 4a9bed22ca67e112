#include "shardscope/viewer/charts.h"

#include <algorithm>

namespace shardscope::viewer {

ChartsData BuildChartsData(const RunData& run) {
  ChartsData data;
  for (const auto& s : run.steps) {
    data.step.push_back(static_cast<double>(s.step));
    data.loss.push_back(s.loss);
    double compute = 0, comm = 0, bytes = 0;
    for (const auto& r : s.ranks) {
      compute = std::max(compute, r.compute_seconds * 1e3);
      comm = std::max(comm, r.comm_seconds * 1e3);
      bytes += static_cast<double>(r.bytes_sent + r.bytes_recv);
    }
    data.compute_ms.push_back(compute);
    data.comm_ms.push_back(comm);
    data.bytes.push_back(bytes);
  }
  for (const auto& t : run.rank_totals) {
    if (t.rank < 0) continue;
    data.peak_bytes_by_rank.emplace_back(t.rank, static_cast<double>(t.peak_bytes));
  }
  return data;
}

}  // namespace shardscope::viewer
