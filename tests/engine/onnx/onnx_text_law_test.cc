// An ONNX-exported decoder as a next-token model (tests/data/onnx/text_decoder.onnx, from
// make_models.py) on the GPL-3 as character-level data: the correctness law at 8 in-process
// devices, data-parallel and with Megatron's attention given by ONNX node name.
#include <gtest/gtest.h>

#include "../partition/token_law.h"

namespace shardscope {
namespace {

using namespace testing_law;

constexpr int64_t kBatch = 32;

Result<std::shared_ptr<const ModelFile>> Decoder(const std::string& parallel) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ModelFile mf,
      ParseModelText("import: text_decoder.onnx\nloss: sequence_cross_entropy\n" + parallel,
                     std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/onnx/text.yaml"));
  return std::make_shared<const ModelFile>(std::move(mf));
}

TEST(OnnxTextLaw, ImportedDecoderIsANextTokenModel) {
  auto mf = Decoder("");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  EXPECT_TRUE((*mf)->sequence_loss());
  EXPECT_EQ((*mf)->input_dtype(), DType::kI32);  // the file's int64 ids
  EXPECT_EQ((*mf)->example_shape(), (Shape{16}));
  EXPECT_EQ((*mf)->num_classes(), 80);
  // Without the sequence loss, logits [batch, 16, 80] are not a classifier's.
  auto plain = ParseModelText("import: text_decoder.onnx\n",
                              std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/onnx/text.yaml");
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("logits [batch, classes]"), std::string::npos)
      << plain.status().message();
}

TEST(OnnxTextLaw, DataParallelOnEightDevices) {
  auto mf = Decoder("");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto data = TextData(**mf, kBatch);
  ASSERT_TRUE(data.ok()) << data.status().message();
  Status st = CheckLaw(WithStrategies(*mf, kBatch, {}), *data, kBatch, 8);
  EXPECT_TRUE(st.ok()) << st.message();
}

// q, k, v by columns (4 heads, 2 key/value groups: 2 ways), the output projection by rows;
// propagation splits the attention between them by heads.
TEST(OnnxTextLaw, MegatronAttentionByNodeNameOnEightDevices) {
  std::string parallel = "parallel:\n  search: sharding_propagation\n  strategies:\n";
  for (const char* p : {"q_proj", "k_proj", "v_proj"})
    parallel += std::string("    /layers.0/self_attn/") + p + "/MatMul: ((4, 1), (1, 2))\n";
  parallel += "    /layers.0/self_attn/o_proj/MatMul: ((4, 2), (2, 1))\n";
  auto mf = Decoder(parallel);
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto data = TextData(**mf, kBatch);
  ASSERT_TRUE(data.ok()) << data.status().message();
  const BuildFn build = Searched(*mf, kBatch, 8);
  auto model = build();
  ASSERT_TRUE(model.ok()) << model.status().message();
  const NodeId scores = model->graph.FindNode("layers.0.self_attn.MatMul");
  ASSERT_NE(scores, kNoNode);
  EXPECT_EQ(model->graph.node(scores).annotations.in_strategy, "((4,2,1,1),(4,2,1,1))");
  Status st = CheckLaw(build, *data, kBatch, 8);
  EXPECT_TRUE(st.ok()) << st.message();
}

}  // namespace
}  // namespace shardscope
