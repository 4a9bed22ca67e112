// Tests of the graph IR: AddNode shape inference and errors, Verify, lookups, Consumers,
// ToText and ToDot.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "shardscope/graph.h"

namespace shardscope {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_TRUE(Contains((text), (part))) << "'" << (part) << "' not in: " << (text)

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

ValueId Out(const Graph& g, const Result<NodeId>& n) {
  EXPECT_TRUE(n.ok()) << n.status().message();
  return n.ok() ? g.node(*n).outputs[0] : kNoValue;
}

TEST(Graph, AddValuesOfEveryKind) {
  Graph g;
  ValueId x = g.AddInput("x", {32, 784});
  ValueId y = g.AddLabel("y", {32});
  ValueId w = g.AddParameter("w", {784, 10}, {InitSpec::kNormal, 0.1f});
  ValueId c = g.AddConstant("one", {}, {InitSpec::kOnes, 1.0f});
  EXPECT_EQ(x, 0);
  EXPECT_EQ(y, 1);
  EXPECT_EQ(w, 2);
  EXPECT_EQ(c, 3);
  EXPECT_EQ(g.num_values(), 4);
  EXPECT_EQ(g.value(x).kind, ValueKind::kInput);
  EXPECT_EQ(g.value(x).dtype, DType::kF32);
  EXPECT_EQ(g.value(y).kind, ValueKind::kLabel);
  EXPECT_EQ(g.value(y).dtype, DType::kI32);
  EXPECT_EQ(g.value(w).kind, ValueKind::kParameter);
  EXPECT_EQ(g.value(w).init.kind, InitSpec::kNormal);
  EXPECT_FLOAT_EQ(g.value(w).init.scale, 0.1f);
  EXPECT_EQ(g.value(c).kind, ValueKind::kConstant);
  for (ValueId v : {x, y, w, c}) EXPECT_EQ(g.value(v).producer, kNoNode);
  EXPECT_EQ(g.Parameters(), (std::vector<ValueId>{w}));
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Graph, ValueKindNames) {
  EXPECT_STREQ(ValueKindName(ValueKind::kInput), "input");
  EXPECT_STREQ(ValueKindName(ValueKind::kLabel), "label");
  EXPECT_STREQ(ValueKindName(ValueKind::kParameter), "parameter");
  EXPECT_STREQ(ValueKindName(ValueKind::kConstant), "constant");
  EXPECT_STREQ(ValueKindName(ValueKind::kActivation), "activation");
}

TEST(Graph, AddNodeInfersShapesAndWiresOutputs) {
  Graph g;
  ValueId x = g.AddInput("x", {32, 784});
  ValueId w = g.AddParameter("w", {784, 10}, {});
  auto mm = g.AddNode(OpKind::kMatMul, "mm", {x, w});
  ASSERT_TRUE(mm.ok()) << mm.status().message();
  const Node n = g.node(*mm);  // a copy: adding nodes below may move the node vector
  EXPECT_EQ(n.id, 0);
  EXPECT_EQ(n.op, OpKind::kMatMul);
  EXPECT_EQ(n.name, "mm");
  EXPECT_EQ(n.inputs, (std::vector<ValueId>{x, w}));
  ASSERT_EQ(n.outputs.size(), 1u);
  const Value& y = g.value(n.outputs[0]);
  EXPECT_EQ(y.name, "mm");
  EXPECT_EQ(y.shape, (Shape{32, 10}));
  EXPECT_EQ(y.dtype, DType::kF32);
  EXPECT_EQ(y.kind, ValueKind::kActivation);
  EXPECT_EQ(y.producer, n.id);
  EXPECT_EQ(y.producer_output, 0);
  EXPECT_FALSE(n.is_backward);
  EXPECT_EQ(n.forward_node, kNoNode);

  // Transposed operands, reductions, shape ops.
  OpAttrs tb;
  tb.transpose_b = true;
  ValueId w2 = g.AddParameter("w2", {5, 10}, {});
  EXPECT_EQ(g.value(Out(g, g.AddNode(OpKind::kMatMul, "mm2", {n.outputs[0], w2}, tb))).shape,
            (Shape{32, 5}));
  OpAttrs mean;
  mean.axes = {0};
  EXPECT_EQ(g.value(Out(g, g.AddNode(OpKind::kReduceMean, "m", {x}, mean))).shape, (Shape{784}));
  mean.keep_dims = true;
  EXPECT_EQ(g.value(Out(g, g.AddNode(OpKind::kReduceMean, "mk", {x}, mean))).shape,
            (Shape{1, 784}));
  OpAttrs r;
  r.shape = {-1, 28, 28};
  EXPECT_EQ(g.value(Out(g, g.AddNode(OpKind::kReshape, "r", {x}, r))).shape, (Shape{32, 28, 28}));
  ValueId img = g.AddInput("img", {8, 3, 32, 32});
  ValueId k = g.AddParameter("k", {16, 3, 5, 5}, {});
  EXPECT_EQ(g.value(Out(g, g.AddNode(OpKind::kConv2D, "conv", {img, k}))).shape,
            (Shape{8, 16, 28, 28}));
  OpAttrs same;
  same.padding = Padding::kSame;
  same.stride[0] = same.stride[1] = 2;
  EXPECT_EQ(g.value(Out(g, g.AddNode(OpKind::kConv2D, "conv_same", {img, k}, same))).shape,
            (Shape{8, 16, 16, 16}));
  ValueId y_lbl = g.AddLabel("y", {32});
  ValueId loss =
      Out(g, g.AddNode(OpKind::kSoftmaxCrossEntropyWithLogits, "loss", {n.outputs[0], y_lbl}));
  EXPECT_TRUE(g.value(loss).shape.empty());
  EXPECT_TRUE(g.Verify().ok()) << g.Verify().message();
}

TEST(Graph, ShapeErrorNamesOperatorAndShapes) {
  Graph g;
  ValueId x = g.AddInput("x", {32, 784});
  ValueId w = g.AddParameter("w", {10, 5}, {});
  const int values_before = g.num_values();
  auto mm = g.AddNode(OpKind::kMatMul, "dense1.matmul", {x, w});
  ASSERT_FALSE(mm.ok());
  const std::string& msg = mm.status().message();
  EXPECT_EQ(mm.status().code(), StatusCode::kInvalidInput);
  EXPECT_CONTAINS(msg, "dense1.matmul");
  EXPECT_CONTAINS(msg, "MatMul");
  EXPECT_CONTAINS(msg, "[32, 784]");
  EXPECT_CONTAINS(msg, "[10, 5]");
  EXPECT_CONTAINS(msg, "784");
  // Nothing was added.
  EXPECT_EQ(g.num_nodes(), 0);
  EXPECT_EQ(g.num_values(), values_before);
  EXPECT_EQ(g.FindNode("dense1.matmul"), kNoNode);

  // Broadcasting failure names both shapes.
  ValueId a = g.AddInput("a", {2, 3});
  ValueId b = g.AddInput("b", {4});
  auto add = g.AddNode(OpKind::kAdd, "add", {a, b});
  ASSERT_FALSE(add.ok());
  EXPECT_CONTAINS(add.status().message(), "Add");
  EXPECT_CONTAINS(add.status().message(), "[2, 3]");
  EXPECT_CONTAINS(add.status().message(), "[4]");
}

TEST(Graph, WrongArityIsRejected) {
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  auto relu = g.AddNode(OpKind::kReLU, "relu", {x, x});
  ASSERT_FALSE(relu.ok());
  EXPECT_CONTAINS(relu.status().message(), "ReLU");
  EXPECT_CONTAINS(relu.status().message(), "takes 1");
  EXPECT_CONTAINS(relu.status().message(), "got 2");
  auto mm = g.AddNode(OpKind::kMatMul, "mm", {x});
  ASSERT_FALSE(mm.ok());
  EXPECT_CONTAINS(mm.status().message(), "MatMul takes 2");
  EXPECT_EQ(g.num_nodes(), 0);
}

TEST(Graph, IntegerInputWhereFloatNeededIsRejected) {
  Graph g;
  ValueId labels = g.AddLabel("labels", {8});
  auto relu = g.AddNode(OpKind::kReLU, "relu", {labels});
  ASSERT_FALSE(relu.ok());
  EXPECT_CONTAINS(relu.status().message(), "labels");
  EXPECT_CONTAINS(relu.status().message(), "i32");
  EXPECT_CONTAINS(relu.status().message(), "ReLU");
  // Logits given as i32: the first input of the loss must be f32.
  ValueId ilogits = g.AddInput("ilogits", {8, 3}, DType::kI32);
  auto loss = g.AddNode(OpKind::kSoftmaxCrossEntropyWithLogits, "loss", {ilogits, labels});
  ASSERT_FALSE(loss.ok());
  EXPECT_CONTAINS(loss.status().message(), "ilogits");
  // Labels given as f32 are rejected by the loss's shape rule.
  ValueId logits = g.AddInput("logits", {8, 3});
  ValueId flabels = g.AddInput("flabels", {8});
  auto loss2 = g.AddNode(OpKind::kSoftmaxCrossEntropyWithLogits, "loss2", {logits, flabels});
  ASSERT_FALSE(loss2.ok());
  EXPECT_CONTAINS(loss2.status().message(), "i32");
  // The integer operand where it belongs is fine.
  EXPECT_TRUE(g.AddNode(OpKind::kSoftmaxCrossEntropyWithLogits, "loss3", {logits, labels}).ok());
}

TEST(Graph, DuplicateAndUndefinedNamesAreRejected) {
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  ASSERT_TRUE(g.AddNode(OpKind::kReLU, "relu", {x}).ok());
  auto again = g.AddNode(OpKind::kReLU, "relu", {x});
  ASSERT_FALSE(again.ok());
  EXPECT_CONTAINS(again.status().message(), "relu");
  EXPECT_CONTAINS(again.status().message(), "already used");
  // A node may not take the name of an input either (its output value would clash).
  auto clash = g.AddNode(OpKind::kReLU, "x", {x});
  ASSERT_FALSE(clash.ok());
  EXPECT_CONTAINS(clash.status().message(), "already used");
  // Undefined input ids.
  EXPECT_FALSE(g.AddNode(OpKind::kReLU, "bad", {99}).ok());
  EXPECT_FALSE(g.AddNode(OpKind::kReLU, "bad", {kNoValue}).ok());
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Graph, MultiOutputNodesNameOutputsWithIndex) {
  Graph g;
  ValueId dy = g.AddInput("dy", {4, 6});
  ValueId x = g.AddInput("x", {4, 6});
  ValueId gamma = g.AddParameter("gamma", {6}, {InitSpec::kOnes});
  auto n = g.AddNode(OpKind::kLayerNormGrad, "lng", {dy, x, gamma});
  ASSERT_TRUE(n.ok()) << n.status().message();
  const Node& node = g.node(*n);
  ASSERT_EQ(node.outputs.size(), 3u);
  EXPECT_EQ(g.value(node.outputs[0]).name, "lng:0");
  EXPECT_EQ(g.value(node.outputs[1]).name, "lng:1");
  EXPECT_EQ(g.value(node.outputs[2]).name, "lng:2");
  EXPECT_EQ(g.value(node.outputs[0]).shape, (Shape{4, 6}));
  EXPECT_EQ(g.value(node.outputs[1]).shape, (Shape{6}));
  EXPECT_EQ(g.value(node.outputs[2]).producer_output, 2);
  EXPECT_EQ(g.FindValue("lng:1"), node.outputs[1]);
  EXPECT_EQ(g.FindNode("lng"), *n);
  EXPECT_TRUE(g.Verify().ok());
}

// x -> a = ReLU(x) -> b = ReLU(a)
struct Chain {
  Graph g;
  ValueId x, a, b;
  NodeId na, nb;
  Chain() {
    x = g.AddInput("x", {2, 3});
    auto ra = g.AddNode(OpKind::kReLU, "a", {x});
    na = *ra;
    a = g.node(na).outputs[0];
    auto rb = g.AddNode(OpKind::kReLU, "b", {a});
    nb = *rb;
    b = g.node(nb).outputs[0];
  }
};

TEST(GraphVerify, AcceptsAValidGraph) {
  Chain c;
  Status st = c.g.Verify();
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(GraphVerify, CatchesReadBeforeProduced) {
  Chain c;
  c.g.mutable_node(c.na).inputs = {c.b};  // a now reads b, which is produced after a
  Status st = c.g.Verify();
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), "'a'");
  EXPECT_CONTAINS(st.message(), "ReLU");
  EXPECT_CONTAINS(st.message(), "before it is produced");
}

