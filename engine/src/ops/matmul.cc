// MatMul and BatchMatMul: shape rules, kernels (Eigen GEMM) and gradients.
#include "autodiff/grad_context.h"
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
                           (a.transpose_b ? "ᵀ" : "") + " (" + std::to_string(ua.cols) +
                           " vs " + std::to_string(ub.rows) + ")");
  }
  return Status::Ok();
}

// out = op(a) · op(b) for row-major [r, c] blocks.
void Gemm(const float* a, const float* b, float* out, Operand ua, Operand ub, bool ta, bool tb) {
  MatMap c(out, ua.rows, ub.cols);
  const int64_t ar = ta ? ua.cols : ua.rows, ac = ta ? ua.rows : ua.cols;
  const int64_t br = tb ? ub.cols : ub.rows, bc = tb ? ub.rows : ub.cols;
  ConstMatMap ma(a, ar, ac), mb(b, br, bc);
  if (!ta && !tb) c.noalias() = ma * mb;
  else if (!ta && tb) c.noalias() = ma * mb.transpose();
  else if (ta && !tb) c.noalias() = ma.transpose() * mb;
  else c.noalias() = ma.transpose() * mb.transpose();
}

// d(op(A)·op(B)) for the four transpose cases, each gradient itself one product.
Status EmitProductGrads(GradContext& g, OpKind op) {
  const bool ta = g.attrs().transpose_a, tb = g.attrs().transpose_b;
  const ValueId a = g.input(0), b = g.input(1), dy = g.output_grad();
  OpAttrs attrs;
  if (g.needs_grad(0)) {
    // dA: !ta: dY·op(B)ᵀ ; ta: op(B)·dYᵀ
    std::vector<ValueId> in = ta ? std::vector<ValueId>{b, dy} : std::vector<ValueId>{dy, b};
    attrs.transpose_a = ta ? tb : false;
    attrs.transpose_b = ta ? true : !tb;
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId da, g.Emit(op, "da", in, attrs));
    g.SetInputGrad(0, da);
  }
  if (g.needs_grad(1)) {
    // dB: !tb: op(A)ᵀ·dY ; tb: dYᵀ·op(A)
    std::vector<ValueId> in = tb ? std::vector<ValueId>{dy, a} : std::vector<ValueId>{a, dy};
    attrs.transpose_a = tb ? true : !ta;
    attrs.transpose_b = tb ? ta : false;
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId db, g.Emit(op, "db", in, attrs));
    g.SetInputGrad(1, db);
  }
  return Status::Ok();
}

}  // namespace

Status MatMulShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("first input", in[0].shape, 2));
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("second input", in[1].shape, 2));
  SHARDSCOPE_RETURN_IF_ERROR(CheckContraction(a, in[0].shape, in[1].shape));
  out->push_back({{Used(in[0].shape, a.transpose_a).rows, Used(in[1].shape, a.transpose_b).cols}});
  return Status::Ok();
}

void MatMulForward(const KernelContext& k) {
  const Tensor &a = *k.in[0], &b = *k.in[1];
  Gemm(a.data(), b.data(), k.out[0]->data(), Used(a.shape(), k.attrs.transpose_a),
       Used(b.shape(), k.attrs.transpose_b), k.attrs.transpose_a, k.attrs.transpose_b);
}

Status MatMulGrad(GradContext& g) { return EmitProductGrads(g, OpKind::kMatMul); }

Status BatchMatMulShape(const OpAttrs& a, std::span<const ValueInfo> in,
                        std::vector<ValueInfo>* out) {
  const Shape &x = in[0].shape, &y = in[1].shape;
  if (x.size() < 3 || x.size() != y.size()) {
    return Status::Invalid("inputs must have the same rank ≥ 3, got " + ShapeToString(x) +
                           " and " + ShapeToString(y));
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
