// --optimizer-sharding and --recompute (and the model file's parallel.optimizer_sharding and
// parallel.recompute) as a user runs them: plan prices a lower memory per device, and train
// runs them and prints the same figure.
#include <gtest/gtest.h>

#include <algorithm>
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

// A cluster of one node of 4 devices of `bytes` each, with slow compute and fast links, so
// that a replay costs more than a ZeRO collective.
std::string ClusterFile(const std::string& name, int64_t bytes) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("shardscope_memory_" + name + "_cluster.yaml"))
          .string();
  std::ofstream(path) << "name: " << name
                      << "\ndevices_per_node: 4\nnodes: 1\nlinks:\n  node: {kind: nvlink, "
                         "bandwidth: 100e9, latency: 5e-6}\ndevice: {memory: "
                      << bytes << ", memory_bandwidth: 1e12, flops: {f32: 1e9}}\n";
  return path;
}

nlohmann::json PlanJson(const std::string& model, const std::string& flags, int code = 0) {
  const Output o = Shardscope("plan " + model + " --search semi_auto --json " + flags, false);
  EXPECT_EQ(o.code, code) << o.text;
  return o.code == 0 ? nlohmann::json::parse(o.text) : nlohmann::json();
}

int64_t PlannedBytes(const std::string& model, const std::string& flags) {
  const Output o = Shardscope("plan " + model + " --search semi_auto --json " + flags, false);
  EXPECT_EQ(o.code, 0) << o.text;
  if (o.code != 0) return 0;
  return nlohmann::json::parse(o.text)["memory_per_device_bytes"].get<int64_t>();
}

