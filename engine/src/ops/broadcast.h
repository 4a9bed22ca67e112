// Internal: numpy-style broadcasting helpers shared by elementwise kernels.
#pragma once

#include <vector>

#include "ops/op_registry.h"
#include "shardscope/tensor.h"

namespace shardscope {

// Strides (in elements) of `in` viewed with `out`'s rank, 0 along broadcast dimensions.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Calls f(out_index, in_offset) for every element of `out` in row-major order, where
// in_offset is the element of a tensor of shape `in` that broadcasts to it.
template <typename F>
void ForEachBroadcast(const Shape& in, const Shape& out, F&& f) {
  const std::vector<int64_t> strides = BroadcastStrides(in, out);
  const int rank = static_cast<int>(out.size());
  const int64_t n = NumElements(out);
  if (rank == 0) {
    for (int64_t i = 0; i < n; ++i) f(i, 0);
    return;
  }
  // The innermost dimension is looped directly; the outer ones by an index counter.
  const int64_t inner = out[rank - 1], inner_stride = strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t j = 0; j < inner; ++j) f(base + j, offset + j * inner_stride);
    for (int d = rank - 2; d >= 0; --d) {
      offset += strides[d];
      if (++idx[d] < out[d]) break;
      offset -= strides[d] * out[d];
      idx[d] = 0;
    }
  }
}

// The shape rule of a two-input elementwise operator: the broadcast of both shapes.
inline Status BroadcastBinaryShape(std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(in[0].shape, in[1].shape));
  out->push_back({s});
  return Status::Ok();
}

// out = op(in0, in1) elementwise over f32 tensors, with numpy broadcasting.
template <typename Op>
void BroadcastBinary(const KernelContext& k, Op op) {
  const Tensor &a = *k.in[0], &b = *k.in[1];
  Tensor& c = *k.out[0];
  float* out = c.data();
  const float *pa = a.data(), *pb = b.data();
  if (a.shape() == b.shape()) {
    for (int64_t i = 0; i < c.size(); ++i) out[i] = op(pa[i], pb[i]);
  } else if (a.shape() == c.shape()) {
    ForEachBroadcast(b.shape(), c.shape(),
                     [&](int64_t i, int64_t j) { out[i] = op(pa[i], pb[j]); });
  } else {
    std::vector<float> tmp(c.size());
    ForEachBroadcast(a.shape(), c.shape(), [&](int64_t i, int64_t j) { tmp[i] = pa[j]; });
    ForEachBroadcast(b.shape(), c.shape(),
                     [&](int64_t i, int64_t j) { out[i] = op(tmp[i], pb[j]); });
  }
}

}  // namespace shardscope
