// Specific redistribution plans (seeds 002 and 004, one-axis moves, moves across two axes,
// partial sums, differing meshes), mesh unification, the lower bound, printing, the cache.
#include "shardscope/redistribution/redistribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "../../../engine/src/redistribution/redistribution_internal.h"
#include "redistribution_sim.h"

namespace shardscope {
namespace {

using Kind = RedistStep::Kind;
using redist_test::MakeLayout;
using redist_test::MakeMesh;
using redist_test::Simulate;
using redist_test::Spec;

RedistPlan Plan(const Layout& from, const Layout& to, int64_t element_bytes = 4) {
  RedistOptions opt;
  opt.element_bytes = element_bytes;
  Result<RedistPlan> plan = PlanRedistribution(from, to, CostModel{}, opt);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return RedistPlan{};
  const redist_test::SimResult sim = Simulate(*plan);
  EXPECT_TRUE(sim.ok) << sim.error << "\n" << plan->ToString();
  EXPECT_EQ(sim.recv, plan->recv_bytes) << plan->ToString();
  return *plan;
}

std::vector<Kind> Kinds(const RedistPlan& plan) {
  std::vector<Kind> out;
  for (const RedistStep& s : plan.steps) out.push_back(s.kind);
  return out;
}

// seeds/002: Z = (X W) V on 4 devices; matmul1.shard(((4, 1), (1, 1))) leaves Y split by rows
// over the 4 devices, matmul2.shard(((1, 1), (1, 4))) needs Y replicated: exactly one
// all-gather ("MindSpore's AllGather concatenates along dimension 0").
TEST(RedistributionTest, Seed002RowSplitToReplicatedIsOneAllGather) {
  const DeviceMesh mesh = MakeMesh({4}, {"dev"});
  const Layout y_split = MakeLayout(mesh, {{0}, {}}, {}, {32, 16});
  const Layout y_replicated = Layout::Replicated(mesh, {32, 16});
  const RedistPlan plan = Plan(y_split, y_replicated);
  ASSERT_EQ(plan.steps.size(), 1u) << plan.ToString();
  const RedistStep& s = plan.steps[0];
  EXPECT_EQ(s.kind, Kind::kAllGather);
  EXPECT_EQ(s.axis_names, std::vector<std::string>{"dev"});
  EXPECT_EQ(s.dim, 0);
  EXPECT_EQ(s.groups, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_EQ(s.bytes_recv_per_rank, 3 * 8 * 16 * 4);
  EXPECT_EQ(s.after, y_replicated);
  EXPECT_EQ(plan.planned_bytes, plan.lower_bound_bytes);
  EXPECT_TRUE(plan.byte_optimal);
  EXPECT_NE(s.reason.find("gather"), std::string::npos);
}

// A shard moving between dimensions along one axis is exactly one all-to-all.
TEST(RedistributionTest, DimensionMoveOnOneAxisIsOneAllToAll) {
  for (const auto& [shape, names] :
       std::vector<std::pair<Shape, std::vector<std::string>>>{{{4}, {"x"}},
                                                               {{2, 2, 2}, {"dp", "sp", "mp"}},
                                                               {{2, 4}, {"a", "b"}},
                                                               {{3, 2}, {"a", "b"}}}) {
    const DeviceMesh mesh = MakeMesh(shape, names);
    for (int axis = 0; axis < mesh.num_axes(); ++axis) {
      const int64_t p = mesh.axis_size(axis);
      for (auto [d0, d1] : std::vector<std::pair<int, int>>{{0, 1}, {1, 0}, {0, 2}}) {
        DimAxes from(3), to(3);
        from[d0] = {axis};
        to[d1] = {axis};
        const RedistPlan plan = Plan(MakeLayout(mesh, from, {}, {p * 2, p * 3, p}),
                                     MakeLayout(mesh, to, {}, {p * 2, p * 3, p}));
        ASSERT_EQ(Kinds(plan), std::vector<Kind>{Kind::kAllToAll}) << plan.ToString();
        EXPECT_EQ(plan.steps[0].dim, d0);
        EXPECT_EQ(plan.steps[0].dim_to, d1);
        EXPECT_EQ(plan.steps[0].axes, std::vector<int>{axis});
        EXPECT_TRUE(plan.byte_optimal);
      }
    }
  }
  // Several axes moving together, in order, are one all-to-all over their product.
  const DeviceMesh m = MakeMesh({2, 2, 2}, {"dp", "sp", "mp"});
  const RedistPlan plan = Plan(Spec(m, "(dp,sp),-", {8, 8}), Spec(m, "-,(dp,sp)", {8, 8}));
  ASSERT_EQ(Kinds(plan), std::vector<Kind>{Kind::kAllToAll}) << plan.ToString();
  EXPECT_EQ(plan.steps[0].axis_names, (std::vector<std::string>{"dp", "sp"}));
  EXPECT_EQ(plan.steps[0].groups, m.Groups({0, 1}));
}

// Moves across two axes never go through a full gather: every intermediate shard is at most
// the larger of the source and target shards, and the bytes are the lower bound.
TEST(RedistributionTest, MovesAcrossTwoAxesNeverGatherFully) {
  struct Case {
    Shape mesh;
    std::string from, to;
  };
  const std::vector<Case> cases = {
      {{2, 2}, "a,b", "b,a"},     {{2, 4}, "a,b", "b,a"},     {{4, 2}, "(a,b),-", "-,(b,a)"},
      {{2, 2}, "a,b", "-,(a,b)"}, {{2, 2}, "(a,b),-", "b,a"}, {{4, 4}, "a,b", "b,a"},
      {{2, 3}, "a,b", "b,a"},     {{2, 2}, "a,-", "-,b"},     {{2, 4}, "(b,a),-", "-,(a,b)"},
  };
  for (int64_t eb : {int64_t{4}, int64_t{1} << 20}) {
    for (const Case& c : cases) {
      const DeviceMesh mesh = MakeMesh(c.mesh, {"a", "b"});
      const Shape shape = {24, 24, 2};
      const Layout from = Spec(mesh, c.from + ",-", shape);
      const Layout to = Spec(mesh, c.to + ",-", shape);
      const RedistPlan plan = Plan(from, to, eb);
      const int64_t cap = std::max(NumElements(from.ShardShape()), NumElements(to.ShardShape()));
      for (const RedistStep& s : plan.steps) {
        EXPECT_LE(NumElements(s.after.ShardShape()), cap) << plan.ToString();
        EXPECT_NE(s.after.ShardShape(), shape) << "full gather in\n" << plan.ToString();
      }
      EXPECT_EQ(plan.recv_bytes, plan.lower_bound) << plan.ToString();
      const redist_test::SimResult sim = Simulate(plan);
      EXPECT_LE(sim.max_shard_elems, cap);
    }
  }
}

// seeds/004: X = layout("mp", ("sp", "dp")) on mesh (2,2,2) feeding an operator whose output
// layout is (("mp", "sp", "dp"), None).
TEST(RedistributionTest, Seed004HigherOrderLayouts) {
  Result<DeviceMesh> mesh = ParseMeshExpr("Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))");
  ASSERT_TRUE(mesh.ok());
  Result<DimAxes> x = ParseLayoutCall("layout(\"mp\", (\"sp\", \"dp\"))", *mesh);
  Result<DimAxes> y = ParseLayoutCall("layout((\"mp\", \"sp\", \"dp\"), \"None\")", *mesh);
  ASSERT_TRUE(x.ok() && y.ok());
  const Layout from = MakeLayout(*mesh, *x, {}, {16, 32});
  const Layout to = MakeLayout(*mesh, *y, {}, {16, 32});
  const RedistPlan plan = Plan(from, to);
  ASSERT_EQ(Kinds(plan), std::vector<Kind>{Kind::kAllToAll}) << plan.ToString();
  EXPECT_EQ(plan.steps[0].axis_names, (std::vector<std::string>{"sp", "dp"}));
  EXPECT_EQ(plan.steps[0].dim, 1);
  EXPECT_EQ(plan.steps[0].dim_to, 0);
  // Back the other way, and to the data-parallel layout of relu1 ((4, 1),).
  EXPECT_EQ(Kinds(Plan(to, from)), std::vector<Kind>{Kind::kAllToAll});
  const RedistPlan dp = Plan(from, Spec(*mesh, "(dp,sp),-", {16, 32}));
  EXPECT_TRUE(dp.byte_optimal) << dp.ToString();
}

bool Has(const RedistPlan& plan, Kind kind) { return plan.CountSteps(kind) > 0; }

TEST(RedistributionTest, PartialSums) {
  const Shape shape = {16, 8};
  // Reduce-scatter when the target splits a dimension over the partial axis.
  const DeviceMesh x4 = MakeMesh({4}, {"x"});
  RedistPlan plan = Plan(Spec(x4, "-,-|P(x)", shape), Spec(x4, "x,-", shape));
  EXPECT_EQ(Kinds(plan), std::vector<Kind>{Kind::kReduceScatter}) << plan.ToString();
  EXPECT_EQ(plan.steps[0].dim, 0);
  EXPECT_TRUE(plan.byte_optimal);
  // All-reduce when every rank needs the sum whole.
  plan = Plan(Spec(x4, "-,-|P(x)", shape), Spec(x4, "-,-", shape));
  EXPECT_EQ(Kinds(plan), std::vector<Kind>{Kind::kAllReduce}) << plan.ToString();
  EXPECT_EQ(plan.steps[0].messages, 6);  // ring: 2 (p - 1)
  EXPECT_TRUE(plan.byte_optimal);
  // A two-member group: the direct all-reduce (one message) moves the ring's bytes.
  const DeviceMesh x2 = MakeMesh({2}, {"x"});
  plan = Plan(Spec(x2, "-,-|P(x)", shape), Spec(x2, "-,-", shape));
  EXPECT_EQ(Kinds(plan), std::vector<Kind>{Kind::kAllReduce}) << plan.ToString();
  EXPECT_EQ(plan.steps[0].KindName(), "all-reduce (direct)");
  EXPECT_EQ(plan.steps[0].messages, 1);
  // The target splits over (x, y): each rank needs a strided part of the sum; the
  // reduce-scatter-v receives exactly the other addends of it, at the bound.
  const DeviceMesh xy = MakeMesh({4, 2}, {"x", "y"});
  plan = Plan(Spec(xy, "-,-|P(x)", shape), Spec(xy, "(x,y),-", shape));
  EXPECT_EQ(plan.steps.size(), 1u) << plan.ToString();
  EXPECT_EQ(plan.steps[0].KindName(), "reduce-scatter-v");
  EXPECT_TRUE(plan.byte_optimal);
  // (y, x): slice along y first, then reduce-scatter along x.
  plan = Plan(Spec(xy, "-,-|P(x)", shape), Spec(xy, "(y,x),-", shape));
  EXPECT_EQ(Kinds(plan), (std::vector<Kind>{Kind::kLocalSlice, Kind::kReduceScatter}))
      << plan.ToString();
  EXPECT_TRUE(plan.byte_optimal);
  // Replicas share the reduction: on (dp, sp, mp=4) a sum over mp that the target needs
  // whole is reduced on a quarter per (dp, sp) replica, then gathered: fewer bytes than one
  // all-reduce of the whole tensor (2 * 3/4 * 512 B).
  const DeviceMesh m = MakeMesh({2, 2, 4}, {"dp", "sp", "mp"});
  plan = Plan(Spec(m, "-,-|P(mp)", shape), Spec(m, "-,-", shape));
  EXPECT_TRUE(plan.byte_optimal) << plan.ToString();
  EXPECT_LT(plan.planned_bytes, 768);
  EXPECT_TRUE(Has(plan, Kind::kAllGather));
  plan = Plan(Spec(m, "-,-|P(mp)", shape), Spec(m, "mp,-", shape));
  EXPECT_TRUE(plan.byte_optimal) << plan.ToString();
  EXPECT_TRUE(Has(plan, Kind::kReduceScatter));
  EXPECT_LT(plan.planned_bytes, 3 * 512 / 4);
  // Axes partial in both stay partial: only the split changes.
  plan = Plan(Spec(m, "dp,-|P(mp)", shape), Spec(m, "-,-|P(mp)", shape));
  EXPECT_EQ(Kinds(plan), std::vector<Kind>{Kind::kAllGather}) << plan.ToString();
  // A new partial sum: zeros on the ranks with a nonzero index, no traffic.
  plan = Plan(Spec(m, "-,-", shape), Spec(m, "-,-|P(sp)", shape));
  EXPECT_EQ(Kinds(plan), std::vector<Kind>{Kind::kLocalReshape}) << plan.ToString();
  EXPECT_EQ(plan.planned_bytes, 0);
  EXPECT_EQ(plan.steps[0].zero_ranks.size(), 8u);
  // Two partial axes.
  plan = Plan(Spec(m, "-,-|P(dp,mp)", shape), Spec(m, "(dp,mp),-", shape));
  EXPECT_TRUE(plan.byte_optimal) << plan.ToString();
}

TEST(RedistributionTest, DifferingMeshes) {
  // The same distribution described on two meshes: nothing moves.
  const DeviceMesh ab = MakeMesh({2, 2}, {"dp", "mp"});
  const DeviceMesh x = MakeMesh({4}, {"x"});
  RedistPlan plan = Plan(Spec(ab, "(dp,mp),-", {8, 4}), Spec(x, "x,-", {8, 4}));
  EXPECT_TRUE(plan.steps.empty()) << plan.ToString();
  EXPECT_TRUE(plan.meshes_unified);
  // Regrouped meshes: the move is planned with collectives on the unified mesh.
  plan = Plan(Spec(ab, "dp,mp", {8, 4}), Spec(x, "-,x", {8, 4}));
  EXPECT_TRUE(plan.meshes_unified);
  EXPECT_TRUE(plan.byte_optimal);
  EXPECT_EQ(plan.steps.back().after.mesh(), x);
  // A transposed rank list: mesh (2,2) whose ranks run column-major.
  const DeviceMesh t = MakeMesh({2, 2}, {"p", "q"}, {0, 2, 1, 3});
  plan = Plan(Spec(ab, "dp,-", {8, 4}), Spec(t, "q,-", {8, 4}));
  EXPECT_TRUE(plan.steps.empty()) << plan.ToString();  // q runs along dp
  // Unrelated rank lists (no common refinement): one permutation of the same blocks.
  const DeviceMesh shuffled = MakeMesh({4}, {"x"}, {2, 0, 3, 1});
  const DeviceMesh other = MakeMesh({2, 2}, {"u", "v"}, {1, 3, 0, 2});
  plan = Plan(Spec(shuffled, "x,-", {8, 4}), Spec(other, "(u,v),-", {8, 4}));
  EXPECT_FALSE(plan.meshes_unified);
  EXPECT_EQ(Kinds(plan), std::vector<Kind>{Kind::kPermute}) << plan.ToString();
  EXPECT_TRUE(plan.byte_optimal);
  // Size-1 axes are ignored.
  const DeviceMesh with_one = MakeMesh({1, 4, 1}, {"pp", "dp", "ep"});
  plan = Plan(Spec(with_one, "dp,pp", {8, 4}), Spec(x, "-,x", {8, 4}));
  EXPECT_EQ(Kinds(plan), std::vector<Kind>{Kind::kAllToAll}) << plan.ToString();
}

TEST(RedistributionTest, UnifyMeshes) {
  const DeviceMesh m = MakeMesh({2, 2, 2}, {"dp", "sp", "mp"});
  Result<MeshUnification> u = UnifyMeshes(m, m);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mesh, m);
  EXPECT_EQ(u->axes_of_a, (std::vector<std::vector<int>>{{0}, {1}, {2}}));
  // (dp=4) against (a=2, b=2): the unified mesh is (a, b); dp = a.b.
  u = UnifyMeshes(MakeMesh({4}, {"dp"}), MakeMesh({2, 2}, {"a", "b"}));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mesh, MakeMesh({2, 2}, {"a", "b"}));
  EXPECT_EQ(u->axes_of_a, (std::vector<std::vector<int>>{{0, 1}}));
  // (4, 2) against (2, 4): common refinement (2, 2, 2).
  u = UnifyMeshes(MakeMesh({4, 2}, {"x", "y"}), MakeMesh({2, 4}, {"u", "v"}));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mesh.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(u->mesh.names(), (std::vector<std::string>{"u", "x_1", "y"}));
  EXPECT_EQ(u->axes_of_a, (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_EQ(u->axes_of_b, (std::vector<std::vector<int>>{{0}, {1, 2}}));
  // (2, 3) against (3, 2) in default order: no common refinement.
  EXPECT_FALSE(UnifyMeshes(MakeMesh({2, 3}, {"a", "b"}), MakeMesh({3, 2}, {"c", "d"})).ok());
  // (6) against (3, 2): 6 = 3 x 2 (factor order matters).
  u = UnifyMeshes(MakeMesh({6}, {"s"}), MakeMesh({3, 2}, {"c", "d"}));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mesh.shape(), (Shape{3, 2}));
  // Different sizes.
  EXPECT_FALSE(UnifyMeshes(MakeMesh({4}, {"a"}), MakeMesh({2}, {"a"})).ok());
  // Expressing a layout on the unified mesh keeps every rank's block.
  u = UnifyMeshes(MakeMesh({4, 2}, {"x", "y"}), MakeMesh({2, 4}, {"u", "v"}));
  const Layout l = Spec(MakeMesh({4, 2}, {"x", "y"}), "x,y", {8, 4});
  Result<Layout> e = ExpressOnMesh(l, u->mesh, u->axes_of_a);
  ASSERT_TRUE(e.ok());
  for (int r = 0; r < 8; ++r) EXPECT_EQ(e->ShardOffsets(r), l.ShardOffsets(r));
}

// UnifyMeshes takes a shortcut for meshes with the same rank order (merging their axis
// boundaries); it must give what the general search over prime factor orders gives, names
// included, on meshes with size-1 axes, clashing names and explicit rank lists.
TEST(RedistributionTest, UnifyMeshesShortcutAgreesWithTheGeneralSearch) {
  std::mt19937 rng(8);
  const std::vector<int64_t> primes = {2, 2, 2, 3, 5, 2, 3, 7};
  const std::vector<std::string> pool = {"dp", "mp", "sp", "a", "b", "dp_0", "mp_1", "x"};
  int unified = 0, compared = 0;
  for (int it = 0; it < 4000; ++it) {
    std::vector<int64_t> factors;
    for (int i = std::uniform_int_distribution<int>(0, 5)(rng); i > 0; --i) {
      factors.push_back(primes[rng() % primes.size()]);
    }
    auto shape_and_names = [&](const char* prefix) {
      std::vector<int64_t> f = factors;
      std::shuffle(f.begin(), f.end(), rng);
      Shape shape;
      for (int64_t x : f) {
        if (shape.empty() || rng() % 2) {
          shape.push_back(x);
        } else {
          shape.back() *= x;
        }
      }
      if (rng() % 4 == 0) shape.insert(shape.begin() + rng() % (shape.size() + 1), 1);
      std::vector<std::string> names = pool;
      std::shuffle(names.begin(), names.end(), rng);
      names.resize(shape.size());
      for (size_t i = 0; i < names.size(); ++i) {
        if (rng() % 3 == 0) names[i] = prefix + std::to_string(i);
      }
      return std::make_pair(shape, names);
    };
    int64_t n = 1;
    for (int64_t x : factors) n *= x;
    std::vector<int> ranks;
    if (rng() % 4 == 0) {
      ranks.resize(n);
      std::iota(ranks.begin(), ranks.end(), 0);
      std::shuffle(ranks.begin(), ranks.end(), rng);
    }
    auto [sa, na] = shape_and_names("a");
    auto [sb, nb] = rng() % 8 == 0 ? std::make_pair(sa, na) : shape_and_names("b");
    const DeviceMesh a = MakeMesh(sa, na, ranks);
    const DeviceMesh b = MakeMesh(sb, nb, rng() % 10 == 0 ? std::vector<int>{} : ranks);
    Result<MeshUnification> fast = UnifyMeshes(a, b);
    Result<MeshUnification> general = redist_internal::UnifyMeshesGeneral(a, b);
    ++compared;
    ASSERT_EQ(fast.ok(), general.ok()) << a << " " << b;
    if (!fast.ok()) {
      EXPECT_EQ(fast.status().message(), general.status().message());
      continue;
    }
    ++unified;
    EXPECT_EQ(fast->mesh, general->mesh) << a << " " << b;
    EXPECT_EQ(fast->axes_of_a, general->axes_of_a) << a << " " << b;
    EXPECT_EQ(fast->axes_of_b, general->axes_of_b) << a << " " << b;
  }
  EXPECT_GT(unified, compared / 2);
}

TEST(RedistributionTest, LowerBound) {
  const DeviceMesh m = MakeMesh({2, 2}, {"a", "b"});
  // [a | b] -> [b | a] on a 4x4 tensor of 4-byte elements: ranks (0,0) and (1,1) keep their
  // block, the two others need all of it (4 elements).
  Result<RedistLowerBound> lb =
      RedistributionLowerBound(Spec(m, "a,b", {4, 4}), Spec(m, "b,a", {4, 4}));
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ(lb->per_rank, (std::vector<int64_t>{0, 16, 16, 0}));
  EXPECT_EQ(lb->max_bytes, 16);
  EXPECT_EQ(lb->total_bytes, 32);
  // All-gather over 4: (p-1)/p of the full tensor.
  lb = RedistributionLowerBound(Spec(m, "(a,b),-", {8, 4}), Spec(m, "-,-", {8, 4}), 2);
  EXPECT_EQ(lb->max_bytes, 24 * 2);
  // Partial: reduce-scatter bound (p-1)/p n; all-reduce bound 2 (p-1)/p n.
  lb = RedistributionLowerBound(Spec(m, "-,-|P(a)", {8, 4}), Spec(m, "a,-", {8, 4}));
  EXPECT_EQ(lb->max_bytes, 32 * 4 / 2);
  EXPECT_EQ(lb->reduce_per_rank[0], 64);
  lb = RedistributionLowerBound(Spec(m, "-,-|P(a)", {8, 4}), Spec(m, "-,-", {8, 4}));
  EXPECT_EQ(lb->max_bytes, 128);
  // Errors.
  EXPECT_FALSE(RedistributionLowerBound(Spec(m, "a,-", {4, 4}), Spec(m, "a,-", {4, 8})).ok());
  EXPECT_FALSE(
      RedistributionLowerBound(Spec(m, "a,-", {4, 4}), Spec(MakeMesh({2}, {"x"}), "x,-", {4, 4}))
          .ok());
  EXPECT_FALSE(RedistributionLowerBound(Spec(m, "a,-", {4, 4}), Spec(m, "b,-", {4, 4}), 0).ok());
}

TEST(RedistributionTest, Errors) {
  const DeviceMesh m = MakeMesh({2}, {"x"});
  Result<RedistPlan> plan =
      PlanRedistribution(Spec(m, "x,-", {4, 4}), Spec(m, "-,x", {4, 6}), CostModel{});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("global shapes must be equal"), std::string::npos);
  plan = PlanRedistribution(Spec(m, "x", {4}), Spec(MakeMesh({4}, {"y"}), "y", {4}), CostModel{});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("same ranks"), std::string::npos);
}