TEST(GraphVerify, CatchesWrongOutputShape) {
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  OpAttrs r;
  r.shape = {6};
  auto n = g.AddNode(OpKind::kReshape, "flat", {x}, r);
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE(g.Verify().ok());
  // The node now claims a [3, 2] result, but its output value is still [6].
  g.mutable_node(*n).attrs.shape = {3, 2};
  Status st = g.Verify();
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), "flat");
  EXPECT_CONTAINS(st.message(), "[6]");
  EXPECT_CONTAINS(st.message(), "[3, 2]");
}

TEST(GraphVerify, CatchesBrokenShapeRuleAndArity) {
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  ValueId w = g.AddParameter("w", {3, 4}, {});
  auto mm = g.AddNode(OpKind::kMatMul, "mm", {x, w});
  ASSERT_TRUE(mm.ok());
  g.mutable_node(*mm).inputs = {w, x};  // [3, 4] · [2, 3]: contraction mismatch
  Status st = g.Verify();
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), "mm");
  EXPECT_CONTAINS(st.message(), "MatMul");

  g.mutable_node(*mm).inputs = {x};
  st = g.Verify();
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), "takes 2");
}

TEST(GraphVerify, CatchesBackwardNodeWithoutForwardNode) {
  Chain c;
  c.g.mutable_node(c.nb).is_backward = true;  // forward_node stays kNoNode
  Status st = c.g.Verify();
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), "'b'");
  EXPECT_CONTAINS(st.message(), "forward");
  c.g.mutable_node(c.nb).forward_node = c.na;
  EXPECT_TRUE(c.g.Verify().ok());
}

