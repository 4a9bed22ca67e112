// Charts of a run's steps as Scenes, for `shardscope render --view loss|steptime|memory`:
// loss per step; step time per step (the slowest rank's wall time) with its compute and
// communication (max over ranks, store/figures.h); memory per rank by kind (parameters,
// gradients, optimizer states, activations; the largest over the steps, rank_step).
// Axes span the data (not from zero) and bytes read in KiB/MiB (axis.h).
#pragma once

#include "shardscope/viewer/run_document.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

Scene BuildLossChart(const RunData& run);
Scene BuildStepTimeChart(const RunData& run);
Scene BuildMemoryChart(const RunData& run);

}  // namespace shardscope::viewer
