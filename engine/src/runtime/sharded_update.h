// The optimizer update of a program with optimizer-state sharding (ZeRO stages 1-3;
// DistProgram::param_sharding): each rank of a parameter's replica group updates one slice
// of its shard, in place where it can, and the group all-gathers the slices.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"

namespace shardscope {

class ShardedUpdate {
 public:
  // The slices `rank` updates; the parameters must already hold their initial shards.
  ShardedUpdate(const DistProgram& program, DistExecutor& executor, int rank);

  // Stages 2 and 3: the whole partial gradient of parameter `param` (param_grads index),
  // complete, joins its bucket (DistProgram::scatter_buckets); the bucket's last member
  // reduce-scatters the bucket over its group, each rank keeping its slices, and frees it. A
  // bucket of one is sent from `grad` itself (blocking only). The caller frees `grad` after it
  // (DistExecutor::set_scatter). Returns the bytes the open buckets held with `grad` in them.
  Result<int64_t> ScatterGradient(Communicator& world, int param, const Tensor& grad,
                                  RankStats* stats);
  // With DistProgram::scatter_overlap every bucket (one gradient too) is a copy, started when
  // its last member joins and waited for once the next one is started, or by GatherGradients.
  // Bytes of gradients in open buckets and buckets in flight now (0 between steps).
  int64_t HeldBytes() const { return held_; }
  // Advances the reduce-scatters in flight without blocking (MPI progresses only inside MPI
  // calls): called between instructions.
  void Poll();
  // Before the optimizer: each slice's gradient, reduce-scattered over the group (stages 2
  // and 3; those ScatterGradient did not take are taken now) or cut from the reduced
  // gradient (stage 1), and what the optimizer updates per trained parameter (its slice,
  // or its whole shard when not sharded).
  Status GatherGradients(Communicator& world, RankStats* stats);
  const std::vector<std::span<float>>& params() const { return params_; }
  const std::vector<std::span<const float>>& grads() const { return grads_; }
  // After it: every rank of the group gets the updated slices back into its shard (not the
  // stage-3 parameters, gathered when read: GatherParameter).
  Status GatherParameters(Communicator& world, RankStats* stats);
  // The whole shard of parameter `param` (param_grads index) from the group's slices.
  Status GatherParameter(Communicator& world, int param, Tensor* out);

  // Only the parameters (param_grads indices) marked take part in GatherGradients and
  // GatherParameters (a pipeline stage owns some of the program's); the others get empty spans.
  void set_only(std::vector<bool> owned) { only_ = std::move(owned); }

  // Bytes of the buffers it keeps besides the program's (the optimizer's states not
  // included): stage-3 parameter slices, stage-2/3 gradient slices, one scratch buffer for
  // the shards the slices do not tile exactly (open buckets: HeldBytes).
  int64_t Bytes() const;
  // Of those, the gradient slices.
  int64_t GradientSliceBytes() const;
  // The same figures from the program alone, for `float_bytes` per element.
  static int64_t PlannedBytes(const DistProgram& program, int float_bytes);
  static int64_t PlannedGradientSliceBytes(const DistProgram& program, int float_bytes);

 private:
  Result<Communicator*> Group(Communicator& world, size_t param);
  // All-gathers `slice` (this rank's, `SliceLength` long) of parameter `param` into `whole`.
  Status Gather(Communicator& world, size_t param, std::span<const float> slice, Tensor* whole);
  // Reduce-scatters bucket `b` (complete) into its slices.
  Status SendBucket(Communicator& world, int b, std::span<const float> whole);
  // Waits for the reduce-scatters in flight but the last `keep` started, and frees them.
  Status WaitScatters(size_t keep);
  std::string BucketText(int b) const;  // what a bucket's reduce-scatter is, for errors
  struct InFlight {
    int bucket = -1;
    int instr = -1;  // the instruction whose releases started it (spans)
    CommRequest request;
    std::unique_ptr<float[]> data;
    int64_t bytes = 0;
  };
  const DistProgram& program_;
  DistExecutor& executor_;
  std::vector<Tensor> param_slices_;   // per param, when needed (see Bytes)
  std::vector<Tensor> bucket_slices_;  // per scatter bucket: its members' slices end to end
  std::vector<bool> scattered_;        // this step, by ScatterGradient
  std::vector<std::unique_ptr<float[]>> open_;  // per bucket of several: while it fills
  std::vector<int> joined_;                     // per scatter bucket: members taken this step
  int64_t held_ = 0;                            // bytes of open_ and in_flight_
  std::vector<int> rank_in_group_;
  std::vector<std::span<float>> params_;
  std::vector<std::span<const float>> grads_;
  std::vector<float> scratch_;  // a whole padded shard: group_size * chunk, the largest
  std::map<std::vector<std::vector<int>>, std::unique_ptr<Communicator>> groups_;  // by ranks
  const Communicator* world_ = nullptr;  // the one the groups were split from
  std::vector<bool> only_;               // empty: every parameter
  std::vector<InFlight> in_flight_;      // in start order; after groups_: waited for first
};

}  // namespace shardscope