TEST(GraphVerify, CatchesDuplicateValueNames) {
  Graph g;
  g.AddInput("x", {2});
  g.AddInput("x", {3});  // the graph itself does not refuse it; Verify must
  Status st = g.Verify();
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), "'x'");
}

TEST(Graph, FindNodeAndFindValue) {
  Chain c;
  EXPECT_EQ(c.g.FindNode("a"), c.na);
  EXPECT_EQ(c.g.FindNode("b"), c.nb);
  EXPECT_EQ(c.g.FindNode("x"), kNoNode);  // a value, not a node
  EXPECT_EQ(c.g.FindNode("nope"), kNoNode);
  EXPECT_EQ(c.g.FindValue("x"), c.x);
  EXPECT_EQ(c.g.FindValue("a"), c.a);
  EXPECT_EQ(c.g.FindValue("b"), c.b);
  EXPECT_EQ(c.g.FindValue("nope"), kNoValue);
  EXPECT_EQ(c.g.FindValue(""), kNoValue);
}

TEST(Graph, ConsumersInNodeOrderWithoutDuplicates) {
  Graph g;
  ValueId x = g.AddInput("x", {3});
  ValueId w = g.AddInput("w", {3});
  ValueId sq = Out(g, g.AddNode(OpKind::kMul, "sq", {x, x}));  // reads x twice
  ValueId s = Out(g, g.AddNode(OpKind::kAdd, "s", {sq, w}));
  Out(g, g.AddNode(OpKind::kSub, "d", {x, s}));
  const auto consumers = g.Consumers();
  ASSERT_EQ(static_cast<int>(consumers.size()), g.num_values());
  EXPECT_EQ(consumers[x], (std::vector<NodeId>{0, 2}));
  EXPECT_EQ(consumers[w], (std::vector<NodeId>{1}));
  EXPECT_EQ(consumers[sq], (std::vector<NodeId>{1}));
  EXPECT_EQ(consumers[s], (std::vector<NodeId>{2}));
  EXPECT_TRUE(consumers[g.FindValue("d")].empty());
}

