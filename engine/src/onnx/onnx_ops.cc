// The mapping table: each ONNX operator of the default domain onto Shardscope operators.
//
// One converter per ONNX op type, listed in kTable at the end; an operator with the same
// meaning in both vocabularies takes one line there (Unary<OpKind::kX>, Binary<...>). The
// main operator a node becomes keeps the node's name, so strategies can name it.
#include <algorithm>
#include <cmath>
#include <map>

#include "onnx/onnx_context.h"
#include "ops/op_registry.h"
#include "shardscope/composites.h"

namespace shardscope {
namespace {

using Ctx = ImportContext;

InitSpec Ones() { return {InitSpec::kOnes, 1.0f}; }
InitSpec Zeros() { return {InitSpec::kZeros, 0.0f}; }

int64_t Norm(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

Status Emit(Ctx& c, OpKind op, std::vector<ValueId> in, OpAttrs attrs = {}) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y, c.Op(op, "", std::move(in), std::move(attrs)));
  c.SetOutput(0, y);
  return Status::Ok();
}

Status Reshape(Ctx& c, ValueId x, const Shape& to, const std::string& suffix = "") {
  OpAttrs a;
  a.shape = to;
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y, c.Op(OpKind::kReshape, suffix, {x}, a));
  c.SetOutput(0, y);
  return Status::Ok();
}

template <OpKind K>
Status Unary(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  return Emit(c, K, {x});
}

// Identity, and Cast to the type the value already has.
Status Alias(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  c.SetOutput(0, x);
  return Status::Ok();
}

Status Cast(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  const int64_t to = c.AttrInt("to", 0);
  const bool to_float = to == onnx::TensorProto_DataType_FLOAT;
  const bool to_int =
      to == onnx::TensorProto_DataType_INT64 || to == onnx::TensorProto_DataType_INT32;
  const DType have = c.builder().graph().value(x).dtype;
  if ((to_float && have == DType::kF32) || (to_int && have == DType::kI32)) return Alias(c);
  if (to_float || to_int) {
    OpAttrs a;
    a.dtype = to_float ? DType::kF32 : DType::kI32;
    return Emit(c, OpKind::kCast, {x}, a);
  }
  return Ctx::Refuse("Cast of a " + std::string(DTypeName(have)) + " tensor to " +
                     onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(to)) +
                     " is not supported (casts to float or to integer ids are)");
}

// A scalar factor known at import (Mul, Div by a constant), or nullopt.
std::optional<float> ScalarConst(const Ctx& c, int i) {
  const HostConst* k = c.ConstOf(i);
  if (k == nullptr || k->values.size() != 1) return std::nullopt;
  return static_cast<float>(k->values[0]);
}

Status ScaleBy(Ctx& c, int x_input, float factor) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(x_input));
  OpAttrs a;
  a.scale = factor;
  return Emit(c, OpKind::kScale, {x}, a);
}

template <OpKind K>
Status Binary(Ctx& c) {
  if (K == OpKind::kMul) {
    if (auto f = ScalarConst(c, 1)) return ScaleBy(c, 0, *f);
    if (auto f = ScalarConst(c, 0)) return ScaleBy(c, 1, *f);
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape sa, c.ShapeOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape sb, c.ShapeOf(1));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId a, c.ValueOf(0));
  // A weight without data: a neutral start (ones for a product or quotient, zeros for a sum).
  const bool product = K == OpKind::kMul || K == OpKind::kDiv || K == OpKind::kPow;
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId b, c.ValueOf(1, product ? Ones() : Zeros()));
  // x [N, C] + b [C]: the bias of a layer, which the searches know as BiasAdd.
  const Graph& g = c.builder().graph();
  if (K == OpKind::kAdd && sa.size() == 2 && sb.size() == 1 && sb[0] == sa[1] &&
      g.value(b).kind == ValueKind::kParameter) {
    return Emit(c, OpKind::kBiasAdd, {a, b});
  }
  return Emit(c, K, {a, b});
}

Status Div(Ctx& c) {
  if (auto f = ScalarConst(c, 1); f && *f != 0.0f) return ScaleBy(c, 0, 1.0f / *f);
  return Binary<OpKind::kDiv>(c);
}

Status Neg(Ctx& c) { return ScaleBy(c, 0, -1.0f); }

