#include "shardscope/layout/layout.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "shardscope/redistribution/redistribution.h"

namespace shardscope {
namespace {

DeviceMesh Mesh(Shape shape, std::vector<std::string> names, std::vector<int> ranks = {}) {
  Result<DeviceMesh> mesh =
      DeviceMesh::Create(std::move(shape), std::move(names), std::move(ranks));
  EXPECT_TRUE(mesh.ok()) << mesh.status().message();
  return mesh.ok() ? *mesh : DeviceMesh();
}

DeviceMesh Mesh222() { return Mesh({2, 2, 2}, {"dp", "sp", "mp"}); }

Layout Make(const DeviceMesh& mesh, DimAxes dims, std::vector<int> partial, Shape shape) {
  Result<Layout> layout =
      Layout::Create(mesh, std::move(dims), std::move(partial), std::move(shape));
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  return layout.ok() ? *layout : Layout();
}

template <typename T>
void ExpectInvalid(const Result<T>& result, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidInput);
  for (const std::string& f : fragments) {
    EXPECT_NE(result.status().message().find(f), std::string::npos)
        << "message '" << result.status().message() << "' lacks '" << f << "'";
  }
}

constexpr int kDp = 0, kSp = 1, kMp = 2;

// seeds/004: layout = Layout((2,2,2), ("dp","sp","mp")); layout("mp", ("sp","dp")) on
// [[a0,a1,a2,a3],[a4,a5,a6,a7]] puts a0,a1,a2,a3 on ranks 0,4,2,6.
TEST(LayoutTest, Seed004TwoAxisDimensionPlacesColumnsOnNonContiguousRanks) {
  Layout layout = Make(Mesh222(), {{kMp}, {kSp, kDp}}, {}, {2, 4});
  EXPECT_EQ(layout.ShardShape(), (Shape{1, 1}));
  const std::vector<int> row0 = {0, 4, 2, 6};
  const std::vector<int> row1 = {1, 5, 3, 7};
  for (int64_t col = 0; col < 4; ++col) {
    EXPECT_EQ(layout.ShardOffsets(row0[col]), (std::vector<int64_t>{0, col})) << "a" << col;
    EXPECT_EQ(layout.ShardOffsets(row1[col]), (std::vector<int64_t>{1, col})) << "a" << 4 + col;
  }
  EXPECT_EQ(layout.ToString(), "[mp | sp.dp]");
  EXPECT_EQ(layout.ToSpec(), "mp,(sp,dp)");
  EXPECT_EQ(layout.NumBlocks(), 8);
  EXPECT_EQ(layout.ReplicationFactor(), 1);
  EXPECT_EQ(layout.ReplicaGroup(4), (std::vector<int>{4}));
  EXPECT_EQ(layout.BlocksPerDim(), (std::vector<int64_t>{2, 4}));
  // The same through names and through the seed notation.
  Result<Layout> by_name = Layout::CreateByName(Mesh222(), {{"mp"}, {"sp", "dp"}}, {}, {2, 4});
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  EXPECT_EQ(*by_name, layout);
  Result<DimAxes> call = ParseLayoutCall(R"(layout("mp", ("sp", "dp")))", Mesh222());
  ASSERT_TRUE(call.ok()) << call.status().message();
  EXPECT_EQ(*call, layout.dims_axes());
}

TEST(LayoutTest, Seed004WholeLayoutBlockMap) {
  Layout layout = Make(Mesh222(), {{kMp}, {kSp, kDp}}, {}, {2, 4});
  const std::vector<std::vector<int64_t>> blocks = layout.RankBlocks();
  ASSERT_EQ(blocks.size(), 8u);
  EXPECT_EQ(blocks[0], (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(blocks[4], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(blocks[2], (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(blocks[6], (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(blocks[7], (std::vector<int64_t>{1, 3}));
  const std::vector<std::vector<int>> owners = layout.BlockOwners();
  EXPECT_EQ(owners, (std::vector<std::vector<int>>{{0}, {4}, {2}, {6}, {1}, {5}, {3}, {7}}));
  EXPECT_EQ(layout.LinearBlockIndex(6), 3);
  EXPECT_EQ(layout.LinearBlockIndex(1), 4);
}

// seeds/004 MatMul out_strategy: layout(("mp","sp","dp"), "None").
TEST(LayoutTest, ThreeAxisDimension) {
  Layout layout = Make(Mesh222(), {{kMp, kSp, kDp}, {}}, {}, {16, 10});
  EXPECT_EQ(layout.ShardShape(), (Shape{2, 10}));
  // block = 4*mp + 2*sp + dp
  for (int r = 0; r < 8; ++r) {
    std::vector<int64_t> c = Mesh222().coords_of(r);
    EXPECT_EQ(layout.BlockIndex(r), (std::vector<int64_t>{4 * c[2] + 2 * c[1] + c[0], 0}));
    EXPECT_EQ(layout.ShardOffsets(r), (std::vector<int64_t>{2 * (4 * c[2] + 2 * c[1] + c[0]), 0}));
  }
  EXPECT_EQ(layout.ToString(), "[mp.sp.dp | -]");
  EXPECT_EQ(layout.ToSpec(), "(mp,sp,dp),-");
}

TEST(LayoutTest, ReplicaAxes) {
  Layout layout = Make(Mesh222(), {{kDp}, {}}, {}, {4, 6});
  EXPECT_EQ(layout.replica_axes(), (std::vector<int>{kSp, kMp}));
  EXPECT_EQ(layout.ReplicationFactor(), 4);
  EXPECT_EQ(layout.PartialFactor(), 1);
  EXPECT_EQ(layout.ShardShape(), (Shape{2, 6}));
  EXPECT_EQ(layout.ReplicaGroup(0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(layout.ReplicaGroup(6), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(layout.PartialGroup(6), (std::vector<int>{6}));
  EXPECT_EQ(layout.ShardOffsets(5), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(layout.DimOfAxis(kDp), 0);
  EXPECT_EQ(layout.DimOfAxis(kMp), -1);
  EXPECT_EQ(layout.ToString(), "[dp | -]");
}

// seeds/004 matmul2: layout2("None","tp") x layout2("tp","None") gives a partial sum over tp.
TEST(LayoutTest, PartialSum) {
  DeviceMesh mesh = Mesh({8}, {"tp"});
  Layout out = Make(mesh, {{}, {}}, {0}, {32, 512});
  EXPECT_TRUE(out.is_partial());
  EXPECT_TRUE(out.IsPartialOver(0));
  EXPECT_EQ(out.ShardShape(), (Shape{32, 512}));
  EXPECT_EQ(out.PartialGroup(3), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(out.ReplicaGroup(3), (std::vector<int>{3}));
  EXPECT_EQ(out.PartialFactor(), 8);
  EXPECT_EQ(out.ReplicationFactor(), 1);
  EXPECT_EQ(out.ToString(), "[- | -] P(tp)");
  EXPECT_EQ(out.ToSpec(), "-,-|P(tp)");

  Layout mixed = Make(Mesh222(), {{kSp, kDp}, {}}, {kMp}, {4, 4});
  EXPECT_EQ(mixed.ToString(), "[sp.dp | -] P(mp)");
  EXPECT_EQ(mixed.ToSpec(), "(sp,dp),-|P(mp)");
  EXPECT_EQ(mixed.PartialGroup(0), (std::vector<int>{0, 1}));
  EXPECT_TRUE(mixed.replica_axes().empty());
}

TEST(LayoutTest, PartialAxesAreStoredSorted) {
  Layout layout = Make(Mesh222(), {{kSp}}, {kMp, kDp}, {4});
  EXPECT_EQ(layout.partial_axes(), (std::vector<int>{kDp, kMp}));
  EXPECT_EQ(layout.ToString(), "[sp] P(dp,mp)");
  EXPECT_EQ(layout.ToSpec(), "sp|P(dp,mp)");
  EXPECT_EQ(layout, Make(Mesh222(), {{kSp}}, {kDp, kMp}, {4}));
  EXPECT_EQ(layout.PartialGroup(2), (std::vector<int>{2, 3, 6, 7}));
}

TEST(LayoutTest, ScalarAndReplicated) {
  Layout scalar;
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.ToString(), "[]");
  EXPECT_EQ(scalar.ToSpec(), "");
  EXPECT_EQ(scalar.NumBlocks(), 1);
  EXPECT_TRUE(scalar.ShardShape().empty());
  EXPECT_TRUE(scalar.ShardOffsets(0).empty());

  Layout loss = Make(Mesh222(), {}, {kDp}, {});
  EXPECT_EQ(loss.ToString(), "[] P(dp)");
  EXPECT_EQ(loss.ToSpec(), "|P(dp)");

  Layout rep = Layout::Replicated(Mesh222(), {3, 5});
  EXPECT_EQ(rep, Make(Mesh222(), {{}, {}}, {}, {3, 5}));
  EXPECT_EQ(rep.ReplicationFactor(), 8);
  EXPECT_EQ(rep.ReplicaGroup(5).size(), 8u);
  EXPECT_EQ(rep.ToString(), "[- | -]");
}

TEST(LayoutTest, ExplicitRankListMovesBlocks) {
  DeviceMesh mesh = Mesh({4}, {"mp"}, {2, 0, 3, 1});
  Layout layout = Make(mesh, {{0}}, {}, {8});
  // grid position i holds block i; rank 2 sits at position 0.
  EXPECT_EQ(layout.ShardOffsets(2), (std::vector<int64_t>{0}));
  EXPECT_EQ(layout.ShardOffsets(0), (std::vector<int64_t>{2}));
  EXPECT_EQ(layout.ShardOffsets(3), (std::vector<int64_t>{4}));
  EXPECT_EQ(layout.ShardOffsets(1), (std::vector<int64_t>{6}));
  EXPECT_EQ(layout.BlockOwners(), (std::vector<std::vector<int>>{{2}, {0}, {3}, {1}}));
}

TEST(LayoutTest, ZeroSizedDimensionIsDivisible) {
  Layout layout = Make(Mesh222(), {{kDp}, {}}, {}, {0, 3});
  EXPECT_EQ(layout.ShardShape(), (Shape{0, 3}));
}

TEST(LayoutTest, ValidationErrors) {
  const DeviceMesh mesh = Mesh222();
  ExpectInvalid(Layout::Create(mesh, {{kDp}}, {}, {4, 4}),
                {"1 dimension entries", "[4, 4]", "2 dimensions"});
  ExpectInvalid(Layout::Create(mesh, {{kDp}, {}}, {}, {4, -4}), {"dimension 1", "negative", "-4"});
  ExpectInvalid(Layout::Create(mesh, {{kDp}, {7}}, {}, {4, 4}),
                {"dimension 1", "axis index 7", "out of range", "3 axes"});
  ExpectInvalid(Layout::Create(mesh, {{kDp, kDp}, {}}, {}, {4, 4}),
                {"'dp'", "used twice", "dimension 0"});
  ExpectInvalid(Layout::Create(mesh, {{kSp}, {kMp, kSp}}, {}, {4, 4}),
                {"'sp'", "used twice", "dimension 0", "dimension 1"});
  ExpectInvalid(Layout::Create(mesh, {{kSp}, {}}, {kMp, kMp}, {4, 4}),
                {"'mp'", "listed twice as partial"});
  ExpectInvalid(Layout::Create(mesh, {{kSp}, {kMp}}, {kMp}, {4, 4}),
                {"'mp'", "partial", "splits dimension 1"});
  ExpectInvalid(Layout::Create(mesh, {{kSp}, {}}, {-1}, {4, 4}),
                {"partial axis index -1", "out of range"});
  ExpectInvalid(Layout::Create(mesh, {{kMp}, {kSp, kDp}}, {}, {2, 6}),
                {"dimension 1", "size 6", "not divisible by 4", "sp=2 x dp=2"});
  ExpectInvalid(Layout::Create(mesh, {{kMp}, {}}, {}, {3, 6}),
                {"dimension 0", "size 3", "not divisible by 2", "mp=2"});
  Result<Layout> unknown = Layout::CreateByName(mesh, {{"mp"}, {"sp", "xp"}}, {}, {2, 4});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("dimension 1"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("unknown mesh axis 'xp'"), std::string::npos);
  Result<Layout> unknown_partial = Layout::CreateByName(mesh, {{"mp"}, {}}, {"qq"}, {2, 4});
  ASSERT_FALSE(unknown_partial.ok());
  EXPECT_NE(unknown_partial.status().message().find("partial axes: unknown mesh axis 'qq'"),
            std::string::npos)
      << unknown_partial.status().message();
  EXPECT_TRUE(Layout::Validate(mesh, {{kMp}, {kSp, kDp}}, {}, {2, 4}).ok());
}

TEST(LayoutTest, EqualityAndHash) {
  const DeviceMesh mesh = Mesh222();
  const Layout base = Make(mesh, {{kMp}, {kSp, kDp}}, {}, {2, 4});
  const Layout same = Make(mesh, {{kMp}, {kSp, kDp}}, {}, {2, 4});
  const Layout swapped_axes = Make(mesh, {{kMp}, {kDp, kSp}}, {}, {2, 4});
  const Layout other_shape = Make(mesh, {{kMp}, {kSp, kDp}}, {}, {2, 8});
  const Layout partial = Make(mesh, {{}, {kSp, kDp}}, {kMp}, {2, 4});
  const Layout unsplit_dim0 = Make(mesh, {{}, {kSp, kDp}}, {}, {2, 4});
  const Layout other_mesh = Make(Mesh({2, 2, 2}, {"dp", "sp", "mp"}, {1, 0, 2, 3, 4, 5, 6, 7}),
                                 {{kMp}, {kSp, kDp}}, {}, {2, 4});
  EXPECT_EQ(base, same);
  EXPECT_EQ(std::hash<Layout>()(base), std::hash<Layout>()(same));
  for (const Layout* other : {&swapped_axes, &other_shape, &partial, &unsplit_dim0, &other_mesh}) {
    EXPECT_FALSE(base == *other) << other->DebugString();
  }
  std::unordered_set<Layout> set = {base,    same,         swapped_axes, other_shape,
                                    partial, unsplit_dim0, other_mesh};
  EXPECT_EQ(set.size(), 6u);
  EXPECT_EQ(base.DebugString(), "[mp | sp.dp] on mesh(dp=2,sp=2,mp=2) shape [2, 4]");
}

// Element and byte counts of layouts and plans stay in 63 bits: refused, never wrapped.
TEST(LayoutTest, ShapesAndPlansWhoseCountsDoNotFitAreRefused) {
  const DeviceMesh mesh = DeviceMesh::Create({2, 2}, {"a", "b"}).value();
  // 2^62 x 4 elements: the product wraps to 0 in plain arithmetic.
  auto wraps = Layout::Create(mesh, {{0}, {}}, {}, {4611686018427387904, 4});
  ASSERT_FALSE(wraps.ok());
  EXPECT_NE(wraps.status().message().find("2^64 elements"), std::string::npos)
      << wraps.status().message();
  // The tensor fits, but its bytes times the ranks (every total over ranks) do not.
  const DeviceMesh wide = DeviceMesh::Create({1024}, {"a"}).value();
  const Shape shape = {int64_t{1} << 46};
  const Layout from = Layout::Create(wide, {{0}}, {}, shape).value();
  const Layout to = Layout::Replicated(wide, shape);
  auto plan = PlanRedistribution(from, to, CostModel{}, {.element_bytes = 8});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("over 1024 ranks"), std::string::npos)
      << plan.status().message();
  EXPECT_FALSE(RedistributionLowerBound(from, to, 8).ok());
  // A quarter of it plans, with positive figures.
  const Shape small = {int64_t{1} << 40};
  auto fits = PlanRedistribution(Layout::Create(wide, {{0}}, {}, small).value(),
                                 Layout::Replicated(wide, small), CostModel{});
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_GT(fits->planned_bytes, 0);
  EXPECT_GT(fits->total_planned_bytes, fits->planned_bytes);
}

}  // namespace
}  // namespace shardscope
