// Hashing of composite keys (meshes, layouts, cost models, plan-cache keys).
#pragma once

#include <cstddef>

namespace shardscope {

// Folds `value` into `seed` (boost::hash_combine's mixing, 64-bit constant). Order matters.
inline size_t HashCombine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace shardscope
