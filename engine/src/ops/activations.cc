// Activations over the last axis or elementwise: ReLU, GeLU, Tanh, Sigmoid, Softmax,
// LogSoftmax, Dropout, and their backward operators.
#include <cmath>

#include "autodiff/grad_context.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"
#include "shardscope/rng.h"

namespace shardscope {
namespace {

Status SameShape(std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != in[0].shape) {
      return Status::Invalid("inputs must have the same shape, got " + ShapeToString(in[0].shape) +
                             " and " + ShapeToString(in[i].shape));
    }
  }
  out->push_back({in[0].shape});
  return Status::Ok();
}

Status LastAxisOnly(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  const int rank = static_cast<int>(in[0].shape.size());
  if (rank == 0) return Status::Invalid("input must have rank ≥ 1");
  SHARDSCOPE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, rank));
  if (axis != rank - 1) {
    return Status::Invalid("only the last axis is supported, got axis " + std::to_string(a.axis));
  }
  return SameShape(in, out);
}

// Emits one backward op (dy, saved) -> dx for a unary forward op.
Status UnaryGrad(GradContext& g, OpKind op, ValueId saved) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(op, "dx", {g.output_grad(), saved}, g.attrs()));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

Status SecondOrder(const char* op) {
  return Status::NotImplemented(std::string("second-order gradient of ") + op);
}

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// Keep mask of Dropout element i at a step: a hash of (seed, step, i), so every rank and
// every sharding of the tensor draws the same mask.
inline bool DropoutKeep(uint64_t seed, int64_t step, int64_t i, float rate) {
  uint64_t z = DeriveSeed(seed, "dropout") ^ (static_cast<uint64_t>(step) * 0xD1B54A32D192ED03ULL) ^
               (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 >= rate;
}

void DropoutApply(const KernelContext& k) {
  const Tensor& x = *k.in[0];
  Tensor& y = *k.out[0];
  const float rate = k.attrs.rate;
  if (!k.training || rate <= 0.0f) {
    Flat(y) = Flat(x);
    return;
  }
  const float keep_scale = 1.0f / (1.0f - rate);
  if (k.attrs.global_shape.empty()) {
    for (int64_t i = 0; i < x.size(); ++i) {
      y[i] = DropoutKeep(k.attrs.seed, k.step, i, rate) ? x[i] * keep_scale : 0.0f;
    }
    return;
  }
  // A shard: the mask is drawn by global element index, so it equals the whole tensor's.
  const Shape& g = k.attrs.global_shape;
  const int rank = static_cast<int>(g.size());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t global = 0;
    for (int d = 0; d < rank; ++d) global = global * g[d] + idx[d] + k.attrs.shard_offsets[d];
    y[i] = DropoutKeep(k.attrs.seed, k.step, global, rate) ? x[i] * keep_scale : 0.0f;
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < x.dim(d)) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

Status ReLUShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void ReLUForward(const KernelContext& k) { Flat(*k.out[0]) = Flat(*k.in[0]).max(0.0f); }
Status ReLUGrad(GradContext& g) { return UnaryGrad(g, OpKind::kReLUGrad, g.output()); }

// ReLUGrad(dy, y) = dy where y > 0.
Status ReLUGradShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void ReLUGradForward(const KernelContext& k) {
  Flat(*k.out[0]) = (Flat(*k.in[1]) > 0.0f).select(Flat(*k.in[0]), 0.0f);
}
Status ReLUGradGrad(GradContext&) { return SecondOrder("ReLU"); }

// GeLU(x) = x·Φ(x), the exact (erf) form.
Status GeLUShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void GeLUForward(const KernelContext& k) {
  const float* x = k.in[0]->data();
  float* y = k.out[0]->data();
  for (int64_t i = 0; i < k.in[0]->size(); ++i) {
    y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
  }
}
Status GeLUGrad(GradContext& g) { return UnaryGrad(g, OpKind::kGeLUGrad, g.input(0)); }

// GeLUGrad(dy, x) = dy·(Φ(x) + x·φ(x)).
Status GeLUGradShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void GeLUGradForward(const KernelContext& k) {
  const float *dy = k.in[0]->data(), *x = k.in[1]->data();
  float* dx = k.out[0]->data();
  for (int64_t i = 0; i < k.in[0]->size(); ++i) {
    const float cdf = 0.5f * (1.0f + std::erf(x[i] * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * std::exp(-0.5f * x[i] * x[i]);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}
Status GeLUGradGrad(GradContext&) { return SecondOrder("GeLU"); }

Status TanhShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void TanhForward(const KernelContext& k) { Flat(*k.out[0]) = Flat(*k.in[0]).tanh(); }
Status TanhGrad(GradContext& g) { return UnaryGrad(g, OpKind::kTanhGrad, g.output()); }

// TanhGrad(dy, y) = dy·(1 − y²).
Status TanhGradShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void TanhGradForward(const KernelContext& k) {
  const ConstVecMap y = Flat(*k.in[1]);
  Flat(*k.out[0]) = Flat(*k.in[0]) * (1.0f - y * y);
}
Status TanhGradGrad(GradContext&) { return SecondOrder("Tanh"); }

// Sigmoid(x) = 1 / (1 + e^−x).
Status SigmoidShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void SigmoidForward(const KernelContext& k) {
  Flat(*k.out[0]) = 1.0f / (1.0f + (-Flat(*k.in[0])).exp());
}
Status SigmoidGrad(GradContext& g) { return UnaryGrad(g, OpKind::kSigmoidGrad, g.output()); }

// SigmoidGrad(dy, y) = dy·y·(1 − y).
Status SigmoidGradShape(const OpAttrs&, std::span<const ValueInfo> in,
                        std::vector<ValueInfo>* out) {
  return SameShape(in, out);
}
void SigmoidGradForward(const KernelContext& k) {
  const ConstVecMap y = Flat(*k.in[1]);
  Flat(*k.out[0]) = Flat(*k.in[0]) * y * (1.0f - y);
}
Status SigmoidGradGrad(GradContext&) { return SecondOrder("Sigmoid"); }

Status SoftmaxShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  return LastAxisOnly(a, in, out);
}
void SoftmaxForward(const KernelContext& k) {
  const int64_t rows = OuterSize(k.in[0]->shape());
  ConstMatMap x = AsMatrix(*k.in[0], rows);
  MatMap y = AsMatrix(*k.out[0], rows);
  y = (x.colwise() - x.rowwise().maxCoeff()).array().exp().matrix();
  y.array().colwise() /= y.rowwise().sum().array();
}
Status SoftmaxGrad(GradContext& g) { return UnaryGrad(g, OpKind::kSoftmaxGrad, g.output()); }

// SoftmaxGrad(dy, y) = y·(dy − Σ dy·y) along the last axis.
Status SoftmaxGradShape(const OpAttrs& a, std::span<const ValueInfo> in,
                        std::vector<ValueInfo>* out) {
  return LastAxisOnly(a, in, out);
}
void SoftmaxGradForward(const KernelContext& k) {
  const int64_t rows = OuterSize(k.in[0]->shape());
  ConstMatMap dy = AsMatrix(*k.in[0], rows), y = AsMatrix(*k.in[1], rows);
  MatMap dx = AsMatrix(*k.out[0], rows);
  const Eigen::VectorXf dot = (dy.array() * y.array()).rowwise().sum();
  dx = (y.array() * (dy.colwise() - dot).array()).matrix();
}
Status SoftmaxGradGrad(GradContext&) { return SecondOrder("Softmax"); }

Status LogSoftmaxShape(const OpAttrs& a, std::span<const ValueInfo> in,
                       std::vector<ValueInfo>* out) {
  return LastAxisOnly(a, in, out);
}
void LogSoftmaxForward(const KernelContext& k) {
  const int64_t rows = OuterSize(k.in[0]->shape());
  ConstMatMap x = AsMatrix(*k.in[0], rows);
  MatMap y = AsMatrix(*k.out[0], rows);
  y = x.colwise() - x.rowwise().maxCoeff();
  const Eigen::VectorXf lse = y.array().exp().rowwise().sum().log();
  y.colwise() -= lse;
}
Status LogSoftmaxGrad(GradContext& g) { return UnaryGrad(g, OpKind::kLogSoftmaxGrad, g.output()); }

// LogSoftmaxGrad(dy, y) = dy − exp(y)·Σ dy along the last axis.
Status LogSoftmaxGradShape(const OpAttrs& a, std::span<const ValueInfo> in,
                           std::vector<ValueInfo>* out) {
  return LastAxisOnly(a, in, out);
}
void LogSoftmaxGradForward(const KernelContext& k) {
  const int64_t rows = OuterSize(k.in[0]->shape());
  ConstMatMap dy = AsMatrix(*k.in[0], rows), y = AsMatrix(*k.in[1], rows);
  MatMap dx = AsMatrix(*k.out[0], rows);
  const Eigen::VectorXf sum = dy.rowwise().sum();
  dx = dy - (y.array().exp().colwise() * sum.array()).matrix();
}
Status LogSoftmaxGradGrad(GradContext&) { return SecondOrder("LogSoftmax"); }

// Dropout with rate attrs.rate, seeded by (attrs.seed, step, element index); identity when
// not training.
Status DropoutShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  if (a.rate < 0.0f || a.rate >= 1.0f) {
    return Status::Invalid("rate must be in [0, 1), got " + std::to_string(a.rate));
  }
  return SameShape(in, out);
}
void DropoutForward(const KernelContext& k) { DropoutApply(k); }
Status DropoutGrad(GradContext& g) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d,
                              g.Emit(OpKind::kDropoutGrad, "dx", {g.output_grad()}, g.attrs()));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

// DropoutGrad(dy): the same mask as the forward op applied to dy.
Status DropoutGradShape(const OpAttrs& a, std::span<const ValueInfo> in,
                        std::vector<ValueInfo>* out) {
  return DropoutShape(a, in, out);
}
void DropoutGradForward(const KernelContext& k) { DropoutApply(k); }
Status DropoutGradGrad(GradContext& g) { return DropoutGrad(g); }

}  // namespace shardscope
