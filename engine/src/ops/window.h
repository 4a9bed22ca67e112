// Internal: the output size and leading padding of a convolution or pooling window.
#pragma once

#include <algorithm>
#include <cstdint>

#include "shardscope/ops.h"

namespace shardscope {

struct Window {
  int64_t out, pad_before;
};

// Valid: windows inside the input. Same: ceil(in / stride) outputs, the padding split with
// the odd element after (TensorFlow's SAME, ONNX's SAME_UPPER) or before (SAME_LOWER).
inline Window OutputSize(int64_t in, int64_t k, int64_t stride, Padding padding) {
  if (padding == Padding::kValid) return {in < k ? 0 : (in - k) / stride + 1, 0};
  const int64_t out = (in + stride - 1) / stride;
  const int64_t pad = std::max<int64_t>((out - 1) * stride + k - in, 0);
  return {out, padding == Padding::kSameLower ? pad - pad / 2 : pad / 2};
}

}  // namespace shardscope
