// Partitioning: the global training graph becomes one SPMD program that every rank runs.
//
// Named passes over one state, each pure, with a verifier after each (DESIGN.md §4):
//   assign-strategies       a strategy per operator: the user's (annotations), the
//                           data-parallel default, or — for backward operators — the one
//                           their forward operator saw (derived from its operand layouts)
//   insert-redistributions  operand layouts from the strategies; wherever a producer's
//                           layout differs from what a consumer needs, a planned
//                           redistribution with its reason; gradient reduction of
//                           parameters; the loss made whole on every rank
//   shard-optimizer-states  ZeRO stages 1-3: each parameter's update split over its replicas
//   insert-recomputation    scopes' activations freed after forward, replayed before
//                           backward; the schedule and what is freed when (memory.md)
//   bucket-scattered-gradients  ZeRO 2/3: gradients reduce-scattered together in buckets
// The program is the same on every rank (shapes are the same: splits are even); only a few
// attributes depend on the rank (shard offsets), and those are computed when it runs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/cost/cost_model.h"
#include "shardscope/graph.h"
#include "shardscope/layout/layout.h"
#include "shardscope/redistribution/redistribution.h"
#include "shardscope/strategy.h"

namespace shardscope {

// A tensor in one layout: every rank holds a local buffer of the layout's shard shape.
struct DistValue {
  ValueId global = kNoValue;  // the graph value whose contents it holds
  Layout layout;
  std::string name;  // "dense1.matmul" or "dense1.matmul@[dp | -]"
};

struct DistInstr {
  enum class Kind { kCompute, kRedistribute };
  Kind kind = Kind::kCompute;
  NodeId node = kNoNode;    // kCompute: the graph operator
  std::vector<int> inputs;  // DistValue indices
  std::vector<int> outputs;
  std::shared_ptr<const RedistPlan> plan;  // kRedistribute
  std::string reason;                      // kRedistribute: why it exists
};

// Optimizer-state sharding (ZeRO, MindSpore's optimizer parallel) of one trained parameter:
// the ranks holding the same shard of it (its replica group along `axes`) each update one
// contiguous slice of `chunk` elements of the flattened shard, then all-gather the slices.
struct ParamSharding {
  std::vector<int> axes;  // replica axes of the parameter's layout; empty: not sharded
  int group_size = 1;
  int64_t elements = 0;  // of the local shard
  int64_t chunk = 0;     // slice length, ceil(elements / group_size); the last may be shorter
  // Stage 2: the gradient stays partial over `axes` and is reduce-scattered into the slice
  // as soon as it is complete, in the backward pass, and freed (no whole reduced gradient);
  // otherwise it is all-reduced as without sharding.
  bool reduce_scatter = false;
  // Stage 3: the whole shard is not kept; it is all-gathered from the slices before the
  // instruction that reads it (`gathers` times a step) and freed after its last read of the
  // forward and of the backward pass (DistProgram::release_after).
  bool gathered = false;
  int gathers = 0;
  // Stages 2 and 3: the DistProgram::scatter_buckets entry its gradient is reduce-scattered in,
  // and where its slice starts among that bucket's slices.
  int bucket = -1;
  int64_t bucket_offset = 0;
  // Elements of `rank_in_group`'s slice (0 when the shard is shorter than the slices).
  int64_t SliceLength(int rank_in_group) const;
};

// ZeRO 2/3 gradients of the same replica groups reduce-scattered in one call, as the
// all-reduces of data parallelism are bucketed: each rank block of the bucket holds the
// members' chunks end to end, so each rank gets its slices of all of them at once.
struct ScatterBucket {
  std::vector<int> params;  // param_grads indices, in the order their gradients are freed
  int group_size = 1;
  int64_t slice = 0;  // elements a rank keeps: the members' chunks end to end
  int after = -1;     // schedule position whose releases free its last member: it is sent then
};

// Activation recomputation of one name scope: its forward instructions run again just
// before the first backward instruction that reads an activation they dropped.
struct RecomputeSegment {
  std::string scope;
  int before = 0;            // instruction index the replay runs before
  std::vector<int> instrs;   // the forward instructions replayed, in order
  std::vector<int> dropped;  // DistValues freed after forward and made again by the replay
};

struct DistProgram {
  int devices = 1;
  std::vector<OpStrategy> strategies;  // per graph node
  std::vector<DistValue> values;
  std::vector<DistInstr> instrs;
  // Per graph value, the DistValue holding it as stored or produced (kNoValue: none).
  std::vector<int> home;
  // Per trained parameter: its DistValue and its gradient's, in the parameter's layout.
  std::vector<std::pair<int, int>> param_grads;
  int loss = -1;  // the loss, replicated on every rank
  // DistValues of the inputs and labels, in every layout an operator reads them in. Every
  // rank reads the whole global batch and slices these shards from it: no communication.
  std::vector<int> batch_values;
  // ZeRO stage (0: off; 1: optimizer states sharded; 2: gradients too; 3: parameters too)
  // and, per entry of param_grads, how its update is sharded.
  int optimizer_sharding = 0;
  std::vector<ParamSharding> param_sharding;
  // Recomputation: the segments, the order instructions run in (every instruction once, the
  // replays inserted; empty: 0..instrs-1), the DistValues to free after each position of
  // `schedule`, and the values allocated only while live (per DistValue).
  std::vector<RecomputeSegment> recompute;
  std::vector<int> schedule;
  std::vector<std::vector<int>> release_after;
  std::vector<bool> transient;
  // Per DistValue: the param_grads index of a stage-3 parameter it is the home of, else -1.
  std::vector<int> gathered_param;
  // Per DistValue: the param_grads index of a stage-2/3 gradient it is (reduce-scattered into
  // its slice where `release_after` frees it), else -1.
  std::vector<int> scattered_grad;
  // ZeRO 2/3: the gradient buckets, in the order they are reduce-scattered.
  std::vector<ScatterBucket> scatter_buckets;
  // ZeRO 2/3 with overlap: a bucket's reduce-scatter is started when its last gradient is
  // freed and waited for once the next bucket is started (the last: before the update), so
  // it runs beside the backward and at most two buckets are held. false: each one blocks.
  bool scatter_overlap = false;

