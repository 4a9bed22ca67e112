// Pipelined placed training (issue 8): step time of a 4-stage chain with and without
// micro-batches, and the measured bubble fraction against GPipe's (p-1)/(m+p-1).
//
// The model: 4 stages of two Dense(512, 512) + ReLU each, placed on workers 1, 2, 3, 0 in
// that order (worker 0 last: it holds the loss, which is not placed), batch 256, in-process
// devices (one thread per worker). One benchmark iteration runs 8 steps inside one
// RunOnDevices; the time reported is per step (manual time).
//
// Counters: bubble = 1 - (sum over workers of kernel time) / (p * step wall time), the
// share of worker-time not spent computing (waiting, messages, optimizer, scheduling);
// theory = (p-1)/(m+p-1); loss = the last step's (equal for every m: the law).
#include <benchmark/benchmark.h>

#include <chrono>

#include "shardscope/nn.h"
#include "shardscope/pipeline.h"

namespace shardscope {
namespace {

constexpr int kStages = 4;
constexpr int64_t kBatch = 256;
constexpr int64_t kWidth = 512;
constexpr int kStepsPerIteration = 8;

class StageChain : public nn::Module {
 public:
  StageChain() : nn::Module("") {
    const int worker_of_stage[kStages] = {1, 2, 3, 0};
    flatten.place("worker", worker_of_stage[0]);
    for (int s = 0; s < kStages; ++s) {
      for (int k = 0; k < 2; ++k) {
        dense.push_back(std::make_unique<nn::Dense>(
            "s" + std::to_string(s) + "d" + std::to_string(k), kWidth, kWidth));
        dense.back()->place("worker", worker_of_stage[s]);
        relu.push_back(
            std::make_unique<nn::ReLU>("s" + std::to_string(s) + "r" + std::to_string(k)));
        relu.back()->place("worker", worker_of_stage[s]);
      }
    }
  }
  nn::Flatten flatten{"flatten"};
  std::vector<std::unique_ptr<nn::Dense>> dense;
  std::vector<std::unique_ptr<nn::ReLU>> relu;

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    x = flatten(b, x);
    for (size_t i = 0; i < dense.size(); ++i) x = (*relu[i])(b, (*dense[i])(b, x));
    return x;
  }
};

void BM_PipelineStep(benchmark::State& state) {
  const int micro = static_cast<int>(state.range(0));
  const auto schedule =
      state.range(1) == 0 ? PipelineSchedule::kGPipe : PipelineSchedule::kOneFOneB;
  std::vector<std::unique_ptr<PipelineTrainer>> trainers;
  for (int r = 0; r < kStages; ++r) {
    StageChain net;
    auto model = nn::BuildClassifier(net, {kWidth}, kBatch / micro);
    TrainConfig config;
    config.optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f};
    auto t = PipelineTrainer::Create(std::move(*model), config,
                                     PipelineOptions{kStages, micro, schedule}, r);
    if (!t.ok()) {
      state.SkipWithError(t.status().message().c_str());
      return;
    }
    trainers.push_back(std::move(*t));
  }
  const Dataset data = MakeSyntheticDataset(kBatch, {kWidth}, static_cast<int>(kWidth), 7);
  float loss = 0;
  double compute = 0, wall = 0;
  for (auto _ : state) {
    std::vector<double> before(kStages);
    for (int r = 0; r < kStages; ++r) before[r] = trainers[r]->stats().compute_seconds;
    const auto start = std::chrono::steady_clock::now();
    Status st = RunOnDevices(kStages, [&](Communicator& comm) -> Status {
      for (int k = 0; k < kStepsPerIteration; ++k) {
        SHARDSCOPE_ASSIGN_OR_RETURN(float l,
                                    trainers[comm.rank()]->Step(comm, data.images, data.labels));
        if (comm.rank() == 0) loss = l;
      }
      return Status::Ok();
    });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
    state.SetIterationTime(secs / kStepsPerIteration);
    wall += secs;
    for (int r = 0; r < kStages; ++r) compute += trainers[r]->stats().compute_seconds - before[r];
  }
  state.counters["bubble"] = 1.0 - compute / (kStages * wall);
  state.counters["theory"] = static_cast<double>(kStages - 1) / (micro + kStages - 1);
  state.counters["loss"] = loss;
  state.SetItemsProcessed(state.iterations() * kBatch);
}

BENCHMARK(BM_PipelineStep)
    ->ArgNames({"micro", "1f1b"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({4, 0})
    ->Args({8, 0})
    ->Args({16, 0})
    ->Args({4, 1})
    ->Args({8, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
