// What a run says about itself (issue 22): the data it trained on (first console line and the
// run file), refusing data it cannot find, run.search naming the search used, --overwrite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_shardscope.h"
#include "shardscope/store/reader.h"

namespace {

namespace fs = std::filesystem;
using shardscope_cli_test::Shardscope;

const std::string kSamples = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/";
const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

class HonestRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("honest_run_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    unsetenv("SHARDSCOPE_DATA");
  }
  void TearDown() override {
    unsetenv("SHARDSCOPE_DATASETS");
    fs::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static shardscope::store::RunInfo Run(const std::string& path) {
    auto reader = shardscope::store::RunReader::Open(path);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    auto run = (*reader)->Run();
    EXPECT_TRUE(run.ok());
    return *run;
  }
  fs::path dir_;
};

TEST_F(HonestRun, FirstLineAndRunFileNameTheData) {
  // No --data: mnist (the model file's data.dataset) from the search path.
  setenv("SHARDSCOPE_DATASETS", SHARDSCOPE_DATASETS_DIR, 1);
  const std::string run = Path("lenet.db");
  auto out =
      Shardscope("train " + kSamples + "lenet5.yaml --steps 1 --limit 64 --record " + run, false);
  ASSERT_EQ(out.code, 0) << out.text;
  const std::string first = out.text.substr(0, out.text.find('\n'));
  EXPECT_EQ(first.rfind("data: mnist from " + kMnist + " (search path), sha256 ", 0), 0) << first;
  EXPECT_NE(first.find("(the published mnist files)"), std::string::npos) << first;
  const nlohmann::json config = nlohmann::json::parse(Run(run).config_json);
  EXPECT_EQ(config["data"]["dataset"], "mnist");
  EXPECT_EQ(config["data"]["dir"], kMnist);
  EXPECT_EQ(config["data"]["identified"], "mnist");
  const std::string sha = config["data"]["sha256"];
  EXPECT_EQ(sha.size(), 64u);
  EXPECT_NE(first.find(sha.substr(0, 16)), std::string::npos) << first;
}

TEST_F(HonestRun, MissingDataStopsNamingWhereItLooked) {
  setenv("SHARDSCOPE_DATASETS", dir_.c_str(), 1);  // an empty root: no mnist/ in it
  auto out = Shardscope("train " + kSamples + "lenet5.yaml --steps 1 --no-record");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("data set mnist"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find(Path("mnist")), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find("loss"), std::string::npos) << out.text;  // nothing trained
  // Another data set's files under the model's name are refused too.
  auto fashion = Shardscope("train " + kSamples + "lenet5.yaml --steps 1 --no-record --data " +
                            std::string(SHARDSCOPE_DATASETS_DIR) + "/fashion-mnist");
  EXPECT_EQ(fashion.code, 2) << fashion.text;
  EXPECT_NE(fashion.text.find("holds fashion-mnist"), std::string::npos) << fashion.text;
}

TEST_F(HonestRun, RunSearchIsTheSearchUsed) {
  // ffn.yaml: mode auto, search sharding_propagation.
  const std::string run = Path("ffn.db");
  auto out = Shardscope("train " + kSamples + "ffn.yaml --steps 1 --limit 256 --data " + kMnist +
                        " --record " + run);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(Run(run).search, "sharding_propagation");
  const std::string dp = Path("ffn_dp.db");
  out = Shardscope("train " + kSamples + "ffn.yaml --steps 1 --limit 256 --data " + kMnist +
                   " --search dynamic_programming --record " + dp);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(Run(dp).search, "dynamic_programming");
}

TEST_F(HonestRun, OverwriteReplacesARunFileOnlyWhenAsked) {
  const std::string run = Path("twice.db");
  const std::string train = "train " + kSamples + "matmul_relu.yaml --limit 256 --record " + run;
  ASSERT_EQ(Shardscope(train + " --steps 2").code, 0);
  auto refused = Shardscope(train + " --steps 1");
  EXPECT_EQ(refused.code, 2) << refused.text;
  EXPECT_NE(refused.text.find("--overwrite"), std::string::npos) << refused.text;
  EXPECT_NE(Run(run).command_line.find("--steps 2"), std::string::npos);  // the old run stays
  auto replaced = Shardscope(train + " --steps 1 --overwrite");
  ASSERT_EQ(replaced.code, 0) << replaced.text;
  EXPECT_NE(Run(run).command_line.find("--steps 1 --overwrite"), std::string::npos);
  // plan --record too.
  const std::string plan = "plan " + kSamples + "matmul_relu.yaml --record " + run;
  EXPECT_EQ(Shardscope(plan).code, 2);
  EXPECT_EQ(Shardscope(plan + " --overwrite").code, 0);
  EXPECT_EQ(Run(run).mode, "plan");
}

}  // namespace
