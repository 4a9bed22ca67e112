#include "redistribution_movement.h"

#include <algorithm>

namespace shardscope::viewer {
namespace {

std::vector<int64_t> Unlinear(int64_t linear, const std::vector<int64_t>& per_dim) {
  std::vector<int64_t> index(per_dim.size(), 0);
  for (size_t d = per_dim.size(); d-- > 0;) {
    index[d] = linear % per_dim[d];
    linear /= per_dim[d];
  }
  return index;
}

}  // namespace

BlockMovement ChangedBlocks(const Layout& before, const Layout& after) {
  BlockMovement m;
  const int dims = after.rank();
  if (before.rank() != dims) return m;
  const auto after_owners = after.BlockOwners();
  const auto after_per_dim = after.BlocksPerDim();
  const Shape before_shard = before.ShardShape();
  const Shape after_shard = after.ShardShape();
  const int before_size = before.mesh().size();
  m.summed = before.is_partial() && !after.is_partial();
  m.changed.assign(after_owners.size(), false);
  std::vector<int64_t> lo(dims), hi(dims);
  for (size_t b = 0; b < after_owners.size(); ++b) {
    const auto index = Unlinear(static_cast<int64_t>(b), after_per_dim);
    for (int d = 0; d < dims; ++d) {
      lo[d] = index[d] * after_shard[d];
      hi[d] = lo[d] + after_shard[d];
    }
    // Changed: some holder did not hold all of this block's elements (or sums them now).
    for (int r : after_owners[b]) {
      bool held = r < before_size && !m.summed;
      if (held) {
        const auto mine = before.BlockIndex(r);
        for (int d = 0; d < dims && held; ++d) {
          held = mine[d] * before_shard[d] <= lo[d] && hi[d] <= (mine[d] + 1) * before_shard[d];
        }
      }
      if (!held) {
        m.changed[b] = true;
        break;
      }
    }
  }
  return m;
}

std::vector<BlockSource> BlockSources(const Layout& before, const Layout& after, int64_t block,
                                      const std::vector<std::vector<int>>& before_owners,
                                      int receiver, size_t max_sources) {
  std::vector<BlockSource> sources;
  const int dims = after.rank();
  if (before.rank() != dims) return sources;
  const auto before_per_dim = before.BlocksPerDim();
  const Shape before_shard = before.ShardShape();
  const Shape after_shard = after.ShardShape();
  const int before_size = before.mesh().size();
  const auto index = Unlinear(block, after.BlocksPerDim());
  std::vector<int64_t> lo(dims), hi(dims), first(dims), last(dims);
  for (int d = 0; d < dims; ++d) {
    lo[d] = index[d] * after_shard[d];
    hi[d] = lo[d] + after_shard[d];
    first[d] = before_shard[d] > 0 ? lo[d] / before_shard[d] : 0;
    last[d] = before_shard[d] > 0 ? std::max(first[d], (hi[d] - 1) / before_shard[d]) : 0;
  }
  const auto receiver_block = receiver >= 0 && receiver < before_size ? before.BlockIndex(receiver)
                                                                      : std::vector<int64_t>{};
  // Every block of the layout before that overlaps [lo, hi), in row-major order.
  std::vector<int64_t> at = first;
  while (sources.size() < max_sources) {
    BlockSource source;
    int64_t linear = 0;
    for (int d = 0; d < dims; ++d) {
      linear = linear * before_per_dim[d] + at[d];
      const int64_t start = std::max(lo[d], at[d] * before_shard[d]);
      const int64_t end = std::min(hi[d], (at[d] + 1) * before_shard[d]);
      source.offset.push_back(start);
      source.extent.push_back(end - start);
    }
    source.before_block = linear;
    // The receiver's own copy when it has one, else the block's first holder.
    const auto& holders = before_owners[static_cast<size_t>(linear)];
    source.source_rank = receiver_block == at ? receiver : holders.empty() ? -1 : holders.front();
    sources.push_back(std::move(source));
    int d = dims - 1;
    while (d >= 0 && at[d] == last[d]) at[d] = first[d], --d;
    if (d < 0) break;
    ++at[d];
  }
  return sources;
}

}  // namespace shardscope::viewer
