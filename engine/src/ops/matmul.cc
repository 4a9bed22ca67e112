// MatMul and BatchMatMul: shape rules, kernels (a packed AVX-512 GEMM, Eigen without
// AVX-512) and gradients.
#include <algorithm>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "autodiff/grad_context.h"
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {
namespace {

// Rows and columns of an operand as used in the product (after its transpose flag).
struct Operand {
  int64_t rows, cols;
};
Operand Used(const Shape& s, bool transposed) {
  const int64_t r = s[s.size() - 2], c = s[s.size() - 1];
  return transposed ? Operand{c, r} : Operand{r, c};
}

Status CheckContraction(const OpAttrs& a, const Shape& x, const Shape& y) {
  const Operand ua = Used(x, a.transpose_a), ub = Used(y, a.transpose_b);
  if (ua.cols != ub.rows) {
    return Status::Invalid("contraction dimensions differ: " + ShapeToString(x) +
                           (a.transpose_a ? "ᵀ" : "") + " · " + ShapeToString(y) +
                           (a.transpose_b ? "ᵀ" : "") + " (" + std::to_string(ua.cols) + " vs " +
                           std::to_string(ub.rows) + ")");
  }
  return Status::Ok();
}

// A MatMul operand as a matrix (numpy: a vector is a row when first, a column when second),
// and its batch dimensions.
Shape PromotedA(const Shape& s) { return s.size() == 1 ? Shape{1, s[0]} : s; }
Shape PromotedB(const Shape& s) { return s.size() == 1 ? Shape{s[0], 1} : s; }
Shape BatchOf(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// [..., m, k] · [k, n] (A batched, not transposed; B a matrix): the kernel and dB fold A's
// batch into its rows.
bool FoldsRows(const GradContext& g, OpKind op, ValueId a, ValueId b) {
  return op == OpKind::kMatMul && !g.attrs().transpose_a && g.shape(b).size() == 2 &&
         g.shape(a).size() > 2;
}

#if defined(__AVX512F__)
// A packed single-precision GEMM for AVX-512 (GotoBLAS / BLIS structure): op(B) is packed in
// blocks of kKC × kNC (panels of kNR columns, k-major), op(A) in blocks of kMC × kKC (panels
// of kMR rows, k-major), and a kMR × kNR micro-kernel keeps its tile of C in 24 vector
// registers. About 15-20 % faster than Eigen 3.4's GEMM on this project's dense layers.
// Each element of C sums over k in a fixed order that depends on k alone (blocks of kKC,
// sequential inside a block), so splitting rows or columns across devices changes no bit.
constexpr int64_t kMR = 12;    // rows of a C tile (broadcast from packed A)
constexpr int64_t kNR = 32;    // columns of a C tile (two vectors of packed B)
constexpr int64_t kKC = 256;   // depth of a packed block
constexpr int64_t kMC = 96;    // rows of a packed A block (multiple of kMR): 96 KiB
constexpr int64_t kNC = 1024;  // columns of a packed B block (multiple of kNR): 1 MiB

using PackBuffer = std::vector<float, Eigen::aligned_allocator<float>>;

inline __mmask16 FirstLanes(int64_t n) {
  if (n >= 16) return static_cast<__mmask16>(0xFFFF);
  if (n <= 0) return static_cast<__mmask16>(0);
  return static_cast<__mmask16>((1u << n) - 1);
}

// Transposes the 16 × 16 block held in v (v[i] = row i) in place (v[j] = column j).
inline void Transpose16(__m512 v[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    v[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    v[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    v[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    v[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) {
      t[8 * h + i] = _mm512_shuffle_f32x4(v[8 * h + i], v[8 * h + 4 + i], 0x88);
      t[8 * h + 4 + i] = _mm512_shuffle_f32x4(v[8 * h + i], v[8 * h + 4 + i], 0xdd);
    }
  }
  for (int i = 0; i < 8; ++i) {
    v[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    v[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
  }
}

// Rows [i0, i0 + mc) × depth [p0, p0 + kc) of op(A) into panels of kMR rows (zero-padded):
// panel p holds op(A)(i0 + p·kMR + r, p0 + k) at [p·kMR·kc + k·kMR + r].
void PackA(bool ta, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
           float* out) {
  for (int64_t ip = 0; ip < mc; ip += kMR) {
    const int64_t rows = std::min(kMR, mc - ip);
    float* dst = out + ip * kc;
    if (ta) {  // op(A)(i, k) = a[k·lda + i]: rows are consecutive floats
      const __mmask16 m = FirstLanes(rows);
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = a + (p0 + k) * lda + i0 + ip;
        _mm512_mask_storeu_ps(dst + k * kMR, 0x0FFF, _mm512_maskz_loadu_ps(m, src));
      }
    } else {  // op(A)(i, k) = a[i·lda + k]: 16 × 16 transposes, rows past `rows` zero
      for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        const int64_t kn = std::min<int64_t>(16, kc - k0);
        const __mmask16 m = FirstLanes(kn);
        __m512 v[16];
        for (int64_t r = 0; r < 16; ++r) {
          v[r] = r < rows ? _mm512_maskz_loadu_ps(m, a + (i0 + ip + r) * lda + p0 + k0)
                          : _mm512_setzero_ps();
        }
        Transpose16(v);
        for (int64_t k = 0; k < kn; ++k) _mm512_mask_storeu_ps(dst + (k0 + k) * kMR, 0x0FFF, v[k]);
      }
    }
  }
}

// Depth [p0, p0 + kc) × columns [j0, j0 + nc) of op(B) into panels of kNR columns
// (zero-padded): panel q holds op(B)(p0 + k, j0 + q·kNR + c) at [q·kNR·kc + k·kNR + c].
void PackB(bool tb, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
           float* out) {
  for (int64_t jp = 0; jp < nc; jp += kNR) {
    const int64_t cols = std::min(kNR, nc - jp);
    float* dst = out + jp * kc;
    if (!tb) {  // op(B)(k, j) = b[k·ldb + j]: columns are consecutive floats
      const __mmask16 m0 = FirstLanes(cols), m1 = FirstLanes(cols - 16);
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = b + (p0 + k) * ldb + j0 + jp;
        _mm512_store_ps(dst + k * kNR, _mm512_maskz_loadu_ps(m0, src));
        _mm512_store_ps(dst + k * kNR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
      }
    } else {  // op(B)(k, j) = b[j·ldb + k]: 16 × 16 transposes, columns past `cols` zero
      for (int64_t half = 0; half < kNR; half += 16) {
        for (int64_t k0 = 0; k0 < kc; k0 += 16) {
          const int64_t kn = std::min<int64_t>(16, kc - k0);
          const __mmask16 m = FirstLanes(kn);
          __m512 v[16];
          for (int64_t c = 0; c < 16; ++c) {
            v[c] = half + c < cols
                       ? _mm512_maskz_loadu_ps(m, b + (j0 + jp + half + c) * ldb + p0 + k0)
                       : _mm512_setzero_ps();
          }
          Transpose16(v);
          for (int64_t k = 0; k < kn; ++k) _mm512_store_ps(dst + (k0 + k) * kNR + half, v[k]);
        }
      }
    }
  }
}

// The rows × cols (≤ kMR × kNR) tile at c (row stride ldc) = or, with add, += one packed A
// panel times one packed B panel over depth kc.
void MicroKernel(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc, int64_t rows,
                 int64_t cols, bool add) {
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k, ap += kMR, bp += kNR) {
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  const __mmask16 m0 = FirstLanes(cols), m1 = FirstLanes(cols - 16);
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    if (r >= rows) break;
    float* cr = c + r * ldc;
    if (add) {
      acc[r][0] = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), acc[r][0]);
      acc[r][1] = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr + 16), acc[r][1]);
    }
    _mm512_mask_storeu_ps(cr, m0, acc[r][0]);
    _mm512_mask_storeu_ps(cr + 16, m1, acc[r][1]);
  }
}

// out[m, n] = op(a)[m, k] · op(b)[k, n]; a is [m, k] (or [k, m] when ta), b [k, n] (or [n, k]).
void PackedGemm(const float* a, const float* b, float* out, int64_t m, int64_t n, int64_t k,
                bool ta, bool tb) {
  if (k == 0) {
    std::fill(out, out + m * n, 0.0f);
    return;
  }
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  thread_local PackBuffer pack_a, pack_b;  // reused: no allocation per call once warm
  const int64_t nc_max = std::min(kNC, (n + kNR - 1) / kNR * kNR);
  const int64_t mc_max = std::min(kMC, (m + kMR - 1) / kMR * kMR);
  if (static_cast<int64_t>(pack_b.size()) < kKC * nc_max) pack_b.resize(kKC * nc_max);
  if (static_cast<int64_t>(pack_a.size()) < kKC * mc_max) pack_a.resize(kKC * mc_max);
  for (int64_t j0 = 0; j0 < n; j0 += kNC) {
    const int64_t nc = std::min(kNC, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKC) {
      const int64_t kc = std::min(kKC, k - p0);
      PackB(tb, b, ldb, p0, kc, j0, nc, pack_b.data());
      for (int64_t i0 = 0; i0 < m; i0 += kMC) {
        const int64_t mc = std::min(kMC, m - i0);
        PackA(ta, a, lda, i0, mc, p0, kc, pack_a.data());
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            MicroKernel(kc, pack_a.data() + ir * kc, pack_b.data() + jr * kc,
                        out + (i0 + ir) * n + j0 + jr, n, std::min(kMR, mc - ir),
                        std::min(kNR, nc - jr), /*add=*/p0 > 0);
          }
        }
      }
    }
  }
}
#endif

