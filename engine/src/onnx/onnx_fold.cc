// Host constants: the shape arithmetic exporters emit (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape) evaluated at import, once the batch is fixed, so Reshape targets and
// similar inputs reach the graph as plain attributes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "onnx/onnx_model.h"

namespace shardscope {

bool IsIntegerType(int t) {
  using T = onnx::TensorProto_DataType;
  return t == T::TensorProto_DataType_INT64 || t == T::TensorProto_DataType_INT32 ||
         t == T::TensorProto_DataType_INT16 || t == T::TensorProto_DataType_INT8 ||
         t == T::TensorProto_DataType_UINT8 || t == T::TensorProto_DataType_UINT16 ||
         t == T::TensorProto_DataType_UINT32 || t == T::TensorProto_DataType_UINT64 ||
         t == T::TensorProto_DataType_BOOL;
}

namespace {

// Constants stay small: they are shape arithmetic, not weights.
constexpr int64_t kMaxConstElements = 1 << 22;

Status TooLarge(const Shape& s) {
  return Status::NotImplemented("a constant of shape " + ShapeToString(s) +
                                " is too large to fold (shape arithmetic only)");
}

int64_t NormAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

int64_t ToInt(double v) {  // clamped: a corrupt constant must not be undefined behaviour
  constexpr double kLimit = 4.0e18;
  if (!(v == v)) return 0;
  return static_cast<int64_t>(std::clamp(v, -kLimit, kLimit));
}

// The element count, or -1 when a dimension is negative or the count is past kMaxConstElements.
int64_t CountOrNegative(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0 || (d > 0 && n > kMaxConstElements / d)) return -1;
    n *= d;
  }
  return n;
}

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Elementwise over broadcast inputs (numpy rules).
Result<HostConst> Broadcast(const std::vector<const HostConst*>& in, bool integer,
                            const std::function<double(const std::vector<double>&)>& f) {
  size_t rank = 0;
  for (const HostConst* c : in) rank = std::max(rank, c->shape.size());
  Shape out(rank, 1);
  for (const HostConst* c : in) {
    for (size_t i = 0; i < c->shape.size(); ++i) {
      int64_t& o = out[rank - c->shape.size() + i];
      const int64_t d = c->shape[i];
      if (d != 1 && o != 1 && d != o) {
        return Status::Invalid("shapes do not broadcast: " + ShapeToString(c->shape) + " and " +
                               ShapeToString(out));
      }
      if (d != 1) o = d;
    }
  }
  HostConst r{out, integer, {}};
  const int64_t n = NumElements(out);
  if (n > kMaxConstElements) return TooLarge(out);
  // Per input, its stride along each output dimension (0 where it broadcasts), walked with
  // an odometer: the offsets follow the output index without a division per element.
  std::vector<std::vector<int64_t>> step(in.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < in.size(); ++k) {
    const Shape& s = in[k]->shape;
    const std::vector<int64_t> st = Strides(s);
    for (size_t d = 0; d < s.size(); ++d) step[k][rank - s.size() + d] = s[d] == 1 ? 0 : st[d];
  }
  std::vector<int64_t> index(rank, 0), off(in.size(), 0);
  std::vector<double> args(in.size());
  r.values.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = in[k]->values[off[k]];
    r.values.push_back(f(args));
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < in.size(); ++k) off[k] += step[k][d];
      if (++index[d] < out[d]) break;
      for (size_t k = 0; k < in.size(); ++k) off[k] -= step[k][d] * out[d];
      index[d] = 0;
    }
  }
  return r;
}

Result<HostConst> Reshaped(const HostConst& c, const std::vector<int64_t>& target,
                           bool allow_zero) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Shape s, ReshapeTarget(c.shape, target, allow_zero));
  return HostConst{s, c.integer, c.values};
}

