// Reshape, Flatten, Squeeze, Unsqueeze and Transpose: data movement without arithmetic.
#include <algorithm>

#include "autodiff/grad_context.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"
#include "shardscope/checked_math.h"

namespace shardscope {
namespace {

Status ReshapeBack(GradContext& g) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.ReshapeTo(g.output_grad(), g.shape(g.input(0)), "dx"));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

void CopyKernel(const KernelContext& k) {
  if (k.in[0]->dtype() == DType::kI32) {
    std::copy(k.in[0]->ints(), k.in[0]->ints() + k.in[0]->size(), k.out[0]->ints());
  } else {
    Flat(*k.out[0]) = Flat(*k.in[0]);
  }
}

}  // namespace

Result<ValueId> GradContext::ReshapeTo(ValueId v, const Shape& shape, const std::string& part) {
  if (this->shape(v) == shape) return v;
  OpAttrs attrs;
  attrs.shape = shape;
  return Emit(OpKind::kReshape, part, {v}, attrs);
}

// Reshape to attrs.shape; one dimension may be -1 (inferred).
Status ReshapeShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  Shape s = a.shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0)
        return Status::Invalid("more than one -1 in target " + ShapeToString(a.shape));
      infer = static_cast<int>(i);
    } else if (s[i] <= 0) {
      return Status::Invalid("target " + ShapeToString(a.shape) + " has a non-positive dimension");
    } else {
      known = CheckedMul(known, s[i]).value_or(0);  // 0: too many, fails below
    }
  }
  const int64_t n = NumElements(in[0].shape);
  if (infer >= 0 && known > 0 && n % known == 0) s[infer] = n / known;
  if (CheckedNumElements(s) != n) {
    return Status::Invalid("cannot reshape " + ShapeToString(in[0].shape) + " (" +
                           std::to_string(n) + " elements) to " + ShapeToString(a.shape));
  }
  out->push_back({s, in[0].dtype});
  return Status::Ok();
}
void ReshapeForward(const KernelContext& k) { CopyKernel(k); }
Status ReshapeGrad(GradContext& g) { return ReshapeBack(g); }

// Flatten: [N, d1, d2, ...] -> [N, d1·d2·...].
Status FlattenShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  if (in[0].shape.empty()) return Status::Invalid("input must have rank ≥ 1");
  const int64_t n = in[0].shape[0];
  out->push_back({{n, n == 0 ? 0 : NumElements(in[0].shape) / n}});
  return Status::Ok();
}
void FlattenForward(const KernelContext& k) { CopyKernel(k); }
Status FlattenGrad(GradContext& g) { return ReshapeBack(g); }

// Squeeze: drops the size-1 dimensions attrs.axes (empty: all of them).
Status SqueezeShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  const Shape& x = in[0].shape;
  std::vector<bool> drop(x.size(), false);
  for (int64_t axis : a.axes) {
    SHARDSCOPE_ASSIGN_OR_RETURN(int64_t d, NormalizeAxis(axis, static_cast<int>(x.size())));
    if (x[d] != 1) {
      return Status::Invalid("axis " + std::to_string(axis) + " of " + ShapeToString(x) +
                             " has size " + std::to_string(x[d]) + ", not 1");
    }
    drop[d] = true;
  }
  Shape s;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!(a.axes.empty() ? x[d] == 1 : drop[d])) s.push_back(x[d]);
  }
  out->push_back({s, in[0].dtype});
  return Status::Ok();
}
void SqueezeForward(const KernelContext& k) { CopyKernel(k); }
Status SqueezeGrad(GradContext& g) { return ReshapeBack(g); }

// Unsqueeze: inserts size-1 dimensions at attrs.axes (positions in the output).
Status UnsqueezeShape(const OpAttrs& a, std::span<const ValueInfo> in,
                      std::vector<ValueInfo>* out) {
  const Shape& x = in[0].shape;
  const int rank = static_cast<int>(x.size() + a.axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : a.axes) {
    SHARDSCOPE_ASSIGN_OR_RETURN(int64_t d, NormalizeAxis(axis, rank));
    if (inserted[d]) return Status::Invalid("axis " + std::to_string(axis) + " given twice");
    inserted[d] = true;
  }
  Shape s;
  size_t next = 0;
  for (int d = 0; d < rank; ++d) s.push_back(inserted[d] ? 1 : x[next++]);
  out->push_back({s, in[0].dtype});
  return Status::Ok();
}
void UnsqueezeForward(const KernelContext& k) { CopyKernel(k); }
Status UnsqueezeGrad(GradContext& g) { return ReshapeBack(g); }

// Transpose by the permutation attrs.axes (output dim i = input dim axes[i]).
Status TransposeShape(const OpAttrs& a, std::span<const ValueInfo> in,
                      std::vector<ValueInfo>* out) {
  const Shape& x = in[0].shape;
  std::vector<int64_t> sorted = a.axes;
  std::sort(sorted.begin(), sorted.end());
  bool is_perm = sorted.size() == x.size();
  for (size_t i = 0; is_perm && i < sorted.size(); ++i)
    is_perm = sorted[i] == static_cast<int64_t>(i);
  if (!is_perm) {
    return Status::Invalid("axes must be a permutation of 0.." + std::to_string(x.size() - 1) +
                           " for input " + ShapeToString(x));
  }
  Shape s;
  for (int64_t p : a.axes) s.push_back(x[p]);
  out->push_back({s, in[0].dtype});
  return Status::Ok();
}
void TransposeForward(const KernelContext& k) {
  const Tensor& x = *k.in[0];
  Tensor& y = *k.out[0];
  const int rank = x.rank();
  if (rank == 2 && k.attrs.axes[0] == 1) {
    AsMatrix(y, y.dim(0)) = AsMatrix(x, x.dim(0)).transpose();
    return;
  }
  // Input strides, permuted to output order, walked with an index counter.
  std::vector<int64_t> in_stride(rank), perm_stride(rank);
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= x.dim(d);
  }
  for (int d = 0; d < rank; ++d) perm_stride[d] = in_stride[k.attrs.axes[d]];
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  const float* px = x.data();
  float* py = y.data();
  for (int64_t i = 0; i < y.size(); ++i) {
    py[i] = px[off];
    for (int d = rank - 1; d >= 0; --d) {
      off += perm_stride[d];
      if (++idx[d] < y.dim(d)) break;
      off -= perm_stride[d] * y.dim(d);
      idx[d] = 0;
    }
  }
}
Status TransposeGrad(GradContext& g) {
  OpAttrs inv;
  inv.axes.resize(g.attrs().axes.size());
  for (size_t i = 0; i < inv.axes.size(); ++i)
    inv.axes[g.attrs().axes[i]] = static_cast<int64_t>(i);
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(OpKind::kTranspose, "dx", {g.output_grad()}, inv));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

}  // namespace shardscope
