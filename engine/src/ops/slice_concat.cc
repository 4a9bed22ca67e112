// Concat, Split, Slice and SliceGrad: copies of blocks along axes, any element type.
#include <algorithm>
#include <cstring>

#include "autodiff/grad_context.h"
#include "ops/op_registry.h"
#include "ops/slice_concat.h"

namespace shardscope {
namespace {

// Raw element storage (f32 and i32 elements are both 4 bytes).
char* Raw(Tensor& t) {
  return reinterpret_cast<char*>(t.dtype() == DType::kI32 ? static_cast<void*>(t.ints())
                                                          : static_cast<void*>(t.data()));
}
const char* Raw(const Tensor& t) {
  return reinterpret_cast<const char*>(t.dtype() == DType::kI32
                                           ? static_cast<const void*>(t.ints())
                                           : static_cast<const void*>(t.data()));
}
constexpr int64_t kElementBytes = 4;

// Products of the dimensions before and after `axis`.
int64_t Before(const Shape& s, int64_t axis) {
  int64_t n = 1;
  for (int64_t d = 0; d < axis; ++d) n *= s[d];
  return n;
}
int64_t After(const Shape& s, int64_t axis) {
  int64_t n = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) n *= s[d];
  return n;
}

// Calls f(i, j) for every element i of the slice (row-major) and its offset j in the input.
template <typename F>
void ForEachSliced(const Shape& in, const std::vector<SliceRange>& r, F&& f) {
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> stride(rank), len(rank);
  int64_t s = 1, base = 0, n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    stride[d] = s * r[d].step;
    base += s * r[d].start;
    len[d] = r[d].length;
    n *= len[d];
    s *= in[d];
  }
  if (n == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t off = base;
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (int d = rank - 1; d >= 0; --d) {
      off += stride[d];
      if (++idx[d] < len[d]) break;
      off -= stride[d] * len[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

Result<std::vector<SliceRange>> SliceRanges(const OpAttrs& a, const Shape& in) {
  const int rank = static_cast<int>(in.size());
  std::vector<SliceRange> r(rank);
  for (int d = 0; d < rank; ++d) r[d] = {0, 1, in[d]};
  if (a.starts.size() != a.axes.size() || a.ends.size() != a.axes.size() ||
      (!a.steps.empty() && a.steps.size() != a.axes.size())) {
    return Status::Invalid("axes, starts, ends (and steps) must have the same length");
  }
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < a.axes.size(); ++i) {
    SHARDSCOPE_ASSIGN_OR_RETURN(int64_t d, NormalizeAxis(a.axes[i], rank));
    if (seen[d]) return Status::Invalid("axis " + std::to_string(a.axes[i]) + " given twice");
    seen[d] = true;
    const int64_t dim = in[d], step = a.steps.empty() ? 1 : a.steps[i];
    if (step == 0) return Status::Invalid("steps must not be 0");
    // ONNX Slice: negative indices count from the end, then clamp to the dimension.
    int64_t start = a.starts[i] < 0 ? std::max(a.starts[i], -dim) + dim : a.starts[i];
    int64_t end = a.ends[i] < 0 ? std::max(a.ends[i], -dim - 1) + dim : a.ends[i];
    if (step > 0) {
      start = std::min(start, dim);
      end = std::min(end, dim);
      r[d] = {start, step, std::max<int64_t>(0, (end - start + step - 1) / step)};
    } else {
      start = std::min(start, dim - 1);
      end = std::min(end, dim - 1);
      r[d] = {start, step, std::max<int64_t>(0, (start - end - step - 1) / -step)};
    }
  }
  return r;
}

// Concat along attrs.axis; all inputs of one type and equal in the other dimensions.
Status ConcatShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  const Shape& first = in[0].shape;
  SHARDSCOPE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, static_cast<int>(first.size())));
  Shape s = first;
  s[axis] = 0;
  for (const ValueInfo& v : in) {
    Shape other = v.shape;
    if (other.size() == first.size()) other[axis] = 0;
    if (other != s || v.dtype != in[0].dtype) {
      return Status::Invalid("inputs must match " + ShapeToString(first) + " (" +
                             DTypeName(in[0].dtype) + ") except along axis " +
                             std::to_string(a.axis) + ", got " + ShapeToString(v.shape) + " (" +
                             DTypeName(v.dtype) + ")");
    }
  }
  for (const ValueInfo& v : in) s[axis] += v.shape[axis];
  out->push_back({s, in[0].dtype});
  return Status::Ok();
}
void ConcatForward(const KernelContext& k) {
  Tensor& y = *k.out[0];
  const int64_t axis = *NormalizeAxis(k.attrs.axis, y.rank());
  const int64_t outer = Before(y.shape(), axis), inner = After(y.shape(), axis) * kElementBytes;
  char* dst = Raw(y);
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* x : k.in) {
      const int64_t block = x->dim(static_cast<int>(axis)) * inner;
      if (block > 0) std::memcpy(dst, Raw(*x) + o * block, block);  // empty parts have no data
      dst += block;
    }
  }
}
// Each input's gradient is its slice of dy.
Status ConcatGrad(GradContext& g) {
  const int64_t rank = static_cast<int64_t>(g.shape(g.output()).size());
  const int64_t axis = *NormalizeAxis(g.attrs().axis, static_cast<int>(rank));
  int64_t start = 0;
  for (size_t i = 0; i < g.node().inputs.size(); ++i) {
    const int64_t len = g.shape(g.input(static_cast<int>(i)))[axis];
    if (g.needs_grad(static_cast<int>(i))) {
      OpAttrs s;
      s.axes = {axis};
      s.starts = {start};
      s.ends = {start + len};
      SHARDSCOPE_ASSIGN_OR_RETURN(
          ValueId d, g.Emit(OpKind::kSlice, "d" + std::to_string(i), {g.output_grad()}, s));
      g.SetInputGrad(static_cast<int>(i), d);
    }
    start += len;
  }
  return Status::Ok();
}

