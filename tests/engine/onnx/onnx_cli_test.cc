// `shardscope train/plan model.onnx` from the command line: the extension selects the
// importer; a bad file exits 2 naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <vector>

#include "run_shardscope.h"

namespace {

using shardscope_cli_test::Shardscope;

std::string Data(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/onnx/" + name;
}

const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

TEST(OnnxCli, TrainsAnMlpExportedFromPyTorch) {
  auto out = Shardscope("train " + Data("mlp.onnx") + " --data " + kMnist +
                        " --devices 2 --steps 40 --batch 64 --lr 0.05 --limit 4000 --no-record");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("training mlp: 50890 parameters, 2 device(s)"), std::string::npos)
      << out.text;
  // The file's (PyTorch-initialised) weights after 40 steps: far above chance.
  const size_t at = out.text.find("test accuracy: ");
  ASSERT_NE(at, std::string::npos) << out.text;
  EXPECT_GT(std::stod(out.text.substr(at + 15)), 0.6) << out.text;
}

// LeNet-5 and the 2-layer Llama-style decoder (MNIST's rows as tokens), from PyTorch's
// weights: 60 steps lift both far above chance (0.1).
TEST(OnnxCli, TrainsLeNetAndADecoderExportedFromPyTorch) {
  for (const char* file : {"lenet.onnx", "decoder.onnx"}) {
    auto out = Shardscope("train " + Data(file) + " --data " + kMnist +
                          " --devices 4 --steps 60 --batch 64 --lr 0.05 --limit 2000 --no-record");
    ASSERT_EQ(out.code, 0) << out.text;
    const size_t at = out.text.find("test accuracy: ");
    ASSERT_NE(at, std::string::npos) << out.text;
    EXPECT_GT(std::stod(out.text.substr(at + 15)), 0.4) << file << "\n" << out.text;
  }
}

// The exported Llama-style decoder over token ids learns the GPL-3 as a character-level
// language model: `train FILE.onnx --data text:FILE` gives it the per-position loss.
TEST(OnnxCli, TrainsAnExportedDecoderOnText) {
  const std::string text = "/usr/share/common-licenses/GPL-3";
  std::ifstream in(text, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const double uniform = std::log(std::set<char>(bytes.begin(), bytes.end()).size());
  auto out = Shardscope("train " + Data("text_decoder.onnx") + " --data text:" + text +
                        " --devices 1 --steps 150 --lr 0.05 --log-every 1 --no-record");
  ASSERT_EQ(out.code, 0) << out.text;
  std::vector<double> losses;
  for (size_t at = out.text.find("  loss "); at != std::string::npos;
       at = out.text.find("  loss ", at + 1))
    losses.push_back(std::atof(out.text.c_str() + at + 7));
  ASSERT_EQ(losses.size(), 150u) << out.text;
  double last = 0;
  for (size_t i = losses.size() - 10; i < losses.size(); ++i) last += losses[i] / 10;
  EXPECT_LT(last, 0.7 * uniform) << "uniform baseline " << uniform << "\n" << out.text;
  // A classifier is not a next-token model: refused, saying what text data needs.
  auto mlp = Shardscope("train " + Data("mlp.onnx") + " --data text:" + text + " --no-record");
  EXPECT_EQ(mlp.code, 2) << mlp.text;
  EXPECT_NE(mlp.text.find("trains next-token models (ids [batch, positions]"), std::string::npos)
      << mlp.text;
}

TEST(OnnxCli, PlansWithoutWeights) {
  auto out = Shardscope("plan " + Data("mlp_view.onnx") +
                        " --devices 8 --batch 64 --search dynamic_programming");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("layer.0.up.Gemm"), std::string::npos) << out.text;
  auto noparams = Shardscope("plan " + Data("mlp_noparams.onnx") + " --devices 4");
  EXPECT_EQ(noparams.code, 0) << noparams.text;
}

