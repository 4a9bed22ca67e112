// The predicted step time of a partitioned program: what `train` runs, priced step by step.
//
// The searches price strategies by split counts (SearchGraph's symbolic edges), which is
// fast but blind to what the partitioner makes of a layout: a hand-written higher-order
// layout can need more redistribution steps than its split counts suggest. PriceProgram
// prices the program itself, for the figure `shardscope plan` and bench_predict report:
//
//   kernels          per forward operator, the search's computation (OpCompute: forward,
//                    backward and the optimizer's update of its parameter shards) under the
//                    strategy the program assigned it
//   redistributions  every step that moves data of every redistribution the partitioner
//                    inserted (forward and backward, gradient reductions included): the
//                    planner's own price of the step (RedistStep::seconds, CostModel) plus the
//                    searches' per-collective terms (latency and the fixed overhead raised
//                    to the group sync: of the step's groups for a structured collective,
//                    CostModel::GroupSyncSeconds, of every device for an irregular exchange;
//                    and the hand-off after computation:
//                    CostModel::SearchHandoffSeconds of the instruction the step follows,
//                    its share of its operator's extra on one core: the operator's
//                    SearchGraph::ComputeBeforeCollective over its compute instructions,
//                    since the forward and each backward instruction end a phase of their own)
//
//   overlap          with CostModel::overlap_gradients (cluster profiles), the parameter
//                    gradients' reductions (ZeRO's reduce-scatters included) run on one stream
//                    beside the backward, each launched after the operator whose backward
//                    completes it, as Total schedules them (ScheduleGradientReductions)
//
// There are no other collectives in a program: DistExecutor communicates only in its
// redistribution instructions. Deterministic: one pass in program order.
#pragma once

#include "shardscope/graph.h"
#include "shardscope/partition.h"
#include "shardscope/search.h"

namespace shardscope {

// The ranks a parameter's ZeRO collectives run over: its replica group's size and the link
// its axes span on the device mesh.
struct ShardLink {
  int64_t group = 1;  // 1: not sharded
  double bandwidth = 0;
  HopLatency latency;  // CostModel::LatencySeconds: hops inside a node at its link's latency
};

struct ProgramPrice {
  double step_seconds = 0;  // operators + communication - hidden
  // CostModel::overlap_gradients: of communication_seconds, the gradient reductions' time
  // hidden behind the backward (gradient_overlap.h: a stream launched as gradients complete).
  double hidden_seconds = 0;
  double operator_seconds = 0;       // kernels and optimizer updates
  double communication_seconds = 0;  // every communicating redistribution step
  int redistributions = 0;           // redistribute instructions (communicating or not)
  int communication_steps = 0;       // their steps that move data (not local slices/reshapes)
  // Per instruction of the program: what its communication adds to communication_seconds
  // (gradient buckets, links and per-collective terms included; 0 for compute). The
  // optimizer sharding's collectives belong to no instruction: communication_seconds less
  // the sum of these.
  std::vector<double> instr_seconds;
  // Per graph node: a forward operator's computation (OpCompute; 0 for other nodes), what
  // pipeline stages over sub-meshes sum per stage.
  std::vector<double> node_seconds;
  // Per graph node: a recomputed forward operator's replays (in operator_seconds, not in
  // node_seconds). Per param_grads entry: its ZeRO collectives' link. Pipeline stages over
  // sub-meshes price their own share of both.
  std::vector<double> replay_seconds;
  std::vector<ShardLink> shard_links;
};

// One ZeRO collective (an all-gather of slices, a reduce-scatter of a bucket) of `bytes` per
// rank over `link`, as PriceProgram charges it: the collective, its overhead, the link's
// latency per message.
double ShardCollectiveSeconds(const CostModel& cost, CollectiveKind kind, double bytes,
                              const ShardLink& link);

// Whether a redistribution step communicates (the executor calls the communicator for it).
bool CommunicatesData(const RedistStep& step);

// Prices `program`, partitioned from `graph` (the training graph: forward operators with
// their annotations, backward operators are skipped) with `options.cost` (the cost model the
// program's plans were priced with) on `options.devices` devices. Errors: the forward graph
// does not build a search graph (the search's own errors), or the program does not match it.
Result<ProgramPrice> PriceProgram(const Graph& graph, const DistProgram& program,
                                  const SearchOptions& options);

}  // namespace shardscope
