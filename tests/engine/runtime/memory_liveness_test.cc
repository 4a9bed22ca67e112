// PlanRankMemory on a program small enough to count by hand: buffers live from their writer
// to their last reader (insert-recomputation's releases), the peak and its breakdown. That the
// figure is what DistExecutor measures is memory_options_test (exactly, every ZeRO stage and
// recomputation).
#include <gtest/gtest.h>

#include "partition/partition_passes.h"
#include "shardscope/memory_liveness.h"

namespace shardscope {
namespace {

TEST(MemoryLiveness, HandCountedPeakAndBreakdown) {
  Graph g;
  const ValueId x = g.AddInput("x", {4, 8});                   // 128 B
  const ValueId xt = g.AddInput("xt", {8, 4});                 // 128 B
  const ValueId w = g.AddParameter("w", {8, 16}, InitSpec{});  // 512 B
  auto node = [&](OpKind op, const std::string& name, std::vector<ValueId> in) {
    return g.AddNode(op, name, std::move(in)).value();
  };
  const NodeId n0 = node(OpKind::kMatMul, "a", {x, w});  // a [4,16] 256 B
  const NodeId n1 = node(OpKind::kReLU, "b", {g.node(n0).outputs[0]});
  const NodeId n2 = node(OpKind::kAdd, "c", {g.node(n0).outputs[0], g.node(n1).outputs[0]});
  const NodeId n3 = node(OpKind::kReLU, "d", {g.node(n2).outputs[0]});  // the loss, kept
  const NodeId n4 = node(OpKind::kAdd, "e", {g.node(n1).outputs[0], g.node(n2).outputs[0]});
  const NodeId n5 = node(OpKind::kMatMul, "grad_w", {xt, g.node(n4).outputs[0]});  // [8,16]
  g.mutable_node(n4).is_backward = true;
  g.mutable_node(n5).is_backward = true;

  DistProgram p;
  const DeviceMesh mesh = DeviceMesh::Create({1}, {"d"}).value();
  std::vector<int> dist(g.values().size(), -1);
  for (const Value& v : g.values()) {
    dist[v.id] = static_cast<int>(p.values.size());
    p.values.push_back({v.id, Layout::Replicated(mesh, v.shape), v.name});
  }
  for (NodeId n : {n0, n1, n2, n3, n4, n5}) {
    DistInstr in;
    in.node = n;
    for (ValueId v : g.node(n).inputs) in.inputs.push_back(dist[v]);
    for (ValueId v : g.node(n).outputs) in.outputs.push_back(dist[v]);
    p.instrs.push_back(in);
  }
  p.param_grads = {{dist[w], dist[g.node(n5).outputs[0]]}};
  p.loss = dist[g.node(n3).outputs[0]];
  p.batch_values = {dist[x], dist[xt]};
  ASSERT_TRUE(InsertRecomputation(g, PartitionOptions{}, &p).ok());

  // Lifetimes: a [0, 2], b [1, 4], c [2, 4], e [4, 5]; live after allocation at each position:
  // 256, 512, 768 (a b c: the peak, first reached at c), 512, 768, 256.
  // Kept all step: x 128 + xt 128 + w 512 + d 256 + grad_w 512.
  auto m = PlanRankMemory(g, p, /*optimizer_states=*/2);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->parameters, 512);
  EXPECT_EQ(m->gradients, 512);
  EXPECT_EQ(m->activations, 128 + 128 + 256 + 768);
  EXPECT_EQ(m->optimizer_states, 2 * 512);  // Adam's two moments of w
  EXPECT_EQ(m->initialisation, 512);        // w drawn whole
  EXPECT_EQ(m->total, 512 + 512 + 1280 + 1024 + 512);
  EXPECT_EQ(m->peak_at, "c");
  EXPECT_FALSE(m->peak_in_backward);
  EXPECT_EQ(m->largest, "optimizer states of 'w'");
  EXPECT_EQ(m->largest_bytes, 1024);

  // Without optimizer states the largest consumer is a tensor; bf16 halves the f32 buffers
  // and adds a master copy of w (4 bytes per element).
  auto half = PlanRankMemory(g, p, /*optimizer_states=*/0, /*float_bytes=*/2);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->activations, (128 + 128 + 256 + 768) / 2);
  EXPECT_EQ(half->optimizer_states, 512);
  EXPECT_EQ(half->largest_bytes, 512);
}

}  // namespace
}  // namespace shardscope
