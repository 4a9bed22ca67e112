// Tests of the operator vocabulary: names, arities, OpFromName.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "shardscope/ops.h"

namespace shardscope {
namespace {

TEST(OpTable, NameRoundTripForEveryKind) {
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    const char* name = OpName(op);
    ASSERT_NE(name, nullptr);
    ASSERT_GT(std::string(name).size(), 0u);
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    Result<OpKind> back = OpFromName(name);
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().message();
    EXPECT_EQ(*back, op) << name;
    EXPECT_TRUE(OpNumInputs(op) >= 1 || OpNumInputs(op) == kVariadic) << name;
    EXPECT_TRUE(OpNumOutputs(op) >= 1 || OpNumOutputs(op) == kVariadic) << name;
  }
  EXPECT_EQ(static_cast<int>(names.size()), kNumOps);
}

TEST(OpTable, KnownNamesAndArities) {
  EXPECT_STREQ(OpName(OpKind::kMatMul), "MatMul");
  EXPECT_STREQ(OpName(OpKind::kSoftmaxCrossEntropyWithLogits), "SoftmaxCrossEntropyWithLogits");
  EXPECT_STREQ(OpName(OpKind::kLayerNormGrad), "LayerNormGrad");
  EXPECT_EQ(OpNumInputs(OpKind::kMatMul), 2);
  EXPECT_EQ(OpNumOutputs(OpKind::kMatMul), 1);
  EXPECT_EQ(OpNumInputs(OpKind::kReLU), 1);
  EXPECT_EQ(OpNumInputs(OpKind::kSoftmaxCrossEntropyGrad), 3);
  EXPECT_EQ(OpNumInputs(OpKind::kLayerNorm), 3);
  EXPECT_EQ(OpNumOutputs(OpKind::kLayerNormGrad), 3);
  EXPECT_EQ(OpNumInputs(OpKind::kConcat), kVariadic);
  EXPECT_EQ(OpNumOutputs(OpKind::kSplit), kVariadic);
}

TEST(OpTable, UnknownNameListsKnownOnes) {
  Result<OpKind> r = OpFromName("MatMull");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("MatMull"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MatMul,"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LayerNormGrad"), std::string::npos) << msg;
  // Names are case-sensitive.
  EXPECT_FALSE(OpFromName("matmul").ok());
  EXPECT_FALSE(OpFromName("").ok());
}

}  // namespace
}  // namespace shardscope
