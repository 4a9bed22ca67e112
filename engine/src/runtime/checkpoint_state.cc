// A trainer's state to and from a checkpoint: shards gathered into global tensors by the
// planner's own redistribution (shard layout -> replicated), and global tensors sliced into
// this rank's shards. The optimizer state of a parameter has the parameter's layout.
// Placed runs (pipeline.h): each parameter lives whole on the worker that owns it, so saving
// broadcasts it, with its optimizer state, from its owner; restoring sets every worker's copy.
// Both use one format (global tensors by name), so each resumes the other's checkpoints.
#include <cstring>

#include "shardscope/checkpoint.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/pipeline.h"
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

// The checkpoint fits a run of `optimizer` training `params` parameters.
Status CheckFits(const Checkpoint& c, const std::string& optimizer, size_t params) {
  if (c.optimizer != optimizer) {
    return Status::Invalid("the checkpoint was saved with optimizer " + c.optimizer +
                           " but this run uses " + optimizer +
                           " (training.optimizer in the model file)");
  }
  size_t saved_params = 0;
  for (const CheckpointTensor& t : c.tensors) saved_params += t.role == "parameter";
  if (saved_params != params) {
    return Status::Invalid("the checkpoint holds " + std::to_string(saved_params) +
                           " parameters but the model trains " + std::to_string(params) +
                           " (saved from another model?)");
  }
  return Status::Ok();
}

// The worker that updates `param` (each worker's program lists its own), or -1.
int Owner(const PlacedProgram& program, ValueId param) {
  for (size_t w = 0; w < program.programs.size(); ++w) {
    for (ValueId p : program.programs[w].params) {
      if (p == param) return static_cast<int>(w);
    }
  }
  return -1;
}

// Position of `param` among this worker's own parameters, or -1.
int OwnIndex(const PipelineTrainer& trainer, ValueId param) {
  const std::vector<ValueId>& own = trainer.program().programs[trainer.rank()].params;
  for (size_t i = 0; i < own.size(); ++i) {
    if (own[i] == param) return static_cast<int>(i);
  }
  return -1;
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
  const std::vector<ValueId>& params = trainer.parameters();
  SHARDSCOPE_RETURN_IF_ERROR(CheckFits(c, optimizer, params.size()));
  const std::vector<std::string> roles = OptimizerStateRoles(optimizer);
  const int rank = trainer.executor().rank();
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

Result<Checkpoint> GatherCheckpoint(Communicator& comm, PipelineTrainer& trainer) {
  Checkpoint c;
  c.step = trainer.step();
  c.seed = trainer.config().seed;
  c.optimizer = OptimizerKindName(trainer.config().optimizer.kind);
  c.batch = trainer.graph().value(trainer.model().input).shape[0] * trainer.options().micro_batches;
  const std::vector<std::string> roles = OptimizerStateRoles(c.optimizer);
  const size_t own = trainer.program().programs[trainer.rank()].params.size();
  const OptimizerStateView state = trainer.OptimizerState();
  if (state.tensors.size() != roles.size() * own) {
    return Status::Internal("optimizer " + c.optimizer + " exposes " +
                            std::to_string(state.tensors.size()) + " state tensors for " +
                            std::to_string(own) + " parameters");
  }
  // Adam's step count is the same on every worker (one optimizer step per Step).
  c.optimizer_steps = state.steps != nullptr ? *state.steps : c.step;
  std::vector<float> steps = {static_cast<float>(c.optimizer_steps)};
  SHARDSCOPE_RETURN_IF_ERROR(comm.Broadcast(steps, 0));
  for (ValueId p : trainer.parameters()) {
    const std::string& name = trainer.graph().value(p).name;
    const int owner = Owner(trainer.program(), p);
    if (owner < 0) return Status::Internal("parameter '" + name + "' has no worker");
    const int mine = OwnIndex(trainer, p);
    Tensor whole(trainer.graph().value(p).shape);
    if (mine >= 0) std::memcpy(whole.data(), trainer.Parameter(p)->data(), whole.size() * 4);
    SHARDSCOPE_RETURN_IF_ERROR(comm.Broadcast(std::span<float>(whole.data(), whole.size()), owner));
    c.tensors.push_back({name, "parameter", std::move(whole)});
    for (size_t s = 0; s < roles.size(); ++s) {
      Tensor value(trainer.graph().value(p).shape);
      if (mine >= 0) {
        const std::span<float> v = state.tensors[s * own + mine];
        std::memcpy(value.data(), v.data(), v.size() * sizeof(float));
      }
      SHARDSCOPE_RETURN_IF_ERROR(
          comm.Broadcast(std::span<float>(value.data(), value.size()), owner));
      c.tensors.push_back({name, roles[s], std::move(value)});
    }
  }
  return c;
}

Status RestoreCheckpoint(const Checkpoint& c, PipelineTrainer& trainer) {
  const std::string optimizer = OptimizerKindName(trainer.config().optimizer.kind);
  SHARDSCOPE_RETURN_IF_ERROR(CheckFits(c, optimizer, trainer.parameters().size()));
  const std::vector<std::string> roles = OptimizerStateRoles(optimizer);
  const size_t own = trainer.program().programs[trainer.rank()].params.size();
  const OptimizerStateView state = trainer.OptimizerState();
  for (ValueId p : trainer.parameters()) {
    const std::string& name = trainer.graph().value(p).name;
    const Shape& shape = trainer.graph().value(p).shape;
    SHARDSCOPE_RETURN_IF_ERROR(CheckShape(c.Find(name, "parameter"), name, "parameter", shape));
    Tensor* local = trainer.MutableParameter(p);  // a copy on every worker that reads it
    if (local != nullptr) {
      std::memcpy(local->data(), c.Find(name, "parameter")->value.data(), local->size() * 4);
    }
    const int mine = OwnIndex(trainer, p);
    for (size_t s = 0; s < roles.size(); ++s) {
      const CheckpointTensor* t = c.Find(name, roles[s]);
      SHARDSCOPE_RETURN_IF_ERROR(CheckShape(t, name, roles[s], shape));
      if (mine < 0) continue;
      const std::span<float> values = state.tensors[s * own + mine];
      std::memcpy(values.data(), t->value.data(), values.size() * sizeof(float));
    }
  }
  if (state.steps != nullptr) *state.steps = c.optimizer_steps;
  trainer.set_step(c.step);
  return Status::Ok();
}

}  // namespace shardscope
