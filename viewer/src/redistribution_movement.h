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
  std::vector<std::vector<BlockSource>> sources;  // per block of the layout after
  std::vector<bool> changed;                      // a holder did not hold all of it before
  bool summed = false;                            // partial sums before, summed after
};

// At most `max_sources` sources per block are listed (the rest are counted in changed).
BlockMovement TraceMovement(const Layout& before, const Layout& after, size_t max_sources = 256);

}  // namespace shardscope::viewer
