// Tests of Executor: schedules, buffers, constants and parameters, profiling, BytesOf.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardscope/executor.h"

namespace shardscope {
namespace {

ValueId Out(Graph& g, OpKind op, const std::string& name, std::vector<ValueId> in,
            OpAttrs attrs = {}) {
  auto n = g.AddNode(op, name, std::move(in), std::move(attrs));
  EXPECT_TRUE(n.ok()) << n.status().message();
  return n.ok() ? g.node(*n).outputs[0] : kNoValue;
}

// Two branches from x:  a = ReLU(x) -> c = Add(a, x);  b = Scale(x) -> d = Scale(b).
struct Branches {
  Graph g;
  ValueId x, a, b, c, d;
  Branches() {
    x = g.AddInput("x", {4});
    OpAttrs two;
    two.scale = 2.0f;
    a = Out(g, OpKind::kReLU, "a", {x});
    b = Out(g, OpKind::kScale, "b", {x}, two);
    c = Out(g, OpKind::kAdd, "c", {a, x});
    d = Out(g, OpKind::kScale, "d", {b}, two);
  }
};

TEST(Executor, ScheduleIncludesOnlyNeededNodesInGraphOrder) {
  Branches br;
  Executor ex(br.g);
  EXPECT_EQ(ex.Schedule({br.c}), (std::vector<NodeId>{0, 2}));
  EXPECT_EQ(ex.Schedule({br.d}), (std::vector<NodeId>{1, 3}));
  EXPECT_EQ(ex.Schedule({br.a}), (std::vector<NodeId>{0}));
  EXPECT_EQ(ex.Schedule({br.d, br.c}), (std::vector<NodeId>{0, 1, 2, 3}));
  EXPECT_EQ(ex.Schedule({br.b, br.d}), (std::vector<NodeId>{1, 3}));  // no duplicates
  EXPECT_TRUE(ex.Schedule({br.x}).empty());
  EXPECT_TRUE(ex.Schedule({}).empty());
}

TEST(Executor, RunComputesScheduledNodesOnly) {
  Branches br;
  Executor ex(br.g);
  ex.value(br.x) = Tensor::FromVector({4}, {-1, 2, -3, 4});
  ex.Run(ex.Schedule({br.c}), 0, false);
  const std::vector<float> c = {-1, 4, -3, 8};  // relu(x) + x
  EXPECT_EQ(ex.value(br.c).ToVector(), c);
  // The other branch was not run: its buffers still hold zeros.
  EXPECT_EQ(ex.value(br.d).ToVector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(ex.value(br.b).ToVector(), (std::vector<float>{0, 0, 0, 0}));
  ex.Run(ex.Schedule({br.d}), 0, false);
  EXPECT_EQ(ex.value(br.d).ToVector(), (std::vector<float>{-4, 8, -12, 16}));
}

TEST(Executor, BuffersHaveValueShapesConstantsFilledParametersOnInit) {
  Graph g;
  ValueId x = g.AddInput("x", {2, 3});
  ValueId y = g.AddLabel("y", {2});
  ValueId one = g.AddConstant("one", {2}, {InitSpec::kOnes, 1.0f});
  ValueId p = g.AddParameter("p", {3, 5}, {InitSpec::kOnes, 1.0f});
  ValueId q = g.AddParameter("q", {5}, {InitSpec::kNormal, 1.0f});
  Executor ex(g);
  EXPECT_EQ(ex.value(x).shape(), (Shape{2, 3}));
  EXPECT_EQ(ex.value(y).dtype(), DType::kI32);
  EXPECT_EQ(ex.value(y).size(), 2);
  EXPECT_EQ(ex.value(one).ToVector(), (std::vector<float>{1, 1}));   // constants at once
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(ex.value(p)[i], 0.0f);  // parameters wait
  ex.InitializeParameters(7);
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(ex.value(p)[i], 1.0f);
  EXPECT_EQ(ex.value(p).shape(), (Shape{3, 5}));
  int nonzero = 0;
  for (int64_t i = 0; i < 5; ++i) nonzero += ex.value(q)[i] != 0.0f;
  EXPECT_EQ(nonzero, 5);
}

TEST(Executor, ProfilingAccumulatesPerNode) {
  Graph g;
  ValueId x = g.AddInput("x", {128, 128});
  ValueId w = g.AddParameter("w", {128, 128}, {InitSpec::kOnes, 1.0f});
  ValueId mm = Out(g, OpKind::kMatMul, "mm", {x, w});
  Out(g, OpKind::kReLU, "unused", {x});
  ValueId r = Out(g, OpKind::kReLU, "r", {mm});
  Executor ex(g);
  const auto schedule = ex.Schedule({r});
  ASSERT_EQ(schedule, (std::vector<NodeId>{0, 2}));

  ex.Run(schedule, 0, true);  // profiling is off by default
  ASSERT_EQ(ex.timings().size(), 3u);
  for (const OpTiming& t : ex.timings()) {
    EXPECT_EQ(t.runs, 0);
    EXPECT_EQ(t.seconds, 0.0);
  }

  ex.set_profiling(true);
  ex.Run(schedule, 0, true);
  const double after_one = ex.timings()[0].seconds;
  ex.Run(schedule, 1, true);
  ex.Run(schedule, 2, true);
  EXPECT_EQ(ex.timings()[0].runs, 3);
  EXPECT_EQ(ex.timings()[1].runs, 0);  // not scheduled
  EXPECT_EQ(ex.timings()[2].runs, 3);
  EXPECT_GT(after_one, 0.0);                      // a 128³ product takes measurable time
  EXPECT_GT(ex.timings()[0].seconds, after_one);  // accumulates
  EXPECT_EQ(ex.timings()[1].seconds, 0.0);

  ex.set_profiling(false);
  ex.Run(schedule, 3, true);
  EXPECT_EQ(ex.timings()[0].runs, 3);
}

TEST(Executor, BytesOfCountsEachKind) {
  Graph g;
  ValueId x = g.AddInput("x", {32, 784});
  ValueId y = g.AddLabel("y", {32});
  ValueId w = g.AddParameter("w", {784, 10}, {});
  ValueId b = g.AddParameter("b", {10}, {});
  g.AddConstant("c", {3}, {InitSpec::kOnes});
  ValueId mm = Out(g, OpKind::kMatMul, "mm", {x, w});
  ValueId logits = Out(g, OpKind::kBiasAdd, "logits", {mm, b});
  Out(g, OpKind::kSoftmaxCrossEntropyWithLogits, "loss", {logits, y});
  Executor ex(g);
  EXPECT_EQ(ex.BytesOf(ValueKind::kInput), 32 * 784 * 4);
  EXPECT_EQ(ex.BytesOf(ValueKind::kLabel), 32 * 4);
  EXPECT_EQ(ex.BytesOf(ValueKind::kParameter), (784 * 10 + 10) * 4);
  EXPECT_EQ(ex.BytesOf(ValueKind::kConstant), 3 * 4);
  // mm [32, 10], logits [32, 10], loss [] (one element).
  EXPECT_EQ(ex.BytesOf(ValueKind::kActivation), (320 + 320 + 1) * 4);
}

TEST(Executor, StepAndTrainingReachStochasticKernels) {
  Graph g;
  ValueId x = g.AddInput("x", {1000});
  OpAttrs drop;
  drop.rate = 0.5f;
  drop.seed = 3;
  ValueId y = Out(g, OpKind::kDropout, "drop", {x}, drop);
  Executor ex(g);
  ex.value(x).Fill(1.0f);
  const auto s = ex.Schedule({y});
  ex.Run(s, 0, true);
  const std::vector<float> step0 = ex.value(y).ToVector();
  ex.Run(s, 1, true);
  const std::vector<float> step1 = ex.value(y).ToVector();
  ex.Run(s, 0, true);
  EXPECT_EQ(ex.value(y).ToVector(), step0);
  EXPECT_NE(step0, step1);
  ex.Run(s, 0, false);
  EXPECT_EQ(ex.value(y).ToVector(), std::vector<float>(1000, 1.0f));
}

}  // namespace
}  // namespace shardscope
