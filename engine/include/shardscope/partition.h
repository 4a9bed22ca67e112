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
