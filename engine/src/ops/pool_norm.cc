// AveragePool2D (NCHW) and BatchNorm (per channel, axis 1), with their backward operators.
// BatchNorm takes its statistics as inputs: running statistics for inference, or batch
// statistics computed by ReduceMean (AddBatchNormTraining in composites.h) for training.
#include <cmath>

#include "autodiff/grad_context.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"
#include "ops/window.h"

namespace shardscope {
namespace {

struct PoolGeometry {
  int64_t planes, h, w, kh, kw, sh, sw, oh, ow, pad_t, pad_l;
};

PoolGeometry MakePoolGeometry(const Shape& x, const OpAttrs& a) {
  const Window wh = OutputSize(x[2], a.kernel[0], a.stride[0], a.padding);
  const Window ww = OutputSize(x[3], a.kernel[1], a.stride[1], a.padding);
  return {x[0] * x[1], x[2],   x[3],   a.kernel[0],   a.kernel[1],  a.stride[0],
          a.stride[1], wh.out, ww.out, wh.pad_before, ww.pad_before};
}

// Calls f(plane, output index, y0, y1, x0, x1) for every window, clipped to the input (the
// padding is not averaged, as ONNX's count_include_pad = 0 and TensorFlow's SAME).
template <typename F>
void ForEachWindow(const PoolGeometry& g, F&& f) {
  int64_t out = 0;
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const int64_t y0 = std::max<int64_t>(oy * g.sh - g.pad_t, 0);
      const int64_t y1 = std::min(oy * g.sh - g.pad_t + g.kh, g.h);
      for (int64_t ox = 0; ox < g.ow; ++ox, ++out) {
        const int64_t x0 = std::max<int64_t>(ox * g.sw - g.pad_l, 0);
        const int64_t x1 = std::min(ox * g.sw - g.pad_l + g.kw, g.w);
        f(p, out, y0, y1, x0, x1);
      }
    }
  }
}

Status PoolShapeOf(const OpAttrs& a, const Shape& x, Shape* y) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("input", x, 4));
  if (a.stride[0] < 1 || a.stride[1] < 1) return Status::Invalid("strides must be ≥ 1");
  if (a.kernel[0] < 1 || a.kernel[1] < 1) return Status::Invalid("window must be ≥ 1×1");
  if (a.padding == Padding::kValid && (x[2] < a.kernel[0] || x[3] < a.kernel[1])) {
    return Status::Invalid("window " + std::to_string(a.kernel[0]) + "×" +
                           std::to_string(a.kernel[1]) + " is larger than the input " +
                           ShapeToString(x) + " with valid padding");
  }
  const PoolGeometry g = MakePoolGeometry(x, a);
  *y = {x[0], x[1], g.oh, g.ow};
  return Status::Ok();
}

// Per-channel views of x [N, C, ...]: f(channel, offset of one [inner] run).
template <typename F>
void ForEachChannelRun(const Shape& x, F&& f) {
  const int64_t n = x[0], c = x[1];
  int64_t inner = 1;
  for (size_t d = 2; d < x.size(); ++d) inner *= x[d];
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) f(j, (i * c + j) * inner, inner);
  }
}

}  // namespace

