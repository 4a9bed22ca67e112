// The partitioning passes after insert-redistributions that trade memory (partition.h):
// optimizer-state sharding (ZeRO stages 1-2) and activation recomputation.
#pragma once

#include <ostream>

#include "shardscope/partition.h"

namespace shardscope {

// True when a gradient produced in `grad` can be reduce-scattered straight into slices of a
// parameter stored in `param`: the same mesh and splits, partial exactly over the parameter's
// replica axes (ZeRO stage 2).
bool GradientReduceScatters(const Layout& grad, const Layout& param);

// shard-optimizer-states: fills `program->param_sharding` (one entry per param_grads entry).
Status ShardOptimizerStates(const PartitionOptions& options, DistProgram* program);

// insert-recomputation: the segments of `options.recompute`, the schedule with their replays
// and the values freed after each position.
Status InsertRecomputation(const Graph& graph, const PartitionOptions& options,
                           DistProgram* program);

// bucket-scattered-gradients: the ZeRO 2/3 gradients (DistProgram::scattered_grad) in
// buckets of about `options.gradient_bucket_bytes`, in the order `release_after` frees them.
void BucketScatteredGradients(const PartitionOptions& options, DistProgram* program);

// Every value an instruction writes, but the loss and parameter gradients, becomes transient:
// allocated before its writer, freed after its last reader (insert-recomputation's releases).
void MarkActivationsTransient(DistProgram* program);

// The lines DistProgram::ToText adds for both (nothing when neither is on).
void AppendMemoryOptionsText(const DistProgram& program, std::ostream& out);

}  // namespace shardscope
