// `shardscope plan` as a user runs it: strategies with provenance, JSON, --explain,
// strategy files, large device counts, run files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_shardscope.h"
#include "shardscope/store/reader.h"

namespace {

using shardscope_cli_test::Output;

Output Plan(const std::string& args, bool merge_stderr = true) {
  return shardscope_cli_test::Shardscope("plan " + args, merge_stderr);
}

const std::string kSamples = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/";

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("shardscope_plan_test_" + name)).string();
}

TEST(PlanCommand, Seed003FfnKeepsTheUsersStrategiesAndPropagates) {
  Output o = Plan(kSamples + "ffn.yaml --devices 8 --search sharding_propagation");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("user: ((2, 4), (4, 1))"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("propagated from operator 'dense1.matmul'"), std::string::npos);
  EXPECT_NE(o.text.find("predicted step time"), std::string::npos);
  EXPECT_NE(o.text.find("memory per device"), std::string::npos);
  EXPECT_NE(o.text.find("redistributions per training step"), std::string::npos);
}

TEST(PlanCommand, Seed000ShardBlockShowsItsBoundaryAndSearchesInside) {
  Output o = Plan(kSamples + "basic_blocks.yaml");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("shard block block1: boundary in ((1, 8),) out (None,) fixed, inside "
                        "level 0 (most computation per byte communicated)"),
            std::string::npos)
      << o.text;
  // block1's input arrives split 8 ways along the features; its output leaves data-parallel.
  EXPECT_NE(o.text.find("block1.dense1.matmul             ((1,8),(8,1))"), std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("block1.dense2.bias_add           ((8,1),(1,))"), std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("block2.dense1.matmul             ((8,1),(1,1))                  "),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("outside shard blocks: data-parallel"), std::string::npos);

  Output semi = Plan(kSamples + "basic_blocks.yaml --search semi_auto");
  EXPECT_EQ(semi.code, 2) << semi.text;
  EXPECT_NE(semi.text.find("shard block 'block1' is searched inside"), std::string::npos)
      << semi.text;
}

TEST(PlanCommand, JsonListsOperatorsAndRedistributions) {
  Output o = Plan(kSamples + "ffn.yaml --devices 8 --search dynamic_programming --json", false);
  ASSERT_EQ(o.code, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  EXPECT_EQ(j["devices"], 8);
  EXPECT_EQ(j["search"], "dynamic_programming");
  ASSERT_GE(j["operators"].size(), 10u);
  EXPECT_EQ(j["operators"][1]["name"], "dense1.matmul");
  EXPECT_EQ(j["operators"][1]["strategy"], "((2, 4), (4, 1))");
  EXPECT_GT(j["redistributions"].size(), 0u);
  for (const auto& r : j["redistributions"]) EXPECT_GE(r["bytes"].get<int64_t>(), 0);
  EXPECT_GT(j["predicted_step_seconds"].get<double>(), 0);
}

// Seed 003's strategies are written for 8 devices: planned on 16, semi_auto runs those two
// operators replicated twice, and says so with the factor and the operators; on 8, nothing.
TEST(PlanCommand, StrategiesOverFewerDevicesWarnWithTheReplicaFactor) {
  Output o = Plan(kSamples + "ffn.yaml --devices 16 --search semi_auto");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("over 8 of the 16 devices and run replicated x2 over the rest: "
                        "dense1.matmul, dense3.matmul"),
            std::string::npos)
      << o.text;
  Output j = Plan(kSamples + "ffn.yaml --devices 16 --search semi_auto --json", false);
  ASSERT_EQ(j.code, 0) << j.text;
  EXPECT_EQ(nlohmann::json::parse(j.text)["warnings"].size(), 1u);
  Output full = Plan(kSamples + "ffn.yaml --devices 8 --search semi_auto");
  ASSERT_EQ(full.code, 0) << full.text;
  EXPECT_EQ(full.text.find("replicated x"), std::string::npos) << full.text;
}

// --global-batch in samples or tokens: 4K tokens of the GPT's 32-position sequences are 128
// sequences; tokens need a token model and a whole number of sequences.
TEST(PlanCommand, GlobalBatchInSamplesOrTokens) {
  Output tokens = Plan(kSamples + "gpt.yaml --devices 8 --global-batch \"4K tokens\"");
  ASSERT_EQ(tokens.code, 0) << tokens.text;
  EXPECT_NE(tokens.text.find("batch 128,"), std::string::npos) << tokens.text;
  Output samples = Plan(kSamples + "ffn.yaml --devices 8 --global-batch 256");
  ASSERT_EQ(samples.code, 0) << samples.text;
  EXPECT_NE(samples.text.find("batch 256,"), std::string::npos) << samples.text;
  Output uneven = Plan(kSamples + "gpt.yaml --devices 8 --global-batch \"1000 tokens\"");
  EXPECT_EQ(uneven.code, 2);
  EXPECT_NE(uneven.text.find("sequences of 32 positions"), std::string::npos) << uneven.text;
  Output images = Plan(kSamples + "ffn.yaml --devices 8 --global-batch \"1K tokens\"");
  EXPECT_EQ(images.code, 2);
  EXPECT_NE(images.text.find("does not take token ids"), std::string::npos) << images.text;
}

