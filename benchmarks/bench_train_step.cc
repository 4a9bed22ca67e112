// Training step time (forward, backward, Momentum update) of the seeds' FFN and LeNet5 on
// one thread, at batch 32 and 256. Each benchmark builds its trainer once, then times
// Trainer::Step() on a fixed synthetic batch. Times are reported in milliseconds per step.
//
//   build/bin/bench_train_step                                   # console table
//   build/bin/bench_train_step --benchmark_format=json           # machine-readable
//   build/bin/bench_train_step --benchmark_filter=LeNet5/256 --benchmark_repetitions=10
//
// benchmarks/compare_pytorch.py runs this binary side by side with PyTorch.
#include <benchmark/benchmark.h>

#include <memory>

#include "models.h"

namespace {

using namespace shardscope;

// Builds the trainer (once) and one synthetic batch, then times Trainer::Step().
template <typename Net>
void RunTrainStep(benchmark::State& state, Shape example_shape) {
  const int64_t batch = state.range(0);
  Net net;
  auto model = nn::BuildClassifier(net, example_shape, batch);
  if (!model.ok()) {
    state.SkipWithError(model.status().message().c_str());
    return;
  }
  TrainConfig config;
  config.seed = 1;
  config.optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f};
  auto trainer = Trainer::Create(std::move(*model), config);
  if (!trainer.ok()) {
    state.SkipWithError(trainer.status().message().c_str());
    return;
  }
  const Dataset data = MakeSyntheticDataset(batch, example_shape, 10, /*seed=*/7);
  float loss = (*trainer)->Step(data.images, data.labels);  // warm-up: first-touch, velocity
  for (auto _ : state) {
    loss = (*trainer)->Step(data.images, data.labels);
    benchmark::DoNotOptimize(loss);
  }
  state.counters["loss"] = loss;
  state.counters["examples/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TrainStep_FFN(benchmark::State& state) { RunTrainStep<samples::FFN>(state, {1, 28, 28}); }
void BM_TrainStep_LeNet5(benchmark::State& state) {
  RunTrainStep<samples::LeNet5>(state, {1, 32, 32});
}

}  // namespace

// Registered by hand so the names read BM_TrainStep/FFN/32 and so on.
BENCHMARK(BM_TrainStep_FFN)
    ->Name("BM_TrainStep/FFN")
    ->Arg(32)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainStep_LeNet5)
    ->Name("BM_TrainStep/LeNet5")
    ->Arg(32)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
