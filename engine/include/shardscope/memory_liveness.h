// The peak memory of one rank of a partitioned program, walked over its schedule.
//
// A buffer lives from the instruction that writes it to its last reader (forward, backward
// and recomputation replays alike): DistExecutor allocates and frees them exactly so
// (DistProgram::transient, release_after), and PlanRankMemory walks the same schedule, so the
// planned figure is what a rank measures. `plan`, `train`'s check and the run file use it.
#pragma once

#include <cstdint>
#include <string>

#include "shardscope/graph.h"
#include "shardscope/partition.h"

namespace shardscope {

// One rank's bytes at its peak, by kind. total = the sum of the other fields.
struct RankMemory {
  int64_t parameters = 0;        // parameter shards held (stage 3: those gathered at the peak)
  int64_t gradients = 0;         // parameter gradients in their parameter's layout
  int64_t optimizer_states = 0;  // states (per slice under ZeRO), fp32 master copies, slices
  int64_t activations = 0;       // activations and temporaries live at the peak, inputs, the loss
  int64_t initialisation = 0;    // the whole largest parameter, drawn before it is sliced
  int64_t total = 0;
  // Where the peak is: the operator (or "redistribution of X") of that scheduled instruction.
  std::string peak_at;
  bool peak_in_backward = false;
  // The largest single consumer at the peak: a tensor, or a parameter's optimizer states.
  std::string largest;  // "activation 'layer0.mlp.fc1'", "optimizer states of 'wte'"
  int64_t largest_bytes = 0;
};

// `optimizer_states` tensors per parameter shard (per slice under optimizer sharding, plus
// the slices and their scratch). `float_bytes` < 4 prices mixed precision: f32 buffers at that
// size plus an f32 master copy of every parameter shard (states stay f32). kInvalidInput when
// a sum does not fit in 63 bits.
Result<RankMemory> PlanRankMemory(const Graph& graph, const DistProgram& program,
                                  int optimizer_states, int float_bytes = 4);

// "params 1.2 GiB, grads 1.2 GiB, optimizer states 4.8 GiB, activations 3.1 GiB at
// grad.layer0.matmul (backward)": the breakdown in one line.
std::string RankMemoryText(const RankMemory& m);

}  // namespace shardscope
