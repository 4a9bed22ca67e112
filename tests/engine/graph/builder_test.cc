// Tests of Builder: name scopes, unique operator names, sticky errors, annotations.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardscope/builder.h"
#include "shardscope/checked_math.h"

namespace shardscope {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Builder, ScopesNestIntoDottedNames) {
  Graph g;
  Builder b(&g);
  EXPECT_EQ(b.ScopedName("matmul"), "matmul");
  ValueId x = b.Input("x", {4, 8});
  b.PushScope("block1");
  b.PushScope("dense1");
  EXPECT_EQ(b.ScopedName("matmul"), "block1.dense1.matmul");
  ValueId w = b.Parameter("weight", {8, 3}, {InitSpec::kNormal, 0.1f});
  ValueId y = b.Op(OpKind::kMatMul, "matmul", {x, w});
  b.PopScope();
  ValueId r = b.Op(OpKind::kReLU, "relu", {y});
  b.PopScope();
  ValueId top = b.Op(OpKind::kReLU, "out", {r});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(g.value(w).name, "block1.dense1.weight");
  EXPECT_EQ(g.value(y).name, "block1.dense1.matmul");
  EXPECT_NE(g.FindNode("block1.dense1.matmul"), kNoNode);
  EXPECT_EQ(g.value(r).name, "block1.relu");
  EXPECT_EQ(g.value(top).name, "out");
  // Inputs and labels are not scoped.
  EXPECT_EQ(g.value(x).name, "x");
  EXPECT_EQ(g.value(y).shape, (Shape{4, 3}));
}

TEST(Builder, ReusedNamesGetNumberedSuffixes) {
  Graph g;
  Builder b(&g);
  ValueId x = b.Input("x", {2, 2});
  ValueId r0 = b.Op(OpKind::kReLU, "relu", {x});
  ValueId r1 = b.Op(OpKind::kReLU, "relu", {r0});
  ValueId r2 = b.Op(OpKind::kReLU, "relu", {r1});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(g.node(0).name, "relu");
  EXPECT_EQ(g.node(1).name, "relu_1");
  EXPECT_EQ(g.node(2).name, "relu_2");
  EXPECT_EQ(g.value(r2).name, "relu_2");
  // Inside a scope the suffix goes on the scoped name.
  b.PushScope("s");
  b.Op(OpKind::kReLU, "relu", {x});
  b.Op(OpKind::kReLU, "relu", {x});
  b.PopScope();
  EXPECT_EQ(g.node(3).name, "s.relu");
  EXPECT_EQ(g.node(4).name, "s.relu_1");
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Builder, SuffixSkipsNamesTakenByValues) {
  Graph g;
  Builder b(&g);
  ValueId x = b.Input("x", {2});
  b.Input("relu_1", {2});  // occupies the first suffix
  b.Op(OpKind::kReLU, "relu", {x});
  b.Op(OpKind::kReLU, "relu", {x});
  b.Op(OpKind::kReLU, "x", {x});  // an operator named like an input
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(g.node(0).name, "relu");
  EXPECT_EQ(g.node(1).name, "relu_2");
  EXPECT_EQ(g.node(2).name, "x_1");
}

TEST(Builder, ErrorsAreStickyAndKeepTheFirstMessage) {
  Graph g;
  Builder b(&g);
  ValueId x = b.Input("x", {32, 784});
  ValueId w = b.Parameter("w", {10, 5}, {});
  ASSERT_TRUE(b.ok());
  ValueId bad = b.Op(OpKind::kMatMul, "dense1.matmul", {x, w});  // [32,784]·[10,5]
  EXPECT_EQ(bad, kNoValue);
  ASSERT_FALSE(b.ok());
  const std::string first = b.status().message();
  EXPECT_TRUE(Contains(first, "MatMul")) << first;
  EXPECT_TRUE(Contains(first, "[32, 784]")) << first;
  EXPECT_TRUE(Contains(first, "[10, 5]")) << first;

  const int nodes = g.num_nodes(), values = g.num_values();
  // Every later call does nothing and returns kNoValue, even ones that would succeed.
  EXPECT_EQ(b.Op(OpKind::kReLU, "relu", {x}), kNoValue);
  EXPECT_EQ(b.Input("x2", {1}), kNoValue);
  EXPECT_EQ(b.Label("y", {32}), kNoValue);
  EXPECT_EQ(b.Parameter("p", {3}, {}), kNoValue);
  EXPECT_TRUE(b.OpAll(OpKind::kReLU, "relu", {x}).empty());
  // A second failure does not replace the first.
  EXPECT_EQ(b.Op(OpKind::kReLU, "relu", {x, x}), kNoValue);
  b.Fail(Status::Internal("later failure"));
  EXPECT_EQ(g.num_nodes(), nodes);
  EXPECT_EQ(g.num_values(), values);
  EXPECT_EQ(b.status().message(), first);
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidInput);
}