TEST(RedistributionTest, SearchRefusesTensorsBeyondItsInlineStates) {
  // The search keeps states inline (12 dimensions); the fast path has no such limit.
  const DeviceMesh m = MakeMesh({2}, {"x"});
  const std::vector<int64_t> shape(13, 2);
  std::string from = "x", to = "-";
  for (int i = 1; i < 13; ++i) {
    from += ",-";
    to += i == 1 ? ",x" : ",-";
  }
  RedistOptions search_only;
  search_only.fast_path = false;
  Result<RedistPlan> plan =
      PlanRedistribution(Spec(m, from, shape), Spec(m, to, shape), CostModel{}, search_only);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("at most 12 dimensions (got 13)"), std::string::npos)
      << plan.status().message();
  EXPECT_TRUE(PlanRedistribution(Spec(m, from, shape), Spec(m, to, shape), CostModel{}).ok());
}

TEST(RedistributionTest, PrintsAndSerialisesEveryStep) {
  const DeviceMesh m = MakeMesh({2, 2, 2}, {"dp", "sp", "mp"});
  const RedistPlan plan = Plan(Spec(m, "dp,sp|P(mp)", {8, 8}), Spec(m, "-,(sp,dp)", {8, 8}));
  const std::string text = plan.ToString();
  EXPECT_NE(text.find("[dp | sp] P(mp) -> [- | sp.dp]"), std::string::npos) << text;
  EXPECT_NE(text.find("lower bound"), std::string::npos);
  size_t whys = 0;
  for (size_t pos = text.find("why:"); pos != std::string::npos; pos = text.find("why:", pos + 1))
    ++whys;
  EXPECT_EQ(whys, plan.steps.size());
  const nlohmann::json j = nlohmann::json::parse(plan.ToJson());
  EXPECT_EQ(j["from"]["layout"], "[dp | sp] P(mp)");
  EXPECT_EQ(j["to"]["spec"], "-,(sp,dp)");
  EXPECT_EQ(j["planned_bytes"], plan.planned_bytes);
  EXPECT_EQ(j["lower_bound_bytes"], plan.lower_bound_bytes);
  ASSERT_EQ(j["steps"].size(), plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    EXPECT_EQ(j["steps"][i]["kind"], plan.steps[i].KindName());
    EXPECT_EQ(j["steps"][i]["reason"], plan.steps[i].reason);
    EXPECT_EQ(j["steps"][i]["after"]["layout"], plan.steps[i].after.ToString());
  }
}

