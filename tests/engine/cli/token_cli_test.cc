// `shardscope train` on token data: samples/models/gpt.yaml learns the GPL-3 as a
// character-level language model, its parallel section's searched plan runs, and text data
// sets fail clearly (file missing, too short, vocabulary too large, a model that is not a
// next-token model).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "run_shardscope.h"

namespace {

using shardscope_cli_test::Shardscope;

const std::string kGpt = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/gpt.yaml";
const std::string kText = "/usr/share/common-licenses/GPL-3";

// The losses of a run with --log-every 1, in step order ("step 3/5  loss 3.7633").
std::vector<double> Losses(const std::string& text) {
  std::vector<double> out;
  for (size_t at = text.find("  loss "); at != std::string::npos; at = text.find("  loss ", at + 1))
    out.push_back(std::atof(text.c_str() + at + 7));
  return out;
}

std::string TempFile(const std::string& name, const std::string& bytes) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("shardscope_token_" + name)).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(TokenCli, GptLossFallsWellBelowTheUniformBaseline) {
  std::ifstream in(kText, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string bytes = text.str();
  const double uniform = std::log(std::set<char>(bytes.begin(), bytes.end()).size());
  const auto out = Shardscope("train " + kGpt + " --data text:" + kText +
                              " --ignore-parallel --devices 1 --steps 120 --log-every 1 "
                              "--no-record");
  ASSERT_EQ(out.code, 0) << out.text;
  const std::vector<double> losses = Losses(out.text);
  ASSERT_EQ(losses.size(), 120u) << out.text;
  EXPECT_GT(losses.front(), 0.9 * uniform);  // starts near ln(vocab)
  double last = 0;
  for (size_t i = losses.size() - 10; i < losses.size(); ++i) last += losses[i] / 10;
  EXPECT_LT(last, 0.7 * uniform) << "uniform baseline " << uniform << "\n" << out.text;
}

TEST(TokenCli, SearchedPlanOfTheParallelSectionRuns) {
  // The file's parallel section: Megatron strategies, sharding propagation, 8 devices.
  const auto out = Shardscope("train " + kGpt + " --steps 3 --log-every 1 --no-record");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("8 device(s) (in-process, auto: sharding_propagation)"),
            std::string::npos)
      << out.text;
  EXPECT_EQ(Losses(out.text).size(), 3u) << out.text;
  EXPECT_NE(out.text.find("test accuracy"), std::string::npos) << out.text;
}

TEST(TokenCli, TextDataErrorsExitTwoNamingTheFile) {
  const auto missing = Shardscope("train " + kGpt + " --data text:/nonexistent/corpus.txt");
  EXPECT_EQ(missing.code, 2) << missing.text;
  EXPECT_NE(missing.text.find("/nonexistent/corpus.txt: cannot open"), std::string::npos)
      << missing.text;

  const std::string tiny = TempFile("tiny.txt", "too short");
  const auto short_text = Shardscope("train " + kGpt + " --data text:" + tiny);
  EXPECT_EQ(short_text.code, 2) << short_text.text;
  EXPECT_NE(short_text.text.find(tiny + ": 9 bytes are too short for one sequence of 32"),
            std::string::npos)
      << short_text.text;

  std::string all;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string wide = TempFile("wide.bin", all);
  const auto vocab = Shardscope("train " + kGpt + " --data text:" + wide);
  EXPECT_EQ(vocab.code, 2) << vocab.text;
  EXPECT_NE(vocab.text.find("256 distinct bytes, more than the model's 80 token ids"),
            std::string::npos)
      << vocab.text;

  const auto image_model = Shardscope("train " + std::string(SHARDSCOPE_SOURCE_DIR) +
                                      "/samples/models/ffn.yaml --data text:" + kText);
  EXPECT_EQ(image_model.code, 2) << image_model.text;
  EXPECT_NE(image_model.text.find("is not one"), std::string::npos) << image_model.text;
  std::filesystem::remove(tiny);
  std::filesystem::remove(wide);
}

TEST(TokenCli, HelpTeachesTextData) {
  const auto out = Shardscope("train --help");
  EXPECT_EQ(out.code, 0);
  EXPECT_NE(out.text.find("--data text:FILE"), std::string::npos) << out.text;
}

}  // namespace
