// The figures every reader shows (inspect, the viewer's charts, the GUI's compare), each
// computed here once, as docs/run-format.md ("Figures") defines them.
#pragma once

#include <vector>

#include "shardscope/store/records.h"

namespace shardscope::store {

// acc += v, saturating at the int64 limits: sums over a damaged file may hold anything.
void AddSaturating(int64_t& acc, int64_t v);

struct StepFigures {
  double seconds = 0;          // wall time of the step on its slowest rank (step.seconds)
  double compute_seconds = 0;  // max over ranks
  double comm_seconds = 0;     // max over ranks: never above `seconds`
  int64_t bytes_recv = 0;      // max over ranks: collectives and sends between workers
  int64_t bytes_sent = 0;      // max over ranks
};
StepFigures FiguresOf(const StepRecord& step);

// The bytes the busiest rank receives per training step by plan: every redistribution step's
// per-rank bytes plus the send/receive pairs into it (placed runs). `devices`: the run's.
int64_t PlannedRecvBytesPerStep(int64_t devices,
                                const std::vector<RedistributionRecord>& redistributions,
                                const std::vector<SendRecvRecord>& send_recvs);

}  // namespace shardscope::store
