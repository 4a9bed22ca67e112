// The `shardscope` program as a user runs it: exit codes, messages, outputs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "run_shardscope.h"

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::Shardscope;

const std::string kSamples = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/";
const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

TEST(Cli, HelpOnEverySubcommandTeaches) {
  for (const char* sub : {"train", "layout", "redistribute", "inspect"}) {
    Output o = Shardscope(std::string(sub) + " --help");
    EXPECT_EQ(o.code, 0) << sub;
    EXPECT_NE(o.text.find("Example"), std::string::npos) << sub << ":\n" << o.text;
  }
  Output top = Shardscope("--help");
  EXPECT_EQ(top.code, 0);
  EXPECT_NE(top.text.find("train"), std::string::npos);
}

TEST(Cli, BadInputExitsWithTwoAndSaysWhat) {
  Output missing = Shardscope("train /nonexistent/model.yaml");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.text.find("/nonexistent/model.yaml"), std::string::npos) << missing.text;
  Output flag = Shardscope("train " + kSamples + "lenet5.yaml --no-such-flag");
  EXPECT_EQ(flag.code, 2) << flag.text;
  Output no_sub = Shardscope("");
  EXPECT_EQ(no_sub.code, 2) << no_sub.text;
  Output data = Shardscope("train " + kSamples + "lenet5.yaml --data /nonexistent/dir --steps 1");
  EXPECT_EQ(data.code, 2);
  EXPECT_NE(data.text.find("/nonexistent/dir"), std::string::npos) << data.text;
  Output layout = Shardscope("layout --mesh 2,2 --axes dp,mp --shape 3,4 --layout dp,mp");
  EXPECT_EQ(layout.code, 2);
  EXPECT_NE(layout.text.find("not divisible"), std::string::npos) << layout.text;
}

TEST(Cli, PlacedAndShardBlockModelsTrainOrSayWhyNot) {
  // place() is implemented (train_placed_test.cc); too few devices for it is refused.
  Output place = Shardscope("train " + kSamples + "lenet5_place.yaml --data " + kMnist +
                            " --steps 1 --devices 3 --no-record");
  EXPECT_EQ(place.code, 2);
  EXPECT_NE(place.text.find("placed on worker 4 but the run has 3 device(s); use --devices 5"),
            std::string::npos)
      << place.text;
  EXPECT_NE(place.text.find("lenet5_place.yaml:"), std::string::npos) << place.text;
  // shard() blocks train (tests/engine/search/shard_block_test.cc has their law).
  Output blocks = Shardscope("train " + kSamples + "basic_blocks.yaml --steps 1 --no-record");
  EXPECT_EQ(blocks.code, 0) << blocks.text;
  EXPECT_NE(blocks.text.find("8 device(s) (in-process, auto: sharding_propagation)"),
            std::string::npos)
      << blocks.text;
}

TEST(Cli, TrainsLeNet5OnRealMnistAndReportsAccuracy) {
  Output o = Shardscope("train " + kSamples + "lenet5.yaml --data " + kMnist +
                        " --steps 30 --limit 512 --no-record");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("test accuracy:"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("step 30/30"), std::string::npos) << o.text;
}

// The correctness law from the command line: 4 in-process devices print the losses of one.
TEST(Cli, DistributedRunPrintsTheSingleDeviceLosses) {
  auto losses = [](const std::string& text) {
    std::vector<std::string> out;
    for (size_t p = text.find("loss "); p != std::string::npos; p = text.find("loss ", p + 1)) {
      out.push_back(text.substr(p, 11));
    }
    return out;
  };
  const std::string args = "train " + kSamples + "matmul3.yaml --data " + kMnist +
                           " --steps 8 --limit 256 --log-every 1 --no-record";
  Output one = Shardscope(args + " --ignore-parallel --devices 1");
  Output eight = Shardscope(args);  // the file's semi_auto strategies on 8 devices
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(eight.code, 0) << eight.text;
  EXPECT_NE(eight.text.find("8 device(s)"), std::string::npos) << eight.text;
  EXPECT_EQ(losses(one.text), losses(eight.text)) << one.text << "\n----\n" << eight.text;
  EXPECT_GE(losses(one.text).size(), 8u);
}

// A run leaves a run file that `inspect` reads back: status, every step, redistributions.
TEST(Cli, RecordsTheRunAndInspectReadsIt) {
  const std::string path = ::testing::TempDir() + "/cli_record_test.db";
  std::remove(path.c_str());
  Output train =
      Shardscope("train " + kSamples + "matmul_allgather.yaml --steps 12 --record " + path);
  ASSERT_EQ(train.code, 0) << train.text;
  EXPECT_NE(train.text.find("shardscope inspect " + path), std::string::npos) << train.text;
  Output again =
      Shardscope("train " + kSamples + "matmul_allgather.yaml --steps 1 --record " + path);
  EXPECT_EQ(again.code, 2) << "an existing run file must not be overwritten:\n" << again.text;
  Output inspect = Shardscope("inspect " + path + " --json");
  ASSERT_EQ(inspect.code, 0) << inspect.text;
  auto json = nlohmann::json::parse(inspect.text);
  EXPECT_EQ(json["run"]["status"], "completed") << inspect.text.substr(0, 2000);
  EXPECT_EQ(json["steps"].size(), 12u);
  // grad.matmul2.db is made in v's layout (a backward operator keeps its forward's splits).
  EXPECT_EQ(json["redistributions"].size(), 6u);
  Output text = Shardscope("inspect " + path);
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.text.find("matmul2 needs"), std::string::npos) << text.text;
  Output bad = Shardscope("inspect " + kSamples + "lenet5.yaml");
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_NE(bad.text.find("lenet5.yaml"), std::string::npos) << bad.text;
}

TEST(Cli, LayoutShowsSeed004NonContiguousRanks) {
  Output o = Shardscope("layout --mesh 2,2,2 --axes dp,sp,mp --shape 2,4 --layout \"mp,(sp,dp)\"");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("0      4      2      6"), std::string::npos) << o.text;
  Output j =
      Shardscope("layout --mesh 2,2,2 --axes dp,sp,mp --shape 2,4 --layout \"mp,(sp,dp)\" --json");
  ASSERT_EQ(j.code, 0);
  auto json = nlohmann::json::parse(j.text);
  EXPECT_EQ(json["ranks"][4]["offsets"], nlohmann::json::array({0, 1}));
}

TEST(Cli, RedistributePrintsAByteOptimalPlan) {
  Output o = Shardscope("redistribute --mesh 4 --axes dp --shape 8,8 --from dp,- --to -,- --json");
  ASSERT_EQ(o.code, 0) << o.text;
  auto json = nlohmann::json::parse(o.text);
  EXPECT_EQ(json["steps"].size(), 1u) << o.text;
  EXPECT_EQ(json["planned_bytes"], json["lower_bound_bytes"]) << o.text;
  Output text = Shardscope(
      "redistribute --mesh 2,4 --axes dp,mp --shape 8,8 --from \"dp,mp\" --to \"mp,dp\"");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_NE(text.text.find("lower bound"), std::string::npos) << text.text;
}

}  // namespace
