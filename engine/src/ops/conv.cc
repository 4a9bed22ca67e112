// Conv2D (im2col + GEMM) and MaxPool2D in NCHW, with their backward operators.
#include <algorithm>
#include <limits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "autodiff/grad_context.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"
#include "ops/window.h"
#include "shardscope/checked_math.h"

namespace shardscope {
namespace {

// Geometry of one convolution or pooling: input [C, H, W] per image, window KH×KW.
struct Geometry {
  int64_t n, c, h, w, kh, kw, sh, sw, oh, ow, pad_t, pad_l;
  int64_t patch() const { return c * kh * kw; }
  int64_t pixels() const { return oh * ow; }
};

Geometry MakeGeometry(const Shape& x, int64_t kh, int64_t kw, const OpAttrs& a) {
  const Window wh = OutputSize(x[2], kh, a.stride[0], a.padding);
  const Window ww = OutputSize(x[3], kw, a.stride[1], a.padding);
  return {x[0],        x[1],   x[2],   x[3],          kh,           kw, a.stride[0],
          a.stride[1], wh.out, ww.out, wh.pad_before, ww.pad_before};
}

Status CheckWindow(const OpAttrs& a, const Shape& x, int64_t kh, int64_t kw) {
  if (a.stride[0] < 1 || a.stride[1] < 1) return Status::Invalid("strides must be ≥ 1");
  if (kh < 1 || kw < 1) return Status::Invalid("window must be ≥ 1×1");
  // Bounded like tensor sizes (checked_math.h), so the window arithmetic cannot overflow.
  for (int64_t v : {kh, kw, a.stride[0], a.stride[1]}) {
    if (v > kMaxTensorBytes) {
      return Status::Invalid("window " + std::to_string(kh) + "×" + std::to_string(kw) +
                             " with strides " + std::to_string(a.stride[0]) + "×" +
                             std::to_string(a.stride[1]) + ": a size above 2^56");
    }
  }
  if (a.padding == Padding::kValid && (x[2] < kh || x[3] < kw)) {
    return Status::Invalid("window " + std::to_string(kh) + "×" + std::to_string(kw) +
                           " is larger than the input " + ShapeToString(x) + " with valid padding");
  }
  return Status::Ok();
}

// The output positions o whose input position o·stride + offset lies in [0, size), as the
// half-open range [*lo, *hi) clipped to [0, out). Bounds checks then leave the inner loops.
void ValidRange(int64_t offset, int64_t stride, int64_t size, int64_t out, int64_t* lo,
                int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *hi = offset >= size ? 0 : std::min(out, (size - 1 - offset) / stride + 1);
  *lo = std::min(*lo, *hi);
}

#if defined(__AVX512F__)
// Lanes [lo, hi) of a 16-float vector (empty when hi <= lo); lo, hi are clipped to [0, 16].
inline __mmask16 LaneMask(int64_t lo, int64_t hi) {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min<int64_t>(hi, 16);
  if (hi <= lo) return 0;
  return static_cast<__mmask16>(((1u << (hi - lo)) - 1) << lo);
}
#endif

// dst[r·dst_stride + k] = src[r·src_stride + k] for r < rows, k < n: the short runs (an
// output row of a few dozen pixels) of Im2Col. With AVX-512, one masked vector per 16 floats.
inline void CopyRows(float* dst, int64_t dst_stride, const float* src, int64_t src_stride,
                     int64_t rows, int64_t n) {
#if defined(__AVX512F__)
  const int64_t full = n / 16;
  const __mmask16 tail = LaneMask(0, n % 16);
  for (int64_t r = 0; r < rows; ++r, dst += dst_stride, src += src_stride) {
    for (int64_t k = 0; k < full; ++k) {
      _mm512_storeu_ps(dst + 16 * k, _mm512_loadu_ps(src + 16 * k));
    }
    if (tail) {
      _mm512_mask_storeu_ps(dst + 16 * full, tail, _mm512_maskz_loadu_ps(tail, src + 16 * full));
    }
  }
#else
  for (int64_t r = 0; r < rows; ++r, dst += dst_stride, src += src_stride) {
    std::copy(src, src + n, dst);
  }
#endif
}

// A scratch buffer for the im2col columns, owned by the calling thread and reused by every
// convolution it runs (no allocation per call once warm): n floats, with `guard` more
// readable floats before and after, so that masked vector loads near the ends stay inside.
float* Scratch(int64_t n, int64_t guard) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < n + 2 * guard) buffer.resize(n + 2 * guard);
  return buffer.data() + guard;
}
int64_t ColsGuard(const Geometry& g) { return g.kw + g.w + 16; }

