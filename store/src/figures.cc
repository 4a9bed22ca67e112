#include "shardscope/store/figures.h"

#include <algorithm>

namespace shardscope::store {
void AddSaturating(int64_t& acc, int64_t v) {
  if (v > 0 && acc > INT64_MAX - v) {
    acc = INT64_MAX;
  } else if (v < 0 && acc < INT64_MIN - v) {
    acc = INT64_MIN;
  } else {
    acc += v;
  }
}

StepFigures FiguresOf(const StepRecord& step) {
  StepFigures f;
  f.seconds = step.seconds;
  for (const RankStepRecord& r : step.ranks) {
    f.compute_seconds = std::max(f.compute_seconds, r.compute_seconds);
    f.comm_seconds = std::max(f.comm_seconds, r.comm_seconds);
    f.bytes_recv = std::max(f.bytes_recv, r.bytes_recv);
    f.bytes_sent = std::max(f.bytes_sent, r.bytes_sent);
  }
  return f;
}

int64_t PlannedRecvBytesPerStep(int64_t devices,
                                const std::vector<RedistributionRecord>& redistributions,
                                const std::vector<SendRecvRecord>& send_recvs) {
  // A bounded table: ranks beyond it (a damaged file) count in its last entry.
  const size_t n = static_cast<size_t>(std::clamp<int64_t>(devices, 1, int64_t{1} << 24));
  std::vector<int64_t> per_rank(n, 0);
  const auto at = [&](int64_t rank) -> int64_t& {
    return per_rank[static_cast<size_t>(std::clamp<int64_t>(rank, 0, static_cast<int64_t>(n) - 1))];
  };
  for (const RedistributionRecord& r : redistributions) {
    for (const RedistStepRecord& s : r.steps) {
      if (s.bytes_recv.empty()) {  // no per-rank figures: the maximum on every rank
        for (int64_t& b : per_rank) AddSaturating(b, s.bytes_recv_max);
        continue;
      }
      for (size_t k = 0; k < s.bytes_recv.size(); ++k)
        AddSaturating(at(static_cast<int64_t>(k)), s.bytes_recv[k]);
    }
  }
  for (const SendRecvRecord& p : send_recvs) AddSaturating(at(p.dst_rank), p.bytes);
  return *std::max_element(per_rank.begin(), per_rank.end());
}

}  // namespace shardscope::store