TEST(RedistributionTest, CacheSharesPlansAcrossThreads) {
  const DeviceMesh m = MakeMesh({2, 2, 2}, {"dp", "sp", "mp"});
  const Layout a = Spec(m, "dp,sp", {8, 8});
  const Layout b = Spec(m, "sp,dp", {8, 8});
  RedistPlanCache cache;
  CostModel cost;
  Result<std::shared_ptr<const RedistPlan>> first = cache.Get(a, b, cost);
  ASSERT_TRUE(first.ok());
  Result<std::shared_ptr<const RedistPlan>> again = cache.Get(a, b, cost);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get());
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 1);
  // A different cost model is a different key.
  CostModel fast = cost;
  fast.axis_bandwidth["dp"] = 100e9;
  ASSERT_TRUE(cache.Get(a, b, fast).ok());
  EXPECT_EQ(cache.size(), 2u);
  // Errors are not cached.
  EXPECT_FALSE(cache.Get(a, Spec(m, "dp,-", {8, 16}), cost).ok());
  // Concurrent readers and writers.
  std::vector<Layout> layouts;
  for (const char* s : {"dp,sp", "sp,dp", "-,-", "(dp,sp),mp", "mp,-", "-,(mp,dp)"}) {
    layouts.push_back(Spec(m, s, {8, 8}));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const Layout& x = layouts[(t + i) % layouts.size()];
        const Layout& y = layouts[(t * 7 + i * 3) % layouts.size()];
        Result<std::shared_ptr<const RedistPlan>> p = cache.Get(x, y, cost);
        if (!p.ok() || (*p)->from != x || (*p)->to != y) failures++;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(cache.size(), 2u + layouts.size() * layouts.size());
  cache.Clear();
  EXPECT_EQ(cache.size(), 0u);
}