// A 1×1 window with unit strides and no padding: the columns are the image itself.
bool IsPointwise(const Geometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_t == 0 && g.pad_l == 0 &&
         g.oh == g.h && g.ow == g.w;
}

// cols[(c·kh + i)·kw + j][oy·ow + ox] = x[c][oy·sh − pad_t + i][ox·sw − pad_l + j] (0 outside).
void Im2Col(const Geometry& g, const float* x, float* cols) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      // Output rows [oy0, oy1) read input rows inside the image; the others are padding.
      int64_t oy0, oy1;
      ValidRange(i - g.pad_t, g.sh, g.h, g.oh, &oy0, &oy1);
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = cols + ((c * g.kh + i) * g.kw + j) * g.pixels();
        const int64_t off = j - g.pad_l;
        int64_t lo, hi;
        ValidRange(off, g.sw, g.w, g.ow, &lo, &hi);
        std::fill(row, row + oy0 * g.ow, 0.0f);
        std::fill(row + oy1 * g.ow, row + g.pixels(), 0.0f);
        if (oy0 >= oy1) continue;
        // Column ox of input row `in` is in[ox·sw + off]; for ox ≥ lo that index is ≥ 0.
        const float* in = x + (c * g.h + oy0 * g.sh - g.pad_t + i) * g.w;
        if (g.sw == 1 && lo == 0 && hi == g.ow) {
          CopyRows(row + oy0 * g.ow, g.ow, in + off, g.sh * g.w, oy1 - oy0, g.ow);
          continue;
        }
        for (int64_t oy = oy0; oy < oy1; ++oy, in += g.sh * g.w) {
          float* dst = row + oy * g.ow;
          std::fill(dst, dst + lo, 0.0f);
          if (g.sw == 1) {
            if (hi > lo) CopyRows(dst + lo, 0, in + lo + off, 0, 1, hi - lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = in[ox * g.sw + off];
          }
          std::fill(dst + std::max(lo, hi), dst + g.ow, 0.0f);
        }
      }
    }
  }
}

// The adjoint of Im2Col: accumulates cols back into x (which the caller zeroed).
void Col2ImGeneric(const Geometry& g, const float* cols, float* x) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = cols + ((c * g.kh + i) * g.kw + j) * g.pixels();
        const int64_t off = j - g.pad_l;
        int64_t lo, hi;
        ValidRange(off, g.sw, g.w, g.ow, &lo, &hi);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.pad_t + i;
          if (iy < 0 || iy >= g.h) continue;
          float* dst = x + (c * g.h + iy) * g.w;  // dst[ox·sw + off] is column ox
          const float* src = row + oy * g.ow;
          for (int64_t ox = lo; ox < hi; ++ox) dst[ox * g.sw + off] += src[ox];
        }
      }
    }
  }
}

