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

store::Result<Scene> BuildRedistributionFrame(const RunData& run,
                                              const store::RedistributionRecord& redistribution,
                                              int step);

}  // namespace shardscope::viewer
