// Sharding rules of the shape operators on attention's layouts: a split of a merged
// heads x head-size dimension is a split of the heads (one letter labels both), and a
// transpose or grouped-query attention's repeat of key/value groups keeps it.
#include <gtest/gtest.h>

#include "shardscope/builder.h"
#include "shardscope/sharding_rule.h"

namespace shardscope {
namespace {

// The signature of the operator that made `v`.
ShardingSignature SignatureOf(const Graph& g, ValueId v) {
  auto sig = GetShardingSignature(g, g.value(v).producer);
  EXPECT_TRUE(sig.ok()) << sig.status().message();
  return sig.ok() ? *sig : ShardingSignature{};
}

bool Whole(const ShardingSignature& s, char c) { return s.whole.find(c) != std::string::npos; }

ValueId Reshape(Builder& b, const std::string& name, ValueId x, Shape shape) {
  OpAttrs a;
  a.shape = std::move(shape);
  return b.Op(OpKind::kReshape, name, {x}, a);
}

TEST(ShardingRule, MergedHeadsDimensionSplitsTheHeads) {
  Graph g;
  Builder b(&g);
  const ValueId x = b.Input("x", {2, 16, 12 * 64});
  const ValueId split = Reshape(b, "split", x, {2, 16, 12, 64});    // [b,s,h*d] -> [b,s,h,d]
  const ValueId merged = Reshape(b, "merge", split, {2, 16, 768});  // and back
  ASSERT_TRUE(b.ok()) << b.status().message();
  const ShardingSignature s = SignatureOf(g, split);
  EXPECT_EQ(s.inputs[0].substr(0, 2), s.outputs[0].substr(0, 2));  // batch, sequence
  EXPECT_EQ(s.inputs[0][2], s.outputs[0][2]);                      // h*d's split is h's
  EXPECT_FALSE(Whole(s, s.outputs[0][2]));
  EXPECT_TRUE(Whole(s, s.outputs[0][3]));  // head size: a split would not be contiguous
  const ShardingSignature m = SignatureOf(g, merged);
  EXPECT_EQ(m.inputs[0][2], m.outputs[0][2]);  // h's split is h*d's
  EXPECT_TRUE(Whole(m, m.inputs[0][3]));
}

TEST(ShardingRule, TransposeCarriesTheHeads) {
  Graph g;
  Builder b(&g);
  const ValueId x = b.Input("x", {2, 16, 12, 64});
  OpAttrs a;
  a.axes = {0, 2, 3, 1};  // [b,s,h,d] -> [b,h,d,s]: keys for q k^T
  const ValueId y = b.Op(OpKind::kTranspose, "t", {x}, a);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const ShardingSignature s = SignatureOf(g, y);
  EXPECT_EQ(s.outputs[0],
            std::string({s.inputs[0][0], s.inputs[0][2], s.inputs[0][3], s.inputs[0][1]}));
  EXPECT_TRUE(s.whole.empty());
}

// repeat_kv: [b,kv,t,d] -> [b,kv,1,t,d] -> [b,kv,rep,t,d] -> [b,kv*rep,t,d]: a split of the
// key/value groups is a split of the heads that read them.
TEST(ShardingRule, GroupedQueryRepeatCarriesKeyValueGroupsToHeads) {
  Graph g;
  Builder b(&g);
  const ValueId k = b.Input("k", {2, 8, 16, 64});
  OpAttrs unsqueeze;
  unsqueeze.axes = {2};
  const ValueId u = b.Op(OpKind::kUnsqueeze, "unsqueeze", {k}, unsqueeze);
  OpAttrs expand;
  expand.shape = {2, 8, 4, 16, 64};
  const ValueId e = b.Op(OpKind::kBroadcastTo, "expand", {u}, expand);
  const ValueId heads = Reshape(b, "heads", e, {2, 32, 16, 64});
  ASSERT_TRUE(b.ok()) << b.status().message();
  const ShardingSignature su = SignatureOf(g, u), se = SignatureOf(g, e),
                          sh = SignatureOf(g, heads);
  EXPECT_EQ(su.inputs[0][1], su.outputs[0][1]);
  EXPECT_EQ(se.inputs[0][1], se.outputs[0][1]);
  EXPECT_FALSE(Whole(se, se.outputs[0][1]));
  EXPECT_EQ(sh.inputs[0][1], sh.outputs[0][1]);  // kv's split is the heads'
  EXPECT_TRUE(Whole(sh, sh.inputs[0][2]));       // the repeat stays whole
}

// Attention's batched products keep batch and heads letters on every operand.
TEST(ShardingRule, BatchedMatMulKeepsBatchAndHeads) {
  Graph g;
  Builder b(&g);
  const ValueId q = b.Input("q", {2, 12, 16, 64});
  const ValueId kt = b.Input("kt", {2, 12, 64, 16});
  const ValueId scores = b.Op(OpKind::kMatMul, "scores", {q, kt}, {});
  ASSERT_TRUE(b.ok()) << b.status().message();
  const ShardingSignature s = SignatureOf(g, scores);
  EXPECT_EQ(s.inputs[0].substr(0, 2), s.outputs[0].substr(0, 2));
  EXPECT_EQ(s.inputs[1].substr(0, 2), s.outputs[0].substr(0, 2));
  EXPECT_TRUE(s.whole.empty());
}

}  // namespace
}  // namespace shardscope