// Split along attrs.axis into pieces of attrs.sizes.
Status SplitShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  const Shape& x = in[0].shape;
  SHARDSCOPE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, static_cast<int>(x.size())));
  int64_t total = 0;
  bool negative = false;
  for (int64_t n : a.sizes) {
    total += n;
    negative = negative || n < 0;
  }
  if (a.sizes.empty() || negative || total != x[axis]) {
    return Status::Invalid("sizes must be non-negative and sum to dimension " +
                           std::to_string(axis) + " of " + ShapeToString(x));
  }
  for (int64_t n : a.sizes) {
    Shape s = x;
    s[axis] = n;
    out->push_back({s, in[0].dtype});
  }
  return Status::Ok();
}
void SplitForward(const KernelContext& k) {
  const Tensor& x = *k.in[0];
  const int64_t axis = *NormalizeAxis(k.attrs.axis, x.rank());
  const int64_t outer = Before(x.shape(), axis), inner = After(x.shape(), axis) * kElementBytes;
  const char* src = Raw(x);
  for (int64_t o = 0; o < outer; ++o) {
    for (Tensor* y : k.out) {
      const int64_t block = y->dim(static_cast<int>(axis)) * inner;
      if (block > 0) std::memcpy(Raw(*y) + o * block, src, block);  // empty parts have no data
      src += block;
    }
  }
}
// dx = Concat of the outputs' gradients (zeros where none flowed).
Status SplitGrad(GradContext& g) {
  std::vector<ValueId> parts;
  for (size_t i = 0; i < g.node().outputs.size(); ++i) {
    const ValueId d = g.output_grad(static_cast<int>(i));
    parts.push_back(d != kNoValue ? d
                                  : g.Zeros(g.shape(g.output(static_cast<int>(i))),
                                            "zeros" + std::to_string(i)));
  }
  OpAttrs c;
  c.axis = g.attrs().axis;
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(OpKind::kConcat, "dx", parts, c));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

// Slice as ONNX: per entry of axes, [start, end) by step.
Status SliceShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<SliceRange> r, SliceRanges(a, in[0].shape));
  Shape s;
  for (const SliceRange& d : r) s.push_back(d.length);
  out->push_back({s, in[0].dtype});
  return Status::Ok();
}
void SliceForward(const KernelContext& k) {
  const Tensor& x = *k.in[0];
  const std::vector<SliceRange> r = *SliceRanges(k.attrs, x.shape());
  const char* src = Raw(x);
  char* dst = Raw(*k.out[0]);
  ForEachSliced(x.shape(), r, [&](int64_t i, int64_t j) {
    std::memcpy(dst + i * kElementBytes, src + j * kElementBytes, kElementBytes);
  });
}
Status SliceGrad(GradContext& g) {
  OpAttrs a = g.attrs();
  a.shape = g.shape(g.input(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(OpKind::kSliceGrad, "dx", {g.output_grad()}, a));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

// SliceGrad(dy): zeros of attrs.shape (the sliced input's) with dy written where Slice read.
Status SliceGradShape(const OpAttrs& a, std::span<const ValueInfo> in,
                      std::vector<ValueInfo>* out) {
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<SliceRange> r, SliceRanges(a, a.shape));
  Shape s;
  for (const SliceRange& d : r) s.push_back(d.length);
  if (s != in[0].shape) {
    return Status::Invalid("the gradient " + ShapeToString(in[0].shape) +
                           " is not the slice's shape " + ShapeToString(s));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void SliceGradForward(const KernelContext& k) {
  Tensor& dx = *k.out[0];
  dx.Fill(0.0f);
  const float* dy = k.in[0]->data();
  float* px = dx.data();
  ForEachSliced(dx.shape(), *SliceRanges(k.attrs, dx.shape()),
                [&](int64_t i, int64_t j) { px[j] += dy[i]; });
}
Status SliceGradGrad(GradContext& g) {
  OpAttrs a = g.attrs();
  a.shape.clear();
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(OpKind::kSlice, "ddy", {g.output_grad()}, a));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

}  // namespace shardscope
