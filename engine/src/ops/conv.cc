// Conv2D (im2col + GEMM) and MaxPool2D in NCHW, with their backward operators.
#include <algorithm>
#include <limits>

#include "autodiff/grad_context.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {
namespace {

struct Window {
  int64_t out, pad_before;
};

Window OutputSize(int64_t in, int64_t k, int64_t stride, Padding padding) {
  if (padding == Padding::kValid) return {in < k ? 0 : (in - k) / stride + 1, 0};
  const int64_t out = (in + stride - 1) / stride;
  const int64_t pad = std::max<int64_t>((out - 1) * stride + k - in, 0);
  return {out, pad / 2};
}

// Geometry of one convolution or pooling: input [C, H, W] per image, window KH×KW.
struct Geometry {
  int64_t n, c, h, w, kh, kw, sh, sw, oh, ow, pad_t, pad_l;
  int64_t patch() const { return c * kh * kw; }
  int64_t pixels() const { return oh * ow; }
};

Geometry MakeGeometry(const Shape& x, int64_t kh, int64_t kw, const OpAttrs& a) {
  const Window wh = OutputSize(x[2], kh, a.stride[0], a.padding);
  const Window ww = OutputSize(x[3], kw, a.stride[1], a.padding);
  return {x[0], x[1], x[2], x[3], kh, kw, a.stride[0], a.stride[1], wh.out, ww.out,
          wh.pad_before, ww.pad_before};
}

Status CheckWindow(const OpAttrs& a, const Shape& x, int64_t kh, int64_t kw) {
  if (a.stride[0] < 1 || a.stride[1] < 1) return Status::Invalid("strides must be ≥ 1");
  if (kh < 1 || kw < 1) return Status::Invalid("window must be ≥ 1×1");
  if (a.padding == Padding::kValid && (x[2] < kh || x[3] < kw)) {
    return Status::Invalid("window " + std::to_string(kh) + "×" + std::to_string(kw) +
                           " is larger than the input " + ShapeToString(x) + " with valid padding");
  }
  return Status::Ok();
}

// cols[(c·kh + i)·kw + j][oy·ow + ox] = x[c][oy·sh − pad_t + i][ox·sw − pad_l + j] (0 outside).
void Im2Col(const Geometry& g, const float* x, float* cols) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = cols + ((c * g.kh + i) * g.kw + j) * g.pixels();
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.pad_t + i;
          float* dst = row + oy * g.ow;
          if (iy < 0 || iy >= g.h) {
            std::fill(dst, dst + g.ow, 0.0f);
            continue;
          }
          const float* src = x + (c * g.h + iy) * g.w;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.sw - g.pad_l + j;
            dst[ox] = (ix >= 0 && ix < g.w) ? src[ix] : 0.0f;
          }
        }
      }
    }
  }
}

// The adjoint of Im2Col: accumulates cols back into x (which the caller zeroed).
void Col2Im(const Geometry& g, const float* cols, float* x) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = cols + ((c * g.kh + i) * g.kw + j) * g.pixels();
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.pad_t + i;
          if (iy < 0 || iy >= g.h) continue;
          float* dst = x + (c * g.h + iy) * g.w;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.sw - g.pad_l + j;
            if (ix >= 0 && ix < g.w) dst[ix] += row[oy * g.ow + ox];
          }
        }
      }
    }
  }
}

Status ConvShapeFrom(const OpAttrs& a, const Shape& x, const Shape& w, Shape* y) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("input", x, 4));
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("weight", w, 4));
  if (w[1] != x[1]) {
    return Status::Invalid("weight " + ShapeToString(w) + " expects " + std::to_string(w[1]) +
                           " input channels, input " + ShapeToString(x) + " has " +
                           std::to_string(x[1]));
  }
  SHARDSCOPE_RETURN_IF_ERROR(CheckWindow(a, x, w[2], w[3]));
  const Geometry g = MakeGeometry(x, w[2], w[3], a);
  *y = {x[0], w[0], g.oh, g.ow};
  return Status::Ok();
}

}  // namespace

