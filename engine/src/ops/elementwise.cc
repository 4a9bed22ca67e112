// Elementwise arithmetic with numpy broadcasting: Add, Sub, Mul, Scale, BiasAdd, and the
// two broadcast helpers their gradients use, SumToShape and BroadcastTo.
#include "autodiff/grad_context.h"
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  const size_t lead = out.size() - in.size();
  std::vector<int64_t> strides(out.size(), 0);
  int64_t s = 1;
  for (size_t i = in.size(); i-- > 0;) {
    strides[lead + i] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return strides;
}

Result<ValueId> GradContext::SumTo(ValueId grad, const Shape& shape, const std::string& part) {
  if (this->shape(grad) == shape) return grad;
  OpAttrs attrs;
  attrs.shape = shape;
  return Emit(OpKind::kSumToShape, part, {grad}, attrs);
}

Status AddShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return BroadcastBinaryShape(in, out);
}
void AddForward(const KernelContext& k) {
  BroadcastBinary(k, [](float x, float y) { return x + y; });
}
Status AddGrad(GradContext& g) {
  for (int i = 0; i < 2; ++i) {
    if (!g.needs_grad(i)) continue;
    SHARDSCOPE_ASSIGN_OR_RETURN(
        ValueId d, g.SumTo(g.output_grad(), g.shape(g.input(i)), i == 0 ? "da" : "db"));
    g.SetInputGrad(i, d);
  }
  return Status::Ok();
}

Status SubShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return BroadcastBinaryShape(in, out);
}
void SubForward(const KernelContext& k) {
  BroadcastBinary(k, [](float x, float y) { return x - y; });
}
Status SubGrad(GradContext& g) {
  if (g.needs_grad(0)) {
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(g.output_grad(), g.shape(g.input(0)), "da"));
    g.SetInputGrad(0, d);
  }
  if (g.needs_grad(1)) {
    OpAttrs neg;
    neg.scale = -1.0f;
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId n, g.Emit(OpKind::kScale, "neg", {g.output_grad()}, neg));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(n, g.shape(g.input(1)), "db"));
    g.SetInputGrad(1, d);
  }
  return Status::Ok();
}

Status MulShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return BroadcastBinaryShape(in, out);
}
void MulForward(const KernelContext& k) {
  BroadcastBinary(k, [](float x, float y) { return x * y; });
}
Status MulGrad(GradContext& g) {
  for (int i = 0; i < 2; ++i) {
    if (!g.needs_grad(i)) continue;
    const char* part = i == 0 ? "da" : "db";
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId prod, g.Emit(OpKind::kMul, std::string(part) + "_full",
                                                     {g.output_grad(), g.input(1 - i)}));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(prod, g.shape(g.input(i)), part));
    g.SetInputGrad(i, d);
  }
  return Status::Ok();
}

Status ScaleShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  out->push_back({in[0].shape});
  return Status::Ok();
}
void ScaleForward(const KernelContext& k) { Flat(*k.out[0]) = Flat(*k.in[0]) * k.attrs.scale; }
Status ScaleGrad(GradContext& g) {
  OpAttrs attrs;
  attrs.scale = g.attrs().scale;
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(OpKind::kScale, "dx", {g.output_grad()}, attrs));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

// BiasAdd: x [N, C, ...] + bias [C] along axis 1 (the channel of NCHW, the features of [N, C]).
Status BiasAddShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  const Shape &x = in[0].shape, &b = in[1].shape;
  if (x.size() < 2) return Status::Invalid("input must have rank ≥ 2, got " + ShapeToString(x));
  if (b.size() != 1 || b[0] != x[1]) {
    return Status::Invalid("bias must have shape [" + std::to_string(x[1]) + "] (axis 1 of input " +
                           ShapeToString(x) + "), got " + ShapeToString(b));
  }
  out->push_back({x});
  return Status::Ok();
}
void BiasAddForward(const KernelContext& k) {
  const Tensor &x = *k.in[0], &b = *k.in[1];
  Tensor& y = *k.out[0];
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.size() / (n * c);
  if (inner == 1) {
    AsMatrix(y, n) = AsMatrix(x, n).rowwise() + Eigen::Map<const Eigen::RowVectorXf>(b.data(), c);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const int64_t off = (i * c + j) * inner;
      VecMap(y.data() + off, inner) = ConstVecMap(x.data() + off, inner) + b[j];
    }
  }
}
Status BiasAddGrad(GradContext& g) {
  if (g.needs_grad(0)) g.SetInputGrad(0, g.output_grad());
  if (g.needs_grad(1)) {
    OpAttrs attrs;
    const int rank = static_cast<int>(g.shape(g.input(0)).size());
    for (int d = 0; d < rank; ++d) {
      if (d != 1) attrs.axes.push_back(d);
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId db,
                                g.Emit(OpKind::kReduceSum, "db", {g.output_grad()}, attrs));
    g.SetInputGrad(1, db);
  }
  return Status::Ok();
}

// SumToShape: sums the dimensions along which attrs.shape was broadcast to the input's.
Status SumToShapeShape(const OpAttrs& a, std::span<const ValueInfo> in,
                       std::vector<ValueInfo>* out) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(a.shape, in[0].shape));
  if (s != in[0].shape) {
    return Status::Invalid("target " + ShapeToString(a.shape) + " does not broadcast to input " +
                           ShapeToString(in[0].shape));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void SumToShapeForward(const KernelContext& k) {
  const Tensor& x = *k.in[0];
  Tensor& y = *k.out[0];
  y.Fill(0.0f);
  const float* px = x.data();
  float* py = y.data();
  ForEachBroadcast(y.shape(), x.shape(), [&](int64_t i, int64_t j) { py[j] += px[i]; });
}
Status SumToShapeGrad(GradContext& g) {
  OpAttrs attrs;
  attrs.shape = g.shape(g.input(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d,
                              g.Emit(OpKind::kBroadcastTo, "dx", {g.output_grad()}, attrs));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

Status BroadcastToShape(const OpAttrs& a, std::span<const ValueInfo> in,
                        std::vector<ValueInfo>* out) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(in[0].shape, a.shape));
  if (s != a.shape) {
    return Status::Invalid("input " + ShapeToString(in[0].shape) + " does not broadcast to " +
                           ShapeToString(a.shape));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void BroadcastToForward(const KernelContext& k) {
  const float* px = k.in[0]->data();
  float* py = k.out[0]->data();
  ForEachBroadcast(k.in[0]->shape(), k.out[0]->shape(),
                   [&](int64_t i, int64_t j) { py[i] = px[j]; });
}
Status BroadcastToGrad(GradContext& g) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(g.output_grad(), g.shape(g.input(0)), "dx"));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

}  // namespace shardscope
