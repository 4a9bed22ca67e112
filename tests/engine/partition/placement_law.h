// The correctness law for placed models (placement.h, pipeline.h): every worker's losses and
// parameters equal the single-device run's (relative tolerance 1e-4). Used in-process by
// placement_test.cc and under mpirun by placement_mpi_main.cc.
#pragma once

#include <functional>
#include <memory>

#include "law.h"
#include "shardscope/nn.h"
#include "shardscope/pipeline.h"

namespace shardscope::testing_law {

// Builds the model for a batch size (the micro-batch size when pipelining).
using BuildAtFn = std::function<Result<ModelGraph>(int64_t batch)>;

// A chain of five Dense layers crossing workers back and forth: 1, 3, 1, 4, 2 (the ReLUs
// and the loss are not placed: worker 0).
class CrossingChain : public nn::Module {
 public:
  CrossingChain() : nn::Module("") {
    d1.place("worker", 1);
    d2.place("worker", 3);
    d3.place("worker", 1);
    d4.place("worker", 4);
    d5.place("worker", 2);
  }
  nn::Flatten flatten{"flatten"};
  nn::Dense d1{"d1", 16, 24}, d2{"d2", 24, 24}, d3{"d3", 24, 16}, d4{"d4", 16, 16}, d5{"d5", 16, 8};
  nn::ReLU relu{"relu"};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    x = flatten(b, x);
    x = relu(b, d1(b, x));
    x = relu(b, d2(b, x));
    x = relu(b, d3(b, x));
    x = relu(b, d4(b, x));
    return d5(b, x);
  }
};

inline Result<ModelGraph> BuildCrossingChain(int64_t batch) {
  CrossingChain net;
  return nn::BuildClassifier(net, {1, 4, 4}, batch);
}

inline Dataset CrossingChainData(int64_t batch, int steps) {
  return MakeSyntheticDataset(batch * steps, {1, 4, 4}, 8, 3);
}

// Trains this worker for `steps` steps of `batch` examples and compares it with `single`.
inline Status TrainPlacedRank(Communicator& comm, const BuildAtFn& build, const Dataset& data,
                              int64_t batch, int steps, PipelineOptions options,
                              const SingleRun& single) {
  options.workers = comm.size();
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, build(batch / options.micro_batches));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      auto trainer, PipelineTrainer::Create(std::move(model), LawConfig(), options, comm.rank()));
  BatchIterator it(data, batch, 1, false);
  Tensor x, y;
  for (int s = 0; s < steps && it.Next(&x, &y); ++s) {
    SHARDSCOPE_ASSIGN_OR_RETURN(float loss, trainer->Step(comm, x, y));
    if (s >= static_cast<int>(single.losses.size()) || !Close(loss, single.losses[s])) {
      return Status::Internal(
          "worker " + std::to_string(comm.rank()) + " step " + std::to_string(s) + ": loss " +
          std::to_string(loss) + " vs " +
          std::to_string(s < static_cast<int>(single.losses.size()) ? single.losses[s] : NAN));
    }
  }
  int owned = 0;
  Status params_equal;
  for (ValueId p : trainer->parameters()) {
    const Tensor* got = trainer->Parameter(p);
    if (got == nullptr) continue;
    ++owned;
    const std::string& name = trainer->graph().value(p).name;
    const Tensor& expect = single.params.at(name);
    for (int64_t i = 0; params_equal.ok() && i < got->size(); ++i) {
      if (got->shape() != expect.shape() || !Close((*got)[i], expect[i])) {
        params_equal = Status::Internal("worker " + std::to_string(comm.rank()) + " " + name + "[" +
                                        std::to_string(i) + "]: " + std::to_string((*got)[i]) +
                                        " vs " + std::to_string(expect[i]));
      }
    }
  }
  // Every parameter is owned by exactly one worker (a collective: every worker joins it).
  std::vector<float> count = {static_cast<float>(owned)};
  SHARDSCOPE_RETURN_IF_ERROR(comm.AllReduce(count));
  SHARDSCOPE_RETURN_IF_ERROR(params_equal);
  if (static_cast<size_t>(count[0]) != trainer->parameters().size())
    return Status::Internal("parameters owned: " + std::to_string(count[0]) + " of " +
                            std::to_string(trainer->parameters().size()));
  return Status::Ok();
}

// The law for a placed model on `devices` in-process devices.
inline Status CheckPlacedLaw(const BuildAtFn& build, const Dataset& data, int64_t batch,
                             int devices, PipelineOptions options, int steps) {
  const SingleRun single = TrainSingle([&] { return build(batch); }, data, batch, steps);
  return RunOnDevices(devices, [&](Communicator& comm) -> Status {
    return TrainPlacedRank(comm, build, data, batch, steps, options, single);
  });
}

}  // namespace shardscope::testing_law