// 1 / x as Div by a constant one, so the gradient is Div's.
Status Reciprocal(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  Graph& g = c.builder().graph();
  const ValueId one = g.AddConstant(c.builder().ScopedName(c.local() + "_one"), {}, Ones());
  if (one == kNoValue) return Ctx::Refuse("cannot add the constant one");
  return Emit(c, OpKind::kDiv, {one, x});
}

Status Where(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId cond, c.ValueOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(1, Zeros()));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y, c.ValueOf(2, Zeros()));
  return Emit(c, OpKind::kWhere, {cond, x, y});
}

// Expand broadcasts to the shape given by input 1 (numpy rules, in either direction).
Status Expand(Ctx& c) {
  const HostConst* target = c.ConstOf(1);
  if (target == nullptr) return Ctx::Refuse("the target shape must be known at import");
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  const std::vector<int64_t> t = target->Ints();
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape to, BroadcastShapes(s, Shape(t.begin(), t.end())));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  if (to == s) return Alias(c);
  OpAttrs a;
  a.shape = to;
  return Emit(c, OpKind::kBroadcastTo, {x}, a);
}

Status Concat(Ctx& c) {
  std::vector<ValueId> in;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (!c.HasInput(i)) continue;
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId v, c.ValueOf(i));
    in.push_back(v);
  }
  OpAttrs a;
  a.axis = c.AttrInt("axis", 0);
  if (in.size() == 1) return Alias(c);
  return Emit(c, OpKind::kConcat, std::move(in), a);
}

// Split into the sizes of input 1 / attribute "split", or equal parts, one per output.
Status Split(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  const int64_t axis = Norm(c.AttrInt("axis", 0), s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return Ctx::Refuse("axis out of range");
  SHARDSCOPE_ASSIGN_OR_RETURN(auto sizes, c.IntsFrom("split", 1));
  const int64_t parts = c.node().output_size();
  OpAttrs a;
  a.axis = axis;
  if (sizes && !sizes->empty()) {
    a.sizes = *sizes;
  } else {
    const int64_t each = (s[axis] + parts - 1) / std::max<int64_t>(parts, 1);
    for (int64_t k = 0, left = s[axis]; k < parts; ++k, left -= each)
      a.sizes.push_back(std::min(each, left));
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  Builder& b = c.builder();
  const std::vector<ValueId> ys = b.OpAll(OpKind::kSplit, c.local(), {x}, a);
  if (!b.ok()) return b.status();
  for (size_t k = 0; k < ys.size(); ++k) c.SetOutput(static_cast<int>(k), ys[k]);
  return Status::Ok();
}

Status Slice(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto starts, c.IntsFrom("starts", 1));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ends, c.IntsFrom("ends", 2));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto axes, c.IntsFrom("axes", 3));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto steps, c.IntsFrom("steps", 4));
  if (!starts || !ends) return Ctx::Refuse("starts and ends must be given");
  OpAttrs a;
  a.starts = *starts;
  a.ends = *ends;
  if (axes) {
    for (int64_t ax : *axes) a.axes.push_back(Norm(ax, s.size()));
  } else {
    for (size_t d = 0; d < a.starts.size(); ++d) a.axes.push_back(static_cast<int64_t>(d));
  }
  if (steps) a.steps = *steps;
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  return Emit(c, OpKind::kSlice, {x}, a);
}

// Softmax and LogSoftmax over the last axis (before opset 13 the default axis is 1, which
// is the last one for [N, C] logits).
template <OpKind K>
Status LastAxis(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  if (s.empty()) return Ctx::Refuse("the input is a scalar");
  const int64_t axis = Norm(c.AttrInt("axis", c.model().opset >= 13 ? -1 : 1), s.size());
  if (axis != static_cast<int64_t>(s.size()) - 1) {
    return Ctx::Refuse("axis " + std::to_string(axis) + " of input " + ShapeToString(s) +
                       ": only the last axis is supported");
  }
  return Unary<K>(c);
}