TEST(Graph, ToTextOneLinePerValueAndNode) {
  Graph g;
  ValueId x = g.AddInput("x", {32, 784});
  ValueId y = g.AddLabel("y", {32});
  ValueId w = g.AddParameter("dense1.weight", {784, 512}, {});
  ValueId mm = Out(g, g.AddNode(OpKind::kMatMul, "dense1.matmul", {x, w}));
  Out(g, g.AddNode(OpKind::kReLU, "relu", {mm}));
  const std::vector<std::string> lines = Lines(g.ToText());
  ASSERT_EQ(lines.size(), 5u) << g.ToText();
  EXPECT_EQ(lines[0], "input x [32, 784] f32");
  EXPECT_EQ(lines[1], "label y [32] i32");
  EXPECT_EQ(lines[2], "parameter dense1.weight [784, 512] f32");
  EXPECT_EQ(lines[3], "dense1.matmul = MatMul(x [32, 784], dense1.weight [784, 512]) -> [32, 512]");
  EXPECT_EQ(lines[4], "relu = ReLU(dense1.matmul [32, 512]) -> [32, 512]");
  (void)y;
}

// Parses the DOT text line by line: checks that braces balance, collects the cluster labels,
// and records for each statement labelled "<name>\n..." the stack of clusters around it.
struct DotScan {
  bool balanced = true;
  int clusters = 0;
  std::map<std::string, std::vector<std::string>> scopes_of;  // statement label -> clusters
  std::multiset<std::string> statements;                      // every statement label
  std::multiset<std::string> cluster_labels;
  int edges = 0;
};

