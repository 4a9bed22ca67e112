// Where a placed run's operators and tensors live, in words for Details and the tensor map:
// a pipeline stage's sub-mesh (`place()` with strategies, `--pipeline N`: worker W on world
// ranks a-b) or one whole device (`place()` alone: worker W, whole).
#pragma once

#include <QString>

#include "shardscope/viewer/run_document.h"

namespace shardscope::gui {

// "worker 1: ranks 2-3 (its stage's mesh(dp=2))", "worker 1 (rank 1), whole", or
// "none (not placed)".
QString WorkerText(const viewer::RunData& run, const store::OperatorRecord& op);
// The strategy; a placed operator without one runs whole: "worker 1, whole (placed, not
// sharded)"; else "none recorded".
QString StrategyText(const viewer::RunData& run, const store::OperatorRecord& op);
// The worker of a tensor: its producer's, else its first consumer's; store::kNone when none.
int64_t TensorWorker(const viewer::RunData& run, const store::TensorRecord& tensor);
// The tensor map's words for a tensor without a layout: whole on its worker's device, or
// "no layout recorded".
QString NoLayoutText(const viewer::RunData& run, const store::TensorRecord& tensor);
// The world ranks a stage-local rank list stands for on mesh `mesh_id` (MeshRankOffset).
int RankOffsetOf(const viewer::RunData& run, int64_t mesh_id);

}  // namespace shardscope::gui
