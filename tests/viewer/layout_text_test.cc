#include "shardscope/viewer/layout_text.h"

#include <gtest/gtest.h>

namespace shardscope::viewer {
namespace {

store::MeshRecord Seed004Mesh() { return {0, "m", {2, 2, 2}, {"dp", "sp", "mp"}, {}}; }

TEST(LayoutTextTest, ReadsTheEnginesPrintedFormWithMultiAxisDimensions) {
  auto mesh = MeshFromRecord(Seed004Mesh());
  ASSERT_TRUE(mesh.ok());
  // Seed 004: layout("mp", ("sp","dp")) of a 2x4 tensor puts row 0's columns on 0,4,2,6.
  auto layout = ParseStoredLayout("[mp | sp.dp]", *mesh, {2, 4});
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(layout->ToString(), "[mp | sp.dp]");
  const auto owners = layout->BlockOwners();
  ASSERT_EQ(owners.size(), 8u);
  EXPECT_EQ(owners[0], std::vector<int>{0});
  EXPECT_EQ(owners[1], std::vector<int>{4});
  EXPECT_EQ(owners[2], std::vector<int>{2});
  EXPECT_EQ(owners[3], std::vector<int>{6});
}

TEST(LayoutTextTest, RoundTripsPartialReplicatedAndScalarLayouts) {
  auto mesh = MeshFromRecord(Seed004Mesh());
  ASSERT_TRUE(mesh.ok());
  for (const auto& [text, shape] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"[dp | -] P(mp)", {4, 4}},
                                                                 {"[- | -]", {4, 4}},
                                                                 {"[]", {}},
                                                                 {"[dp.mp]", {8}},
                                                                 {"[sp | -] P(dp,mp)", {2, 3}}}) {
    auto layout = ParseStoredLayout(text, *mesh, shape);
    ASSERT_TRUE(layout.ok()) << text << ": " << layout.status().message();
    EXPECT_EQ(layout->ToString(), text);
  }
}

TEST(LayoutTextTest, ErrorsNameTheLayout) {
  auto mesh = MeshFromRecord(Seed004Mesh());
  ASSERT_TRUE(mesh.ok());
  auto unknown = ParseStoredLayout("[tp | -]", *mesh, {4, 4});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("[tp | -]"), std::string::npos);
  auto indivisible = ParseStoredLayout("[dp | -]", *mesh, {3, 4});
  EXPECT_FALSE(indivisible.ok());
  EXPECT_FALSE(ParseStoredLayout("dp", *mesh, {4}).ok());
}

TEST(LayoutTextTest, MeshesKeepTheirExplicitRankList) {
  auto mesh = MeshFromRecord({1, "flat", {4}, {"all"}, {0, 2, 1, 3}});
  ASSERT_TRUE(mesh.ok());
  EXPECT_EQ(mesh->rank_at({1}), 2);
  EXPECT_FALSE(MeshFromRecord({2, "bad", {2}, {"a"}, {0, 0}}).ok());
}

}  // namespace
}  // namespace shardscope::viewer
