#include "shardscope/viewer/mesh_scene.h"

#include <gtest/gtest.h>

#include <set>

namespace shardscope::viewer {
namespace {

DeviceMesh Mesh(Shape shape, std::vector<std::string> names, std::vector<int> ranks = {}) {
  auto mesh = DeviceMesh::Create(std::move(shape), std::move(names), std::move(ranks));
  EXPECT_TRUE(mesh.ok());
  return *mesh;
}

TEST(MeshSceneTest, DrawsEveryRankOnceWithItsNumber) {
  for (const DeviceMesh& mesh :
       {Mesh({8}, {"tp"}), Mesh({2, 4}, {"dp", "mp"}), Mesh({2, 2, 2}, {"dp", "sp", "mp"}),
        Mesh({2, 2, 2, 2}, {"a", "b", "c", "d"})}) {
    const Scene scene = BuildMeshScene(mesh);
    const auto cells = scene.Find("rank");
    ASSERT_EQ(static_cast<int>(cells.size()), mesh.size()) << mesh.ToString();
    std::set<int64_t> ranks;
    for (const SceneItem* cell : cells) {
      ranks.insert(cell->id);
      EXPECT_EQ(cell->text, QString::number(cell->id));
    }
    EXPECT_EQ(static_cast<int>(ranks.size()), mesh.size());
  }
}

// A dock-sized picture of mesh(8,32,4): eight panels of 32x4 would leave cells of a few
// points; one 32x32 grid (every axis in it) gives square cells over twice as large, and
// every rank still once.
TEST(MeshSceneTest, SmallRoomPutsEveryAxisInOneGridWhenPanelsLeaveTinyCells) {
  const DeviceMesh mesh = Mesh({8, 32, 4}, {"d0", "d1", "a"});
  MeshSceneOptions options;
  options.max_size = QSizeF(730, 540);
  const Scene scene = BuildMeshScene(mesh, options);
  const auto cells = scene.Find("rank");
  ASSERT_EQ(static_cast<int>(cells.size()), 1024);
  std::set<int64_t> ranks;
  for (const SceneItem* cell : cells) ranks.insert(cell->id);
  EXPECT_EQ(ranks.size(), 1024u);
  EXPECT_GE(cells.front()->rect.width(), 12);
  EXPECT_EQ(cells.front()->rect.width(), cells.front()->rect.height());
  for (const SceneItem& item : scene.items)
    EXPECT_FALSE(item.text.startsWith("d0=")) << item.text.toStdString();
  // A large picture keeps its panels, one per d0.
  options.max_size = QSizeF(1400, 1000);
  const Scene large = BuildMeshScene(mesh, options);
  int panels = 0;
  for (const SceneItem& item : large.items) panels += item.text.startsWith("d0=");
  EXPECT_EQ(panels, 8);
}

TEST(MeshSceneTest, ExplicitRankListsPlaceRanksWhereTheMeshSays) {
  const DeviceMesh mesh = Mesh({2, 2}, {"a", "b"}, {3, 2, 1, 0});
  const Scene scene = BuildMeshScene(mesh);
  // Rank 3 sits at (0,0): the first cell drawn, top left.
  const auto cells = scene.Find("rank");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0]->id, 3);
  EXPECT_LT(cells[0]->rect.left(), cells[1]->rect.left());
}

TEST(MeshSceneTest, GroupsOfAnAxisShareAColourAndAreListed) {
  const DeviceMesh mesh = Mesh({2, 2, 2}, {"dp", "sp", "mp"});
  MeshSceneOptions options;
  options.axes = {1};  // sp: groups {0,2} {1,3} {4,6} {5,7}
  const Scene scene = BuildMeshScene(mesh, options);
  std::map<int64_t, QColor> fill;
  for (const SceneItem* cell : scene.Find("rank")) fill[cell->id] = cell->fill;
  for (const auto& group : mesh.Groups({1})) {
    for (int r : group) EXPECT_EQ(fill[r], fill[group[0]]);
  }
  EXPECT_NE(fill[0], fill[1]);
  bool listed = false;
  for (const SceneItem& item : scene.items) listed |= item.text == "{0,2}";
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace shardscope::viewer
