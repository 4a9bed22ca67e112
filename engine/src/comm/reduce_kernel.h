// The element-wise reduction both backends use, so that they give bitwise equal results.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "shardscope/communicator.h"

namespace shardscope::comm_internal {

// outs[j][i] = ((inputs[0][i] op inputs[1][i]) op inputs[2][i]) op ... for i in [0, n), for
// every j. Max propagates NaN. Works in tiles: a tile of every input is read before any
// output is written, so an output may be the same memory as an input (same positions).
inline void ReduceInOrder(ReduceOp op, std::span<const float* const> inputs, int64_t n,
                          std::span<float* const> outs) {
  constexpr int64_t kTile = 1024;
  float acc[kTile];
  for (int64_t t = 0; t < n; t += kTile) {
    const int64_t len = n - t < kTile ? n - t : kTile;
    const float* first = inputs[0] + t;
    for (int64_t i = 0; i < len; ++i) acc[i] = first[i];
    for (size_t k = 1; k < inputs.size(); ++k) {
      const float* x = inputs[k] + t;
      if (op == ReduceOp::kSum) {
        for (int64_t i = 0; i < len; ++i) acc[i] += x[i];
      } else {
        for (int64_t i = 0; i < len; ++i) {
          acc[i] = (acc[i] >= x[i] || std::isnan(acc[i])) ? acc[i] : x[i];
        }
      }
    }
    for (float* out : outs) {
      float* dst = out + t;
      for (int64_t i = 0; i < len; ++i) dst[i] = acc[i];
    }
  }
}

}  // namespace shardscope::comm_internal
