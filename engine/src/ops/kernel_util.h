// Internal: Eigen views over Tensor buffers for kernels.
#pragma once

#include <Eigen/Core>

#include "shardscope/tensor.h"

namespace shardscope {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMatrix>;
using ConstMatMap = Eigen::Map<const RowMatrix>;
using VecMap = Eigen::Map<Eigen::ArrayXf>;
using ConstVecMap = Eigen::Map<const Eigen::ArrayXf>;

inline VecMap Flat(Tensor& t) { return VecMap(t.data(), t.size()); }
inline ConstVecMap Flat(const Tensor& t) { return ConstVecMap(t.data(), t.size()); }

// Views a tensor as [rows, size/rows].
inline MatMap AsMatrix(Tensor& t, int64_t rows) { return MatMap(t.data(), rows, t.size() / rows); }
inline ConstMatMap AsMatrix(const Tensor& t, int64_t rows) {
  return ConstMatMap(t.data(), rows, t.size() / rows);
}
// Product of the dimensions before the last one.
inline int64_t OuterSize(const Shape& s) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) n *= s[i];
  return n;
}

}  // namespace shardscope
