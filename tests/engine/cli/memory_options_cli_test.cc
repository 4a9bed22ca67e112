// --optimizer-sharding and --recompute (and the model file's parallel.optimizer_sharding and
// parallel.recompute) as a user runs them: plan prices a lower memory per device, and train
// runs them and prints the same figure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_shardscope.h"
#include "shardscope/base/format.h"

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::Shardscope;

// A small data-parallel model on synthetic data; `extra` ends the parallel section. Its
// weights are alike in size, so that stage 3 (one whole weight at a time) saves memory; its
// blocks keep activations for backward (GELU's input), which recomputation frees.
std::string ModelFile(const std::string& name, const std::string& extra) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("shardscope_memory_" + name + ".yaml")).string();
  std::ofstream(path) << "name: mem\n"
                         "input: {shape: [1, 6, 8]}\n"
                         "classes: 10\n"
                         "blocks:\n"
                         "  Mlp:\n"
                         "    - dense1: {type: Dense, in_channels: 48, out_channels: 48}\n"
                         "    - gelu: GELU\n"
                         "    - dense2: {type: Dense, in_channels: 48, out_channels: 48}\n"
                         "layers:\n"
                         "  - flatten: Flatten\n"
                         "  - block: {type: Mlp, repeat: 4}\n"
                         "  - dense3: {type: Dense, in_channels: 48, out_channels: 10}\n"
                         "loss: softmax_cross_entropy\n"
                         "optimizer: {type: adam, lr: 0.001}\n"
                         "training: {batch: 512, epochs: 1, seed: 1}\n"
                         "data: {dataset: synthetic, synthetic_size: 1024}\n"
                         "parallel:\n"
                         "  mode: data_parallel\n"
                         "  devices: 4\n"
                      << extra;
  return path;
}

int64_t PlannedBytes(const std::string& model, const std::string& flags) {
  const Output o = Shardscope("plan " + model + " --search semi_auto --json " + flags, false);
  EXPECT_EQ(o.code, 0) << o.text;
  if (o.code != 0) return 0;
  return nlohmann::json::parse(o.text)["memory_per_device_bytes"].get<int64_t>();
}

TEST(MemoryOptionsCli, EachOptionLowersPlanAndTrainPrintsTheSameFigure) {
  const std::string model = ModelFile("zero1", "  optimizer_sharding: 1\n");
  const int64_t off = PlannedBytes(model, "--optimizer-sharding 0");
  const int64_t stage1 = PlannedBytes(model, "");  // the file's stage 1
  const int64_t stage2 = PlannedBytes(model, "--optimizer-sharding 2");
  const int64_t stage3 = PlannedBytes(model, "--optimizer-sharding 3");
  const int64_t both = PlannedBytes(model, "--optimizer-sharding 3 --recompute");
  EXPECT_LT(stage1, off);
  EXPECT_LT(stage2, stage1);
  EXPECT_LT(stage3, stage2);
  EXPECT_LT(both, stage3);
  const std::string figure =
      "memory per device:   " + shardscope::FormatBytes(static_cast<double>(both));
  const Output plan =
      Shardscope("plan " + model + " --search semi_auto --optimizer-sharding 3 --recompute");
  EXPECT_NE(plan.text.find(figure), std::string::npos) << plan.text;
  // train searched as plan is (plan always searches): the same program, the same figure.
  const Output train =
      Shardscope("train " + model +
                 " --steps 2 --no-record --search semi_auto --optimizer-sharding 3 --recompute");
  ASSERT_EQ(train.code, 0) << train.text;
  EXPECT_NE(train.text.find(figure), std::string::npos) << figure << "\n" << train.text;
  EXPECT_NE(train.text.find("test accuracy"), std::string::npos) << train.text;
}

TEST(MemoryOptionsCli, FileRecomputeScopesAndStages) {
  const std::string scoped = ModelFile("scoped", "  recompute: [block1, block2]\n");
  EXPECT_LT(PlannedBytes(scoped, ""), PlannedBytes(ModelFile("plain", ""), ""));
  const Output unknown =
      Shardscope("plan " + ModelFile("unknown", "  recompute: [dense9]\n") + " --search semi_auto");
  EXPECT_EQ(unknown.code, 2) << unknown.text;
  EXPECT_NE(unknown.text.find("dense9"), std::string::npos) << unknown.text;
  const Output four =
      Shardscope("plan " + ModelFile("four", "  optimizer_sharding: 4\n") + " --search semi_auto");
  EXPECT_EQ(four.code, 2) << four.text;
  EXPECT_NE(four.text.find("shardscope_memory_four.yaml:20:"), std::string::npos) << four.text;
  EXPECT_NE(four.text.find("ZeRO stages are 0"), std::string::npos) << four.text;
  const Output flag = Shardscope("plan " + scoped + " --optimizer-sharding 4");
  EXPECT_NE(flag.code, 0) << flag.text;
}

}  // namespace