// Planning stays fast on bigger meshes (the search works on layouts, not elements).
// Large irregular steps carry their transfers as a compact description: planning does not
// list them, reading does (once, shared by copies of the plan), and the list then agrees with
// the step's per-rank bytes and groups.
TEST(RedistributionTest, IrregularStepsExpandTheirTransfersOnDemand) {
  struct Case {
    DeviceMesh mesh;
    std::string from, to;
    Shape shape;
    Kind kind;
    int64_t transfers;
  };
  const std::vector<Case> cases = {
      // All-to-all-v: every rank needs a piece from each of the 63 others.
      {MakeMesh({4, 16}, {"a", "b"}),
       "-,(a,b),-,-",
       "-,-,-,a",
       {3, 64, 1, 4},
       Kind::kAllToAll,
       64 * 63},
      // Direct all-reduce of a one-element partial sum: each rank gets the 7 other addends.
      {MakeMesh({8}, {"a"}), "-|P(a)", "-", {1}, Kind::kAllReduce, 8 * 7},
  };
  for (const Case& c : cases) {
    Result<RedistPlan> planned =
        PlanRedistribution(Spec(c.mesh, c.from, c.shape), Spec(c.mesh, c.to, c.shape), CostModel{});
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    ASSERT_EQ(planned->steps.size(), 1u) << planned->ToString();
    const RedistStep& step = planned->steps[0];
    ASSERT_EQ(step.kind, c.kind) << planned->ToString();
    ASSERT_TRUE(step.irregular());
    EXPECT_FALSE(step.transfers.expanded());
    EXPECT_EQ(step.transfers.size(), c.transfers);
    const RedistPlan copy = *planned;  // shares the description
    const int n = c.mesh.size();
    std::vector<int64_t> recv(n, 0), sent(n, 0);
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x];
      return x;
    };
    for (const RedistTransfer& t : copy.steps[0].transfers) {
      recv[t.dst] += NumElements(t.extent) * 4;
      sent[t.src] += NumElements(t.extent) * 4;
      parent[find(t.src)] = find(t.dst);
    }
    EXPECT_TRUE(step.transfers.expanded());
    EXPECT_EQ(static_cast<int64_t>(step.transfers.list().size()), c.transfers);
    EXPECT_EQ(&step.transfers.list(), &copy.steps[0].transfers.list());
    EXPECT_EQ(recv, step.bytes_recv);
    EXPECT_EQ(sent, step.bytes_sent);
    std::vector<std::vector<int>> groups(n);
    for (int r = 0; r < n; ++r) groups[find(r)].push_back(r);
    std::erase_if(groups, [](const std::vector<int>& g) { return g.size() < 2; });
    std::sort(groups.begin(), groups.end());
    EXPECT_EQ(groups, step.groups);
    // And the plan is right (the simulator reads the list).
    const redist_test::SimResult sim = Simulate(copy);
    EXPECT_TRUE(sim.ok) << sim.error;
    EXPECT_EQ(sim.recv, copy.recv_bytes);
  }
}

