// The correctness law for pipeline stages sharded over sub-meshes (submesh_pipeline.h):
// mlp_pipeline.yaml in 2 stages of k devices, stage 0 data-parallel and stage 1 row-parallel
// (activations change layout at the cut), trained 1F1B with micro-batches, gives every rank
// the single-device losses and the shards of its parameters. Used in-process by
// submesh_pipeline_test.cc and under mpirun by submesh_pipeline_mpi_main.cc.
#pragma once

#include <string>
#include <vector>

#include "law.h"
#include "shardscope/model_file.h"
#include "shardscope/submesh_pipeline.h"

namespace shardscope::submesh_law {

inline const char* kModel = SHARDSCOPE_SOURCE_DIR "/samples/models/mlp_pipeline.yaml";

// fc1-fc4 on stage 0, fc5-fc8 (and the loss) on stage 1; with `strategies`, stage 0's matmuls
// split the batch and stage 1's split the contraction (partial sums all-reduced) over k.
inline Result<ModelGraph> Build(int64_t batch, int k, bool strategies,
                                std::map<std::string, int>* stage_of) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelFile mf, LoadModelFile(kModel));
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, mf.Build(batch));
  int stage = 0;
  for (const Node& n : m.graph.nodes()) {
    if (n.name.rfind("fc5", 0) == 0) stage = 1;
    if (stage_of != nullptr) (*stage_of)[n.name] = stage;
    OpAnnotations& a = m.graph.mutable_node(n.id).annotations;
    a = {};
    if (strategies && n.name.ends_with(".matmul")) {
      const std::string k_text = std::to_string(k);
      a.in_strategy = stage == 0 ? "((" + k_text + ", 1), (1, 1))"
                                 : "((1, " + k_text + "), (" + k_text + ", 1))";
    }
  }
  return m;
}

inline SubMeshOptions Options(int k, int micro_batches, bool strategies) {
  SubMeshOptions o;
  o.stages = 2;
  o.micro_batches = micro_batches;
  o.partition.devices = k;
  (void)Build(8, k, strategies, &o.stage_of);
  return o;
}

// One rank of 2 x k: `steps` steps of `batch`, checked against `single`.
// `zero`: the ZeRO stage inside the stages; `recompute`: the scopes recomputed.
inline Status TrainRank(Communicator& world, int64_t batch, int micro_batches, int steps,
                        bool strategies, const Dataset& data, const testing_law::SingleRun& single,
                        double single_accuracy, int zero = 0,
                        const std::vector<std::string>& recompute = {}) {
  const int k = world.size() / 2;
  SubMeshOptions o = Options(k, micro_batches, strategies);
  o.partition.optimizer_sharding = zero;
  o.partition.recompute = recompute;
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, Build(batch / micro_batches, k, strategies, nullptr));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      auto t, SubMeshTrainer::Create(std::move(m), testing_law::LawConfig(), o, world.rank()));
  BatchIterator it(data, batch, 1, false);
  Tensor x, y;
  for (int s = 0; s < steps && it.Next(&x, &y); ++s) {
    SHARDSCOPE_ASSIGN_OR_RETURN(float loss, t->Step(world, x, y));
    if (s >= static_cast<int>(single.losses.size()) || !testing_law::Close(loss, single.losses[s]))
      return Status::Internal("rank " + std::to_string(world.rank()) + " step " +
                              std::to_string(s) + ": loss " + std::to_string(loss));
  }
  SHARDSCOPE_RETURN_IF_ERROR(t->GatherParameterShards(world));  // ZeRO 3 frees them
  int owned = 0;
  for (ValueId p : t->parameters()) {
    const Tensor* got = t->ParameterShard(p);
    if (got == nullptr) continue;
    ++owned;
    const std::string& name = t->graph().value(p).name;
    const Tensor expect =
        ExtractShard(single.params.at(name), t->ParameterLayout(p), world.rank() % k);
    for (int64_t i = 0; i < got->size(); ++i) {
      if (got->shape() != expect.shape() || !testing_law::Close((*got)[i], expect[i]))
        return Status::Internal("rank " + std::to_string(world.rank()) + " " + name + "[" +
                                std::to_string(i) + "]: " + std::to_string((*got)[i]) + " vs " +
                                std::to_string(expect[i]));
    }
  }
  // Every parameter is owned by exactly one stage, so k ranks hold a shard of each.
  std::vector<float> count = {static_cast<float>(owned)};
  SHARDSCOPE_RETURN_IF_ERROR(world.AllReduce(count));
  if (static_cast<size_t>(count[0]) != t->parameters().size() * k)
    return Status::Internal("parameter shards: " + std::to_string(count[0]));
  SHARDSCOPE_ASSIGN_OR_RETURN(double accuracy, t->Evaluate(world, data));
  // Float rounding may flip one example's top class.
  if (std::abs(accuracy - single_accuracy) > 1.0 / static_cast<double>(data.size()))
    return Status::Internal("accuracy " + std::to_string(accuracy) + " vs " +
                            std::to_string(single_accuracy));
  return Status::Ok();
}

// The single-device run of the same model, seed and batches, and its accuracy on `data`.
inline testing_law::SingleRun Single(int64_t batch, int steps, const Dataset& data,
                                     double* accuracy) {
  const auto build = [&] { return Build(batch, 1, false, nullptr); };
  testing_law::SingleRun run = testing_law::TrainSingle(build, data, batch, steps);
  auto model = build();
  auto trainer = model.ok() ? Trainer::Create(std::move(*model), testing_law::LawConfig())
                            : Result<std::unique_ptr<Trainer>>(model.status());
  *accuracy = -1;
  if (!trainer.ok()) return run;
  BatchIterator it(data, batch, 1, false);
  Tensor x, y;
  for (int s = 0; s < steps && it.Next(&x, &y); ++s) (*trainer)->Step(x, y);
  *accuracy = (*trainer)->Evaluate(data);
  return run;
}

}  // namespace shardscope::submesh_law