Status MatMul(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId a, c.ValueOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId b, c.ValueOf(1));
  const Graph& g = c.builder().graph();
  const Shape sa = g.value(a).shape, sb = g.value(b).shape;
  if (sa.size() == 2 && sb.size() == 2) return Emit(c, OpKind::kMatMul, {a, b});
  if (sa.size() > 2 && sb.size() == 2) {  // [..., K] x [K, N]: rows of all leading dims
    // One rows view per value (q, k and v read one): their partial input gradients then
    // add up before one reduction, as Megatron's column split does.
    ValueId a2 = c.RowsOf(a);
    if (a2 == kNoValue) {
      OpAttrs flat;
      flat.shape = {NumElements(sa) / sa.back(), sa.back()};
      SHARDSCOPE_ASSIGN_OR_RETURN(a2, c.Op(OpKind::kReshape, "_in", {a}, flat));
      c.SetRowsOf(a, a2);
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y, c.Op(OpKind::kMatMul, "", {a2, b}));
    Shape out(sa.begin(), sa.end() - 1);
    out.push_back(sb[1]);
    OpAttrs back;
    back.shape = out;
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y2, c.Op(OpKind::kReshape, "_out", {y}, back));
    c.SetOutput(0, y2);
    return Status::Ok();
  }
  if (sa.size() == sb.size() && sa.size() >= 3) return Emit(c, OpKind::kBatchMatMul, {a, b});
  return Ctx::Refuse("MatMul of " + ShapeToString(sa) + " and " + ShapeToString(sb) +
                     " is not supported yet (rank 2 x 2, rank ≥ 3 x 2, or equal ranks with equal "
                     "batch dimensions are)");
}

// Gemm = alpha·op(A)·op(B) + beta·C: MatMul with transposes, then the bias.
Status Gemm(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId a, c.ValueOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId b, c.ValueOf(1));
  OpAttrs mm;
  mm.transpose_a = c.AttrInt("transA", 0) != 0;
  mm.transpose_b = c.AttrInt("transB", 0) != 0;
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y, c.Op(OpKind::kMatMul, "", {a, b}, mm));
  if (const float alpha = c.AttrFloat("alpha", 1.0f); alpha != 1.0f) {
    OpAttrs s;
    s.scale = alpha;
    SHARDSCOPE_ASSIGN_OR_RETURN(y, c.Op(OpKind::kScale, "_alpha", {y}, s));
  }
  if (c.HasInput(2)) {
    if (c.AttrFloat("beta", 1.0f) != 1.0f) return Ctx::Refuse("beta other than 1 is not supported");
    SHARDSCOPE_ASSIGN_OR_RETURN(Shape sc, c.ShapeOf(2));
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId bias, c.ValueOf(2, Zeros()));
    const Shape sy = c.builder().graph().value(y).shape;
    const OpKind k = sc == Shape{sy[1]} ? OpKind::kBiasAdd : OpKind::kAdd;
    SHARDSCOPE_ASSIGN_OR_RETURN(y, c.Op(k, "_bias", {y, bias}));
  }
  c.SetOutput(0, y);
  return Status::Ok();
}

Status LayerNorm(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  if (s.empty()) return Ctx::Refuse("the input is a scalar");
  if (Norm(c.AttrInt("axis", -1), s.size()) != static_cast<int64_t>(s.size()) - 1) {
    return Ctx::Refuse("normalising from axis " + std::to_string(c.AttrInt("axis", -1)) + " of " +
                       ShapeToString(s) + ": only the last axis is supported");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId gamma, c.ValueOf(1, Ones()));
  ValueId beta = kNoValue;
  if (c.HasInput(2)) {
    SHARDSCOPE_ASSIGN_OR_RETURN(beta, c.ValueOf(2, Zeros()));
  } else {
    beta = c.builder().graph().AddConstant(c.builder().ScopedName(c.local() + "_beta"), {s.back()},
                                           Zeros());
  }
  OpAttrs a;
  a.epsilon = c.AttrFloat("epsilon", 1e-5f);
  return Emit(c, OpKind::kLayerNorm, {x, gamma, beta}, a);
}

Status ReshapeOp(Ctx& c) {
  const HostConst* target = c.ConstOf(1);
  if (target == nullptr) {
    return Ctx::Refuse("the target shape ('" + c.node().input(1) +
                       "') is not known at import (it must fold to a constant once the batch "
                       "is fixed)");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape to,
                              ReshapeTarget(s, target->Ints(), c.AttrInt("allowzero", 0)));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  return Reshape(c, x, to);
}

// Squeeze / Unsqueeze of a tensor: a reshape to the shape the folder computes.
Status SqueezeOp(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  const HostConst probe{s, false, {}};
  std::vector<const HostConst*> in = {&probe};
  if (c.HasInput(1)) {
    in.push_back(c.ConstOf(1));
    if (in.back() == nullptr) return Ctx::Refuse("the axes must be known at import");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<HostConst> out, FoldNode(c.node(), in, {}));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  return Reshape(c, x, out[0].shape);
}