// out = op(a) · op(b) for row-major [r, c] blocks.
void Gemm(const float* a, const float* b, float* out, Operand ua, Operand ub, bool ta, bool tb) {
#if defined(__AVX512F__)
  PackedGemm(a, b, out, ua.rows, ub.cols, ua.cols, ta, tb);
#else
  MatMap c(out, ua.rows, ub.cols);
  const int64_t ar = ta ? ua.cols : ua.rows, ac = ta ? ua.rows : ua.cols;
  const int64_t br = tb ? ub.cols : ub.rows, bc = tb ? ub.rows : ub.cols;
  ConstMatMap ma(a, ar, ac), mb(b, br, bc);
  if (!ta && !tb)
    c.noalias() = ma * mb;
  else if (!ta && tb)
    c.noalias() = ma * mb.transpose();
  else if (ta && !tb)
    c.noalias() = ma.transpose() * mb;
  else
    c.noalias() = ma.transpose() * mb.transpose();
#endif
}

struct ProductGrads {
  ValueId da = kNoValue, db = kNoValue;
};

// d(op(A)·op(B)) for the four transpose cases, each gradient itself one product (over the
// full batch of dy). For MatMul, db is left to the caller when B is a matrix and A batched
// without transpose (one product over the folded rows is cheaper).
Result<ProductGrads> ProductGradsOf(GradContext& g, OpKind op, ValueId a, ValueId b, ValueId dy) {
  const bool ta = g.attrs().transpose_a, tb = g.attrs().transpose_b;
  ProductGrads out;
  OpAttrs attrs;
  if (g.needs_grad(0)) {
    // dA: !ta: dY·op(B)ᵀ ; ta: op(B)·dYᵀ
    std::vector<ValueId> in = ta ? std::vector<ValueId>{b, dy} : std::vector<ValueId>{dy, b};
    attrs.transpose_a = ta ? tb : false;
    attrs.transpose_b = ta ? true : !tb;
    SHARDSCOPE_ASSIGN_OR_RETURN(out.da, g.Emit(op, "da", in, attrs));
  }
  if (g.needs_grad(1) && !FoldsRows(g, op, a, b)) {
    // dB: !tb: op(A)ᵀ·dY ; tb: dYᵀ·op(A)
    std::vector<ValueId> in = tb ? std::vector<ValueId>{dy, a} : std::vector<ValueId>{a, dy};
    attrs.transpose_a = tb ? true : !ta;
    attrs.transpose_b = tb ? ta : false;
    SHARDSCOPE_ASSIGN_OR_RETURN(out.db, g.Emit(op, "db", in, attrs));
  }
  return out;
}

