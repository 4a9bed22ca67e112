// Tensor map: how a tensor is cut into blocks and which ranks hold each block.
//
// The last two tensor dimensions are the grid (rows, columns), the others are slices drawn
// side by side (one grid per block coordinate of the leading dimensions). Each block (role
// "block", id = linear block index, key = its lowest holder) shows the ranks that hold it and is
// coloured by its lowest holder (the same rank, the same colour in every map); partial sums are
// hatched and say over which axes; the caption gives the shard shape and the replication. With
// `rank` >= 0 the scene shows that rank's view: its block outlined, the rest faded, and what it
// holds in words.
#pragma once

#include "shardscope/layout/layout.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

struct TensorSceneOptions {
  QString title;  // e.g. the tensor's name
  int rank = -1;  // one rank's view (a rank of the layout's mesh)
  // Added to every rank named: a pipeline stage's mesh numbers its ranks from 0, the run's
  // world ranks from the stage's first (MeshRankOffset).
  int rank_offset = 0;
  // Blocks whose ranks changed (redistribution frames): outlined in orange. Empty: none.
  std::vector<bool> changed_blocks;
};

// Blocks a map draws at most (a 64 x 64 grid over 4096 ranks draws its first 16 rows); a
// note says how many it left out.
inline constexpr int64_t kMaxMapBlocks = 1024;

Scene BuildTensorScene(const Layout& layout, const TensorSceneOptions& options = {});

// The layout's blocks as text: "block (0,1) [0:2, 4:8]: ranks 4,6", one line per block.
QString DescribeBlocks(const Layout& layout);

}  // namespace shardscope::viewer
