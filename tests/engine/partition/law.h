// The correctness law as a reusable check: a model trained on N in-process devices gives
// the single-device losses and parameters (relative tolerance 1e-4).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <mutex>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"

namespace shardscope::testing_law {

using BuildFn = std::function<Result<ModelGraph>()>;

inline TrainConfig LawConfig() {
  TrainConfig c;
  c.seed = 11;
  c.optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.05f, .momentum = 0.9f};
  return c;
}

struct SingleRun {
  std::vector<float> losses;
  std::map<std::string, Tensor> params;
};

inline bool Close(float a, float b) {
  return std::abs(a - b) <= 1e-4f * std::max(1.0f, std::abs(b));
}

inline SingleRun TrainSingle(const BuildFn& build, const Dataset& data, int64_t batch, int steps) {
  SingleRun run;
  auto model = build();
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return run;
  for (const Node& n : model->graph.nodes()) model->graph.mutable_node(n.id).annotations = {};
  auto trainer = Trainer::Create(std::move(*model), LawConfig());
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  if (!trainer.ok()) return run;
  BatchIterator it(data, batch, 1, false);
  Tensor x, y;
  for (int s = 0; s < steps && it.Next(&x, &y); ++s) run.losses.push_back((*trainer)->Step(x, y));
  for (ValueId p : (*trainer)->parameters()) {
    run.params[(*trainer)->graph().value(p).name] = (*trainer)->executor().value(p);
  }
  return run;
}

// Checks one rank's run against the single-device one; returns false on the first mismatch.
inline Status CompareRank(const DistTrainer& t, const std::vector<float>& losses,
                          const SingleRun& single, int rank) {
  for (size_t s = 0; s < losses.size(); ++s) {
    if (s >= single.losses.size() || !Close(losses[s], single.losses[s])) {
      return Status::Internal("rank " + std::to_string(rank) + " step " + std::to_string(s) +
                              ": loss " + std::to_string(losses[s]) + " vs " +
                              std::to_string(s < single.losses.size() ? single.losses[s] : NAN));
    }
  }
  for (ValueId p : t.parameters()) {
    const std::string& name = t.graph().value(p).name;
    const Tensor expect = ExtractShard(single.params.at(name), t.ParameterLayout(p), rank);
    const Tensor& got = t.ParameterShard(p);
    if (got.shape() != expect.shape()) return Status::Internal(name + ": shard shapes differ");
    for (int64_t i = 0; i < got.size(); ++i) {
      if (!Close(got[i], expect[i])) {
        return Status::Internal("rank " + std::to_string(rank) + " " + name + "[" +
                                std::to_string(i) + "]: " + std::to_string(got[i]) + " vs " +
                                std::to_string(expect[i]));
      }
    }
  }
  return Status::Ok();
}

// Trains this rank; returns its losses.
// `config`: LawConfig() with other gradient buckets, if any (the same optimizer).
inline Result<std::vector<float>> TrainRank(Communicator& comm, const BuildFn& build,
                                            const Dataset& data, int64_t batch, int steps,
                                            const PartitionOptions& options,
                                            std::unique_ptr<DistTrainer>* out,
                                            const TrainConfig& config = LawConfig()) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, build());
  SHARDSCOPE_ASSIGN_OR_RETURN(*out,
                              DistTrainer::Create(std::move(model), config, options, comm.rank()));
  BatchIterator it(data, batch, 1, false);
  Tensor x, y;
  std::vector<float> losses;
  for (int s = 0; s < steps && it.Next(&x, &y); ++s) {
    SHARDSCOPE_ASSIGN_OR_RETURN(float loss, (*out)->Step(comm, x, y));
    losses.push_back(loss);
  }
  SHARDSCOPE_RETURN_IF_ERROR((*out)->GatherParameterShards(comm));  // ZeRO stage 3 frees them
  return losses;
}

// The law on `devices` in-process devices. `options.devices` is set here.
inline Status CheckLaw(const BuildFn& build, const Dataset& data, int64_t batch, int devices,
                       PartitionOptions options = {}, int steps = 5,
                       const TrainConfig& config = LawConfig()) {
  const SingleRun single = TrainSingle(build, data, batch, steps);
  options.devices = devices;
  return RunOnDevices(devices, [&](Communicator& comm) -> Status {
    std::unique_ptr<DistTrainer> t;
    SHARDSCOPE_ASSIGN_OR_RETURN(auto losses,
                                TrainRank(comm, build, data, batch, steps, options, &t, config));
    return CompareRank(*t, losses, single, comm.rank());
  });
}

}  // namespace shardscope::testing_law
