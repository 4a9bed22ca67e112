// ZeRO 2 and 3 as `train` runs them, in-process and under mpirun: the run file's planned
// memory per device (config.memory) is the busiest rank's measured peak plus the whole
// largest parameter initialisation draws, and the measured gradients are slices.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_shardscope.h"
#include "shardscope/store/reader.h"

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::RunCommand;
using shardscope_cli_test::Shardscope;

std::string Temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("shardscope_zero_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Data parallel over whatever device count runs it; a 10-wide bias no group of 4 tiles.
std::string ModelFile() {
  const std::string path = Temp("model.yaml");
  std::ofstream(path) << "name: zero\n"
                         "input: {shape: [1, 6, 8]}\n"
                         "classes: 10\n"
                         "layers:\n"
                         "  - flatten: Flatten\n"
                         "  - dense1: {type: Dense, in_channels: 48, out_channels: 64}\n"
                         "  - gelu: GELU\n"
                         "  - dense2: {type: Dense, in_channels: 64, out_channels: 10}\n"
                         "loss: softmax_cross_entropy\n"
                         "optimizer: {type: adam, lr: 0.001}\n"
                         "training: {batch: 64, epochs: 1, seed: 1}\n"
                         "data: {dataset: synthetic, synthetic_size: 256}\n"
                         "parallel:\n"
                         "  mode: data_parallel\n";
  return path;
}

struct Recorded {
  int64_t planned = 0, initialisation = 0;
  int64_t peak = 0, grads = 0;  // the busiest rank's, at the last step
};

// Trains with `stage` by `launcher` ("" in-process, else an mpirun prefix) and reads the run.
Recorded Train(const std::string& launcher, const std::string& devices, int stage) {
  Recorded r;
  const std::string run = Temp("s" + std::to_string(stage) + (launcher.empty() ? "" : "m") + ".db");
  const std::string args = "train " + ModelFile() + devices + " --steps 3 --optimizer-sharding " +
                           std::to_string(stage) + " --record " + run + " --overwrite";
  const Output o = launcher.empty() ? Shardscope(args) : RunCommand(launcher + " " + args);
  EXPECT_EQ(o.code, 0) << o.text;
  if (o.code != 0) return r;
  auto reader = shardscope::store::RunReader::Open(run);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return r;
  const auto info = (*reader)->Run();
  EXPECT_TRUE(info.ok());
  if (!info.ok()) return r;
  const nlohmann::json memory = nlohmann::json::parse(info->config_json).at("memory");
  r.planned = memory.at("per_device_bytes").get<int64_t>();
  r.initialisation = memory.at("initialisation_bytes").get<int64_t>();
  for (int64_t rank = 0; rank < info->devices; ++rank) {
    const auto series = (*reader)->RankSeries(rank);
    EXPECT_TRUE(series.ok() && !series->empty());
    if (!series.ok() || series->empty()) continue;
    r.peak = std::max(r.peak, series->back().second.peak_bytes);
    r.grads = std::max(r.grads, series->back().second.grad_bytes);
  }
  std::filesystem::remove(run);
  return r;
}

// `dp` devices, all data-parallel: a gradient slice is 1/dp of a gradient, rounded up.
void ExpectPlannedIsMeasured(const std::string& launcher, const std::string& devices, int dp) {
  const Recorded whole = Train(launcher, devices, 1);
  EXPECT_EQ(whole.planned, whole.peak + whole.initialisation);
  for (int stage : {2, 3}) {
    const Recorded r = Train(launcher, devices, stage);
    EXPECT_EQ(r.planned, r.peak + r.initialisation) << "stage " << stage << " " << launcher;
    EXPECT_LT(r.planned, whole.planned) << "stage " << stage;
    EXPECT_LT(r.grads, whole.grads) << "stage " << stage;
    EXPECT_LE(r.grads * dp, whole.grads + 4 * 4 * dp) << "stage " << stage;  // 4 parameters
  }
}

TEST(ZeroRunFile, PlannedMemoryIsTheMeasuredPeakInProcess) {
  ExpectPlannedIsMeasured("", " --devices 4", 4);
}

TEST(ZeroRunFile, PlannedMemoryIsTheMeasuredPeakUnderMpirun) {
  ExpectPlannedIsMeasured(
      std::string(MPIEXEC) + " -np 2 --allow-run-as-root --oversubscribe " + SHARDSCOPE_BIN, "", 2);
}

}  // namespace