TEST(PlanCommand, ExplainShowsWhyAndTheRunnersUp) {
  Output o = Plan(kSamples +
                  "network3.yaml --devices 8 --search recursive_programming "
                  "--explain layer2.matmul");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("recursive_programming: round 1/3"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("runners-up"), std::string::npos);
  Output missing = Plan(kSamples + "network3.yaml --explain nothing");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.text.find("no forward operator 'nothing'"), std::string::npos);
}

TEST(PlanCommand, PlansForManyMoreDevicesThanTheMachineHas) {
  Output o = Plan(kSamples +
                      "network3.yaml --devices 4096 --batch 4096 --search "
                      "recursive_programming --json",
                  false);
  ASSERT_EQ(o.code, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  EXPECT_EQ(j["devices"], 4096);
  EXPECT_GT(j["memory_per_device_bytes"].get<double>(), 0);
}

TEST(PlanCommand, StrategyFilesRoundTrip) {
  const std::string file = TempPath("ffn.json");
  Output saved = Plan(kSamples +
                          "ffn.yaml --devices 8 --search dynamic_programming --json "
                          "--save-strategy " +
                          file,
                      false);
  ASSERT_EQ(saved.code, 0) << saved.text;
  Output loaded = Plan(
      kSamples + "ffn.yaml --devices 8 --search semi_auto --json --load-strategy " + file, false);
  ASSERT_EQ(loaded.code, 0) << loaded.text;
  const auto a = nlohmann::json::parse(saved.text), b = nlohmann::json::parse(loaded.text);
  ASSERT_EQ(a["operators"].size(), b["operators"].size());
  for (size_t i = 0; i < a["operators"].size(); ++i)
    EXPECT_EQ(a["operators"][i]["strategy"], b["operators"][i]["strategy"]) << i;
  EXPECT_DOUBLE_EQ(a["predicted_step_seconds"].get<double>(),
                   b["predicted_step_seconds"].get<double>());
  std::filesystem::remove(file);
}

TEST(PlanCommand, RecordsProvenanceAndCandidates) {
  const std::string run = TempPath("ffn.db");
  std::filesystem::remove(run);
  Output o = Plan(kSamples + "ffn.yaml --devices 8 --search sharding_propagation --record " + run);
  ASSERT_EQ(o.code, 0) << o.text;
  auto reader = shardscope::store::RunReader::Open(run);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto ops = (*reader)->Operators();
  ASSERT_TRUE(ops.ok());
  int propagated = 0, user = 0, with_runners_up = 0;
  for (const auto& op : *ops) {
    if (op.is_backward) continue;
    if (op.provenance == "user") ++user;
    if (op.provenance == "propagated") {
      ++propagated;
      EXPECT_NE(op.provenance_op, shardscope::store::kNone) << op.name;
      ASSERT_GE(op.candidates.size(), 1u) << op.name;
      with_runners_up += op.candidates.size() >= 2;
      bool chosen = false;
      for (const auto& c : op.candidates) chosen = chosen || c.strategy == op.strategy;
      EXPECT_TRUE(chosen) << op.name << ": the chosen strategy is among the candidates";
    }
  }
  EXPECT_EQ(user, 2);
  EXPECT_GE(propagated, 10);
  EXPECT_GE(with_runners_up, 8);
  std::filesystem::remove(run);
}

TEST(PlanCommand, CalibrateWritesAProfileThatPlanReads) {
  const std::string profile = TempPath("profile.json");
  auto c = shardscope_cli_test::Shardscope(
      "calibrate --devices 4 --repeats 5 --trials 3 --duration 0.3 --out " + profile);
  ASSERT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("fitted: alpha"), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("3 rounds over "), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("GEMM, all device threads together"), std::string::npos) << c.text;
  auto no_trials = shardscope_cli_test::Shardscope("calibrate --trials 0 --out " + profile);
  EXPECT_EQ(no_trials.code, 2) << no_trials.text;
  Output o = Plan(kSamples + "ffn.yaml --json --profile " + profile, false);
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_GT(nlohmann::json::parse(o.text)["predicted_step_seconds"].get<double>(), 0);
  {
    std::FILE* f = std::fopen(profile.c_str(), "w");
    std::fputs("{\"latency\": 1e-6}", f);
    std::fclose(f);
  }
  Output bad = Plan(kSamples + "ffn.yaml --profile " + profile);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("unknown field 'latency'"), std::string::npos) << bad.text;
  std::filesystem::remove(profile);
}