// The text of the first `label="..."` in `line`, up to an escaped newline or the quote.
bool LabelIn(const std::string& line, std::string* label) {
  const size_t at = line.find("label=\"");
  if (at == std::string::npos) return false;
  const size_t begin = at + 7;
  size_t end = line.find("\\n", begin);
  if (end == std::string::npos) end = line.find('"', begin);
  *label = line.substr(begin, end - begin);
  return true;
}

DotScan ScanDot(const std::string& dot) {
  DotScan scan;
  int depth = 0;
  std::vector<std::string> open;  // labels of the open clusters
  bool pending_label = false;
  for (const std::string& line : Lines(dot)) {
    for (char ch : line) {
      if (ch == '{') ++depth;
      if (ch == '}') --depth;
      if (depth < 0) scan.balanced = false;
    }
    std::string label;
    const bool has_label = LabelIn(line, &label);
    if (line.find("subgraph cluster") != std::string::npos) {
      ++scan.clusters;
      open.push_back("");
      pending_label = true;
    }
    if (pending_label && has_label && line.find("->") == std::string::npos &&
        (line.find("subgraph") != std::string::npos || line.find('[') == std::string::npos)) {
      open.back() = label;
      scan.cluster_labels.insert(label);
      pending_label = false;
    } else if (line.find("->") != std::string::npos) {
      ++scan.edges;
    } else if (has_label && line.find('[') != std::string::npos) {
      scan.statements.insert(label);
      scan.scopes_of[label] = open;
    }
    if (line.find('}') != std::string::npos && !open.empty() &&
        line.find('{') == std::string::npos) {
      open.pop_back();
    }
  }
  if (depth != 0) scan.balanced = false;
  return scan;
}

TEST(Graph, ToDotHasOneClusterPerNameScopeAndIsWellFormed) {
  Graph g;
  ValueId x = g.AddInput("x", {4, 8});
  ValueId w1 = g.AddParameter("block1.dense1.weight", {8, 8}, {});
  ValueId w2 = g.AddParameter("block1.dense2.weight", {8, 8}, {});
  ValueId h = Out(g, g.AddNode(OpKind::kMatMul, "block1.dense1.matmul", {x, w1}));
  h = Out(g, g.AddNode(OpKind::kReLU, "block1.relu", {h}));
  h = Out(g, g.AddNode(OpKind::kMatMul, "block1.dense2.matmul", {h, w2}));
  h = Out(g, g.AddNode(OpKind::kAdd, "residual", {h, x}));
  const std::string dot = g.ToDot();
  SCOPED_TRACE(dot);
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
  const DotScan scan = ScanDot(dot);
  EXPECT_TRUE(scan.balanced);
  // Scopes: block1, block1.dense1, block1.dense2 - one cluster each.
  EXPECT_EQ(scan.clusters, 3);
  EXPECT_EQ(scan.cluster_labels,
            (std::multiset<std::string>{"block1", "block1.dense1", "block1.dense2"}));
  // Each operator appears once, inside the clusters of its scopes (nested).
  for (const Node& n : g.nodes()) EXPECT_EQ(scan.statements.count(n.name), 1u) << n.name;
  EXPECT_EQ(scan.scopes_of.at("block1.dense1.matmul"),
            (std::vector<std::string>{"block1", "block1.dense1"}));
  EXPECT_EQ(scan.scopes_of.at("block1.relu"), (std::vector<std::string>{"block1"}));
  EXPECT_EQ(scan.scopes_of.at("block1.dense2.matmul"),
            (std::vector<std::string>{"block1", "block1.dense2"}));
  EXPECT_TRUE(scan.scopes_of.at("residual").empty());
  // Inputs and parameters are drawn too, outside any cluster.
  EXPECT_TRUE(scan.scopes_of.at("x").empty());
  EXPECT_EQ(scan.statements.count("block1.dense1.weight"), 1u);
  // One edge per operator input: 2 + 1 + 2 + 2.
  EXPECT_EQ(scan.edges, 7);
}

TEST(Graph, ToDotEscapesQuotes) {
  Graph g;
  ValueId x = g.AddInput("odd\"name", {2});
  ASSERT_TRUE(g.AddNode(OpKind::kReLU, "r", {x}).ok());
  const std::string dot = g.ToDot();
  EXPECT_CONTAINS(dot, "odd\\\"name");
  EXPECT_TRUE(ScanDot(dot).balanced);
}

}  // namespace
}  // namespace shardscope
