// Search quality (issue 7): on 50 random graphs within dynamic_programming's reach, the
// heuristics' predicted step time against dynamic_programming's (never above them): median
// <= 1.10, max <= 1.5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "shardscope/cost/cluster.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/program_price.h"
#include "shardscope/rng.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

// A random series-parallel training graph: dense layers (MatMul against a fresh weight),
// ReLUs, residual blocks and two-branch blocks joined by Add, on [batch, width] tensors.
Graph RandomGraph(uint64_t seed) {
  Rng rng(seed);
  const int64_t widths[] = {16, 32, 64, 128, 256, 512, 1024};
  const int64_t batches[] = {8, 16, 64, 256};
  Graph g;
  int64_t width = widths[rng.Below(7)];
  ValueId x = g.AddInput("x", {batches[rng.Below(4)], width});
  int id = 0;
  auto name = [&](const char* what) { return std::string(what) + std::to_string(id++); };
  auto out = [&](Result<NodeId> n) { return g.node(n.value()).outputs[0]; };
  auto dense = [&](ValueId in, int64_t to) {
    const int64_t from = g.value(in).shape[1];
    ValueId w = g.AddParameter(name("w"), {from, to}, InitSpec{});
    return out(g.AddNode(OpKind::kMatMul, name("matmul"), {in, w}));
  };
  const int blocks = 3 + static_cast<int>(rng.Below(6));
  for (int b = 0; b < blocks; ++b) {
    switch (rng.Below(4)) {
      case 0:  // dense + relu
        width = widths[rng.Below(7)];
        x = out(g.AddNode(OpKind::kReLU, name("relu"), {dense(x, width)}));
        break;
      case 1: {  // residual: x + dense(relu(dense(x)))
        const int64_t hidden = widths[rng.Below(7)];
        ValueId y = out(g.AddNode(OpKind::kReLU, name("relu"), {dense(x, hidden)}));
        x = out(g.AddNode(OpKind::kAdd, name("add"), {x, dense(y, width)}));
        break;
      }
      case 2: {  // two branches
        const int64_t to = widths[rng.Below(7)];
        ValueId a = dense(x, to);
        ValueId c = dense(out(g.AddNode(OpKind::kReLU, name("relu"), {x})), to);
        x = out(g.AddNode(OpKind::kAdd, name("add"), {a, c}));
        width = to;
        break;
      }
      default:
        width = widths[rng.Below(7)];
        x = dense(x, width);
    }
  }
  return g;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST(SearchQuality, HeuristicsWithinTenPercentOfTheOptimumOnMedian) {
  std::vector<double> propagation, recursive;
  const int device_counts[] = {4, 8, 8, 16, 6};
  for (int i = 0; i < 50; ++i) {
    const Graph g = RandomGraph(1000 + i);
    SearchOptions o;
    o.devices = device_counts[i % 5];
    o.mode = SearchMode::kDynamicProgramming;
    auto best = SearchStrategies(g, o);
    ASSERT_TRUE(best.ok()) << best.status().message();
    o.mode = SearchMode::kShardingPropagation;
    auto p = SearchStrategies(g, o);
    o.mode = SearchMode::kRecursiveProgramming;
    auto r = SearchStrategies(g, o);
    ASSERT_TRUE(p.ok() && r.ok());
    EXPECT_GE(p->step_seconds, best->step_seconds * (1 - 1e-9)) << "graph " << i;
    EXPECT_GE(r->step_seconds, best->step_seconds * (1 - 1e-9)) << "graph " << i;
    propagation.push_back(p->step_seconds / best->step_seconds);
    recursive.push_back(r->step_seconds / best->step_seconds);
  }
  const double pm = Median(propagation), rm = Median(recursive);
  const double px = *std::max_element(propagation.begin(), propagation.end());
  const double rx = *std::max_element(recursive.begin(), recursive.end());
  std::printf(
      "[   INFO   ] cost / optimum on 50 graphs: sharding_propagation median %.3f max %.3f;"
      " recursive_programming median %.3f max %.3f\n",
      pm, px, rm, rx);
  EXPECT_LE(pm, 1.10);
  EXPECT_LE(px, 1.5);
  EXPECT_LE(rm, 1.10);
  EXPECT_LE(rx, 1.5);
}

// The same graphs priced for a DGX H100 cluster (NVLink inside a node, InfiniBand across, its
// gradient buckets): dynamic_programming's objective is the lowest of the three modes there too,
// including the sizes whose axes cross nodes.
TEST(SearchQuality, DynamicProgrammingLowestOnAClusterProfile) {
  auto cluster = LoadClusterProfile("dgx-h100");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const int device_counts[] = {8, 16, 64};
  for (int i = 0; i < 30; ++i) {
    const Graph g = RandomGraph(2000 + i);
    SearchOptions o;
    o.devices = device_counts[i % 3];
    auto mesh = ClusterDeviceMesh(*cluster, o.devices);
    ASSERT_TRUE(mesh.ok()) << mesh.status().message();
    o.device_mesh = *mesh;
    auto cost = ClusterCostModel(*cluster, *mesh, o.dtype);
    ASSERT_TRUE(cost.ok()) << cost.status().message();
    o.cost = *cost;
    o.mode = SearchMode::kDynamicProgramming;
    auto best = SearchStrategies(g, o);
    ASSERT_TRUE(best.ok()) << best.status().message();
    ASSERT_TRUE(best->note.empty()) << "graph " << i << ": " << best->note;
    for (SearchMode mode : {SearchMode::kShardingPropagation, SearchMode::kRecursiveProgramming}) {
      o.mode = mode;
      auto other = SearchStrategies(g, o);
      ASSERT_TRUE(other.ok()) << other.status().message();
      EXPECT_GE(other->step_seconds, best->step_seconds * (1 - 1e-9))
          << "graph " << i << " on " << o.devices << " devices: " << SearchModeName(mode);
    }
  }
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

// RandomGraph trained: its last value as logits of a softmax cross-entropy over labels.
ModelGraph RandomModel(uint64_t seed) {
  ModelGraph m;
  m.graph = RandomGraph(seed);
  m.input = m.graph.FindValue("x");
  m.logits = m.graph.node(static_cast<NodeId>(m.graph.nodes().size() - 1)).outputs[0];
  m.labels = m.graph.AddInput("label", {m.graph.value(m.input).shape[0]}, DType::kI32);
  auto loss = m.graph.AddNode(OpKind::kSoftmaxCrossEntropyWithLogits, "loss", {m.logits, m.labels});
  EXPECT_TRUE(loss.ok()) << loss.status().message();
  if (loss.ok()) m.loss = m.graph.node(*loss).outputs[0];
  return m;
}

// One objective on random graphs, on one DGX H100 node (its ring and all-to-all formulas are
// the planner's steps there): every mode's objective is the price of the program partitioned
// from its strategies within 0.1 % (residual streams read in several layouts, an Add's one
// gradient for both inputs), and dynamic_programming's is the lowest of the three. One plan
// of the 90 keeps a gap: an Add's gradient moved from a copy the planner's own price chose
// (docs/cost-model.md).
TEST(SearchQuality, ObjectiveIsTheProgramPriceAndDynamicProgrammingLowest) {
  auto cluster = LoadClusterProfile("dgx-h100");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  int apart = 0;
  for (int i = 0; i < 30; ++i) {
    const int devices = 8;
    double dp = 0;
    for (SearchMode mode : {SearchMode::kDynamicProgramming, SearchMode::kShardingPropagation,
                            SearchMode::kRecursiveProgramming}) {
      ModelGraph m = RandomModel(3000 + i);
      SearchOptions o;
      o.devices = devices;
      o.mode = mode;
      auto mesh = ClusterDeviceMesh(*cluster, devices);
      ASSERT_TRUE(mesh.ok()) << mesh.status().message();
      o.device_mesh = *mesh;
      auto cost = ClusterCostModel(*cluster, *mesh, o.dtype);
      ASSERT_TRUE(cost.ok()) << cost.status().message();
      o.cost = *cost;
      auto r = SearchStrategies(m.graph, o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      ASSERT_TRUE(ApplySearchResult(*r, &m.graph).ok());
      PartitionOptions partition;
      partition.devices = devices;
      partition.cost = o.cost;
      auto program = PlanTrainingProgram(&m, partition);
      ASSERT_TRUE(program.ok()) << "graph " << i << ": " << program.status().message();
      auto price = PriceProgram(m.graph, *program, o);
      ASSERT_TRUE(price.ok()) << price.status().message();
      const double gap = std::abs(r->step_seconds - price->step_seconds) / price->step_seconds;
      if (gap > 1e-3) {
        ++apart;
        std::printf("[   INFO   ] graph %d, %s: objective %.6g s, price %.6g s\n", i,
                    SearchModeName(mode), r->step_seconds, price->step_seconds);
      }
      if (mode == SearchMode::kDynamicProgramming) {
        dp = r->step_seconds;
        EXPECT_LE(gap, 1e-3) << "graph " << i << ": objective " << r->step_seconds << " s, price "
                             << price->step_seconds << " s";
      }
      EXPECT_GE(r->step_seconds, dp * (1 - 1e-9)) << "graph " << i << ": " << SearchModeName(mode);
    }
  }
  EXPECT_LE(apart, 1) << "plans whose objective is not their price within 0.1 %";
}

}  // namespace
}  // namespace shardscope
