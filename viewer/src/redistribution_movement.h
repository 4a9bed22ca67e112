// Where the data of each block comes from in one redistribution step: the blocks of the
// layout before that overlap it, the rank each piece comes from, and whether its holders
// changed (compared by elements, so it works when the mesh or the block count changes).
#pragma once

#include <cstdint>
#include <vector>

#include "shardscope/layout/layout.h"

namespace shardscope::viewer {

struct BlockSource {
  int64_t before_block = 0;             // linear block index in the layout before
  std::vector<int64_t> offset, extent;  // the overlap, in elements
  int source_rank = -1;                 // who sends it to the after block's first holder
};

struct BlockMovement {
  std::vector<bool> changed;  // a holder did not hold all of it before
  bool summed = false;        // partial sums before, summed after
};

// Which blocks after changed holders, and whether partial sums are summed; no sources (the
// frame traces the blocks it draws): O(ranks).
BlockMovement ChangedBlocks(const Layout& before, const Layout& after);
// The sources of block `block` after, as received by rank `receiver` (its own copy when it
// held the piece); `before_owners` = before.BlockOwners(). At most `max_sources`.
std::vector<BlockSource> BlockSources(const Layout& before, const Layout& after, int64_t block,
                                      const std::vector<std::vector<int>>& before_owners,
                                      int receiver, size_t max_sources = 256);

}  // namespace shardscope::viewer
