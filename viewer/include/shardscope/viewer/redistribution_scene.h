// Redistribution frames: one picture per step of a redistribution plan.
//
// Frame k shows the tensor map before step k and after it (each on the mesh recorded with its
// step; blocks whose holders changed outlined), who exchanges what (the first rank groups of
// the collective, or transfers of an irregular step: "r0 → r2 [0:2, 4:8]"), the bytes of the step
// and the running total against the lower bound. A plan without steps has one frame that says the
// buffer is shared. Errors: a step out of range, layouts that do not parse (named).
#pragma once

#include "shardscope/store/status.h"
#include "shardscope/viewer/run_document.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

// Number of frames of `redistribution`: its steps, at least 1.
int FrameCount(const store::RedistributionRecord& redistribution);

struct FrameOptions {
  // Arrows into this rank's block only; -1: every moved block when few (at most
  // kMaxFrameArrows), else the first moved block's, the others "alike".
  int rank = -1;
};
inline constexpr int kMaxFrameArrows = 16;
// Sender bands drawn at most besides the arrows' (each moved block drawn has one; the
// stepper animates every band piece).
inline constexpr int kMaxFramePieces = 1024;

// Movement: arrows (role "move", id = block after) from each block before to the blocks after
// that take its elements; blocks coloured by their data (which elements of the tensor), a band
// in each moved block drawn coloured by the rank each piece came from (role "source", id = that
// rank, key = "B>A": its block before B and block after A, linear indices);
// "Σ" (role "sum") where partial sums are summed.
store::Result<Scene> BuildRedistributionFrame(const RunData& run,
                                              const store::RedistributionRecord& redistribution,
                                              int step, const FrameOptions& options = {});

}  // namespace shardscope::viewer