// Gradient buckets of about one weight (ZeRO 2/3 keeps a bucket's gradients whole until it
// is sent: one as large as the model would save nothing).
TEST(MemoryOptionsCli, EachOptionLowersPlanAndTrainPrintsTheSameFigure) {
  const std::string model = ModelFile("zero1", "  optimizer_sharding: 1\n") + " --bucket-mb 0.01";
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

// The planner's choice is the cheapest fitting option of those it tried, by predicted step.
void ExpectCheapestFitting(const nlohmann::json& memory) {
  double cheapest = 1e30;
  for (const auto& c : memory["tried"])
    if (c["fits"].get<bool>())
      cheapest = std::min(cheapest, c["predicted_step_seconds"].get<double>());
  EXPECT_FALSE(memory["tried"][0]["fits"].get<bool>());  // the plan as asked did not fit
  EXPECT_TRUE(memory["fits"].get<bool>());
  bool chosen_is_cheapest = false;
  for (const auto& c : memory["tried"]) {
    chosen_is_cheapest =
        chosen_is_cheapest || (c["fits"].get<bool>() && c["predicted_step_seconds"] == cheapest &&
                               c["per_device_bytes"] == memory["per_device_bytes"]);
  }
  EXPECT_TRUE(chosen_is_cheapest) << memory.dump(2);
}

TEST(MemoryFitCli, TooLittleMemoryChoosesZeroThenRecompute) {
  const std::string model = ModelFile("fit", "");
  const int64_t off = PlannedBytes(model, "--optimizer-sharding 0");
  const int64_t stage3 = PlannedBytes(model, "--optimizer-sharding 3");
  const int64_t least = PlannedBytes(model, "--optimizer-sharding 3 --recompute");
  ASSERT_LT(stage3, off);
  ASSERT_LT(least, stage3);
  // Between ZeRO 3 and no option: a ZeRO stage fits, recomputation is not needed.
  const nlohmann::json zero =
      PlanJson(model, "--cluster " + ClusterFile("zero", (stage3 + off) / 2));
  EXPECT_GT(zero["memory"]["optimizer_sharding"].get<int>(), 0) << zero["memory"].dump(2);
  EXPECT_TRUE(zero["memory"]["recompute"].empty()) << zero["memory"].dump(2);
  EXPECT_LE(zero["memory_per_device_bytes"].get<int64_t>(), (stage3 + off) / 2);
  ExpectCheapestFitting(zero["memory"]);
  // Below ZeRO 3 alone (the shipped test profile too): recomputation as well.
  for (const std::string& cluster :
       {ClusterFile("recompute", (least + stage3) / 2),
        std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/clusters/tiny-memory.yaml"}) {
    const nlohmann::json both = PlanJson(model, "--cluster " + cluster);
    // Recomputed layer by layer: each block is a scope of its own.
    const nlohmann::json& scopes = both["memory"]["recompute"];
    EXPECT_NE(std::find(scopes.begin(), scopes.end(), "block4"), scopes.end()) << scopes.dump();
    EXPECT_LE(both["memory_per_device_bytes"].get<double>(),
              both["memory"]["capacity_bytes"].get<double>());
    ExpectCheapestFitting(both["memory"]);
  }
  // The user's stage is kept: with ZeRO 0 fixed only recomputation is tried.
  const int64_t recompute_only = PlannedBytes(model, "--optimizer-sharding 0 --recompute");
  const nlohmann::json fixed =
      PlanJson(model, "--optimizer-sharding 0 --cluster " + ClusterFile("fixed", recompute_only));
  EXPECT_EQ(fixed["memory"]["optimizer_sharding"], 0) << fixed["memory"].dump(2);
  EXPECT_FALSE(fixed["memory"]["recompute"].empty());
  EXPECT_EQ(fixed["memory"]["tried"].size(), 2u);
  // train chooses as plan does and runs it.
  const Output train = Shardscope("train " + model +
                                  " --steps 2 --no-record --search semi_auto "
                                  "--cluster " +
                                  ClusterFile("train", (least + stage3) / 2));
  ASSERT_EQ(train.code, 0) << train.text;
  EXPECT_NE(train.text.find("layer scope(s)"), std::string::npos) << train.text;
}

TEST(MemoryFitCli, NothingFitsExitsTwoNamingCapacityFigureAndConsumer) {
  const std::string model = ModelFile("nofit", "");
  const int64_t least = PlannedBytes(model, "--optimizer-sharding 3 --recompute");
  const Output o = Shardscope("plan " + model + " --search semi_auto --cluster " +
                              ClusterFile("nofit", least / 2));
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("does not fit the " + shardscope::FormatBytes(least / 2)),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("the least per device is "), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("with ZeRO 3, recompute"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("the largest consumer is "), std::string::npos) << o.text;
  const Output train = Shardscope("train " + model +
                                  " --steps 1 --no-record --search semi_auto "
                                  "--cluster " +
                                  ClusterFile("nofit_train", least / 2));
  EXPECT_EQ(train.code, 2) << train.text;
  EXPECT_NE(train.text.find("does not fit"), std::string::npos) << train.text;
}

// Llama-style decoder at 64 H100s: a plan that fits the 80 GiB, or the honest refusal.
TEST(MemoryFitCli, LlamaAtSixtyFourH100sFitsOrSaysWhyNot) {
  const std::string llama = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/onnx/llama.onnx";
  const Output o = Shardscope("plan " + llama + " --devices 64 --cluster dgx-h100");
  if (o.code == 0) {  // "memory per device:   71.20 GiB (the peak: ..."
    const size_t at = o.text.find("memory per device:");
    ASSERT_NE(at, std::string::npos) << o.text;
    const std::string figure = o.text.substr(at + 18, o.text.find(" (", at) - at - 18);
    EXPECT_NE(figure.find("GiB"), std::string::npos) << figure;
    EXPECT_LE(std::stod(figure), 80.0) << figure;
    return;
  }
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("does not fit the 80.00 GiB of device memory (cluster dgx-h100)"),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("the largest consumer is "), std::string::npos) << o.text;
}

// Megatron's 18.4B GPT (40 layers) searched for 256 A100s, every layer recomputed: the search's
// estimate leaves out the backward's temporaries, so its first plan does not fit 80 GB; plan
// searches again aiming lower, and the plan fits as searched (no memory option added after).
TEST(PlanMemory, ARecomputedPlanTheEstimateFitsFitsAsSearched) {
  const std::string yaml =
      (std::filesystem::temp_directory_path() / "shardscope_megatron_18b.yaml").string();
  const auto made =
      shardscope_cli_test::RunCommand("python3 " SHARDSCOPE_SOURCE_DIR
                                      "/scripts/megatron_gpt.py --layers 40 --hidden 6144 "
                                      "--heads 48 --dp 256 --search dynamic_programming > " +
                                          yaml,
                                      false);
  ASSERT_EQ(made.code, 0) << made.text;
  const Output o = Shardscope("plan " + yaml +
                                  " --cluster dgx-a100-80gb --dtype bf16 --batch 1024 --recompute "
                                  "--no-overlap --json",
                              false);
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json j = nlohmann::json::parse(o.text);
  const nlohmann::json& memory = j["memory"];
  EXPECT_TRUE(memory["fits"].get<bool>()) << memory.dump();
  EXPECT_EQ(memory["optimizer_sharding"].get<int>(), j["search_optimizer_sharding"].get<int>());
  EXPECT_EQ(memory["tried"].size(), 1u) << memory.dump();
  EXPECT_LE(memory["per_device_bytes"].get<double>(), memory["capacity_bytes"].get<double>());
  std::filesystem::remove(yaml);
}

}  // namespace
