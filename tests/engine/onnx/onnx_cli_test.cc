// `shardscope train/plan model.onnx` from the command line: the extension selects the
// importer; a bad file exits 2 naming the node.
#include <gtest/gtest.h>

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
  EXPECT_NE(out.text.substr(up0, 300).find("dynamic_programming: exact"), std::string::npos);
  EXPECT_NE(out.text.substr(up1, 200).find("outside shard blocks"), std::string::npos)
      << out.text.substr(up1, 200);
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
