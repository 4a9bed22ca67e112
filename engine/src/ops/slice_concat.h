// Internal: the index ranges of an ONNX-style Slice, shared by its kernels and sharding rule.
#pragma once

#include <vector>

#include "shardscope/ops.h"

namespace shardscope {

// One dimension of a slice: elements start, start + step, ... (length of them).
struct SliceRange {
  int64_t start = 0, step = 1, length = 0;
};

// Every dimension's range for attrs (axes, starts, ends, steps) on an input of shape `in`;
// dimensions not in axes are whole. An error for malformed attributes.
Result<std::vector<SliceRange>> SliceRanges(const OpAttrs& attrs, const Shape& in);

}  // namespace shardscope