Status EmitProductGrads(GradContext& g, OpKind op) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ProductGrads d,
                              ProductGradsOf(g, op, g.input(0), g.input(1), g.output_grad()));
  if (d.da != kNoValue) g.SetInputGrad(0, d.da);
  if (d.db != kNoValue) g.SetInputGrad(1, d.db);
  return Status::Ok();
}

}  // namespace

// MatMul follows numpy.matmul: a rank-1 first (second) operand is a row (column) vector
// whose unit dimension the output drops; the batch dimensions (all but the last two)
// broadcast. Transpose flags apply to operands of rank ≥ 2 only.
Status MatMulShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  const Shape &x = in[0].shape, &y = in[1].shape;
  if (x.empty() || y.empty()) {
    return Status::Invalid("inputs must have rank ≥ 1, got " + ShapeToString(x) + " and " +
                           ShapeToString(y));
  }
  if ((x.size() == 1 && a.transpose_a) || (y.size() == 1 && a.transpose_b)) {
    return Status::Invalid("a transpose flag needs an operand of rank ≥ 2, got " +
                           ShapeToString(x) + " and " + ShapeToString(y));
  }
  const Shape px = PromotedA(x), py = PromotedB(y);
  SHARDSCOPE_RETURN_IF_ERROR(CheckContraction(a, px, py));
  Result<Shape> batch = BroadcastShapes(BatchOf(px), BatchOf(py));
  if (!batch.ok()) return batch.status().WithContext("batch dimensions");
  Shape s = *batch;
  if (x.size() > 1) s.push_back(Used(px, a.transpose_a).rows);
  if (y.size() > 1) s.push_back(Used(py, a.transpose_b).cols);
  out->push_back({s});
  return Status::Ok();
}

