// Pipeline stages chosen by the planner: a layered model cut into contiguous stages, one
// device each, run with the 1F1B schedule (pipeline.h), priced with its bubble.
//
//   units     forward operators grouped by their first name scope, in graph order
//             ("dense1.matmul", "dense1.bias" -> unit "dense1"); a scope without parameters
//             (an activation, a pooling, the loss) joins the layer before it; operators
//             reading one parameter join one unit (a parameter lives on one worker)
//   split     contiguous units per stage, minimising the slowest stage's time per
//             micro-batch (computation, forward and backward, and the activations and
//             gradients crossing its cuts: BoundarySeconds), ties to the least memory of
//             the largest stage; a stage's memory (its weights, gradients and optimizer states
//             plus the activations of the micro-batches in flight at it under 1F1B,
//             min(M, stages - stage)) stays within the capacity when one is given
//   price     1F1B on p stages and M micro-batches: (M + p - 1) x the slowest stage's time
//             per micro-batch (its computation and the stage-boundary transfers it sends and
//             receives), plus the slowest stage's optimizer update once; the bubble, idle
//             time over the step, is (p - 1) / (M + p - 1)
// The costs come from the searches' cost model (SearchGraph::OpCompute on one device), so a
// pipeline and an operator-level plan are priced with the same figures.
// Deterministic: ties go to the earlier cut.
#pragma once

#include <string>
#include <vector>

#include "shardscope/cost/cost_model.h"
#include "shardscope/graph.h"
#include "shardscope/search.h"

namespace shardscope {

// Contiguous forward operators that go to one stage together.
struct StageUnit {
  std::string scope;            // the first name scope of its operators
  std::vector<NodeId> nodes;    // forward operators, graph order
  double compute_seconds = 0;   // forward + backward on one device, per micro-batch
  double update_seconds = 0;    // the optimizer's update of its parameters, once per step
  double weight_bytes = 0;      // parameters, gradients and optimizer states
  double activation_bytes = 0;  // outputs it saves for the backward, per micro-batch
  double boundary_bytes = 0;    // activations crossing the cut after it, per micro-batch
};

// The units of `forward` (built at the micro-batch size), priced with `options` (its cost
// model, dtype and optimizer states; `devices` is ignored: one device per stage).
Result<std::vector<StageUnit>> LayerUnits(const Graph& forward, const SearchOptions& options);

// The first unit of each of `stages` contiguous groups of `units` (ascending, [0] = 0), as
// balanced as above with `micro_batches` in flight, stage s on rank s of `mesh`;
// `capacity_bytes` <= 0: no limit. Errors: fewer units than stages ("the model has N layers"),
// or no split fits (naming the largest unit).
Result<std::vector<int>> SplitStages(const std::vector<StageUnit>& units, int stages,
                                     int micro_batches, double capacity_bytes,
                                     const CostModel& cost, const DeviceMesh& mesh);

// Micro-batches of 1F1B in flight at `stage` of `stages`: min(M, stages - stage).
int MicroBatchesInFlight(int stage, int stages, int micro_batches);

// The 1F1B step of `stage_seconds` (per micro-batch, computation and boundary transfers)
// with `micro_batches`, plus the slowest `update_seconds`.
struct OneFOneBPrice {
  double step_seconds = 0;
  double slowest_stage_seconds = 0;  // per micro-batch
  double bubble_fraction = 0;        // (p - 1) / (M + p - 1)
};
OneFOneBPrice PriceOneFOneB(const std::vector<double>& stage_seconds,
                            const std::vector<double>& update_seconds, int micro_batches);

// One stage-boundary message of `bytes` from rank `src` to rank `dst`: latency plus bytes over
// the bandwidth of the axes of `mesh` on which the two ranks differ (default_bandwidth and
// latency_s without a mesh).
double BoundarySeconds(const CostModel& cost, const DeviceMesh& mesh, int src, int dst,
                       double bytes);

}  // namespace shardscope