#if defined(__AVX512F__)
// Col2Im for unit strides (the common case), in gather form: each 16-pixel piece of an input
// row sums its contributions in a register and is stored once (no read-modify-write of
// overlapping runs). The contributions arrive in the generic loop's (i, j) order, so the
// sums are bit-identical. `cols` needs ColsGuard(g) readable floats on both sides.
void Col2ImUnitStride(const Geometry& g, const float* cols, float* x) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t iy = 0; iy < g.h; ++iy) {
      float* xrow = x + (c * g.h + iy) * g.w;
      for (int64_t x0 = 0; x0 < g.w; x0 += 16) {
        const __mmask16 out = LaneMask(0, g.w - x0);
        __m512 acc = _mm512_maskz_loadu_ps(out, xrow + x0);
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t oy = iy + g.pad_t - i;
          if (oy < 0 || oy >= g.oh) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            // Input column ix = x0 + lane comes from output column ox = ix + shift.
            const int64_t shift = g.pad_l - j;
            const __mmask16 m = out & LaneMask(-shift - x0, g.ow - shift - x0);
            if (!m) continue;
            const float* src =
                cols + ((c * g.kh + i) * g.kw + j) * g.pixels() + oy * g.ow + x0 + shift;
            acc = _mm512_mask_add_ps(acc, m, acc, _mm512_maskz_loadu_ps(m, src));
          }
        }
        _mm512_mask_storeu_ps(xrow + x0, out, acc);
      }
    }
  }
}
#endif

void Col2Im(const Geometry& g, const float* cols, float* x) {
#if defined(__AVX512F__)
  if (g.sh == 1 && g.sw == 1) return Col2ImUnitStride(g, cols, x);
#endif
  Col2ImGeneric(g, cols, x);
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
  const bool pointwise = IsPointwise(g);
  float* cols = pointwise ? nullptr : Scratch(g.patch() * g.pixels(), ColsGuard(g));
  ConstMatMap wm(w.data(), o, g.patch());
  for (int64_t n = 0; n < g.n; ++n) {
    const float* xn = x.data() + n * g.c * g.h * g.w;
    if (!pointwise) Im2Col(g, xn, cols);
    MatMap(y.data() + n * o * g.pixels(), o, g.pixels()).noalias() =
        wm * ConstMatMap(pointwise ? xn : cols, g.patch(), g.pixels());
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
    return Status::Invalid("dy " + ShapeToString(in[0].shape) +
                           " does not match the forward output " + ShapeToString(y));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void Conv2DBackpropInputForward(const KernelContext& k) {
  const Tensor &dy = *k.in[0], &w = *k.in[1];
  Tensor& dx = *k.out[0];
  const Geometry g = MakeGeometry(dx.shape(), w.dim(2), w.dim(3), k.attrs);
  const int64_t o = w.dim(0);
  const bool pointwise = IsPointwise(g);
  float* cols = pointwise ? nullptr : Scratch(g.patch() * g.pixels(), ColsGuard(g));
  ConstMatMap wm(w.data(), o, g.patch());
  if (!pointwise) dx.Fill(0.0f);
  for (int64_t n = 0; n < g.n; ++n) {
    float* dxn = dx.data() + n * g.c * g.h * g.w;
    MatMap(pointwise ? dxn : cols, g.patch(), g.pixels()).noalias() =
        wm.transpose() * ConstMatMap(dy.data() + n * o * g.pixels(), o, g.pixels());
    if (!pointwise) Col2Im(g, cols, dxn);
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
    return Status::Invalid("dy " + ShapeToString(in[0].shape) +
                           " does not match the forward output " + ShapeToString(y));
  }
  out->push_back({a.shape});
  return Status::Ok();
}
void Conv2DBackpropFilterForward(const KernelContext& k) {
  const Tensor &dy = *k.in[0], &x = *k.in[1];
  Tensor& dw = *k.out[0];
  const Geometry g = MakeGeometry(x.shape(), dw.dim(2), dw.dim(3), k.attrs);
  const int64_t o = dw.dim(0);
  const bool pointwise = IsPointwise(g);
  float* cols = pointwise ? nullptr : Scratch(g.patch() * g.pixels(), ColsGuard(g));
  MatMap dwm(dw.data(), o, g.patch());
  dwm.setZero();
  for (int64_t n = 0; n < g.n; ++n) {
    const float* xn = x.data() + n * g.c * g.h * g.w;
    if (!pointwise) Im2Col(g, xn, cols);
    dwm.noalias() += ConstMatMap(dy.data() + n * o * g.pixels(), o, g.pixels()) *
                     ConstMatMap(pointwise ? xn : cols, g.patch(), g.pixels()).transpose();
  }
}
Status Conv2DBackpropFilterGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of Conv2D");
}

// MaxPool2D(x [N, C, H, W]) with window attrs.kernel and attrs.stride.
Status MaxPool2DShape(const OpAttrs& a, std::span<const ValueInfo> in,
                      std::vector<ValueInfo>* out) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("input", in[0].shape, 4));
  SHARDSCOPE_RETURN_IF_ERROR(CheckWindow(a, in[0].shape, a.kernel[0], a.kernel[1]));
  const Geometry g = MakeGeometry(in[0].shape, a.kernel[0], a.kernel[1], a);
  out->push_back({{g.n, g.c, g.oh, g.ow}});
  return Status::Ok();
}

