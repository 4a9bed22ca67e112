// A trainer's state to and from a checkpoint: shards gathered into global tensors by the
// planner's own redistribution (shard layout -> replicated), and global tensors sliced into
// this rank's shards. The optimizer state of a parameter has the parameter's layout.
#include <cstring>

#include "shardscope/checkpoint.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope {
namespace {

// The whole tensor of `shard` (laid out as `layout`) on every rank.
Result<Tensor> Gather(Communicator& comm, const Layout& layout, const Tensor& shard,
                      RedistWorkspace* workspace) {
  const Layout whole = Layout::Replicated(layout.mesh(), layout.shape());
  SHARDSCOPE_ASSIGN_OR_RETURN(RedistPlan plan, PlanRedistribution(layout, whole, CostModel{}));
  Tensor out(layout.shape());
  SHARDSCOPE_RETURN_IF_ERROR(ExecuteRedistribution(plan, comm, shard, &out, workspace));
  return out;
}

Status CheckShape(const CheckpointTensor* t, const std::string& name, const std::string& role,
                  const Shape& shape) {
  if (t == nullptr) {
    return Status::Invalid("the checkpoint has no " + role + " for parameter '" + name +
                           "' (saved from another model?)");
  }
  if (t->value.shape() != shape) {
    return Status::Invalid("parameter '" + name + "' (" + role + ") has shape " +
                           ShapeToString(t->value.shape()) + " in the checkpoint but " +
                           ShapeToString(shape) + " in the model");
  }
  return Status::Ok();
}

}  // namespace

Result<Checkpoint> GatherCheckpoint(Communicator& comm, DistTrainer& trainer) {
  Checkpoint c;
  c.step = trainer.step();
  c.seed = trainer.config().seed;
  c.optimizer = OptimizerKindName(trainer.config().optimizer.kind);
  c.batch = trainer.graph().value(trainer.model().input).shape[0];
  const std::vector<std::string> roles = OptimizerStateRoles(c.optimizer);
  const std::vector<ValueId>& params = trainer.parameters();
  const OptimizerStateView state = trainer.OptimizerState();
  if (state.tensors.size() != roles.size() * params.size()) {
    return Status::Internal("optimizer " + c.optimizer + " exposes " +
                            std::to_string(state.tensors.size()) + " state tensors for " +
                            std::to_string(params.size()) + " parameters");
  }
  c.optimizer_steps = state.steps != nullptr ? *state.steps : c.step;
  RedistWorkspace workspace;
  for (size_t i = 0; i < params.size(); ++i) {
    const Layout& layout = trainer.ParameterLayout(params[i]);
    const std::string& name = trainer.graph().value(params[i]).name;
    SHARDSCOPE_ASSIGN_OR_RETURN(
        Tensor whole, Gather(comm, layout, trainer.ParameterShard(params[i]), &workspace));
    c.tensors.push_back({name, "parameter", std::move(whole)});
    for (size_t s = 0; s < roles.size(); ++s) {
      const std::span<float> values = state.tensors[s * params.size() + i];
      Tensor shard(layout.ShardShape());
      if (static_cast<int64_t>(values.size()) != shard.size())
        return Status::Internal("optimizer state of " + name + " is not the shard's size");
      std::memcpy(shard.data(), values.data(), values.size() * sizeof(float));
      SHARDSCOPE_ASSIGN_OR_RETURN(Tensor state_whole, Gather(comm, layout, shard, &workspace));
      c.tensors.push_back({name, roles[s], std::move(state_whole)});
    }
  }
  return c;
}

Status RestoreCheckpoint(const Checkpoint& c, DistTrainer& trainer) {
  const std::string optimizer = OptimizerKindName(trainer.config().optimizer.kind);
  if (c.optimizer != optimizer) {
    return Status::Invalid("the checkpoint was saved with optimizer " + c.optimizer +
                           " but this run uses " + optimizer +
                           " (training.optimizer in the model file)");
  }
  const std::vector<std::string> roles = OptimizerStateRoles(optimizer);
  const std::vector<ValueId>& params = trainer.parameters();
  const int rank = trainer.executor().rank();
  size_t saved_params = 0;
  for (const CheckpointTensor& t : c.tensors) saved_params += t.role == "parameter";
  if (saved_params != params.size()) {
    return Status::Invalid("the checkpoint holds " + std::to_string(saved_params) +
                           " parameters but the model trains " + std::to_string(params.size()) +
                           " (saved from another model?)");
  }
  const OptimizerStateView state = trainer.OptimizerState();
  for (size_t i = 0; i < params.size(); ++i) {
    const Layout& layout = trainer.ParameterLayout(params[i]);
    const std::string& name = trainer.graph().value(params[i]).name;
    const CheckpointTensor* p = c.Find(name, "parameter");
    SHARDSCOPE_RETURN_IF_ERROR(CheckShape(p, name, "parameter", layout.shape()));
    const Tensor shard = ExtractShard(p->value, layout, rank);
    Tensor& local = trainer.MutableParameterShard(params[i]);  // keeps its buffer
    std::memcpy(local.data(), shard.data(), static_cast<size_t>(shard.size()) * sizeof(float));
    for (size_t s = 0; s < roles.size(); ++s) {
      const CheckpointTensor* t = c.Find(name, roles[s]);
      SHARDSCOPE_RETURN_IF_ERROR(CheckShape(t, name, roles[s], layout.shape()));
      const Tensor shard = ExtractShard(t->value, layout, rank);
      const std::span<float> values = state.tensors[s * params.size() + i];
      std::memcpy(values.data(), shard.data(), values.size() * sizeof(float));
    }
  }
  if (state.steps != nullptr) *state.steps = c.optimizer_steps;
  trainer.set_step(c.step);
  return Status::Ok();
}

}  // namespace shardscope