Status Flatten(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  const int64_t axis = Norm(c.AttrInt("axis", 1), s.size());
  if (axis < 0 || axis > static_cast<int64_t>(s.size())) return Ctx::Refuse("axis out of range");
  if (axis == 1) return Emit(c, OpKind::kFlatten, {x});
  const int64_t outer = NumElements(Shape(s.begin(), s.begin() + axis));
  return Reshape(c, x, {outer, NumElements(s) / std::max<int64_t>(outer, 1)});
}

Status Transpose(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  OpAttrs a;
  if (auto perm = c.AttrInts("perm")) {
    a.axes = *perm;
  } else {
    for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) a.axes.push_back(d);
  }
  return Emit(c, OpKind::kTranspose, {x}, a);
}

// x[:, i] and the like: one constant index along any axis is a Slice and a Reshape.
Status GatherConstantIndex(Ctx& c, const Shape& s, const HostConst& index) {
  const int64_t axis = Norm(c.AttrInt("axis", 0), s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return Ctx::Refuse("axis out of range");
  int64_t i = index.Int(0);
  if (i < 0) i += s[axis];
  if (i < 0 || i >= s[axis]) return Ctx::Refuse("index out of range");
  OpAttrs a;
  a.axes = {axis};
  a.starts = {i};
  a.ends = {i + 1};
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y, c.Op(OpKind::kSlice, "", {x}, a));
  Shape to = s;
  if (index.shape.empty()) {
    to.erase(to.begin() + axis);
  } else {
    to[axis] = 1;
    to.insert(to.begin() + axis, index.shape.begin(), index.shape.end() - 1);
  }
  if (to == c.builder().graph().value(y).shape) {
    c.SetOutput(0, y);
    return Status::Ok();
  }
  return Reshape(c, y, to, "_reshape");
}

// Gather rows of a [V, D] table (an embedding) by integer ids.
Status Gather(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  const HostConst* index = c.ConstOf(1);
  const bool rows = c.AttrInt("axis", 0) == 0 && s.size() == 2;
  if (index != nullptr && index->values.size() == 1 && !(rows && !index->shape.empty())) {
    return GatherConstantIndex(c, s, *index);
  }
  if (!rows) {
    return Ctx::Refuse("Gather of " + ShapeToString(s) + " along axis " +
                       std::to_string(c.AttrInt("axis", 0)) +
                       ": only rows of a rank-2 table (an embedding, axis 0) or one constant "
                       "index are supported");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId table, c.ValueOf(0, InitSpec{InitSpec::kNormal, 0.02f}));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId ids, c.ValueOf(1));
  return Emit(c, OpKind::kGather, {table, ids});
}

// ONNX pads [begin..., end...] as Shardscope's valid (none) or same (TensorFlow's SAME).
Result<Padding> PaddingOf(const Ctx& c, const Shape& x, const int64_t k[2], const int64_t s[2]) {
  const std::string auto_pad = c.AttrString("auto_pad", "NOTSET");
  if (auto_pad == "VALID") return Padding::kValid;
  if (auto_pad == "SAME_UPPER") return Padding::kSame;
  if (auto_pad == "SAME_LOWER") return Padding::kSameLower;
  const std::vector<int64_t> pads = c.AttrInts("pads").value_or(std::vector<int64_t>(4, 0));
  if (auto_pad == "NOTSET" && pads.size() == 4) {
    if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }))
      return Padding::kValid;
    // Explicit pads that give ceil(in / stride) outputs and begin with same's split. The end
    // pad may exceed it: PyTorch pads 3 on both sides of a 7x7 window at stride 2 where
    // SAME_LOWER pads 3 and 2, but no window reaches the extra element.
    bool upper = true, lower = true;
    for (int d = 0; d < 2; ++d) {
      const int64_t in = x[2 + d], out = (in + s[d] - 1) / s[d];
      const int64_t total = std::max<int64_t>((out - 1) * s[d] + k[d] - in, 0);
      const bool count = (in + pads[d] + pads[d + 2] - k[d]) / s[d] + 1 == out;
      upper = upper && count && pads[d] == total / 2 && pads[d + 2] >= total - total / 2;
      lower = lower && count && pads[d] == total - total / 2 && pads[d + 2] >= total / 2;
    }
    if (upper) return Padding::kSame;
    if (lower) return Padding::kSameLower;
  }
  std::string text;
  for (int64_t p : pads) text += (text.empty() ? "" : ", ") + std::to_string(p);
  return Ctx::Refuse("padding (auto_pad " + auto_pad + ", pads [" + text +
                     "]) is neither none nor 'same' for input " + ShapeToString(x));
}