TEST(OnnxCli, ModelFileImportsAndShardsAScope) {
  auto out = Shardscope("plan " + Data("mlp_view_shard.yaml") + " --json");
  ASSERT_EQ(out.code, 0) << out.text;
  // The strategy given by ONNX node name, the block by scope, the rest data-parallel.
  EXPECT_NE(out.text.find("\"provenance\": \"user: ((8, 1), (1, 1))\""), std::string::npos)
      << out.text;
  const size_t up0 = out.text.find("\"name\": \"layer.0.up.Gemm\"");
  const size_t up1 = out.text.find("\"name\": \"layer.1.up.Gemm\"");
  ASSERT_NE(up0, std::string::npos);
  ASSERT_NE(up1, std::string::npos);
  EXPECT_NE(out.text.substr(up0, 300).find("dynamic_programming: optimum of the pairwise"),
            std::string::npos);
  EXPECT_NE(out.text.substr(up1, 200).find("outside shard blocks"), std::string::npos)
      << out.text.substr(up1, 200);
}

std::string Sample(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/onnx/" + name;
}

// The strategy `plan --json` gives operator `name`, e.g. "((2,1),(1,4))".
std::string StrategyOf(const std::string& json, const std::string& name) {
  const size_t at = json.find("\"name\": \"" + name + "\",");
  if (at == std::string::npos) return "";
  const std::string key = "\"strategy\": \"";
  const size_t s = json.find(key, at) + key.size();
  return json.substr(s, json.find('"', s) - s);
}

// The weight [K, N] of an MLP's first projection split by columns (N), the second's by
// rows (K), the same number of ways: Megatron's MLP, with the rest of the devices on the
// batch. At 8 devices and batch 8 the exact search finds it in both decoders.
void ExpectColumnThenRow(const std::string& file, const std::string& first,
                         const std::string& second) {
  auto out = Shardscope("plan " + Sample(file) +
                        " --devices 8 --batch 8 --search dynamic_programming --json");
  ASSERT_EQ(out.code, 0) << out.text;
  const std::string a = StrategyOf(out.text, first), b = StrategyOf(out.text, second);
  int ma = 0, ka = 0, kb = 0, na = 0, mb = 0, k2 = 0, n2 = 0, kk = 0;
  ASSERT_EQ(std::sscanf(a.c_str(), "((%d,%d),(%d,%d))", &ma, &ka, &kb, &na), 4) << a;
  ASSERT_EQ(std::sscanf(b.c_str(), "((%d,%d),(%d,%d))", &mb, &k2, &kk, &n2), 4) << b;
  EXPECT_EQ(ka, 1) << first << " " << a;  // column split: no partial sums
  EXPECT_GT(na, 1) << first << " " << a;
  EXPECT_EQ(k2, na) << second << " " << b;  // row split by the same factor
  EXPECT_EQ(n2, 1) << second << " " << b;
  EXPECT_EQ(ma, mb) << a << " " << b;  // the same data-parallel factor
}

TEST(OnnxCli, SearchSplitsDecoderMlpsByColumnsThenRows) {
  ExpectColumnThenRow("gpt2.onnx", "h.0.mlp.fc.MatMul", "h.0.mlp.proj.MatMul");
  ExpectColumnThenRow("llama_small.onnx", "layers.0.mlp.up_proj.MatMul",
                      "layers.0.mlp.down_proj.MatMul");
}

TEST(OnnxCli, BadFilesExitTwoNamingTheNode) {
  auto unknown = Shardscope("plan " + Data("unknown_op.onnx"));
  EXPECT_EQ(unknown.code, 2) << unknown.text;
  EXPECT_NE(unknown.text.find("node '/head/TopK' (TopK)"), std::string::npos) << unknown.text;
  auto shapes = Shardscope("train " + Data("bad_shapes.onnx") + " --steps 1 --no-record");
  EXPECT_EQ(shapes.code, 2) << shapes.text;
  EXPECT_NE(shapes.text.find("/fc/MatMul"), std::string::npos) << shapes.text;
  auto opset = Shardscope("plan " + Data("bad_opset.onnx"));
  EXPECT_EQ(opset.code, 2) << opset.text;
  auto missing = Shardscope("plan " + Data("missing.onnx"));
  EXPECT_EQ(missing.code, 2) << missing.text;
}

}  // namespace