Result<HostConst> Gather(const HostConst& data, const HostConst& idx, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  axis = NormAxis(axis, rank);
  if (axis < 0 || axis >= rank) return Status::Invalid("axis out of range");
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  const int64_t outer = NumElements(Shape(data.shape.begin(), data.shape.begin() + axis));
  const int64_t inner = NumElements(Shape(data.shape.begin() + axis + 1, data.shape.end()));
  const int64_t dim = data.shape[axis];
  if (static_cast<double>(outer) * static_cast<double>(idx.values.size()) * inner >
      kMaxConstElements) {
    return TooLarge(out);
  }
  HostConst r{out, data.integer, {}};
  for (int64_t o = 0; o < outer; ++o) {
    for (double v : idx.values) {
      int64_t i = ToInt(v);
      if (i < 0) i += dim;
      if (i < 0 || i >= dim) {
        return Status::Invalid("index " + std::to_string(ToInt(v)) +
                               " is out of range for a dimension of " + std::to_string(dim));
      }
      const double* src = data.values.data() + (o * dim + i) * inner;
      r.values.insert(r.values.end(), src, src + inner);
    }
  }
  return r;
}

Result<HostConst> Concat(const std::vector<const HostConst*>& in, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(in[0]->shape.size());
  axis = NormAxis(axis, rank);
  if (axis < 0 || axis >= rank) return Status::Invalid("axis out of range");
  Shape out = in[0]->shape;
  out[axis] = 0;
  bool integer = true;
  for (const HostConst* c : in) {
    if (static_cast<int64_t>(c->shape.size()) != rank)
      return Status::Invalid("inputs of different ranks");
    out[axis] += c->shape[axis];
    integer = integer && c->integer;
  }
  const int64_t outer = NumElements(Shape(out.begin(), out.begin() + axis));
  HostConst r{out, integer, {}};
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostConst* c : in) {
      const int64_t chunk = NumElements(Shape(c->shape.begin() + axis, c->shape.end()));
      const double* src = c->values.data() + o * chunk;
      r.values.insert(r.values.end(), src, src + chunk);
    }
  }
  return r;
}

Result<HostConst> Slice(const HostConst& data, std::vector<int64_t> starts,
                        std::vector<int64_t> ends, std::vector<int64_t> axes,
                        std::vector<int64_t> steps) {
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return Status::Invalid("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> lo(rank, 0), step(rank, 1);
  Shape out = data.shape;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = NormAxis(axes[k], rank);
    constexpr int64_t kMaxStep = int64_t{1} << 40;
    if (a < 0 || a >= rank || steps[k] == 0 || steps[k] > kMaxStep || steps[k] < -kMaxStep)
      return Status::Invalid("bad axis or step");
    const int64_t d = data.shape[a], s = steps[k];
    auto clamp = [&](int64_t v) {  // ONNX: [0, d] forwards, [-1, d - 1] backwards
      if (v < 0) v += d;
      return s > 0 ? std::clamp<int64_t>(v, 0, d) : std::clamp<int64_t>(v, -1, d - 1);
    };
    const int64_t b = clamp(starts[k]), e = clamp(ends[k]);
    lo[a] = b;
    step[a] = s;
    out[a] = s > 0 ? std::max<int64_t>(0, (e - b + s - 1) / s)
                   : std::max<int64_t>(0, (b - e - s - 1) / -s);
  }
  HostConst r{out, data.integer, {}};
  const std::vector<int64_t> ist = Strides(data.shape), ost = Strides(out);
  for (int64_t i = 0; i < NumElements(out); ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += (lo[d] + ((i / ost[d]) % out[d]) * step[d]) * ist[d];
    r.values.push_back(data.values[off]);
  }
  return r;
}

const HostConst& Need(const std::vector<const HostConst*>& in, size_t i) { return *in[i]; }

}  // namespace

Result<Shape> ReshapeTarget(const Shape& in, const std::vector<int64_t>& target, bool allow_zero) {
  Shape s(target.begin(), target.end());
  auto bad = [&] {
    return Status::Invalid("cannot reshape " + ShapeToString(in) + " to " +
                           ShapeToString(Shape(target.begin(), target.end())));
  };
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && !allow_zero) {
      if (i >= in.size()) return Status::Invalid("0 in the target beyond the input's rank");
      s[i] = in[i];
    }
    if (s[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (s[i] < 0 || __builtin_mul_overflow(known, s[i], &known)) {
      return bad();
    }
  }
  const int64_t n = NumElements(in);
  if (infer >= 0) {
    if (known == 0) return bad();
    s[infer] = n / known;
    known *= s[infer];
  }
  if (known != n) return bad();
  return s;
}

