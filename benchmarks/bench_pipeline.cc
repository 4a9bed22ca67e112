// Pipelined placed training (issue 8): step time of a p-stage chain with and without
// micro-batches, and the measured bubble fraction against GPipe's (p-1)/(m+p-1).
//
// The model: p stages (p = 2 or 4) of two Dense(512, 512) + ReLU each, stage s placed on
// worker (s + 1) % p (worker 0 last: it holds the loss, which is not placed), batch 256,
// in-process devices (one thread per worker). One benchmark iteration runs 8 steps inside
// one RunOnDevices; the time reported is per step (manual time).
//
// Counters: bubble = 1 - (sum over workers of kernel time) / (p * step wall time), the
// share of worker-time not spent computing (waiting, messages, optimizer, scheduling);
// theory = (p-1)/(m+p-1).
#include <benchmark/benchmark.h>

#include <chrono>

#include "shardscope/nn.h"
#include "shardscope/pipeline.h"

namespace shardscope {
namespace {

constexpr int64_t kBatch = 256;
constexpr int64_t kWidth = 512;
constexpr int kStepsPerIteration = 8;

class StageChain : public nn::Module {
 public:
  explicit StageChain(int stages) : nn::Module("") {
    auto worker_of_stage = [stages](int s) { return (s + 1) % stages; };
    flatten.place("worker", worker_of_stage(0));
    for (int s = 0; s < stages; ++s) {
      for (int k = 0; k < 2; ++k) {
        dense.push_back(std::make_unique<nn::Dense>(
            "s" + std::to_string(s) + "d" + std::to_string(k), kWidth, kWidth));
        dense.back()->place("worker", worker_of_stage(s));
        relu.push_back(
            std::make_unique<nn::ReLU>("s" + std::to_string(s) + "r" + std::to_string(k)));
        relu.back()->place("worker", worker_of_stage(s));
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
  const int stages = static_cast<int>(state.range(0));
  const int micro = static_cast<int>(state.range(1));
  const auto schedule =
      state.range(2) == 0 ? PipelineSchedule::kGPipe : PipelineSchedule::kOneFOneB;
  std::vector<std::unique_ptr<PipelineTrainer>> trainers;
  for (int r = 0; r < stages; ++r) {
    StageChain net(stages);
    auto model = nn::BuildClassifier(net, {kWidth}, kBatch / micro);
    TrainConfig config;
    config.optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f};
    auto t = PipelineTrainer::Create(std::move(*model), config,
                                     PipelineOptions{stages, micro, schedule}, r);
    if (!t.ok()) {
      state.SkipWithError(t.status().message().c_str());
      return;
    }
    trainers.push_back(std::move(*t));
  }
  const Dataset data = MakeSyntheticDataset(kBatch, {kWidth}, static_cast<int>(kWidth), 7);
  double compute = 0, wall = 0;
  for (auto _ : state) {
    std::vector<double> before(stages);
    for (int r = 0; r < stages; ++r) before[r] = trainers[r]->stats().compute_seconds;
    const auto start = std::chrono::steady_clock::now();
    Status st = RunOnDevices(stages, [&](Communicator& comm) -> Status {
      for (int k = 0; k < kStepsPerIteration; ++k) {
        auto loss = trainers[comm.rank()]->Step(comm, data.images, data.labels);
        if (!loss.ok()) return loss.status();
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
    for (int r = 0; r < stages; ++r) compute += trainers[r]->stats().compute_seconds - before[r];
  }
  state.counters["bubble"] = 1.0 - compute / (stages * wall);
  state.counters["theory"] = static_cast<double>(stages - 1) / (micro + stages - 1);
  state.SetItemsProcessed(state.iterations() * kBatch);
}

BENCHMARK(BM_PipelineStep)
    ->ArgNames({"p", "m", "1f1b"})
    ->Args({2, 1, 0})
    ->Args({2, 2, 0})
    ->Args({2, 4, 0})
    ->Args({2, 8, 0})
    ->Args({2, 4, 1})
    ->Args({4, 1, 0})
    ->Args({4, 4, 0})
    ->Args({4, 8, 0})
    ->Args({4, 4, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