void MatMulForward(const KernelContext& k) {
  const Tensor &a = *k.in[0], &b = *k.in[1];
  const bool ta = k.attrs.transpose_a, tb = k.attrs.transpose_b;
  const Shape pa = PromotedA(a.shape()), pb = PromotedB(b.shape());
  const Operand ua = Used(pa, ta), ub = Used(pb, tb);
  const Shape ba = BatchOf(pa), bb = BatchOf(pb);
  if (NumElements(bb) == 1 && !ta) {
    // [..., m, k] · [k, n]: one product with the batch folded into the rows (the same sums
    // per element as product by product).
    Gemm(a.data(), b.data(), k.out[0]->data(), {NumElements(ba) * ua.rows, ua.cols}, ub, false, tb);
    return;
  }
  const Shape batch = *BroadcastShapes(ba, bb);
  std::vector<int64_t> from_a(NumElements(batch)), from_b(from_a.size());
  ForEachBroadcast(ba, batch, [&](int64_t i, int64_t j) { from_a[i] = j; });
  ForEachBroadcast(bb, batch, [&](int64_t i, int64_t j) { from_b[i] = j; });
  const int64_t sa = ua.rows * ua.cols, sb = ub.rows * ub.cols, sc = ua.rows * ub.cols;
  for (size_t i = 0; i < from_a.size(); ++i) {
    Gemm(a.data() + from_a[i] * sa, b.data() + from_b[i] * sb, k.out[0]->data() + i * sc, ua, ub,
         ta, tb);
  }
}