int64_t HostConst::Int(size_t i) const { return ToInt(values[i]); }

std::vector<int64_t> HostConst::Ints() const {
  std::vector<int64_t> out;
  for (double v : values) out.push_back(ToInt(v));
  return out;
}

Result<HostConst> HostConstFromTensor(const onnx::TensorProto& t) {
  HostConst c;
  for (int64_t d : t.dims()) {
    if (d < 0) return Status::Invalid("negative dimension");
    c.shape.push_back(d);
  }
  const int64_t n = CountOrNegative(c.shape);
  if (n < 0) return TooLarge(c.shape);
  const int type = t.data_type();
  c.integer = IsIntegerType(type);
  const std::string& raw = t.raw_data();
  // Raw data: little-endian values of type V.
  auto from_raw = [&]<typename V>(V) -> Status {
    if (static_cast<int64_t>(raw.size()) != n * static_cast<int64_t>(sizeof(V))) {
      return Status::Invalid("raw data of " + std::to_string(raw.size()) + " bytes for " +
                             std::to_string(n) + " values of " + std::to_string(sizeof(V)));
    }
    for (int64_t i = 0; i < n; ++i) {
      V v;
      std::memcpy(&v, raw.data() + i * sizeof(V), sizeof(V));
      c.values.push_back(static_cast<double>(v));
    }
    return Status::Ok();
  };
  using T = onnx::TensorProto_DataType;
  if (t.has_raw_data()) {
    Status st;
    switch (type) {
      case T::TensorProto_DataType_INT64:
        st = from_raw(int64_t{});
        break;
      case T::TensorProto_DataType_INT32:
        st = from_raw(int32_t{});
        break;
      case T::TensorProto_DataType_FLOAT:
        st = from_raw(float{});
        break;
      case T::TensorProto_DataType_DOUBLE:
        st = from_raw(double{});
        break;
      case T::TensorProto_DataType_BOOL:
      case T::TensorProto_DataType_UINT8:
        st = from_raw(uint8_t{});
        break;
      case T::TensorProto_DataType_INT8:
        st = from_raw(int8_t{});
        break;
      default:
        return Status::NotImplemented(
            "constant of element type " +
            onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(type)));
    }
    SHARDSCOPE_RETURN_IF_ERROR(st);
  } else if (type == T::TensorProto_DataType_INT64) {
    c.values.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (type == T::TensorProto_DataType_FLOAT) {
    c.values.assign(t.float_data().begin(), t.float_data().end());
  } else if (type == T::TensorProto_DataType_DOUBLE) {
    c.values.assign(t.double_data().begin(), t.double_data().end());
  } else if (c.integer) {
    c.values.assign(t.int32_data().begin(), t.int32_data().end());
  } else {
    return Status::NotImplemented(
        "constant of element type " +
        onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(type)));
  }
  if (static_cast<int64_t>(c.values.size()) != n) {
    return Status::Invalid("holds " + std::to_string(c.values.size()) + " values for shape " +
                           ShapeToString(c.shape));
  }
  return c;
}

const std::vector<std::string>& FoldableOps() {
  static const std::vector<std::string> ops = {
      "Add",       "Cast",  "Concat", "Constant",   "ConstantOfShape", "Cos",
      "Div",       "Equal", "Gather", "Greater",    "Identity",        "Mul",
      "Neg",       "Pow",   "Range",  "Reciprocal", "Reshape",         "Shape",
      "Sin",       "Size",  "Slice",  "Sqrt",       "Squeeze",         "Sub",
      "Unsqueeze", "Where"};
  return ops;
}

bool IsFoldable(const std::string& op_type) {
  const auto& ops = FoldableOps();
  return std::find(ops.begin(), ops.end(), op_type) != ops.end();
}

