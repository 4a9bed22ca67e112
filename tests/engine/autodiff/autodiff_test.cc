// Tests of BuildBackward: summed gradients of shared values, naming and provenance of the
// backward operators, values that do not affect the loss, and refused inputs.
// (Each operator's own gradient rule is checked in tests/engine/ops/gradient_check_test.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardscope/autodiff.h"
#include "shardscope/executor.h"
#include "shardscope/rng.h"

namespace shardscope {
namespace {

ValueId Out(Graph& g, OpKind op, const std::string& name, std::vector<ValueId> in,
            OpAttrs attrs = {}) {
  auto n = g.AddNode(op, name, std::move(in), std::move(attrs));
  EXPECT_TRUE(n.ok()) << n.status().message();
  return n.ok() ? g.node(*n).outputs[0] : kNoValue;
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Runs the nodes needed for `targets`.
void RunFor(Executor& ex, const std::vector<ValueId>& targets) {
  ex.Run(ex.Schedule(targets), 0, true);
}

TEST(Autodiff, ValueUsedSeveralTimesGetsSummedGradient) {
  // L = Σ (x·x + 3·x)  ⇒  dL/dx = 2x + 3; x is read three times (twice by one Mul).
  Graph g;
  ValueId x = g.AddParameter("x", {4}, {});
  ValueId sq = Out(g, OpKind::kMul, "sq", {x, x});
  OpAttrs three;
  three.scale = 3.0f;
  ValueId lin = Out(g, OpKind::kScale, "lin", {x}, three);
  ValueId s = Out(g, OpKind::kAdd, "s", {sq, lin});
  ValueId loss = Out(g, OpKind::kReduceSum, "loss", {s});
  auto grads = BuildBackward(g, loss, {x});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  ASSERT_EQ(grads->grads.size(), 1u);
  ASSERT_NE(grads->grads[0], kNoValue);
  ASSERT_TRUE(g.Verify().ok()) << g.Verify().message();

  // The terms are joined by backward Add nodes named after the shared value.
  int sums = 0;
  for (const Node& n : g.nodes()) {
    if (!StartsWith(n.name, "grad.x.sum")) continue;
    ++sums;
    EXPECT_EQ(n.op, OpKind::kAdd);
    EXPECT_TRUE(n.is_backward);
    EXPECT_NE(n.forward_node, kNoNode);
  }
  EXPECT_EQ(sums, 2);  // three terms, two additions

  Executor ex(g);
  ex.value(x) = Tensor::FromVector({4}, {-2.0f, 0.0f, 0.5f, 3.0f});
  RunFor(ex, {loss, grads->grads[0]});
  const Tensor& dx = ex.value(grads->grads[0]);
  ASSERT_EQ(dx.shape(), (Shape{4}));
  EXPECT_FLOAT_EQ(dx[0], -1.0f);
  EXPECT_FLOAT_EQ(dx[1], 3.0f);
  EXPECT_FLOAT_EQ(dx[2], 4.0f);
  EXPECT_FLOAT_EQ(dx[3], 9.0f);
  EXPECT_FLOAT_EQ(ex.value(loss)[0], (4 - 6) + 0 + (0.25f + 1.5f) + (9 + 9));
}

TEST(Autodiff, OppositeUsesCancel) {
  // L = Σ (x − x) ⇒ dL/dx = 1 − 1 = 0 exactly.
  Graph g;
  ValueId x = g.AddParameter("x", {3}, {});
  ValueId d = Out(g, OpKind::kSub, "d", {x, x});
  ValueId loss = Out(g, OpKind::kReduceSum, "loss", {d});
  auto grads = BuildBackward(g, loss, {x});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  Executor ex(g);
  ex.value(x) = Tensor::FromVector({3}, {1, 2, 3});
  RunFor(ex, {grads->grads[0]});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ex.value(grads->grads[0])[i], 0.0f);
}

TEST(Autodiff, SharedWeightInTwoProductsMatchesHandAndFiniteDifferences) {
  // L = 1ᵀ·(x·W·W)·1 with x [2, 3], W [3, 3]. With u = column sums of x, v = row sums of W,
  // p = column sums of a = x·W:  dL/dW[j][m] = u[j]·v[m] + p[j].
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  ValueId w = g.AddParameter("w", {3, 3}, {});
  ValueId a = Out(g, OpKind::kMatMul, "first", {x, w});
  ValueId b = Out(g, OpKind::kMatMul, "second", {a, w});
  ValueId loss = Out(g, OpKind::kReduceSum, "loss", {b});
  auto grads = BuildBackward(g, loss, {w});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  ASSERT_NE(grads->grads[0], kNoValue);

  Executor ex(g);
  Rng rng(4);
  Tensor& xv = ex.value(x);
  Tensor& wv = ex.value(w);
  for (int64_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(rng.Normal());
  for (int64_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(rng.Normal());
  RunFor(ex, {loss, grads->grads[0]});
  const Tensor dw = ex.value(grads->grads[0]);
  ASSERT_EQ(dw.shape(), (Shape{3, 3}));

  double u[3] = {0, 0, 0}, v[3] = {0, 0, 0}, p[3] = {0, 0, 0};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) u[j] += xv[i * 3 + j];
  for (int j = 0; j < 3; ++j)
    for (int m = 0; m < 3; ++m) v[j] += wv[j * 3 + m];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) p[j] += xv[i * 3 + k] * wv[k * 3 + j];
  for (int j = 0; j < 3; ++j)
    for (int m = 0; m < 3; ++m)
      EXPECT_NEAR(dw[j * 3 + m], u[j] * v[m] + p[j], 1e-4) << j << "," << m;

  // Central differences on the forward graph agree.
  const auto fwd = ex.Schedule({loss});
  const float eps = 1e-2f;
  for (int64_t i = 0; i < wv.size(); ++i) {
    const float saved = wv[i];
    wv[i] = saved + eps;
    ex.Run(fwd, 0, true);
    const double up = ex.value(loss)[0];
    wv[i] = saved - eps;
    ex.Run(fwd, 0, true);
    const double down = ex.value(loss)[0];
    wv[i] = saved;
    EXPECT_NEAR(dw[i], (up - down) / (2 * eps), 2e-2) << i;
  }
}

TEST(Autodiff, BackwardNodesAreNamedAndPointAtTheirForwardNode) {
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  ValueId w = g.AddParameter("dense.weight", {3, 4}, {});
  ValueId mm = Out(g, OpKind::kMatMul, "dense.matmul", {x, w});
  ValueId r = Out(g, OpKind::kReLU, "relu", {mm});
  ValueId loss = Out(g, OpKind::kReduceMean, "loss", {r});
  const int num_forward = g.num_nodes();
  auto grads = BuildBackward(g, loss, {w});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  ASSERT_TRUE(g.Verify().ok()) << g.Verify().message();
  ASSERT_GT(g.num_nodes(), num_forward);

  for (NodeId n = 0; n < num_forward; ++n) {
    EXPECT_FALSE(g.node(n).is_backward) << g.node(n).name;
    EXPECT_EQ(g.node(n).forward_node, kNoNode) << g.node(n).name;
  }
  for (NodeId n = num_forward; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    SCOPED_TRACE(node.name);
    EXPECT_TRUE(node.is_backward);
    ASSERT_GE(node.forward_node, 0);
    ASSERT_LT(node.forward_node, num_forward);
    const std::string& fwd = g.node(node.forward_node).name;
    EXPECT_TRUE(StartsWith(node.name, "grad." + fwd + "."));
    EXPECT_GT(node.name.size(), ("grad." + fwd + ".").size());  // a non-empty part
  }
  // The weight's gradient is the second product of MatMul's rule: "grad.dense.matmul.db".
  const NodeId db = g.FindNode("grad.dense.matmul.db");
  ASSERT_NE(db, kNoNode);
  EXPECT_EQ(g.node(db).op, OpKind::kMatMul);
  EXPECT_EQ(g.node(db).forward_node, g.FindNode("dense.matmul"));
  EXPECT_EQ(grads->grads[0], g.node(db).outputs[0]);
  EXPECT_EQ(g.value(grads->grads[0]).shape, (Shape{3, 4}));
  EXPECT_NE(g.FindNode("grad.relu.dx"), kNoNode);
  EXPECT_EQ(g.node(g.FindNode("grad.relu.dx")).op, OpKind::kReLUGrad);
  // x is an input, not differentiated: no dA product is emitted.
  EXPECT_EQ(g.FindNode("grad.dense.matmul.da"), kNoNode);
  // The seed dL/dL = 1 is a scalar constant.
  const ValueId seed = g.FindValue("grad.seed");
  ASSERT_NE(seed, kNoValue);
  EXPECT_EQ(g.value(seed).kind, ValueKind::kConstant);
  EXPECT_TRUE(g.value(seed).shape.empty());
  EXPECT_EQ(g.value(seed).init.kind, InitSpec::kOnes);
  EXPECT_EQ(grads->wrt, (std::vector<ValueId>{w}));
}

TEST(Autodiff, ParametersNotAffectingTheLossGetNoGradient) {
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  ValueId used = g.AddParameter("used", {3}, {});
  ValueId dead_end = g.AddParameter("dead_end", {3}, {});  // feeds a branch the loss ignores
  ValueId unused = g.AddParameter("unused", {3}, {});      // read by nothing
  ValueId h = Out(g, OpKind::kBiasAdd, "h", {x, used});
  Out(g, OpKind::kBiasAdd, "side", {x, dead_end});
  ValueId loss = Out(g, OpKind::kReduceSum, "loss", {h});
  const NodeId side = g.FindNode("side");
  auto grads = BuildBackward(g, loss, {used, dead_end, unused});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  ASSERT_EQ(grads->grads.size(), 3u);
  EXPECT_NE(grads->grads[0], kNoValue);
  EXPECT_EQ(grads->grads[1], kNoValue);
  EXPECT_EQ(grads->grads[2], kNoValue);
  for (const Node& n : g.nodes()) EXPECT_NE(n.forward_node, side) << n.name;
  // dL/dused = column sums of ones = batch size.
  Executor ex(g);
  RunFor(ex, {grads->grads[0]});
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(ex.value(grads->grads[0])[i], 2.0f);
}

TEST(Autodiff, NonScalarLossIsRejected) {
  Graph g;
  ValueId x = g.AddParameter("x", {2, 4}, {});
  ValueId y = Out(g, OpKind::kReLU, "activations", {x});
  const int nodes = g.num_nodes(), values = g.num_values();
  auto grads = BuildBackward(g, y, {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_EQ(grads.status().code(), StatusCode::kInvalidInput);
  const std::string& msg = grads.status().message();
  EXPECT_NE(msg.find("activations"), std::string::npos) << msg;
  EXPECT_NE(msg.find("scalar"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 4]"), std::string::npos) << msg;
  EXPECT_EQ(g.num_nodes(), nodes);
  EXPECT_EQ(g.num_values(), values);

  EXPECT_FALSE(BuildBackward(g, kNoValue, {x}).ok());
  EXPECT_FALSE(BuildBackward(g, 1000, {x}).ok());
}

// The header promises d(loss)/d(wrt[i]) for any value, including an intermediate
// activation (what a pipeline cut needs: the gradient arriving at a cut edge).
//
// ENGINE BUG (engine/src/autodiff/autodiff.cc, forward reachability loop): `depends[v] = any`
// overwrites the mark set for a wrt value that is itself produced by a node whose inputs do
// not depend on wrt, so its gradient comes back as kNoValue. Fix: `depends[v] = depends[v] ||
// any;`.
TEST(Autodiff, GradientWithRespectToAnActivation) {
  // h = 2·x (x an input), L = Σ h·h ⇒ dL/dh = 2h.
  Graph g;
  ValueId x = g.AddInput("x", {3});
  OpAttrs two;
  two.scale = 2.0f;
  ValueId h = Out(g, OpKind::kScale, "h", {x}, two);
  ValueId sq = Out(g, OpKind::kMul, "sq", {h, h});
  ValueId loss = Out(g, OpKind::kReduceSum, "loss", {sq});
  auto grads = BuildBackward(g, loss, {h});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  ASSERT_NE(grads->grads[0], kNoValue) << "no gradient for the activation 'h'";
  Executor ex(g);
  ex.value(x) = Tensor::FromVector({3}, {1, -2, 0.5f});
  RunFor(ex, {grads->grads[0]});
  const Tensor& dh = ex.value(grads->grads[0]);
  EXPECT_FLOAT_EQ(dh[0], 4.0f);
  EXPECT_FLOAT_EQ(dh[1], -8.0f);
  EXPECT_FLOAT_EQ(dh[2], 2.0f);
}

TEST(Autodiff, IntegerOperandsAreNotDifferentiated) {
  // Gather's indices and the loss's labels are i32: only the table gets a gradient.
  Graph g;
  ValueId table = g.AddParameter("table", {5, 3}, {});
  ValueId idx = g.AddLabel("idx", {4});
  OpAttrs a;
  a.axis = 0;
  ValueId rows = Out(g, OpKind::kGather, "rows", {table, idx}, a);
  ValueId labels = g.AddLabel("labels", {4});
  ValueId loss = Out(g, OpKind::kSoftmaxCrossEntropyWithLogits, "loss", {rows, labels});
  auto grads = BuildBackward(g, loss, {table, idx, labels});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  EXPECT_NE(grads->grads[0], kNoValue);
  EXPECT_EQ(grads->grads[1], kNoValue);
  EXPECT_EQ(grads->grads[2], kNoValue);
  EXPECT_TRUE(g.Verify().ok()) << g.Verify().message();
}

}  // namespace
}  // namespace shardscope
