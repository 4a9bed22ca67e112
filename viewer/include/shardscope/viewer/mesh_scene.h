// Device matrix: a mesh of any rank as a picture. 1-D and 2-D meshes are one grid (the last
// axis across); 3-D and more are small multiples, one grid per coordinate of the leading
// axes. Every cell shows its rank number (role "rank", id = rank). When `axes` is not empty,
// the rank groups of those axes (the groups a collective along them runs on) are coloured,
// one colour per group, and listed under the grid.
#pragma once

#include <string>
#include <vector>

#include "shardscope/layout/mesh.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

struct MeshSceneOptions {
  std::vector<int> axes;   // axis indices whose groups to highlight
  int selected_rank = -1;  // drawn with a thick outline
  QString title;           // above the grid (e.g. "mesh 0")
  // The grid's cap in points (a window passes the room it has; at most 1400 x 1000).
  QSizeF max_size{1400, 1000};
  // Added to the ranks named (not to item ids): a pipeline stage's mesh numbers its ranks
  // from 0, the run's world ranks from the stage's first (MeshRankOffset).
  int rank_offset = 0;
};

Scene BuildMeshScene(const DeviceMesh& mesh, const MeshSceneOptions& options = {});

}  // namespace shardscope::viewer
