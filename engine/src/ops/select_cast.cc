// Where (elementwise choice with numpy broadcasting), Cast (f32 ↔ i32) and Identity.
#include <cmath>
#include <limits>

#include "autodiff/grad_context.h"
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {
namespace {

// Element i of a tensor as float, whatever its type.
float AsFloat(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kI32 ? static_cast<float>(t.ints()[i]) : t.data()[i];
}

// float → int32 as numpy's astype: toward zero; NaN gives 0, out-of-range values saturate.
int32_t ToInt(float x) {
  if (std::isnan(x)) return 0;
  if (x >= 2147483647.0f) return std::numeric_limits<int32_t>::max();
  if (x <= -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(x);
}

}  // namespace

// Where(cond, x, y) = cond ≠ 0 ? x : y; cond is i32 or f32 (ONNX's bool as 0/1).
Status WhereShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(in[0].shape, in[1].shape));
  SHARDSCOPE_ASSIGN_OR_RETURN(s, BroadcastShapes(s, in[2].shape));
  out->push_back({s});
  return Status::Ok();
}
void WhereForward(const KernelContext& k) {
  const Tensor &c = *k.in[0], &x = *k.in[1], &y = *k.in[2];
  Tensor& out = *k.out[0];
  std::vector<int64_t> ix(out.size()), iy(out.size());
  ForEachBroadcast(x.shape(), out.shape(), [&](int64_t i, int64_t j) { ix[i] = j; });
  ForEachBroadcast(y.shape(), out.shape(), [&](int64_t i, int64_t j) { iy[i] = j; });
  ForEachBroadcast(c.shape(), out.shape(), [&](int64_t i, int64_t j) {
    out[i] = AsFloat(c, j) != 0.0f ? x[ix[i]] : y[iy[i]];
  });
}
// dx = Where(cond, dy, 0), dy' = Where(cond, 0, dy), each summed to its input's shape.
Status WhereGrad(GradContext& g) {
  const ValueId zero = g.Zeros({}, "zero");
  for (int i = 1; i <= 2; ++i) {
    if (!g.needs_grad(i)) continue;
    const std::string part = i == 1 ? "dx" : "dy";
    const std::vector<ValueId> in = i == 1
                                        ? std::vector<ValueId>{g.input(0), g.output_grad(), zero}
                                        : std::vector<ValueId>{g.input(0), zero, g.output_grad()};
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId full, g.Emit(OpKind::kWhere, part + "_full", in));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.SumTo(full, g.shape(g.input(i)), part));
    g.SetInputGrad(i, d);
  }
  return Status::Ok();
}

// Cast to attrs.dtype. Only an f32 → f32 cast passes a gradient (integers have none).
Status CastShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  out->push_back({in[0].shape, a.dtype});
  return Status::Ok();
}
void CastForward(const KernelContext& k) {
  const Tensor& x = *k.in[0];
  Tensor& y = *k.out[0];
  if (y.dtype() == DType::kF32) {
    for (int64_t i = 0; i < x.size(); ++i) y.data()[i] = AsFloat(x, i);
  } else if (x.dtype() == DType::kI32) {
    std::copy(x.ints(), x.ints() + x.size(), y.ints());
  } else {
    for (int64_t i = 0; i < x.size(); ++i) y.ints()[i] = ToInt(x.data()[i]);
  }
}
Status CastGrad(GradContext& g) {
  if (g.attrs().dtype == DType::kF32) g.SetInputGrad(0, g.output_grad());
  return Status::Ok();
}

Status IdentityShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  out->push_back(in[0]);
  return Status::Ok();
}
void IdentityForward(const KernelContext& k) {
  const Tensor& x = *k.in[0];
  if (x.dtype() == DType::kI32)
    std::copy(x.ints(), x.ints() + x.size(), k.out[0]->ints());
  else
    Flat(*k.out[0]) = Flat(x);
}
Status IdentityGrad(GradContext& g) {
  g.SetInputGrad(0, g.output_grad());
  return Status::Ok();
}

}  // namespace shardscope
