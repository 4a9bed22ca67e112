// Property tests of the redistribution planner over thousands of random cases: meshes up to
// 4 axes and 16 devices (explicit rank lists, regrouped and unrelated target meshes),
// tensors up to 4-D with multi-axis dimensions, partial sums.
//
//   1. Every plan, applied by a simulated executor to real shards of every rank, leaves each
//      rank with exactly its target shard (partial targets: the addends sum to the tensor).
//   2. Every step's layout is what the ranks hold after it; bytes counted by the simulator
//      equal the plan's per-rank bytes.
//   3. Without partial sums in the source: bytes received == lower bound on every rank, and
//      the lower bound equals the direct count of missing elements.
//   4. No intermediate shard is larger than the larger of the source and target shards.
// The ratio planned / lower bound over the suite is printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "redistribution_sim.h"
#include "shardscope/cost_model.h"
#include "shardscope/redistribution.h"

namespace shardscope {
namespace {

using redist_test::DirectMoveBound;
using redist_test::RandomCase;
using redist_test::Simulate;

struct Summary {
  int cases = 0, at_bound = 0;
  double ratio_sum = 0, ratio_max = 0;
  int64_t planned = 0, bound = 0;
  void Add(const RedistPlan& plan) {
    ++cases;
    const double ratio = plan.lower_bound_bytes
                             ? static_cast<double>(plan.planned_bytes) / plan.lower_bound_bytes
                             : (plan.planned_bytes ? 1e9 : 1.0);
    ratio_sum += ratio;
    ratio_max = std::max(ratio_max, ratio);
    at_bound += plan.byte_optimal;
    planned += plan.total_planned_bytes;
    bound += plan.total_lower_bound_bytes;
  }
  void Print(const char* what) const {
    std::printf(
        "[ summary  ] %s: %d cases, %d (%.1f%%) at the lower bound on every rank; "
        "planned/bound (max over ranks): mean %.4f, max %.4f; total bytes planned/bound %.4f\n",
        what, cases, at_bound, cases ? 100.0 * at_bound / cases : 0.0,
        cases ? ratio_sum / cases : 0.0, ratio_max,
        bound ? static_cast<double>(planned) / bound : 1.0);
  }
};

void CheckCase(const redist_test::Case& c, const CostModel& cost, Summary* no_partial,
               Summary* partial, int index) {
  Result<RedistPlan> plan = PlanRedistribution(c.from, c.to, cost);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::string ctx = "case " + std::to_string(index) + ": " + c.from.DebugString() + " -> " +
                          c.to.DebugString() + "\n" + plan->ToString();
  const redist_test::SimResult sim = Simulate(*plan);
  ASSERT_TRUE(sim.ok) << sim.error << "\n" << ctx;
  EXPECT_EQ(sim.recv, plan->recv_bytes) << ctx;
  const int64_t cap = std::max(NumElements(c.from.ShardShape()), NumElements(c.to.ShardShape()));
  EXPECT_LE(sim.max_shard_elems, cap) << ctx;
  // Steps are consistent: per-rank maxima, non-negative prices.
  for (const RedistStep& s : plan->steps) {
    EXPECT_EQ(s.bytes_recv.size(), static_cast<size_t>(c.from.mesh().size()));
    EXPECT_GE(s.seconds, 0);
    EXPECT_FALSE(s.reason.empty()) << ctx;
  }
  if (!c.from.is_partial()) {
    EXPECT_EQ(plan->recv_bytes, plan->lower_bound) << ctx;
    EXPECT_EQ(plan->lower_bound, DirectMoveBound(c.from, c.to, plan->element_bytes)) << ctx;
    EXPECT_TRUE(plan->byte_optimal) << ctx;
    no_partial->Add(*plan);
  } else {
    partial->Add(*plan);
    if (std::getenv("SHARDSCOPE_REDIST_DUMP") && !plan->byte_optimal)
      std::printf("%s\n", ctx.c_str());
  }
  Result<RedistLowerBound> lb = RedistributionLowerBound(c.from, c.to);
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ(lb->per_rank, plan->lower_bound);
}

TEST(RedistributionPropertyTest, RandomCasesSimulateToTheTargetAtTheBound) {
  std::mt19937 rng(20240611);
  CostModel cost;
  Summary no_partial, partial;
  const auto start = std::chrono::steady_clock::now();
  constexpr int kCases = 3000;
  for (int i = 0; i < kCases; ++i) {
    const redist_test::Case c = RandomCase(rng, /*partial_ok=*/i % 2 == 0, 16, 1 + i % 4);
    CheckCase(c, cost, &no_partial, &partial, i);
    if (HasFatalFailure() || ::testing::Test::HasFailure()) break;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  no_partial.Print("without partial sums");
  partial.Print("with partial sums   ");
  std::printf("[ summary  ] %d cases planned and simulated in %.2f s\n", kCases, secs);
  EXPECT_EQ(no_partial.at_bound, no_partial.cases);
}

// Bigger tensors (bandwidth-dominated prices): the choice among plans changes, the bound
// must still be met.
TEST(RedistributionPropertyTest, LargeTensorsStillAtTheBound) {
  std::mt19937 rng(77);
  CostModel cost;
  Summary no_partial, partial;
  for (int i = 0; i < 600; ++i) {
    redist_test::Case c = RandomCase(rng, i % 3 == 0);
    RedistOptions opt;
    opt.element_bytes = 1 << 16;  // same boxes, 64 KiB "elements"
    Result<RedistPlan> plan = PlanRedistribution(c.from, c.to, cost, opt);
    ASSERT_TRUE(plan.ok());
    const redist_test::SimResult sim = Simulate(*plan);
    ASSERT_TRUE(sim.ok) << sim.error << "\n" << plan->ToString();
    if (!c.from.is_partial()) {
      ASSERT_EQ(plan->recv_bytes, plan->lower_bound) << plan->ToString();
      no_partial.Add(*plan);
    } else {
      partial.Add(*plan);
    }
  }
  no_partial.Print("large, without partial sums");
  partial.Print("large, with partial sums   ");
}

// Partial sums on tensors large enough that element granularity does not blur the ring
// bounds (dimensions up to 64x their split factor) and bandwidth dominates (64 KiB
// elements): planned / lower bound over many cases (planning only; sizes are symbolic).
TEST(RedistributionPropertyTest, PartialSumsRatioSummary) {
  std::mt19937 rng(99);
  CostModel cost;
  RedistOptions opt;
  opt.element_bytes = 1 << 16;
  Summary partial;
  for (int i = 0; i < 2000; ++i) {
    redist_test::Case c = RandomCase(rng, true, 16, 64);
    if (!c.from.is_partial() || c.from.rank() == 0) continue;  // scalars: 1 element
    Result<RedistPlan> plan = PlanRedistribution(c.from, c.to, cost, opt);
    ASSERT_TRUE(plan.ok());
    partial.Add(*plan);
    if (std::getenv("SHARDSCOPE_REDIST_DUMP") && !plan->byte_optimal) {
      std::printf("case %d: %s -> %s\n%s\n", i, c.from.DebugString().c_str(),
                  c.to.DebugString().c_str(), plan->ToString().c_str());
    }
  }
  partial.Print("partial sums, big tensors");
}

// Determinism: the same inputs give the same plan, step for step.
TEST(RedistributionPropertyTest, Deterministic) {
  std::mt19937 rng(5);
  CostModel cost;
  for (int i = 0; i < 200; ++i) {
    const redist_test::Case c = RandomCase(rng, true);
    Result<RedistPlan> a = PlanRedistribution(c.from, c.to, cost);
    Result<RedistPlan> b = PlanRedistribution(c.from, c.to, cost);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->ToJson(), b->ToJson());
  }
}

}  // namespace
}  // namespace shardscope