TEST(RedistributionTest, PlansBigMeshesQuickly) {
  const DeviceMesh m = MakeMesh({4, 4, 4, 4}, {"pp", "dp", "sp", "mp"});
  const Shape shape = {1024, 512, 256};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(dp,sp),mp,-", "mp,(sp,dp),-"},
      {"dp,sp,mp", "sp,mp,dp"},
      {"-,-,-|P(mp,sp)", "(mp,sp),dp,-"},
      {"(pp,dp),-,(sp,mp)", "-,(pp,dp,sp,mp),-"}};
  for (const auto& [a, b] : cases) {
    const auto start = std::chrono::steady_clock::now();
    Result<RedistPlan> plan = PlanRedistribution(Spec(m, a, shape), Spec(m, b, shape), CostModel{});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(plan.ok());
    std::printf(
        "[ planning ] 256 ranks, %s -> %s: %zu steps, %.1f ms, %d states, ratio %.3f\n", a.c_str(),
        b.c_str(), plan->steps.size(), ms, plan->states_explored,
        static_cast<double>(plan->planned_bytes) / std::max<int64_t>(1, plan->lower_bound_bytes));
    if (!Spec(m, a, shape).is_partial()) {
      EXPECT_TRUE(plan->byte_optimal) << plan->ToString();
    }
    if (std::getenv("SHARDSCOPE_REDIST_DUMP")) std::printf("%s\n", plan->ToString().c_str());
    EXPECT_LT(ms, 2000);
  }
  // 1024 ranks.
  const DeviceMesh big = MakeMesh({4, 4, 8, 8}, {"pp", "dp", "sp", "mp"});
  for (const auto& [a, b] :
       std::vector<std::pair<std::string, std::string>>{{"(dp,sp),mp,-", "mp,(dp,sp),-"},
                                                        {"-,-,-|P(mp)", "mp,(dp,sp),-"},
                                                        {"dp,sp,mp", "-,-,-"}}) {
    const auto start = std::chrono::steady_clock::now();
    Result<RedistPlan> plan =
        PlanRedistribution(Spec(big, a, shape), Spec(big, b, shape), CostModel{});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(plan.ok());
    std::printf(
        "[ planning ] 1024 ranks, %s -> %s: %zu steps, %.1f ms, ratio %.3f\n", a.c_str(), b.c_str(),
        plan->steps.size(), ms,
        static_cast<double>(plan->planned_bytes) / std::max<int64_t>(1, plan->lower_bound_bytes));
    EXPECT_LT(ms, 5000);
  }
}

}  // namespace
}  // namespace shardscope