  // Bytes this rank receives per step, as planned.
  int64_t PlannedRecvBytes(int rank) const;
  int NumRedistributions() const;
  std::string ToText(const Graph& graph) const;
};

struct PartitionOptions {
  int devices = 1;
  std::map<std::string, DeviceMesh> meshes;  // named meshes the annotations refer to
  CostModel cost;
  // Bytes per element the redistributions are planned with: 4 for a program that runs (the
  // executor moves f32), 2 when `plan` prices bf16/fp16 (--dtype).
  int64_t element_bytes = 4;
  // ZeRO stage over each parameter's replica (data-parallel) axes: 0 off, 1 optimizer
  // states, 2 and gradients, 3 and parameters (gathered before use).
  int optimizer_sharding = 0;
  // Stages 2 and 3 reduce-scatter gradients in buckets of about this many bytes (whole
  // gradients, zero-padded to the slices; TrainConfig::bucket_bytes); 0: each on its own.
  int64_t gradient_bucket_bytes = int64_t{25} << 20;
  // Stages 2 and 3: each bucket's reduce-scatter runs beside the rest of the backward
  // (TrainConfig::overlap_grad_reduce; DistProgram::scatter_overlap); false: it blocks.
  bool overlap_gradient_reductions = true;
  // Name scopes whose activations are recomputed in backward ("dense1", "layer0.attn"; "*":
  // every top-level scope).
  std::vector<std::string> recompute;
  // Called after each pass with its name and the program so far (for --dump-ir).
  std::function<void(const std::string& pass, const std::string& ir)> dump;
};

// The values of a training graph the partitioner needs to know.
struct TrainingValues {
  ValueId loss = kNoValue;
  std::vector<ValueId> params;  // trained parameters
  std::vector<ValueId> grads;   // their gradients (same order)
};

// Partitions `graph` (forward + backward, as Trainer builds it). Errors name the operator
// and the rule broken (a strategy that does not fit, an axis that does not divide).
Result<DistProgram> Partition(const Graph& graph, const TrainingValues& values,
                              const PartitionOptions& options);

// Strategy pass alone (used by Partition; public for tests and `plan`).
Result<std::vector<OpStrategy>> AssignStrategies(const Graph& graph,
                                                 const PartitionOptions& options);

}  // namespace shardscope