// `train` runs mode auto (seed 003's ffn.yaml: two strategies, the rest propagated) and
// takes the strategy file `plan` wrote.
TEST(PlanCommand, TrainSearchesAndLoadsStrategyFiles) {
  const std::string data = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";
  const std::string file = TempPath("ffn_train.json");
  auto t =
      shardscope_cli_test::Shardscope("train " + kSamples + "ffn.yaml --data " + data +
                                      " --steps 2 --limit 256 --no-record --save-strategy " + file);
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("(in-process, auto: sharding_propagation)"), std::string::npos) << t.text;
  ASSERT_TRUE(std::filesystem::exists(file));
  auto l = shardscope_cli_test::Shardscope("train " + kSamples + "network3.yaml --data " + data +
                                           " --steps 2 --limit 256 --no-record --search "
                                           "dynamic_programming --devices 4");
  EXPECT_EQ(l.code, 0) << l.text;
  // The banner names the search that ran, not only the mode.
  EXPECT_NE(l.text.find("4 device(s) (in-process, auto: dynamic_programming)"), std::string::npos)
      << l.text;
  std::filesystem::remove(file);
}

// Bandwidth per axis of the cluster: two hosts of four with a slow link between them keep
// the contractions' reductions inside a host.
TEST(PlanCommand, AxisBandwidthOfADeviceMesh) {
  const std::string base = kSamples +
                           "ffn.yaml --devices 8 --batch 256 --search dynamic_programming --json "
                           "--device-mesh node=2,local=4";
  Output uniform = Plan(base, false), slow = Plan(base + " --axis-bandwidth node=1e8", false);
  ASSERT_EQ(uniform.code, 0) << uniform.text;
  ASSERT_EQ(slow.code, 0) << slow.text;
  const auto u = nlohmann::json::parse(uniform.text), s = nlohmann::json::parse(slow.text);
  EXPECT_GT(s["predicted_step_seconds"].get<double>(), u["predicted_step_seconds"].get<double>());
  // dense2.matmul "((a,b),(b,c))": its k group (b ranks c x replicas apart) inside a host of 4.
  int a = 0, b = 0, b2 = 0, c = 0;
  const std::string dense2 = s["operators"][4]["strategy"];
  ASSERT_EQ(std::sscanf(dense2.c_str(), "((%d,%d),(%d,%d))", &a, &b, &b2, &c), 4) << dense2;
  EXPECT_LE(c * (8 / (a * b * c)) * b, 4) << dense2;
  Output by_index = Plan(base + " --axis-bandwidth 0=1e8", false);
  ASSERT_EQ(by_index.code, 0) << by_index.text;
  EXPECT_EQ(nlohmann::json::parse(by_index.text)["predicted_step_seconds"],
            s["predicted_step_seconds"]);
  Output latency = Plan(base + " --axis-latency node=1e-3", false);
  ASSERT_EQ(latency.code, 0) << latency.text;
  EXPECT_GT(nlohmann::json::parse(latency.text)["predicted_step_seconds"].get<double>(),
            u["predicted_step_seconds"].get<double>());
  Output no_mesh = Plan(kSamples + "ffn.yaml --axis-bandwidth node=1e8");
  EXPECT_EQ(no_mesh.code, 2);
  EXPECT_NE(no_mesh.text.find("needs --device-mesh"), std::string::npos) << no_mesh.text;
  Output unknown = Plan(base + " --axis-bandwidth host=1e8");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.text.find("has no axis 'host'"), std::string::npos) << unknown.text;
  Output wrong_size = Plan(kSamples + "ffn.yaml --devices 8 --device-mesh node=2,local=2");
  EXPECT_EQ(wrong_size.code, 2);
  EXPECT_NE(wrong_size.text.find("has 4 devices but the run has 8"), std::string::npos)
      << wrong_size.text;
}

// The optimizer of the model file sets the state priced per parameter: SGD none, Momentum
// one tensor, Adam two. With the strategies fixed (semi_auto), each state tensor adds the
// same bytes per device.
TEST(PlanCommand, MemoryPerDeviceCountsTheModelFilesOptimizerState) {
  std::ifstream in(kSamples + "ffn.yaml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string ffn = text.str();
  const std::string line = "optimizer: {type: momentum, lr: 0.001, momentum: 0.1}";
  ASSERT_NE(ffn.find(line), std::string::npos);
  std::map<std::string, double> memory;
  for (const std::string type : {"sgd", "momentum", "adam"}) {
    std::string model = ffn;
    model.replace(model.find(line), line.size(), "optimizer: {type: " + type + ", lr: 0.001}");
    const std::string path = TempPath("optimizer_" + type + ".yaml");
    std::ofstream(path) << model;
    Output o = Plan(path + " --devices 8 --search semi_auto --json", false);
    ASSERT_EQ(o.code, 0) << o.text;
    memory[type] = nlohmann::json::parse(o.text)["memory_per_device_bytes"].get<double>();
    std::filesystem::remove(path);
  }
  EXPECT_LT(memory["sgd"], memory["momentum"]);
  EXPECT_LT(memory["momentum"], memory["adam"]);
  EXPECT_NEAR(memory["adam"] - memory["momentum"], memory["momentum"] - memory["sgd"], 1.0);
}

TEST(PlanCommand, BadInputSaysWhat) {
  Output o = Plan(kSamples + "ffn.yaml --search fastest");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("unknown search mode 'fastest'"), std::string::npos) << o.text;
  Output help = Plan("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.text.find("Examples"), std::string::npos);
}

}  // namespace