Status AveragePool2DShape(const OpAttrs& a, std::span<const ValueInfo> in,
                          std::vector<ValueInfo>* out) {
  Shape y;
  SHARDSCOPE_RETURN_IF_ERROR(PoolShapeOf(a, in[0].shape, &y));
  out->push_back({y});
  return Status::Ok();
}
void AveragePool2DForward(const KernelContext& k) {
  const PoolGeometry g = MakePoolGeometry(k.in[0]->shape(), k.attrs);
  const float* x = k.in[0]->data();
  float* y = k.out[0]->data();
  ForEachWindow(g, [&](int64_t p, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
    const float* plane = x + p * g.h * g.w;
    float sum = 0.0f;
    for (int64_t r = y0; r < y1; ++r) {
      for (int64_t c = x0; c < x1; ++c) sum += plane[r * g.w + c];
    }
    y[o] = sum / static_cast<float>((y1 - y0) * (x1 - x0));
  });
}
Status AveragePool2DGrad(GradContext& g) {
  OpAttrs a = g.attrs();
  a.shape = g.shape(g.input(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d,
                              g.Emit(OpKind::kAveragePool2DGrad, "dx", {g.output_grad()}, a));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

// AveragePool2DGrad(dy): each window's dy spread evenly over its input elements.
Status AveragePool2DGradShape(const OpAttrs& a, std::span<const ValueInfo> in,
                              std::vector<ValueInfo>* out) {
  Shape y;
  SHARDSCOPE_RETURN_IF_ERROR(PoolShapeOf(a, a.shape, &y));
  if (y != in[0].shape) {
    return Status::Invalid("the gradient " + ShapeToString(in[0].shape) +
                           " is not the pooled shape " + ShapeToString(y) + " of " +
                           ShapeToString(a.shape));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void AveragePool2DGradForward(const KernelContext& k) {
  Tensor& dx = *k.out[0];
  dx.Fill(0.0f);
  const PoolGeometry g = MakePoolGeometry(dx.shape(), k.attrs);
  const float* dy = k.in[0]->data();
  ForEachWindow(g, [&](int64_t p, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
    float* plane = dx.data() + p * g.h * g.w;
    const float share = dy[o] / static_cast<float>((y1 - y0) * (x1 - x0));
    for (int64_t r = y0; r < y1; ++r) {
      for (int64_t c = x0; c < x1; ++c) plane[r * g.w + c] += share;
    }
  });
}
Status AveragePool2DGradGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of AveragePool2D");
}

// BatchNorm(x [N, C, ...], scale, bias, mean, var [C]) =
//   (x − mean) · scale / sqrt(var + epsilon) + bias, per channel.
Status BatchNormShape(const OpAttrs&, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  const Shape& x = in[0].shape;
  if (x.size() < 2) return Status::Invalid("input must have rank ≥ 2, got " + ShapeToString(x));
  static const char* kNames[] = {"", "scale", "bias", "mean", "var"};
  for (int i = 1; i < 5; ++i) {
    if (in[i].shape != Shape{x[1]}) {
      return Status::Invalid(std::string(kNames[i]) + " must have shape [" + std::to_string(x[1]) +
                             "] (axis 1 of input " + ShapeToString(x) + "), got " +
                             ShapeToString(in[i].shape));
    }
  }
  out->push_back({x});
  return Status::Ok();
}
void BatchNormForward(const KernelContext& k) {
  const Tensor &x = *k.in[0], &scale = *k.in[1], &bias = *k.in[2], &mean = *k.in[3],
               &var = *k.in[4];
  Tensor& y = *k.out[0];
  ForEachChannelRun(x.shape(), [&](int64_t c, int64_t off, int64_t n) {
    const float a = scale[c] / std::sqrt(var[c] + k.attrs.epsilon);
    VecMap(y.data() + off, n) = (ConstVecMap(x.data() + off, n) - mean[c]) * a + bias[c];
  });
}
Status BatchNormGrad(GradContext& g) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      std::vector<ValueId> d,
      g.EmitAll(OpKind::kBatchNormGrad, "d",
                {g.output_grad(), g.input(0), g.input(1), g.input(3), g.input(4)}, g.attrs()));
  for (int i = 0; i < 5; ++i) {
    if (g.needs_grad(i)) g.SetInputGrad(i, d[i]);
  }
  return Status::Ok();
}

// BatchNormGrad(dy, x, scale, mean, var) -> (dx, dscale, dbias, dmean, dvar), with
// s = 1 / sqrt(var + epsilon): dx = dy·scale·s, dscale = Σ dy·(x − mean)·s, dbias = Σ dy,
// dmean = −scale·s·Σ dy, dvar = −½·scale·s³·Σ dy·(x − mean), sums over all but axis 1.
Status BatchNormGradShape(const OpAttrs&, std::span<const ValueInfo> in,
                          std::vector<ValueInfo>* out) {
  const Shape& x = in[1].shape;
  if (x.size() < 2 || in[0].shape != x) {
    return Status::Invalid("dy and x must have one shape of rank ≥ 2, got " +
                           ShapeToString(in[0].shape) + " and " + ShapeToString(x));
  }
  for (int i = 2; i < 5; ++i) {
    if (in[i].shape != Shape{x[1]}) {
      return Status::Invalid("scale, mean and var must have shape [" + std::to_string(x[1]) +
                             "], got " + ShapeToString(in[i].shape));
    }
  }
  out->push_back({x});
  for (int i = 0; i < 4; ++i) out->push_back({{x[1]}});
  return Status::Ok();
}
void BatchNormGradForward(const KernelContext& k) {
  const Tensor &dy = *k.in[0], &x = *k.in[1], &scale = *k.in[2], &mean = *k.in[3], &var = *k.in[4];
  Tensor &dx = *k.out[0], &dscale = *k.out[1], &dbias = *k.out[2], &dmean = *k.out[3],
         &dvar = *k.out[4];
  const int64_t channels = x.dim(1);
  std::vector<double> sum_dy(channels, 0.0), sum_dy_xc(channels, 0.0);
  ForEachChannelRun(x.shape(), [&](int64_t c, int64_t off, int64_t n) {
    const float s = 1.0f / std::sqrt(var[c] + k.attrs.epsilon);
    const ConstVecMap g(dy.data() + off, n);
    VecMap(dx.data() + off, n) = g * (scale[c] * s);
    sum_dy[c] += g.sum();
    sum_dy_xc[c] += (g * (ConstVecMap(x.data() + off, n) - mean[c])).sum();
  });
  for (int64_t c = 0; c < channels; ++c) {
    const float s = 1.0f / std::sqrt(var[c] + k.attrs.epsilon);
    dscale[c] = static_cast<float>(sum_dy_xc[c]) * s;
    dbias[c] = static_cast<float>(sum_dy[c]);
    dmean[c] = -scale[c] * s * static_cast<float>(sum_dy[c]);
    dvar[c] = -0.5f * scale[c] * s * s * s * static_cast<float>(sum_dy_xc[c]);
  }
}
Status BatchNormGradGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of BatchNorm");
}

}  // namespace shardscope