Result<std::vector<HostConst>> FoldNode(const onnx::NodeProto& node,
                                        const std::vector<const HostConst*>& in,
                                        const std::vector<Shape>& shapes) {
  const std::string& op = node.op_type();
  auto attr_int = [&](const char* name, int64_t fallback) {
    const onnx::AttributeProto* a = FindAttr(node, name);
    return a != nullptr ? a->i() : fallback;
  };
  auto attr_ints = [&](const char* name) -> std::optional<std::vector<int64_t>> {
    const onnx::AttributeProto* a = FindAttr(node, name);
    if (a == nullptr) return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  };
  // An integer list from input i (when present) or attribute `name`.
  auto ints_from = [&](size_t i, const char* name) -> std::optional<std::vector<int64_t>> {
    if (i < in.size() && in[i] != nullptr) return in[i]->Ints();
    return attr_ints(name);
  };
  auto one = [](Result<HostConst> r) -> Result<std::vector<HostConst>> {
    if (!r.ok()) return r.status();
    return std::vector<HostConst>{std::move(*r)};
  };
  if (op == "Constant") {
    if (const auto* a = FindAttr(node, "value"); a != nullptr && a->has_t())
      return one(HostConstFromTensor(a->t()));
    if (const auto* a = FindAttr(node, "value_int"))
      return one(HostConst{{}, true, {double(a->i())}});
    if (const auto* a = FindAttr(node, "value_float"))
      return one(HostConst{{}, false, {double(a->f())}});
    if (const auto* a = FindAttr(node, "value_ints")) {
      HostConst c{{a->ints_size()}, true, {}};
      for (int64_t v : a->ints()) c.values.push_back(static_cast<double>(v));
      return one(std::move(c));
    }
    if (const auto* a = FindAttr(node, "value_floats")) {
      HostConst c{{a->floats_size()}, false, {}};
      for (float v : a->floats()) c.values.push_back(v);
      return one(std::move(c));
    }
    return Status::NotImplemented("a Constant without value, value_int(s) or value_float(s)");
  }
  if (op == "Shape" || op == "Size") {
    Shape s = shapes[0];
    if (op == "Size") return one(HostConst{{}, true, {double(NumElements(s))}});
    const int64_t r = static_cast<int64_t>(s.size());
    const int64_t b = std::clamp<int64_t>(NormAxis(attr_int("start", 0), r), 0, r);
    const int64_t e = std::clamp<int64_t>(NormAxis(attr_int("end", r), r), b, r);
    HostConst c{{e - b}, true, {}};
    for (int64_t i = b; i < e; ++i) c.values.push_back(static_cast<double>(s[i]));
    return one(std::move(c));
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == nullptr && i < static_cast<size_t>(node.input_size()) && !node.input(i).empty())
      return Status::Internal("input " + std::to_string(i) + " is not a constant");
  }
  if (op == "Identity") return one(Need(in, 0));
  if (op == "Cast") {
    HostConst c = Need(in, 0);
    c.integer = IsIntegerType(static_cast<int>(attr_int("to", 1)));
    if (c.integer)
      for (double& v : c.values) v = std::trunc(v);
    return one(std::move(c));
  }
  // Position tables (rotary embeddings' cos and sin) are computed from Range by these.
  if (op == "Sqrt" || op == "Cos" || op == "Sin" || op == "Neg" || op == "Reciprocal") {
    HostConst c = Need(in, 0);
    for (double& v : c.values) {
      v = op == "Sqrt"  ? std::sqrt(v)
          : op == "Cos" ? std::cos(v)
          : op == "Sin" ? std::sin(v)
          : op == "Neg" ? -v
                        : (v == 0 ? 0.0 : 1.0 / v);
    }
    return one(std::move(c));
  }
  if (op == "Pow") {
    return one(Broadcast({in[0], in[1]}, in[0]->integer && in[1]->integer,
                         [](const std::vector<double>& a) { return std::pow(a[0], a[1]); }));
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Equal" ||
      op == "Greater") {
    const bool integer = in[0]->integer && in[1]->integer;
    const char k = op == "Equal" ? '=' : op == "Greater" ? '>' : op[0];
    const bool boolean = k == '=' || k == '>';
    return one(Broadcast({in[0], in[1]}, integer || boolean,
                         [k, integer](const std::vector<double>& a) -> double {
                           switch (k) {
                             case 'A':
                               return a[0] + a[1];
                             case 'S':
                               return a[0] - a[1];
                             case 'M':
                               return a[0] * a[1];
                             case '=':
                               return a[0] == a[1] ? 1.0 : 0.0;
                             case '>':
                               return a[0] > a[1] ? 1.0 : 0.0;
                             default:
                               if (a[1] == 0) return integer ? 0.0 : a[0] / a[1];
                               return integer ? std::trunc(a[0] / a[1]) : a[0] / a[1];
                           }
                         }));
  }
  if (op == "Where") {
    return one(Broadcast({in[0], in[1], in[2]}, in[1]->integer && in[2]->integer,
                         [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : a[2]; }));
  }
  if (op == "Gather") return one(Gather(Need(in, 0), Need(in, 1), attr_int("axis", 0)));
  if (op == "Concat") return one(Concat(in, attr_int("axis", 0)));
  if (op == "Reshape") return one(Reshaped(Need(in, 0), in[1]->Ints(), attr_int("allowzero", 0)));
  if (op == "Unsqueeze" || op == "Squeeze") {
    const HostConst& x = Need(in, 0);
    const auto axes = ints_from(1, "axes");
    Shape s;
    if (op == "Unsqueeze") {
      if (!axes) return Status::Invalid("Unsqueeze without axes");
      const int64_t r = static_cast<int64_t>(x.shape.size() + axes->size());
      std::vector<bool> inserted(r, false);
      for (int64_t a : *axes) {
        a = NormAxis(a, r);
        if (a < 0 || a >= r || inserted[a]) return Status::Invalid("axis out of range or repeated");
        inserted[a] = true;
      }
      size_t k = 0;
      for (int64_t d = 0; d < r; ++d) s.push_back(inserted[d] ? 1 : x.shape[k++]);
    } else {
      const int64_t r = static_cast<int64_t>(x.shape.size());
      std::vector<bool> drop(r, false);
      for (int64_t d = 0; d < r; ++d) drop[d] = !axes && x.shape[d] == 1;
      if (axes)
        for (int64_t a : *axes) drop[std::clamp<int64_t>(NormAxis(a, r), 0, r - 1)] = true;
      for (int64_t d = 0; d < r; ++d)
        if (!drop[d]) s.push_back(x.shape[d]);
    }
    return one(HostConst{s, x.integer, x.values});
  }
  if (op == "Slice") {
    const auto starts = ints_from(1, "starts"), ends = ints_from(2, "ends");
    if (!starts || !ends) return Status::Invalid("Slice without starts or ends");
    return one(Slice(Need(in, 0), *starts, *ends,
                     ints_from(3, "axes").value_or(std::vector<int64_t>{}),
                     ints_from(4, "steps").value_or(std::vector<int64_t>{})));
  }
  if (op == "ConstantOfShape") {
    const std::vector<int64_t> dims = in[0]->Ints();
    const Shape s(dims.begin(), dims.end());
    if (CountOrNegative(s) < 0) return TooLarge(s);
    HostConst value{{}, false, {0.0}};
    if (const auto* a = FindAttr(node, "value"); a != nullptr && a->has_t()) {
      SHARDSCOPE_ASSIGN_OR_RETURN(value, HostConstFromTensor(a->t()));
      if (value.values.size() != 1) return Status::Invalid("value must hold one element");
    }
    return one(HostConst{s, value.integer, std::vector<double>(NumElements(s), value.values[0])});
  }
  if (op == "Range") {
    for (int i = 0; i < 3; ++i) {
      if (in[i]->values.size() != 1) return Status::Invalid("start, limit and delta are scalars");
    }
    const double start = in[0]->values[0], limit = in[1]->values[0], delta = in[2]->values[0];
    const double count = std::ceil((limit - start) / delta);
    if (!(count < static_cast<double>(kMaxConstElements))) return TooLarge({});
    const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    HostConst c{{n}, in[0]->integer, {}};
    for (int64_t i = 0; i < n; ++i) c.values.push_back(start + static_cast<double>(i) * delta);
    return one(std::move(c));
  }
  return Status::Internal("operator " + op + " is not folded");
}

}  // namespace shardscope
