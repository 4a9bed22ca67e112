// Recording overhead (issue 5): the seed-003 FFN's training step with the run file written
// every step (plan once, then a committed step record with the per-rank figures) against
// the same step without recording. Both variants alternate within one process (noisy machine).
//   build/bin/bench_recording --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>

#include "models.h"
#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/recorder.h"

namespace shardscope {
namespace {

void BM_FfnStep(benchmark::State& state) {
  const bool record = state.range(0) != 0;
  const int64_t batch = state.range(1);
  samples::FFN net;
  auto model = nn::BuildClassifier(net, {1, 28, 28}, batch);
  PartitionOptions options;
  options.devices = 1;
  auto trainer = DistTrainer::Create(std::move(*model), TrainConfig{}, options, 0);
  if (!trainer.ok()) {
    state.SkipWithError(trainer.status().message().c_str());
    return;
  }
  Dataset data = MakeSyntheticDataset(batch, {1, 28, 28}, 10, 7);
  InProcessWorld world(1);
  Communicator& comm = world.comm(0);
  std::unique_ptr<Recorder> recorder;
  const std::string path = "/tmp/bench_recording_" + std::to_string(batch) + ".db";
  if (record) {
    std::filesystem::remove(path);
    store::RunInfo info;
    info.name = "bench";
    auto r = Recorder::Create(path, info);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    recorder = std::move(*r);
    (void)recorder->RecordPlan((*trainer)->graph(), (*trainer)->program());
  }
  int64_t step = 0;
  for (auto _ : state) {
    auto loss = (*trainer)->Step(comm, data.images, data.labels);
    benchmark::DoNotOptimize(loss);
    if (record) {
      store::RankStepRecord mine;
      mine.compute_seconds = (*trainer)->stats().compute_seconds;
      auto ranks = GatherRankStep(comm, mine);
      (void)recorder->RecordStep(++step, 1, *loss, *ranks);
    }
  }
  if (recorder) (void)recorder->Finish(shardscope::store::RunStatus::kCompleted);
  std::filesystem::remove(path);
}
BENCHMARK(BM_FfnStep)
    ->ArgNames({"record", "batch"})
    ->Args({0, 32})
    ->Args({1, 32})
    ->Args({0, 256})
    ->Args({1, 256})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