TEST(Builder, DuplicateInputOrParameterNameFails) {
  {
    Graph g;
    Builder b(&g);
    b.Input("x", {2});
    EXPECT_EQ(b.Input("x", {3}), kNoValue);
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(Contains(b.status().message(), "'x'")) << b.status().message();
    EXPECT_TRUE(Contains(b.status().message(), "already used")) << b.status().message();
  }
  {
    Graph g;
    Builder b(&g);
    b.PushScope("dense1");
    b.Parameter("weight", {2, 2}, {});
    EXPECT_EQ(b.Parameter("weight", {2, 2}, {}), kNoValue);
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(Contains(b.status().message(), "dense1.weight")) << b.status().message();
  }
  {
    Graph g;
    Builder b(&g);
    b.Label("y", {4});
    EXPECT_EQ(b.Label("y", {4}), kNoValue);
    EXPECT_FALSE(b.ok());
  }
}

TEST(Builder, UndefinedInputAndBadParameterShapeFail) {
  {
    Graph g;
    Builder b(&g);
    EXPECT_EQ(b.Op(OpKind::kReLU, "relu", {kNoValue}), kNoValue);
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(Contains(b.status().message(), "relu")) << b.status().message();
  }
  {
    Graph g;
    Builder b(&g);
    EXPECT_EQ(b.Parameter("w", {3, 0}, {}), kNoValue);
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(Contains(b.status().message(), "[3, 0]")) << b.status().message();
  }
}

TEST(Builder, FailKeepsOnlyTheFirstAndIgnoresOk) {
  Graph g;
  Builder b(&g);
  b.Fail(Status::Ok());
  EXPECT_TRUE(b.ok());
  b.Fail(Status::NotFound("first"));
  b.Fail(Status::Invalid("second"));
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(b.status().message(), "first");
}

TEST(Builder, AnnotationsAndDefaultWorker) {
  Graph g;
  Builder b(&g);
  ValueId x = b.Input("x", {4, 4});
  OpAnnotations ann;
  ann.in_strategy = "((2,1),)";
  b.set_default_worker(3);
  b.Op(OpKind::kReLU, "a", {x}, {}, ann);
  OpAnnotations pinned;
  pinned.worker = 1;
  b.Op(OpKind::kReLU, "b", {x}, {}, pinned);
  b.set_default_worker(-1);
  b.Op(OpKind::kReLU, "c", {x});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(g.node(0).annotations.in_strategy, "((2,1),)");
  EXPECT_EQ(g.node(0).annotations.worker, 3);  // takes the default
  EXPECT_EQ(g.node(1).annotations.worker, 1);  // its own placement wins
  EXPECT_EQ(g.node(2).annotations.worker, -1);
  EXPECT_TRUE(g.node(2).annotations.empty());
}

TEST(Builder, OpAllReturnsEveryOutput) {
  Graph g;
  Builder b(&g);
  ValueId dy = b.Input("dy", {2, 5});
  ValueId x = b.Input("x", {2, 5});
  ValueId gamma = b.Parameter("gamma", {5}, {InitSpec::kOnes});
  b.PushScope("ln");
  std::vector<ValueId> outs = b.OpAll(OpKind::kLayerNormGrad, "grad", {dy, x, gamma});
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(g.value(outs[0]).name, "ln.grad:0");
  EXPECT_EQ(g.value(outs[2]).name, "ln.grad:2");
  // Op returns the first output only.
  ValueId first = b.Op(OpKind::kLayerNormGrad, "grad", {dy, x, gamma});
  EXPECT_EQ(g.value(first).name, "ln.grad_1:0");
}

// Sizes are checked where values are made, so every count read from a graph fits.
TEST(Builder, RefusesValuesWhoseSizeDoesNotFit) {
  {
    Graph g;
    Builder b(&g);
    b.Parameter("big", {4294967296, 4294967296}, {InitSpec::kNormal, 0.1f});
    EXPECT_FALSE(b.ok());
    EXPECT_TRUE(Contains(b.status().message(), "parameter 'big'")) << b.status().message();
    EXPECT_TRUE(Contains(b.status().message(), "2^64 elements")) << b.status().message();
  }
  {
    // Each operand fits; the product's output (2^80 elements) does not.
    Graph g;
    Builder b(&g);
    ValueId x = b.Input("x", {int64_t{1} << 40, 1});
    ValueId w = b.Parameter("w", {1, int64_t{1} << 40}, {InitSpec::kNormal, 0.1f});
    b.Op(OpKind::kMatMul, "outer", {x, w});
    EXPECT_FALSE(b.ok());
    EXPECT_TRUE(Contains(b.status().message(), "operator 'outer'")) << b.status().message();
    EXPECT_TRUE(Contains(b.status().message(), "does not fit in 63 bits")) << b.status().message();
  }
  {
    // Values that fit one by one but not together (memory sums stay in 63 bits).
    Graph g;
    Builder b(&g);
    ValueId x = b.Input("x", {int64_t{1} << 53});  // 2^55 bytes
    ValueId y = b.Op(OpKind::kReLU, "relu", {x});
    EXPECT_TRUE(b.ok()) << b.status().message();
    b.Op(OpKind::kReLU, "relu2", {y});
    EXPECT_FALSE(b.ok());
    EXPECT_TRUE(Contains(b.status().message(), "together")) << b.status().message();
    EXPECT_LE(g.total_value_bytes(), kMaxTensorBytes);
  }
}

}  // namespace
}  // namespace shardscope
