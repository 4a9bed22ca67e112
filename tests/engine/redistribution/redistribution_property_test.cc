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
// The ratio planned / lower bound over the suite is printed (and bounded with partial sums).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "redistribution_sim.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/redistribution/redistribution.h"

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
    // The bound is proven: no plan receives less on its busiest rank.
    EXPECT_GE(plan->planned_bytes, plan->lower_bound_bytes) << plan->ToString();
    partial.Add(*plan);
    if (std::getenv("SHARDSCOPE_REDIST_DUMP") && !plan->byte_optimal) {
      std::printf("case %d: %s -> %s\n%s\n", i, c.from.DebugString().c_str(),
                  c.to.DebugString().c_str(), plan->ToString().c_str());
    }
  }
  partial.Print("partial sums, big tensors");
  // Plan quality must not regress: most plans at the bound, the rest close on average (a few
  // reductions the collectives cannot spread as the bound's trees do stay above it).
  ASSERT_GT(partial.cases, 400);
  EXPECT_GE(partial.at_bound, partial.cases * 3 / 4);
  EXPECT_LE(partial.ratio_sum / partial.cases, 1.06);
  EXPECT_LE(partial.ratio_max, 2.6);
  EXPECT_LE(static_cast<double>(partial.planned) / partial.bound, 1.02);
}

// A layout pair like the planner sees in training: a mesh of power-of-two axes (up to
// `max_log2` doublings), each axis of the source and of the target a replica, a partial-sum
// axis or a split of some dimension; the target on the same mesh, on one merging two adjacent
// axes, or the source with one or two axes moved.
redist_test::Case PowerOfTwoCase(std::mt19937& rng, int max_log2) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto coin = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  const int log2 = uniform(1, max_log2);
  const int num_axes = uniform(1, std::min(4, log2));
  std::vector<int> cuts;
  for (int i = 1; i < log2; ++i) cuts.push_back(i);
  std::shuffle(cuts.begin(), cuts.end(), rng);
  cuts.resize(num_axes - 1);
  cuts.push_back(log2);
  std::sort(cuts.begin(), cuts.end());
  Shape mesh_shape;
  for (int i = 0, prev = 0; i < num_axes; prev = cuts[i++])
    mesh_shape.push_back(int64_t{1} << (cuts[i] - prev));
  const std::vector<std::string> all_names = {"a", "b", "c", "d"};
  const std::vector<std::string> names(all_names.begin(), all_names.begin() + num_axes);
  const DeviceMesh m1 = redist_test::MakeMesh(mesh_shape, names);
  DeviceMesh m2 = m1;
  int merged = -1;
  if (num_axes >= 2 && coin(0.2)) {
    merged = uniform(0, num_axes - 2);
    Shape s2 = mesh_shape;
    std::vector<std::string> n2 = names;
    s2[merged] *= s2[merged + 1];
    s2.erase(s2.begin() + merged + 1);
    n2[merged] += n2[merged + 1];
    n2.erase(n2.begin() + merged + 1);
    m2 = redist_test::MakeMesh(s2, n2);
  }
  const int rank = uniform(1, 4);
  auto roles = [&](int axes, double partial_p, DimAxes* dims, std::vector<int>* partial) {
    dims->assign(rank, {});
    partial->clear();
    for (int a = 0; a < axes; ++a) {
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      if (u < partial_p) {
        partial->push_back(a);
      } else if (u >= partial_p + 0.2) {
        (*dims)[uniform(0, rank - 1)].push_back(a);
      }
    }
    for (auto& d : *dims) std::shuffle(d.begin(), d.end(), rng);
  };
  DimAxes d1, d2;
  std::vector<int> p1, p2;
  roles(num_axes, coin(0.35) ? 0.3 : 0.0, &d1, &p1);
  if (merged < 0 && coin(0.5)) {
    // The source with one or two axes given a new role.
    d2 = d1;
    p2 = coin(0.7) ? std::vector<int>{} : p1;
    for (int k = uniform(1, 2); k > 0; --k) {
      const int a = uniform(0, num_axes - 1);
      for (auto& d : d2) d.erase(std::remove(d.begin(), d.end(), a), d.end());
      p2.erase(std::remove(p2.begin(), p2.end(), a), p2.end());
      if (coin(0.65)) {
        auto& d = d2[uniform(0, rank - 1)];
        d.insert(d.begin() + uniform(0, static_cast<int>(d.size())), a);
      }
    }
  } else {
    roles(m2.num_axes(), coin(0.1) ? 0.25 : 0.0, &d2, &p2);
  }
  Shape shape(rank);
  for (int d = 0; d < rank; ++d) {
    shape[d] = std::max(m1.GroupSize(d1[d]), m2.GroupSize(d2[d])) * uniform(1, 4);
  }
  return {redist_test::MakeLayout(m1, d1, p1, shape), redist_test::MakeLayout(m2, d2, p2, shape)};
}

