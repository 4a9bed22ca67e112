// The optimizer update of a program with optimizer-state sharding (ZeRO stages 1-2;
// DistProgram::param_sharding): each rank of a parameter's replica group updates one slice
// of its shard, then the group all-gathers the slices.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"

namespace shardscope {

class ShardedUpdate {
 public:
  // The slices `rank` updates; the parameters must already hold their initial shards.
  ShardedUpdate(const DistProgram& program, DistExecutor& executor, int rank);

  // What the optimizer updates, per trained parameter: its slice (sharded) or its shard.
  const std::vector<Tensor*>& params() const { return params_; }
  const std::vector<const Tensor*>& grads() const { return grads_; }

  // Before the optimizer: each slice's gradient, reduce-scattered over the group (stage 2)
  // or cut from the reduced gradient (stage 1).
  Status GatherGradients(Communicator& world, RankStats* stats);
  // After it: every rank of the group gets the updated slices back into its shard (not the
  // stage-3 parameters, gathered when read: GatherParameter).
  Status GatherParameters(Communicator& world, RankStats* stats);
  // The whole shard of parameter `param` (param_grads index) from the group's slices.
  Status GatherParameter(Communicator& world, int param, Tensor* out);

  // Bytes of the slices and the scratch buffer (the optimizer's states not included).
  int64_t Bytes() const;
  // The same figure from the program alone, for `float_bytes` per element.
  static int64_t PlannedBytes(const DistProgram& program, int float_bytes);

 private:
  Result<Communicator*> Group(Communicator& world, size_t param);
  const DistProgram& program_;
  DistExecutor& executor_;
  int rank_;
  std::vector<Tensor> param_slices_, grad_slices_;  // per param (empty when not sharded)
  std::vector<int> rank_in_group_;
  std::vector<Tensor*> params_;
  std::vector<const Tensor*> grads_;
  std::vector<float> scratch_;  // a whole padded shard: group_size * chunk, the largest
  std::map<std::vector<std::vector<int>>, std::unique_ptr<Communicator>> groups_;  // by ranks
  const Communicator* world_ = nullptr;  // the one the groups were split from
};

}  // namespace shardscope