Status WindowAttrs(const Ctx& c, const Shape& x, const int64_t kernel[2], OpAttrs* a) {
  if (x.size() != 4) return Ctx::Refuse("input " + ShapeToString(x) + ": only 2-D (NCHW) windows");
  for (int64_t d : c.AttrInts("dilations").value_or(std::vector<int64_t>{1, 1})) {
    if (d != 1) return Ctx::Refuse("dilations other than 1 are not supported");
  }
  const auto strides = c.AttrInts("strides").value_or(std::vector<int64_t>{1, 1});
  if (strides.size() != 2) return Ctx::Refuse("strides must have two entries");
  a->stride[0] = strides[0];
  a->stride[1] = strides[1];
  SHARDSCOPE_ASSIGN_OR_RETURN(a->padding, PaddingOf(c, x, kernel, a->stride));
  return Status::Ok();
}

Status Conv(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape x, c.ShapeOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape w, c.ShapeOf(1));
  if (c.AttrInt("group", 1) != 1) return Ctx::Refuse("grouped convolution is not supported");
  if (w.size() != 4) return Ctx::Refuse("weight " + ShapeToString(w) + ": only 2-D convolution");
  const int64_t kernel[2] = {w[2], w[3]};
  OpAttrs a;
  SHARDSCOPE_RETURN_IF_ERROR(WindowAttrs(c, x, kernel, &a));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId xv, c.ValueOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId wv, c.ValueOf(1));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId y, c.Op(OpKind::kConv2D, "", {xv, wv}, a));
  if (c.HasInput(2)) {
    SHARDSCOPE_ASSIGN_OR_RETURN(ValueId bias, c.ValueOf(2, Zeros()));
    SHARDSCOPE_ASSIGN_OR_RETURN(y, c.Op(OpKind::kBiasAdd, "_bias", {y, bias}));
  }
  c.SetOutput(0, y);
  return Status::Ok();
}

Status MaxPool(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape x, c.ShapeOf(0));
  const auto k = c.AttrInts("kernel_shape");
  if (!k || k->size() != 2) return Ctx::Refuse("kernel_shape must have two entries");
  if (c.AttrInt("ceil_mode", 0) != 0) return Ctx::Refuse("ceil_mode 1 is not supported");
  if (c.AttrInt("storage_order", 0) != 0) return Ctx::Refuse("storage_order 1 is not supported");
  OpAttrs a;
  a.kernel[0] = (*k)[0];
  a.kernel[1] = (*k)[1];
  SHARDSCOPE_RETURN_IF_ERROR(WindowAttrs(c, x, a.kernel, &a));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId xv, c.ValueOf(0));
  return Emit(c, OpKind::kMaxPool2D, {xv}, a);
}

// PyTorch writes a Pad of zeros before an average pool that counts padding; a window's
// padding itself is read from the pool's or conv's attributes.
Status Pad(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(auto pads, c.IntsFrom("pads", 1));
  if (pads && std::any_of(pads->begin(), pads->end(), [](int64_t p) { return p != 0; })) {
    return Ctx::Refuse(
        "only a Pad of zero width is supported (windows pad through their "
        "own attributes)");
  }
  return Alias(c);
}

// AveragePool over the window inside the input (count_include_pad 0, ONNX's default).
Status AveragePool(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape x, c.ShapeOf(0));
  const auto k = c.AttrInts("kernel_shape");
  if (!k || k->size() != 2) return Ctx::Refuse("kernel_shape must have two entries");
  if (c.AttrInt("ceil_mode", 0) != 0) return Ctx::Refuse("ceil_mode 1 is not supported");
  if (c.AttrInt("count_include_pad", 0) != 0) {
    return Ctx::Refuse(
        "count_include_pad 1 is not supported (the mean is over the window "
        "inside the input)");
  }
  OpAttrs a;
  a.kernel[0] = (*k)[0];
  a.kernel[1] = (*k)[1];
  SHARDSCOPE_RETURN_IF_ERROR(WindowAttrs(c, x, a.kernel, &a));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId xv, c.ValueOf(0));
  return Emit(c, OpKind::kAveragePool2D, {xv}, a);
}