// Conv2D(x [N, C, H, W], w [O, C, KH, KW]) -> [N, O, OH, OW].
Status Conv2DShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  Shape y;
  SHARDSCOPE_RETURN_IF_ERROR(ConvShapeFrom(a, in[0].shape, in[1].shape, &y));
  out->push_back({y});
  return Status::Ok();
}
void Conv2DForward(const KernelContext& k) {
  const Tensor &x = *k.in[0], &w = *k.in[1];
  Tensor& y = *k.out[0];
  const Geometry g = MakeGeometry(x.shape(), w.dim(2), w.dim(3), k.attrs);
  const int64_t o = w.dim(0);
  RowMatrix cols(g.patch(), g.pixels());
  ConstMatMap wm(w.data(), o, g.patch());
  for (int64_t n = 0; n < g.n; ++n) {
    Im2Col(g, x.data() + n * g.c * g.h * g.w, cols.data());
    MatMap(y.data() + n * o * g.pixels(), o, g.pixels()).noalias() = wm * cols;
  }
}
Status Conv2DGrad(GradContext& g) {
  if (g.needs_grad(0)) {
    OpAttrs a = g.attrs();
    a.shape = g.shape(g.input(0));
    SHARDSCOPE_ASSIGN_OR_RETURN(
        ValueId dx, g.Emit(OpKind::kConv2DBackpropInput, "dx", {g.output_grad(), g.input(1)}, a));
    g.SetInputGrad(0, dx);
  }
  if (g.needs_grad(1)) {
    OpAttrs a = g.attrs();
    a.shape = g.shape(g.input(1));
    SHARDSCOPE_ASSIGN_OR_RETURN(
        ValueId dw, g.Emit(OpKind::kConv2DBackpropFilter, "dw", {g.output_grad(), g.input(0)}, a));
    g.SetInputGrad(1, dw);
  }
  return Status::Ok();
}

// Conv2DBackpropInput(dy, w) -> dx of shape attrs.shape.
Status Conv2DBackpropInputShape(const OpAttrs& a, std::span<const ValueInfo> in,
                                std::vector<ValueInfo>* out) {
  Shape y;
  SHARDSCOPE_RETURN_IF_ERROR(ConvShapeFrom(a, a.shape, in[1].shape, &y));
  if (y != in[0].shape) {
    return Status::Invalid("dy " + ShapeToString(in[0].shape) + " does not match the forward output " +
                           ShapeToString(y));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void Conv2DBackpropInputForward(const KernelContext& k) {
  const Tensor &dy = *k.in[0], &w = *k.in[1];
  Tensor& dx = *k.out[0];
  const Geometry g = MakeGeometry(dx.shape(), w.dim(2), w.dim(3), k.attrs);
  const int64_t o = w.dim(0);
  RowMatrix cols(g.patch(), g.pixels());
  ConstMatMap wm(w.data(), o, g.patch());
  dx.Fill(0.0f);
  for (int64_t n = 0; n < g.n; ++n) {
    cols.noalias() = wm.transpose() * ConstMatMap(dy.data() + n * o * g.pixels(), o, g.pixels());
    Col2Im(g, cols.data(), dx.data() + n * g.c * g.h * g.w);
  }
}
Status Conv2DBackpropInputGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of Conv2D");
}

// Conv2DBackpropFilter(dy, x) -> dw of shape attrs.shape.
Status Conv2DBackpropFilterShape(const OpAttrs& a, std::span<const ValueInfo> in,
                                 std::vector<ValueInfo>* out) {
  Shape y;
  SHARDSCOPE_RETURN_IF_ERROR(ConvShapeFrom(a, in[1].shape, a.shape, &y));
  if (y != in[0].shape) {
    return Status::Invalid("dy " + ShapeToString(in[0].shape) + " does not match the forward output " +
                           ShapeToString(y));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void Conv2DBackpropFilterForward(const KernelContext& k) {
  const Tensor &dy = *k.in[0], &x = *k.in[1];
  Tensor& dw = *k.out[0];
  const Geometry g = MakeGeometry(x.shape(), dw.dim(2), dw.dim(3), k.attrs);
  const int64_t o = dw.dim(0);
  RowMatrix cols(g.patch(), g.pixels());
  MatMap dwm(dw.data(), o, g.patch());
  dwm.setZero();
  for (int64_t n = 0; n < g.n; ++n) {
    Im2Col(g, x.data() + n * g.c * g.h * g.w, cols.data());
    dwm.noalias() += ConstMatMap(dy.data() + n * o * g.pixels(), o, g.pixels()) * cols.transpose();
  }
}
Status Conv2DBackpropFilterGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of Conv2D");
}

// MaxPool2D(x [N, C, H, W]) with window attrs.kernel and attrs.stride.
Status MaxPool2DShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("input", in[0].shape, 4));
  SHARDSCOPE_RETURN_IF_ERROR(CheckWindow(a, in[0].shape, a.kernel[0], a.kernel[1]));
  const Geometry g = MakeGeometry(in[0].shape, a.kernel[0], a.kernel[1], a);
  out->push_back({{g.n, g.c, g.oh, g.ow}});
  return Status::Ok();
}