Status MatMulGrad(GradContext& g) {
  const Shape sa = g.shape(g.input(0)), sb = g.shape(g.input(1));
  if (sa.size() == 2 && sb.size() == 2) return EmitProductGrads(g, OpKind::kMatMul);
  // Rank-1 operands become matrices; the products' broadcast batch is summed away.
  const OpAttrs at = g.attrs();  // a copy: the emits below may grow the node list
  const Shape pa = PromotedA(sa), pb = PromotedB(sb);
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId a, g.ReshapeTo(g.input(0), pa, "a2d"));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId b, g.ReshapeTo(g.input(1), pb, "b2d"));
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape py, BroadcastShapes(BatchOf(pa), BatchOf(pb)));
  py.push_back(Used(pa, at.transpose_a).rows);
  py.push_back(Used(pb, at.transpose_b).cols);
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId dy, g.ReshapeTo(g.output_grad(), py, "dy2d"));
  SHARDSCOPE_ASSIGN_OR_RETURN(ProductGrads d, ProductGradsOf(g, OpKind::kMatMul, a, b, dy));
  if (g.needs_grad(0)) {
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId da, g.SumTo(d.da, pa, "da_sum"));
    SHARDSCOPE_ASSIGN_OR_RETURN(da, g.ReshapeTo(da, sa, "da_shape"));
    g.SetInputGrad(0, da);
  }
  if (g.needs_grad(1)) {
    ValueId db = d.db;
    if (db == kNoValue) {  // [..., m, k] · [k, n]: dB is one product over the folded rows
      SHARDSCOPE_ASSIGN_OR_RETURN(ValueId fa, g.ReshapeTo(a, {-1, pa.back()}, "a_rows"));
      SHARDSCOPE_ASSIGN_OR_RETURN(ValueId fy, g.ReshapeTo(dy, {-1, py.back()}, "dy_rows"));
      OpAttrs attrs;
      attrs.transpose_a = true;
      std::vector<ValueId> in =
          at.transpose_b ? std::vector<ValueId>{fy, fa} : std::vector<ValueId>{fa, fy};
      SHARDSCOPE_ASSIGN_OR_RETURN(db, g.Emit(OpKind::kMatMul, "db", in, attrs));
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(db, g.SumTo(db, pb, "db_sum"));
    SHARDSCOPE_ASSIGN_OR_RETURN(db, g.ReshapeTo(db, sb, "db_shape"));
    g.SetInputGrad(1, db);
  }
  return Status::Ok();
}

Status BatchMatMulShape(const OpAttrs& a, std::span<const ValueInfo> in,
                        std::vector<ValueInfo>* out) {
  const Shape &x = in[0].shape, &y = in[1].shape;
  if (x.size() < 3 || x.size() != y.size()) {
    return Status::Invalid("inputs must have the same rank ≥ 3, got " + ShapeToString(x) + " and " +
                           ShapeToString(y));
  }
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    if (x[i] != y[i]) {
      return Status::Invalid("batch dimensions differ: " + ShapeToString(x) + " and " +
                             ShapeToString(y));
    }
  }
  SHARDSCOPE_RETURN_IF_ERROR(CheckContraction(a, x, y));
  Shape s(x.begin(), x.end() - 2);
  s.push_back(Used(x, a.transpose_a).rows);
  s.push_back(Used(y, a.transpose_b).cols);
  out->push_back({s});
  return Status::Ok();
}

void BatchMatMulForward(const KernelContext& k) {
  const Tensor &a = *k.in[0], &b = *k.in[1];
  Tensor& c = *k.out[0];
  const Operand ua = Used(a.shape(), k.attrs.transpose_a);
  const Operand ub = Used(b.shape(), k.attrs.transpose_b);
  const int64_t batch = a.size() / (ua.rows * ua.cols);
  for (int64_t i = 0; i < batch; ++i) {
    Gemm(a.data() + i * ua.rows * ua.cols, b.data() + i * ub.rows * ub.cols,
         c.data() + i * ua.rows * ub.cols, ua, ub, k.attrs.transpose_a, k.attrs.transpose_b);
  }
}

Status BatchMatMulGrad(GradContext& g) { return EmitProductGrads(g, OpKind::kBatchMatMul); }

}  // namespace shardscope
