// Gather (embedding lookup) and LayerNorm (over the last axis), with their backward operators.
#include <cmath>

#include "autodiff/grad_context.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {

// Gather(table [V, D], indices i32 [...]) -> [..., D]. Rows outside [0, V) read as zeros,
// which is what a row-sharded table's masked lookup needs.
Status GatherShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("table", in[0].shape, 2));
  if (in[1].dtype != DType::kI32) return Status::Invalid("indices must be i32");
  if (a.axis != 0 && a.axis != -1) return Status::Invalid("only axis 0 is supported");
  Shape s = in[1].shape;
  s.push_back(in[0].shape[1]);
  out->push_back({s});
  return Status::Ok();
}
void GatherForward(const KernelContext& k) {
  const Tensor& table = *k.in[0];
  const int32_t* idx = k.in[1]->ints();
  const int64_t v = table.dim(0), d = table.dim(1);
  const int64_t first = k.attrs.shard_offsets.empty() ? 0 : k.attrs.shard_offsets[0];
  MatMap y(k.out[0]->data(), k.in[1]->size(), d);
  ConstMatMap t(table.data(), v, d);
  for (int64_t i = 0; i < k.in[1]->size(); ++i) {
    const int64_t row = idx[i] - first;
    if (row >= 0 && row < v)
      y.row(i) = t.row(row);
    else
      y.row(i).setZero();
  }
}
Status GatherGrad(GradContext& g) {
  if (!g.needs_grad(0)) return Status::Ok();
  OpAttrs a;
  a.shape = g.shape(g.input(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ValueId d, g.Emit(OpKind::kGatherGrad, "dtable", {g.output_grad(), g.input(1)}, a));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

// GatherGrad(dy [..., D], indices) -> dtable of shape attrs.shape, rows scatter-added.
Status GatherGradShape(const OpAttrs& a, std::span<const ValueInfo> in,
                       std::vector<ValueInfo>* out) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("table", a.shape, 2));
  Shape expect = in[1].shape;
  expect.push_back(a.shape[1]);
  if (in[0].shape != expect) {
    return Status::Invalid("dy " + ShapeToString(in[0].shape) + " must be " +
                           ShapeToString(expect));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void GatherGradForward(const KernelContext& k) {
  const int32_t* idx = k.in[1]->ints();
  Tensor& dt = *k.out[0];
  const int64_t v = dt.dim(0), d = dt.dim(1);
  const int64_t first = k.attrs.shard_offsets.empty() ? 0 : k.attrs.shard_offsets[0];
  dt.Fill(0.0f);
  MatMap t(dt.data(), v, d);
  ConstMatMap dy(k.in[0]->data(), k.in[1]->size(), d);
  for (int64_t i = 0; i < k.in[1]->size(); ++i) {
    const int64_t row = idx[i] - first;
    if (row >= 0 && row < v) t.row(row) += dy.row(i);
  }
}
Status GatherGradGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of Gather");
}

namespace {
Status CheckNormParams(const Shape& x, const Shape& gamma, const char* what) {
  if (x.empty()) return Status::Invalid("input must have rank ≥ 1");
  if (gamma != Shape{x.back()}) {
    return Status::Invalid(std::string(what) + " must have shape [" + std::to_string(x.back()) +
                           "] (the last axis of " + ShapeToString(x) + "), got " +
                           ShapeToString(gamma));
  }
  return Status::Ok();
}
}  // namespace

// LayerNorm(x [..., D], gamma [D], beta [D]) = (x − mean)/sqrt(var + ε)·gamma + beta.
Status LayerNormShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckNormParams(in[0].shape, in[1].shape, "gamma"));
  SHARDSCOPE_RETURN_IF_ERROR(CheckNormParams(in[0].shape, in[2].shape, "beta"));
  out->push_back({in[0].shape});
  return Status::Ok();
}
void LayerNormForward(const KernelContext& k) {
  const int64_t rows = OuterSize(k.in[0]->shape()), d = k.in[0]->shape().back();
  ConstMatMap x = AsMatrix(*k.in[0], rows);
  MatMap y = AsMatrix(*k.out[0], rows);
  Eigen::Map<const Eigen::RowVectorXf> gamma(k.in[1]->data(), d), beta(k.in[2]->data(), d);
  for (int64_t r = 0; r < rows; ++r) {
    const float mean = x.row(r).mean();
    const float var = (x.row(r).array() - mean).square().mean();
    const float inv = 1.0f / std::sqrt(var + k.attrs.epsilon);
    y.row(r) = ((x.row(r).array() - mean) * inv * gamma.array() + beta.array()).matrix();
  }
}
Status LayerNormGrad(GradContext& g) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      auto d,
      g.EmitAll(OpKind::kLayerNormGrad, "d", {g.output_grad(), g.input(0), g.input(1)}, g.attrs()));
  for (int i = 0; i < 3; ++i) {
    if (g.needs_grad(i)) g.SetInputGrad(i, d[i]);
  }
  return Status::Ok();
}

// LayerNormGrad(dy, x, gamma) -> (dx, dgamma, dbeta).
Status LayerNormGradShape(const OpAttrs&, std::span<const ValueInfo> in,
                          std::vector<ValueInfo>* out) {
  if (in[0].shape != in[1].shape) return Status::Invalid("dy and x must have the same shape");
  SHARDSCOPE_RETURN_IF_ERROR(CheckNormParams(in[1].shape, in[2].shape, "gamma"));
  out->push_back({in[1].shape});
  out->push_back({in[2].shape});
  out->push_back({in[2].shape});
  return Status::Ok();
}
void LayerNormGradForward(const KernelContext& k) {
  const int64_t rows = OuterSize(k.in[1]->shape()), d = k.in[1]->shape().back();
  ConstMatMap dy = AsMatrix(*k.in[0], rows), x = AsMatrix(*k.in[1], rows);
  Eigen::Map<const Eigen::RowVectorXf> gamma(k.in[2]->data(), d);
  MatMap dx = AsMatrix(*k.out[0], rows);
  Eigen::Map<Eigen::RowVectorXf> dgamma(k.out[1]->data(), d), dbeta(k.out[2]->data(), d);
  dgamma.setZero();
  dbeta.setZero();
  Eigen::RowVectorXf xhat(d), gdy(d);
  for (int64_t r = 0; r < rows; ++r) {
    const float mean = x.row(r).mean();
    const float var = (x.row(r).array() - mean).square().mean();
    const float inv = 1.0f / std::sqrt(var + k.attrs.epsilon);
    xhat = (x.row(r).array() - mean) * inv;
    dgamma.array() += dy.row(r).array() * xhat.array();
    dbeta += dy.row(r);
    gdy = (dy.row(r).array() * gamma.array()).matrix();
    const float m1 = gdy.mean();
    const float m2 = (gdy.array() * xhat.array()).mean();
    dx.row(r) = ((gdy.array() - m1 - xhat.array() * m2) * inv).matrix();
  }
}
Status LayerNormGradGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of LayerNorm");
}

}  // namespace shardscope