namespace {
// Calls f(plane, out_index, argmax_index) for every output element of a max pool.
template <typename F>
void ForEachPoolMax(const Geometry& g, const float* x, F&& f) {
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const float* plane = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t arg = -1;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t iy = oy * g.sh - g.pad_t + i;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t ix = ox * g.sw - g.pad_l + j;
            if (ix < 0 || ix >= g.w) continue;
            const float v = plane[iy * g.w + ix];
            if (v > best || arg < 0) {
              best = v;
              arg = iy * g.w + ix;
            }
          }
        }
        f(p, oy * g.ow + ox, arg, best);
      }
    }
  }
}
}  // namespace

void MaxPool2DForward(const KernelContext& k) {
  const Geometry g = MakeGeometry(k.in[0]->shape(), k.attrs.kernel[0], k.attrs.kernel[1], k.attrs);
  float* y = k.out[0]->data();
  ForEachPoolMax(g, k.in[0]->data(), [&](int64_t p, int64_t o, int64_t, float v) {
    y[p * g.pixels() + o] = v;
  });
}
Status MaxPool2DGrad(GradContext& g) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ValueId dx, g.Emit(OpKind::kMaxPool2DGrad, "dx", {g.output_grad(), g.input(0)}, g.attrs()));
  g.SetInputGrad(0, dx);
  return Status::Ok();
}

// MaxPool2DGrad(dy, x): dy routed to the first maximum of each window.
Status MaxPool2DGradShape(const OpAttrs& a, std::span<const ValueInfo> in,
                          std::vector<ValueInfo>* out) {
  std::vector<ValueInfo> fwd;
  SHARDSCOPE_RETURN_IF_ERROR(MaxPool2DShape(a, in.subspan(1, 1), &fwd));
  if (fwd[0].shape != in[0].shape) {
    return Status::Invalid("dy " + ShapeToString(in[0].shape) + " does not match the forward output " +
                           ShapeToString(fwd[0].shape));
  }
  out->push_back({in[1].shape});
  return Status::Ok();
}
void MaxPool2DGradForward(const KernelContext& k) {
  const Geometry g = MakeGeometry(k.in[1]->shape(), k.attrs.kernel[0], k.attrs.kernel[1], k.attrs);
  const float* dy = k.in[0]->data();
  Tensor& dx = *k.out[0];
  dx.Fill(0.0f);
  float* pdx = dx.data();
  ForEachPoolMax(g, k.in[1]->data(), [&](int64_t p, int64_t o, int64_t arg, float) {
    if (arg >= 0) pdx[p * g.h * g.w + arg] += dy[p * g.pixels() + o];
  });
}
Status MaxPool2DGradGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of MaxPool2D");
}

}  // namespace shardscope