namespace {
// The first maximum of rows [y0, y1) × columns [x0, x1) of a plane with row length w:
// *arg = its flat index (−1 for an empty window) and *best = its value (−∞ when empty).
// KH, KW > 0: the window is known to be exactly KH×KW (fully inside), loops unrolled.
template <int KH, int KW>
inline void WindowMax(const float* plane, int64_t w, int64_t y0, int64_t y1, int64_t x0, int64_t x1,
                      int64_t* arg, float* best) {
  if (KH > 0) y1 = y0 + KH;
  if (KW > 0) x1 = x0 + KW;
  if (y0 >= y1 || x0 >= x1) {
    *arg = -1;
    *best = -std::numeric_limits<float>::infinity();
    return;
  }
  int64_t a = y0 * w + x0;
  float b = plane[a];
  for (int64_t iy = y0; iy < y1; ++iy) {
    for (int64_t ix = x0; ix < x1; ++ix) {
      const int64_t idx = iy * w + ix;
      const float v = plane[idx];
      const bool greater = v > b;  // strict: ties keep the first maximum
      b = greater ? v : b;
      a = greater ? idx : a;
    }
  }
  *arg = a;
  *best = b;
}

// Calls f(plane, out_index, argmax_index, max) for every output element of a max pool.
template <int KH, int KW, typename F>
void PoolMax(const Geometry& g, const float* x, F& f) {
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const float* plane = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const int64_t top = oy * g.sh - g.pad_t;
      const int64_t y0 = std::max<int64_t>(top, 0), y1 = std::min(top + g.kh, g.h);
      const bool rows_inside = y0 == top && y1 == top + g.kh;
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t left = ox * g.sw - g.pad_l;
        const int64_t x0 = std::max<int64_t>(left, 0), x1 = std::min(left + g.kw, g.w);
        int64_t arg;
        float best;
        if (rows_inside && x0 == left && x1 == left + g.kw) {
          WindowMax<KH, KW>(plane, g.w, y0, y1, x0, x1, &arg, &best);
        } else {
          WindowMax<0, 0>(plane, g.w, y0, y1, x0, x1, &arg, &best);
        }
        f(p, oy * g.ow + ox, arg, best);
      }
    }
  }
}

template <typename F>
void ForEachPoolMax(const Geometry& g, const float* x, F&& f) {
  if (g.kh == 2 && g.kw == 2) return PoolMax<2, 2>(g, x, f);
  if (g.kh == 3 && g.kw == 3) return PoolMax<3, 3>(g, x, f);
  PoolMax<0, 0>(g, x, f);
}
}  // namespace

void MaxPool2DForward(const KernelContext& k) {
  const Geometry g = MakeGeometry(k.in[0]->shape(), k.attrs.kernel[0], k.attrs.kernel[1], k.attrs);
  float* y = k.out[0]->data();
  ForEachPoolMax(g, k.in[0]->data(),
                 [&](int64_t p, int64_t o, int64_t, float v) { y[p * g.pixels() + o] = v; });
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
    return Status::Invalid("dy " + ShapeToString(in[0].shape) +
                           " does not match the forward output " + ShapeToString(fwd[0].shape));
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
