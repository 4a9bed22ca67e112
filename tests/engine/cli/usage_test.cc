// How `shardscope` talks about its command line (issue 22): a top-level --help of one screen,
// did-you-mean for misspelt flags, commands, search modes, modes and operator names, and
// --json on the commands that print a report, checked by parsing what they print.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "run_shardscope.h"
#include "shardscope/ops.h"

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::Shardscope;

const std::string kSamples = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/";
const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

bool Has(const Output& o, const std::string& text) {
  return o.text.find(text) != std::string::npos;
}

TEST(Usage, TopLevelHelpFitsOneScreen) {
  Output o = Shardscope("--help");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_LE(std::count(o.text.begin(), o.text.end(), '\n'), 40) << o.text;
  for (const char* command :
       {"train", "plan", "launch", "inspect", "clusters", "calibrate", "layout", "redistribute"}) {
    EXPECT_NE(o.text.find(std::string("\n  ") + command + " "), std::string::npos) << command;
  }
  // Each command's own --help still teaches in full.
  EXPECT_TRUE(Has(Shardscope("train --help"), "Placed models"));
}

TEST(Usage, SuggestsFlagsAndCommands) {
  Output flag = Shardscope("train " + kSamples + "ffn.yaml --serach dynamic_programming");
  EXPECT_EQ(flag.code, 2);
  EXPECT_TRUE(
      Has(flag, "unknown flag '--serach' for `shardscope train` (did you mean '--search'?)"))
      << flag.text;
  Output value = Shardscope("plan " + kSamples + "ffn.yaml --devises=8");
  EXPECT_EQ(value.code, 2);
  EXPECT_TRUE(Has(value, "(did you mean '--devices'?)")) << value.text;
  Output command = Shardscope("trian " + kSamples + "ffn.yaml");
  EXPECT_EQ(command.code, 2);
  EXPECT_TRUE(Has(command, "unknown command 'trian' (did you mean 'train'?)")) << command.text;
  Output far = Shardscope("plan " + kSamples + "ffn.yaml --zzzzzz");
  EXPECT_EQ(far.code, 2);
  EXPECT_TRUE(Has(far, "unknown flag '--zzzzzz'")) << far.text;
  EXPECT_FALSE(Has(far, "did you mean")) << far.text;
}

TEST(Usage, SuggestsSearchModesModesAndOperators) {
  Output search = Shardscope("plan " + kSamples + "ffn.yaml --devices 8 --search recursive");
  EXPECT_EQ(search.code, 2);
  EXPECT_TRUE(
      Has(search, "unknown search mode 'recursive' (did you mean 'recursive_programming'?)"))
      << search.text;
  Output mode = Shardscope("train " + kSamples + "lenet5.yaml --data " + kMnist +
                           " --mode data_paralel --steps 1 --no-record");
  EXPECT_EQ(mode.code, 2);
  EXPECT_TRUE(Has(mode, "(did you mean 'data_parallel'?)")) << mode.text;
  Output op = Shardscope("plan " + kSamples + "ffn.yaml --devices 8 --explain dense2.matmull");
  EXPECT_EQ(op.code, 2);
  EXPECT_TRUE(Has(op, "no forward operator 'dense2.matmull' (did you mean 'dense2.matmul', "))
      << op.text;
  auto kind = shardscope::OpFromName("MatMull");
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("(did you mean 'MatMul'?)"), std::string::npos)
      << kind.status().message();
}

nlohmann::json Json(const Output& o) {
  auto j = nlohmann::json::parse(o.text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << o.text;
  return j;
}

TEST(Usage, PlanExplainAndClustersPrintJson) {
  Output explain =
      Shardscope("plan " + kSamples + "ffn.yaml --devices 8 --explain dense1.matmul --json", false);
  ASSERT_EQ(explain.code, 0) << explain.text;
  const auto e = Json(explain);
  EXPECT_EQ(e["operator"], "dense1.matmul");
  EXPECT_EQ(e["strategy"], "((2, 4), (4, 1))");  // samples/models/ffn.yaml sets it
  EXPECT_GT(e["cost_seconds"].get<double>(), 0);
  EXPECT_TRUE(e["runners_up"].is_array());

  Output all = Shardscope("clusters --json", false);
  ASSERT_EQ(all.code, 0) << all.text;
  const auto list = Json(all);
  ASSERT_TRUE(list.is_array());
  bool dgx = false;
  for (const auto& c : list) dgx = dgx || c["name"] == "dgx-h100";
  EXPECT_TRUE(dgx) << all.text;
  const auto one = Json(Shardscope("clusters dgx-h100 --json", false));
  EXPECT_EQ(one["name"], "dgx-h100");
  EXPECT_EQ(one["devices_per_node"].get<int>() * one["nodes"].get<int>(),
            one["devices"].get<int>());
}

// calibrate --json: the fitted profile, the one --out writes, is all of stdout.
TEST(Usage, CalibratePrintsItsProfileAsJson) {
  Output o = Shardscope("calibrate --json --devices 2 --trials 1 --repeats 3 --duration 0", false);
  ASSERT_EQ(o.code, 0) << o.text;
  const auto j = Json(o);
  EXPECT_GT(j["latency_s"].get<double>(), 0) << o.text;
}

// train --json: stdout is one JSON document (the usual lines went to stderr); the run file it
// names reads back with inspect --json.
TEST(Usage, TrainPrintsAJsonSummary) {
  const std::string run = ::testing::TempDir() + "/usage22_train.db";
  std::filesystem::remove(run);
  Output o = Shardscope("train " + kSamples + "ffn.yaml --devices 4 --ignore-parallel --data " +
                            kMnist + " --steps 3 --limit 128 --json --record " + run,
                        false);
  ASSERT_EQ(o.code, 0) << o.text;
  const auto j = Json(o);
  EXPECT_EQ(j["model"], "ffn");
  EXPECT_EQ(j["devices"], 4);
  EXPECT_EQ(j["backend"], "in-process");
  EXPECT_EQ(j["config"]["data"]["dataset"], "mnist");
  EXPECT_EQ(j["steps"], 3);
  EXPECT_EQ(j["epoch_mean_loss"].size(), 1u);
  const double accuracy = j["test_accuracy"];
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 1.0);
  ASSERT_EQ(j["ranks"].size(), 4u);
  EXPECT_GT(j["ranks"][1]["bytes_received_per_step"].get<double>(), 0);
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["run_file"], std::filesystem::absolute(run).string());
  const auto inspected = Json(Shardscope("inspect " + run + " --json", false));
  EXPECT_FALSE(inspected.empty());
}

}  // namespace
