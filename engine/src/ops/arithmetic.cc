// Elementwise arithmetic beyond Add/Sub/Mul, with numpy broadcasting: Div, Pow (and its
// backward operator PowGrad) and Sqrt.
#include <cmath>

#include "autodiff/grad_context.h"
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {
namespace {

Result<ValueId> Negate(GradContext& g, ValueId v, const std::string& part) {
  OpAttrs neg;
  neg.scale = -1.0f;
  return g.Emit(OpKind::kScale, part, {v}, neg);
}

}  // namespace

Status DivShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return BroadcastBinaryShape(in, out);
}
void DivForward(const KernelContext& k) {
  BroadcastBinary(k, [](float x, float y) { return x / y; });
}
// y = a / b: da = dy / b, db = −dy·y / b (each summed to its input's shape).
Status DivGrad(GradContext& g) {
  const ValueId a = g.input(0), b = g.input(1), dy = g.output_grad();
  if (g.needs_grad(0)) {
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId q, g.Emit(OpKind::kDiv, "da_full", {dy, b}));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(q, g.shape(a), "da"));
    g.SetInputGrad(0, d);
  }
  if (g.needs_grad(1)) {
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId p, g.Emit(OpKind::kMul, "dy_y", {dy, g.output()}));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId q, g.Emit(OpKind::kDiv, "dy_y_b", {p, b}));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId n, Negate(g, q, "db_full"));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(n, g.shape(b), "db"));
    g.SetInputGrad(1, d);
  }
  return Status::Ok();
}

Status PowShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return BroadcastBinaryShape(in, out);
}
void PowForward(const KernelContext& k) {
  BroadcastBinary(k, [](float x, float y) { return std::pow(x, y); });
}
Status PowGrad(GradContext& g) {
  for (int i = 0; i < 2; ++i) {
    if (!g.needs_grad(i)) continue;
    OpAttrs attrs;
    attrs.operand = i;
    const std::string part = i == 0 ? "da" : "db";
    SHARDSCOPE_ASSIGN_OR_RETURN(
        ValueId full,
        g.Emit(OpKind::kPowGrad, part + "_full", {g.output_grad(), g.input(0), g.input(1)}, attrs));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(full, g.shape(g.input(i)), part));
    g.SetInputGrad(i, d);
  }
  return Status::Ok();
}

// PowGrad(dy, a, b), at dy's (the Pow output's) shape: operand 0: dy·b·a^(b−1);
// operand 1: dy·a^b·ln a.
Status PowGradShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  if (a.operand != 0 && a.operand != 1) {
    return Status::Invalid("operand must be 0 (base) or 1 (exponent), got " +
                           std::to_string(a.operand));
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(in[1].shape, in[2].shape));
  if (s != in[0].shape) {
    return Status::Invalid("the gradient " + ShapeToString(in[0].shape) +
                           " must have the broadcast shape of base and exponent " +
                           ShapeToString(s));
  }
  out->push_back({s});
  return Status::Ok();
}
void PowGradForward(const KernelContext& k) {
  const Tensor &dy = *k.in[0], &a = *k.in[1], &b = *k.in[2];
  float* dx = k.out[0]->data();
  std::vector<int64_t> ia(dy.size()), ib(dy.size());
  ForEachBroadcast(a.shape(), dy.shape(), [&](int64_t i, int64_t j) { ia[i] = j; });
  ForEachBroadcast(b.shape(), dy.shape(), [&](int64_t i, int64_t j) { ib[i] = j; });
  for (int64_t i = 0; i < dy.size(); ++i) {
    const float x = a[ia[i]], e = b[ib[i]];
    dx[i] = k.attrs.operand == 0 ? dy[i] * e * std::pow(x, e - 1.0f)
                                 : dy[i] * std::pow(x, e) * std::log(x);
  }
}
Status PowGradGrad(GradContext&) { return Status::NotImplemented("second-order gradient of Pow"); }

Status SqrtShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  out->push_back({in[0].shape});
  return Status::Ok();
}
void SqrtForward(const KernelContext& k) { Flat(*k.out[0]) = Flat(*k.in[0]).sqrt(); }
// dx = dy / (2·y)
Status SqrtGrad(GradContext& g) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId q,
                              g.Emit(OpKind::kDiv, "dy_y", {g.output_grad(), g.output()}));
  OpAttrs half;
  half.scale = 0.5f;
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(OpKind::kScale, "dx", {q}, half));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

}  // namespace shardscope
