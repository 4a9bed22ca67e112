// ResolveDataset: the named data set or a refusal naming where it looked; never another set.
#include "shardscope/dataset_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "shardscope/base/sha256.h"

namespace shardscope {
namespace {

const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";
const std::string kFashion = std::string(SHARDSCOPE_DATASETS_DIR) + "/fashion-mnist";

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(ResolveDataset, NamesTheDirectoryAndHashesTheFiles) {
  ScopedEnv no_env("SHARDSCOPE_DATA", "");
  auto src = ResolveDataset("mnist", kMnist, "");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src->dir, kMnist);
  EXPECT_EQ(src->found_by, "--data");
  EXPECT_EQ(src->identified, "mnist");
  // The hash over the four digests that ../shared/datasets/README.md publishes.
  Sha256 expected;
  for (const char* digest : {"440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
                             "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
                             "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
                             "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"})
    expected.Update(std::string(digest));
  EXPECT_EQ(src->sha256, expected.HexDigest());
  EXPECT_NE(src->Describe().find("mnist from " + kMnist + " (--data), sha256 " +
                                 src->sha256.substr(0, 16)),
            std::string::npos)
      << src->Describe();
}

TEST(ResolveDataset, AnotherKnownDataSetIsRefused) {
  auto src = ResolveDataset("mnist", kFashion, "");
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(src.status().message().find("holds fashion-mnist"), std::string::npos)
      << src.status().message();
  auto file_dir = ResolveDataset("fashion-mnist", "", kMnist);  // data.dir
  ASSERT_FALSE(file_dir.ok());
  EXPECT_NE(file_dir.status().message().find("(data.dir) holds mnist"), std::string::npos)
      << file_dir.status().message();
}

TEST(ResolveDataset, SearchPathFindsOnlyTheNamedSet) {
  ScopedEnv no_env("SHARDSCOPE_DATA", "");
  ScopedEnv root("SHARDSCOPE_DATASETS", SHARDSCOPE_DATASETS_DIR);
  auto mnist = ResolveDataset("mnist", "", "");
  ASSERT_TRUE(mnist.ok()) << mnist.status().message();
  EXPECT_EQ(mnist->dir, kMnist);
  EXPECT_EQ(mnist->found_by, "search path");
  auto fashion = ResolveDataset("fashion-mnist", "", "");
  ASSERT_TRUE(fashion.ok()) << fashion.status().message();
  EXPECT_EQ(fashion->identified, "fashion-mnist");
  EXPECT_NE(fashion->sha256, mnist->sha256);
}

TEST(ResolveDataset, MissingSetSaysWhereItLooked) {
  ScopedEnv no_env("SHARDSCOPE_DATA", "");
  const auto empty = std::filesystem::temp_directory_path() / "dataset_source_test_empty";
  std::filesystem::create_directories(empty);
  ScopedEnv root("SHARDSCOPE_DATASETS", empty.string());
  auto src = ResolveDataset("mnist", "", "");
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().code(), StatusCode::kNotFound);
  const std::string& m = src.status().message();
  EXPECT_NE(m.find("data set mnist"), std::string::npos) << m;
  EXPECT_NE(m.find((empty / "mnist").string()), std::string::npos) << m;
  EXPECT_NE(m.find("--data DIR"), std::string::npos) << m;
  std::filesystem::remove_all(empty);
}

}  // namespace
}  // namespace shardscope
