// The mapping table (engine/src/onnx/onnx_ops.cc) on PyTorch exports that use each mapped
// operator: the imported graph reproduces PyTorch's logits, holds the operators the mapping
// promises, and every mapped ONNX operator occurs in some file of tests/data/onnx.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <set>

#include "onnx_test_util.h"
#include "shardscope/onnx_import.h"

namespace shardscope {
namespace {

using onnx_test::Build;
using onnx_test::DataPath;
using onnx_test::ExpectTorchLogits;
using onnx_test::ReadBytes;

// LeNet-5: Conv with padding, Tanh, AveragePool (after PyTorch's zero Pad), Gemm.
TEST(OnnxOps, LeNetMatchesPyTorch) { ExpectTorchLogits("lenet"); }
// Split, Concat, Tanh, Sigmoid, Pow, Sqrt, Div by a tensor, Where, Neg, Reciprocal, Slice
// with a step, Expand, Gather of one index.
TEST(OnnxOps, ElementwiseAndSlicingMatchPyTorch) { ExpectTorchLogits("ops_mix"); }
// Strided convolutions and max pooling padded as PyTorch pads them, batch statistics,
// GlobalAveragePool.
TEST(OnnxOps, ResNetBlockMatchesPyTorch) { ExpectTorchLogits("resblock"); }
// RMSNorm, rotary embedding (cos and sin folded from Range), grouped-query attention
// (Expand), causal mask (Where on a folded comparison), SwiGLU, rank-4 MatMul.
TEST(OnnxOps, LlamaStyleDecoderMatchesPyTorch) { ExpectTorchLogits("decoder"); }

std::multiset<OpKind> Kinds(const ModelGraph& m) {
  std::multiset<OpKind> kinds;
  for (const Node& n : m.graph.nodes()) kinds.insert(n.op);
  return kinds;
}

TEST(OnnxOps, EachMappingBecomesItsOperators) {
  auto mix = Build("ops_mix.onnx", 2);
  ASSERT_TRUE(mix.ok()) << mix.status().message();
  const auto k = Kinds(*mix);
  for (OpKind op : {OpKind::kSplit, OpKind::kConcat, OpKind::kTanh, OpKind::kSigmoid, OpKind::kPow,
                    OpKind::kSqrt, OpKind::kDiv, OpKind::kWhere, OpKind::kSlice,
                    OpKind::kBroadcastTo, OpKind::kSub})
    EXPECT_TRUE(k.count(op)) << OpName(op);
  EXPECT_GE(k.count(OpKind::kScale), 2u);  // Neg, and Mul by 0.5

  auto res = Build("resblock.onnx", 2);
  ASSERT_TRUE(res.ok()) << res.status().message();
  const Graph& g = res->graph;
  const NodeId stem = g.FindNode("conv1.Conv");
  ASSERT_NE(stem, kNoNode);
  EXPECT_EQ(g.node(stem).attrs.padding, Padding::kSameLower);  // 7x7, stride 2, pads 3
  EXPECT_EQ(g.value(g.node(stem).outputs[0]).shape, (Shape{2, 8, 14, 14}));
  const NodeId pool = g.FindNode("maxpool.MaxPool");
  ASSERT_NE(pool, kNoNode);
  EXPECT_EQ(g.node(pool).attrs.padding, Padding::kSameLower);
  EXPECT_EQ(Kinds(*res).count(OpKind::kBatchNorm), 5u);  // bn1, the block's 3, downsample
  EXPECT_TRUE(Kinds(*res).count(OpKind::kReduceMean));

  auto misc = Build("misc.onnx", 2);
  ASSERT_TRUE(misc.ok()) << misc.status().message();
  const auto km = Kinds(*misc);
  for (OpKind op : {OpKind::kDropout, OpKind::kLogSoftmax, OpKind::kReduceSum, OpKind::kCast})
    EXPECT_TRUE(km.count(op)) << OpName(op);

  auto lenet = Build("lenet.onnx", 2);
  ASSERT_TRUE(lenet.ok()) << lenet.status().message();
  EXPECT_EQ(Kinds(*lenet).count(OpKind::kAveragePool2D), 2u);
}

// Every ONNX operator the importer maps or folds occurs in a test file or a sample (which
// onnx_samples_plan imports), so the tests exercise it.
TEST(OnnxOps, EveryMappedOperatorHasATestFile) {
  std::set<std::string> used;
  std::vector<std::filesystem::directory_entry> files;
  for (const std::string& dir :
       {DataPath(""), std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/onnx"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry);
  }
  for (const auto& entry : files) {
    if (entry.path().extension() != ".onnx") continue;
    onnx::ModelProto proto;
    if (!proto.ParseFromString(ReadBytes(entry.path().string()))) continue;
    for (const onnx::NodeProto& n : proto.graph().node()) used.insert(n.op_type());
  }
  for (const std::string& op : SupportedOnnxOps()) {
    EXPECT_TRUE(used.count(op)) << op << " is mapped but no test file or sample uses it";
  }
}

}  // namespace
}  // namespace shardscope