// The fast path (regular cases planned symbolically) is judged on its own merits against the
// search: the same bytes per rank and bounds, a price no more than kPriceEpsilon above the
// search's (equal-priced orders may differ), on random cases of the property suite and on
// power-of-two meshes up to 64 devices, with uniform and per-axis bandwidths and small and
// large elements. Its plans simulate to the target at the lower bound.
TEST(RedistributionPropertyTest, FastPathAsCheapAsTheSearch) {
  constexpr double kPriceEpsilon = 1e-9;  // relative: sums of the same terms in another order
  std::mt19937 rng(31337);
  CostModel uniform_bw;
  CostModel per_axis;
  per_axis.axis_bandwidth = {{"a", 40e9}, {"b", 5e9}, {"dp", 25e9}, {"mp", 100e9}, {"x0", 3e9}};
  int cases = 0, fast = 0, other_steps = 0;
  for (int i = 0; i < 6000; ++i) {
    const redist_test::Case c = i % 2 ? RandomCase(rng, i % 4 == 1, 16, 1 + i % 3)
                                      : PowerOfTwoCase(rng, i % 6 == 0 ? 6 : 4);
    const CostModel& cost = i % 3 == 2 ? per_axis : uniform_bw;
    RedistOptions search;
    search.fast_path = false;
    if (i % 5 == 4) search.element_bytes = 1 << 16;
    RedistOptions fast_opt = search;
    fast_opt.fast_path = true;
    Result<RedistPlan> a = PlanRedistribution(c.from, c.to, cost, fast_opt);
    Result<RedistPlan> b = PlanRedistribution(c.from, c.to, cost, search);
    ASSERT_TRUE(a.ok() && b.ok());
    ++cases;
    if (a->states_explored != 0) continue;  // not a fast-path case
    ++fast;
    const std::string ctx = "case " + std::to_string(i) + ": " + c.from.DebugString() + " -> " +
                            c.to.DebugString() + "\nfast:\n" + a->ToString() + "search:\n" +
                            b->ToString();
    EXPECT_EQ(a->recv_bytes, b->recv_bytes) << ctx;
    EXPECT_EQ(a->total_planned_bytes, b->total_planned_bytes) << ctx;
    EXPECT_EQ(a->lower_bound, b->lower_bound) << ctx;
    EXPECT_EQ(a->byte_optimal, b->byte_optimal) << ctx;
    EXPECT_LE(a->predicted_seconds, b->predicted_seconds * (1 + kPriceEpsilon)) << ctx;
    other_steps += a->ToJson() != b->ToJson();
    EXPECT_EQ(a->recv_bytes, a->lower_bound) << ctx;
    Result<RedistLowerBound> lb = RedistributionLowerBound(c.from, c.to, search.element_bytes);
    ASSERT_TRUE(lb.ok());
    EXPECT_EQ(lb->per_rank, a->lower_bound) << ctx;
    if (c.from.mesh().size() <= 16) {
      const redist_test::SimResult sim = Simulate(*a);
      ASSERT_TRUE(sim.ok) << sim.error << "\n" << ctx;
      EXPECT_EQ(sim.recv, a->recv_bytes) << ctx;
    }
    if (::testing::Test::HasFailure()) break;
  }
  std::printf(
      "[ summary  ] fast path: %d of %d cases (%.1f%%), each as cheap as the search's plan; "
      "%d with other equal-priced steps\n",
      fast, cases, 100.0 * fast / cases, other_steps);
  EXPECT_GT(fast, cases / 3);
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