// The mean over the spatial axes, kept.
Status GlobalAveragePool(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  if (s.size() < 3) return Ctx::Refuse("input " + ShapeToString(s) + " has no spatial axes");
  OpAttrs a;
  a.keep_dims = true;
  for (size_t d = 2; d < s.size(); ++d) a.axes.push_back(static_cast<int64_t>(d));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  return Emit(c, OpKind::kReduceMean, {x}, a);
}

// Training normalises by the batch's statistics, as PyTorch's train mode does; the running
// mean and variance (inputs 3 and 4) are not read.
Status BatchNormalization(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId scale, c.ValueOf(1, Ones()));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId bias, c.ValueOf(2, Zeros()));
  Builder& b = c.builder();
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ValueId y, AddBatchNormTraining(b.graph(), b.ScopedName(c.local()), x, scale, bias,
                                      c.AttrFloat("epsilon", 1e-5f)));
  c.SetOutput(0, y);
  return Status::Ok();
}

template <OpKind K>
Status Reduce(Ctx& c) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, c.ShapeOf(0));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto axes, c.IntsFrom("axes", 1));
  if ((!axes || axes->empty()) && c.AttrInt("noop_with_empty_axes", 0) != 0) return Alias(c);
  OpAttrs a;
  a.keep_dims = c.AttrInt("keepdims", 1) != 0;
  if (axes) {
    for (int64_t ax : *axes) a.axes.push_back(Norm(ax, s.size()));
    std::sort(a.axes.begin(), a.axes.end());
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  return Emit(c, K, {x}, a);
}

// Training applies the ratio; evaluation is the identity, as in ONNX's inference mode.
Status Dropout(Ctx& c) {
  float ratio = c.AttrFloat("ratio", 0.5f);
  if (c.HasInput(1)) {
    const auto r = ScalarConst(c, 1);
    if (!r) return Ctx::Refuse("the ratio must be a constant");
    ratio = *r;
  }
  if (ratio == 0.0f) return Alias(c);
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId x, c.ValueOf(0));
  OpAttrs a;
  a.rate = ratio;
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the node name: one mask stream per node
  for (char ch : c.node().name()) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  a.seed = h;
  return Emit(c, OpKind::kDropout, {x}, a);
}

const std::map<std::string, OnnxConverter> kTable = {
    {"Add", Binary<OpKind::kAdd>},
    {"AveragePool", AveragePool},
    {"BatchNormalization", BatchNormalization},
    {"Cast", Cast},
    {"Concat", Concat},
    {"Conv", Conv},
    {"Div", Div},
    {"Dropout", Dropout},
    {"Expand", Expand},
    {"Flatten", Flatten},
    {"Gather", Gather},
    {"Gemm", Gemm},
    {"GlobalAveragePool", GlobalAveragePool},
    {"Identity", Alias},
    {"LayerNormalization", LayerNorm},
    {"LogSoftmax", LastAxis<OpKind::kLogSoftmax>},
    {"MatMul", MatMul},
    {"MaxPool", MaxPool},
    {"Mul", Binary<OpKind::kMul>},
    {"Neg", Neg},
    {"Pad", Pad},
    {"Pow", Binary<OpKind::kPow>},
    {"Reciprocal", Reciprocal},
    {"ReduceMean", Reduce<OpKind::kReduceMean>},
    {"ReduceSum", Reduce<OpKind::kReduceSum>},
    {"Relu", Unary<OpKind::kReLU>},
    {"Reshape", ReshapeOp},
    {"Sigmoid", Unary<OpKind::kSigmoid>},
    {"Slice", Slice},
    {"Softmax", LastAxis<OpKind::kSoftmax>},
    {"Split", Split},
    {"Sqrt", Unary<OpKind::kSqrt>},
    {"Squeeze", SqueezeOp},
    {"Sub", Binary<OpKind::kSub>},
    {"Tanh", Unary<OpKind::kTanh>},
    {"Transpose", Transpose},
    {"Unsqueeze", SqueezeOp},
    {"Where", Where},
};

}  // namespace

OnnxConverter FindConverter(const std::string& op_type) {
  auto it = kTable.find(op_type);
  return it == kTable.end() ? nullptr : it->second;
}

std::vector<std::string> ConverterOps() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : kTable) ops.push_back(name);
  return ops;
}

}  // namespace shardscope
