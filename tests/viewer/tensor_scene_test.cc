#include "shardscope/viewer/tensor_scene.h"

#include <gtest/gtest.h>

#include "shardscope/viewer/layout_text.h"

namespace shardscope::viewer {
namespace {

Layout Parse(const std::string& text, Shape shape) {
  auto mesh = DeviceMesh::Create({2, 2, 2}, {"dp", "sp", "mp"});
  EXPECT_TRUE(mesh.ok());
  auto layout = ParseStoredLayout(text, *mesh, shape);
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  return *layout;
}

TEST(TensorSceneTest, OneBlockPerShardNamingItsHolders) {
  const Layout layout = Parse("[mp | sp.dp]", {2, 4});
  const Scene scene = BuildTensorScene(layout);
  const auto blocks = scene.Find("block");
  ASSERT_EQ(static_cast<int64_t>(blocks.size()), layout.NumBlocks());
  const auto owners = layout.BlockOwners();
  for (const SceneItem* block : blocks) {
    ASSERT_EQ(owners[block->id].size(), 1u);
    EXPECT_EQ(block->text, "rank " + QString::number(owners[block->id][0]));
  }
  // Seed 004: the first row reads 0, 4, 2, 6 from left to right.
  EXPECT_EQ(blocks[1]->text, "rank 4");
  EXPECT_LT(blocks[0]->rect.left(), blocks[1]->rect.left());
}

TEST(TensorSceneTest, ReplicasAndPartialSumsAreMarked) {
  const Layout partial = Parse("[dp | -] P(mp)", {4, 4});
  const Scene scene = BuildTensorScene(partial);
  const auto blocks = scene.Find("block");
  ASSERT_EQ(blocks.size(), 2u);
  for (const SceneItem* block : blocks) EXPECT_TRUE(block->hatched);
  EXPECT_EQ(blocks[0]->text, "ranks 0-3");  // sp replicas and mp addends
  bool says_partial = false, says_replicas = false;
  for (const SceneItem& item : scene.items) {
    says_partial |= item.text.contains("partial sum over mp");
    says_replicas |= item.text.contains("2 replicas");
  }
  EXPECT_TRUE(says_partial);
  EXPECT_TRUE(says_replicas);
}

TEST(TensorSceneTest, HigherDimensionsBecomeSlices) {
  const Layout layout = Parse("[dp | sp | mp]", {2, 4, 6});
  const Scene scene = BuildTensorScene(layout);
  EXPECT_EQ(scene.Find("block").size(), 8u);
  int slice_titles = 0;
  for (const SceneItem& item : scene.items)
    slice_titles += item.text.startsWith("dim 0 block") ? 1 : 0;
  EXPECT_EQ(slice_titles, 2);
}

TEST(TensorSceneTest, OneRanksViewOutlinesItsBlock) {
  const Layout layout = Parse("[mp | sp.dp]", {2, 4});
  TensorSceneOptions options;
  options.rank = 6;
  const Scene scene = BuildTensorScene(layout, options);
  int outlined = 0;
  for (const SceneItem* block : scene.Find("block")) {
    if (block->stroke_width > 2) {
      ++outlined;
      EXPECT_EQ(block->id, layout.LinearBlockIndex(6));
    }
  }
  EXPECT_EQ(outlined, 1);
  bool told = false;
  for (const SceneItem& item : scene.items)
    told |= item.text.startsWith("rank 6 holds block (0,3)");
  EXPECT_TRUE(told);
}

}  // namespace
}  // namespace shardscope::viewer
