// Reading an ONNX file: ONNX's own parser, checker and shape inference, then what the
// importer needs from it (weights, constants, the data input, GeLU patterns).
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/proto_utils.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "onnx/onnx_model.h"

namespace shardscope {
namespace {

constexpr int kMinOpset = 7;
// Larger tensors are refused before any allocation (and before element counts overflow).
constexpr int64_t kMaxElements = int64_t{1} << 40;

Status CheckSize(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxElements / d)) {
      return Status::Invalid(what + " of shape " + ShapeToString(shape) + " is too large");
    }
    n *= d;
  }
  return Status::Ok();
}

int MaxOpset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 17 : it->second.second;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string TypeName(int elem_type) {
  return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
}

// The bytes of an external-data tensor: "location", "offset", "length" relative to the
// model file's directory (ONNX's checker has refused paths leaving it).
Result<std::string> ReadExternal(const onnx::TensorProto& t, const std::string& model_path) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") location = e.value();
    if (e.key() == "offset") offset = std::atoll(e.value().c_str());
    if (e.key() == "length") length = std::atoll(e.value().c_str());
  }
  const std::filesystem::path rel = std::filesystem::path(location).lexically_normal();
  if (rel.is_absolute() || rel.empty() || *rel.begin() == "..") {
    return Status::Invalid("initializer '" + t.name() + "': external data '" + location +
                           "' is not a path inside the model's directory");
  }
  const std::filesystem::path file = std::filesystem::path(model_path).parent_path() / rel;
  std::ifstream in(file, std::ios::binary);
  if (location.empty() || !in) {
    return Status::Io("initializer '" + t.name() + "': cannot open its external data '" +
                      file.string() + "'");
  }
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = size - offset;
  if (offset < 0 || offset + length > size) {
    return Status::Invalid("initializer '" + t.name() + "': external data '" + file.string() +
                           "' holds " + std::to_string(size) + " bytes, fewer than offset " +
                           std::to_string(offset) + " + length " + std::to_string(length));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
}

Result<Shape> DimsOf(const onnx::TensorProto& t) {
  const Shape s(t.dims().begin(), t.dims().end());
  SHARDSCOPE_RETURN_IF_ERROR(CheckSize(s, "initializer '" + t.name() + "'"));
  return s;
}

// Float data of a FLOAT / DOUBLE / FLOAT16 initializer as f32.
Result<std::shared_ptr<const Tensor>> FloatData(const onnx::TensorProto& t, const Shape& shape,
                                                const std::string& model_path) {
  const int64_t n = NumElements(shape);
  std::string external;
  const std::string* raw = t.has_raw_data() ? &t.raw_data() : nullptr;
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    SHARDSCOPE_ASSIGN_OR_RETURN(external, ReadExternal(t, model_path));
    raw = &external;
  }
  const int width = t.data_type() == onnx::TensorProto_DataType_DOUBLE    ? 8
                    : t.data_type() == onnx::TensorProto_DataType_FLOAT16 ? 2
                                                                          : 4;
  auto bad_size = [&](int64_t found) {
    return Status::Invalid("initializer '" + t.name() + "' of shape " + ShapeToString(shape) +
                           " holds " + std::to_string(found) + " values, not " + std::to_string(n));
  };
  const int64_t given = raw != nullptr ? static_cast<int64_t>(raw->size()) / width
                        : t.data_type() == onnx::TensorProto_DataType_FLOAT  ? t.float_data_size()
                        : t.data_type() == onnx::TensorProto_DataType_DOUBLE ? t.double_data_size()
                                                                             : -1;
  if (given < 0) {
    return Status::NotImplemented("initializer '" + t.name() + "': FLOAT16 data without raw_data");
  }
  if (given != n || (raw != nullptr && static_cast<int64_t>(raw->size()) != n * width)) {
    return bad_size(given);
  }
  auto out = std::make_shared<Tensor>(shape);
  float* dst = out->data();
  if (raw != nullptr) {
    const char* src = raw->data();
    for (int64_t i = 0; i < n; ++i) {
      if (width == 4) {
        std::memcpy(&dst[i], src + 4 * i, 4);
      } else if (width == 8) {
        double d;
        std::memcpy(&d, src + 8 * i, 8);
        dst[i] = static_cast<float>(d);
      } else {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
        const float mag = exp == 0    ? std::ldexp(static_cast<float>(mant), -24)
                          : exp == 31 ? (mant ? NAN : INFINITY)
                                      : std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
        dst[i] = (h & 0x8000) ? -mag : mag;
      }
    }
  } else if (t.data_type() == onnx::TensorProto_DataType_FLOAT) {
    std::copy(t.float_data().begin(), t.float_data().end(), dst);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(t.double_data(i));
  }
  return std::shared_ptr<const Tensor>(std::move(out));
}

bool IsFloatType(int t) {
  return t == onnx::TensorProto_DataType_FLOAT || t == onnx::TensorProto_DataType_DOUBLE ||
         t == onnx::TensorProto_DataType_FLOAT16;
}

// ONNX's checker resolves external data against the working directory (its public entry
// point takes no model directory). ReadExternal checks those paths itself, so the checker
// sees such tensors inline, one byte long (it compares no data size with the shape).
Status RunChecker(onnx::ModelProto* proto) {
  using Entries = google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto>;
  std::vector<std::pair<onnx::TensorProto*, Entries>> hidden;
  for (onnx::TensorProto& t : *proto->mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
    hidden.emplace_back(&t, t.external_data());
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
    t.set_raw_data(std::string(1, '\0'));
  }
  Status status = Status::Ok();
  try {
    onnx::checker::check_model(*proto);
  } catch (const std::exception& e) {
    status = Status::Invalid(std::string("ONNX checker: ") + e.what());
  }
  for (auto& [t, entries] : hidden) {
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    *t->mutable_external_data() = std::move(entries);
  }
  return status;
}

Status ReadInitializers(OnnxModel* m, bool load_weights) {
  for (onnx::TensorProto& t : *m->proto.mutable_graph()->mutable_initializer()) {
    SHARDSCOPE_ASSIGN_OR_RETURN(Shape shape, DimsOf(t));
    if (IsFloatType(t.data_type()) && !shape.empty()) {
      OnnxWeight w{shape, nullptr};
      if (load_weights) {
        SHARDSCOPE_ASSIGN_OR_RETURN(w.data, FloatData(t, shape, m->path));
      }
      m->weights[t.name()] = std::move(w);
    } else if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
      return Status::NotImplemented("initializer '" + t.name() + "' (" + TypeName(t.data_type()) +
                                    ") keeps its data outside the file; only float weights may");
    } else {
      auto c = HostConstFromTensor(t);
      if (!c.ok()) return c.status().WithContext("initializer '" + t.name() + "'");
      m->constants[t.name()] = std::move(*c);
    }
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_double_data();
  }
  return Status::Ok();
}

// The first graph input without an initializer is the data; further ones are weights of
// a file exported without parameters.
Status ReadInputs(OnnxModel* m) {
  const onnx::GraphProto& g = m->proto.graph();
  std::set<std::string> init;
  for (const auto& t : g.initializer()) init.insert(t.name());
  bool have_data = false;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (init.count(in.name())) continue;
    const auto& tt = in.type().tensor_type();
    if (!in.type().has_tensor_type() || !tt.has_shape()) {
      return Status::Invalid("graph input '" + in.name() + "' has no tensor type with a shape");
    }
    Shape dims;
    std::string symbolic;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() > 0) {
        dims.push_back(dim.dim_value());
      } else if (d == 0 && !have_data) {
        dims.push_back(-1);
      } else {
        return Status::NotImplemented(
            "graph input '" + in.name() + "': dimension " + std::to_string(d) + " ('" +
            dim.dim_param() +
            "') is symbolic; only the first dimension of the data input (the "
            "batch) may be; export with fixed sizes for the others");
      }
    }
    SHARDSCOPE_RETURN_IF_ERROR(CheckSize(Shape(dims.begin() + (have_data ? 0 : 1), dims.end()),
                                         "graph input '" + in.name() + "'"));
    if (have_data) {
      if (!IsFloatType(tt.elem_type())) {
        return Status::NotImplemented("graph input '" + in.name() + "' (" +
                                      TypeName(tt.elem_type()) +
                                      "): a second input must be a float weight (a file "
                                      "exported without parameters); one data input only");
      }
      m->weights[in.name()] = {dims, nullptr};
      continue;
    }
    have_data = true;
    if (dims.empty()) return Status::Invalid("data input '" + in.name() + "' is a scalar");
    OnnxInputInfo& info = m->input;
    info.name = in.name();
    info.fixed_batch = dims[0] > 0 ? dims[0] : 0;
    info.example_shape.assign(dims.begin() + 1, dims.end());
    const int t = tt.elem_type();
    if (t == onnx::TensorProto_DataType_INT64 || t == onnx::TensorProto_DataType_INT32) {
      info.dtype = DType::kI32;
    } else if (t == onnx::TensorProto_DataType_FLOAT) {
      info.dtype = DType::kF32;
    } else {
      return Status::NotImplemented("data input '" + in.name() + "' has element type " +
                                    TypeName(t) + "; FLOAT and INT64/INT32 (token ids) are read");
    }
  }
  if (!have_data) return Status::Invalid("the graph has no data input (every input is a weight)");
  if (g.output_size() == 0) return Status::Invalid("the graph has no output");
  m->output = g.output(0).name();
  return Status::Ok();
}

// The scalar value of `name` when it is a constant (initializer or Constant node).
std::optional<double> StaticScalar(const OnnxModel& m, const std::string& name,
                                   const std::unordered_map<std::string, int>& producer) {
  if (auto it = m.constants.find(name); it != m.constants.end()) {
    if (it->second.values.size() == 1) return it->second.values[0];
    return std::nullopt;
  }
  auto p = producer.find(name);
  if (p == producer.end()) return std::nullopt;
  const onnx::NodeProto& n = m.proto.graph().node(p->second);
  const onnx::AttributeProto* v = FindAttr(n, "value");
  if (n.op_type() != "Constant" || v == nullptr || !v->has_t()) return std::nullopt;
  auto c = HostConstFromTensor(v->t());
  if (!c.ok() || c->values.size() != 1) return std::nullopt;
  return c->values[0];
}

// Finds x·0.5·(1 + erf(x/√2)) in either order of the two products, as exporters write it.
void FindGeluPatterns(OnnxModel* m) {
  const onnx::GraphProto& g = m->proto.graph();
  std::unordered_map<std::string, int> producer;
  std::unordered_map<std::string, std::vector<int>> consumers;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& o : g.node(i).output()) producer[o] = i;
    for (const std::string& in : g.node(i).input()) consumers[in].push_back(i);
  }
  for (const auto& out : g.output()) consumers[out.name()].push_back(-1);
  m->fused.assign(g.node_size(), false);
  auto sole = [&](int node) -> int {
    const auto& c = consumers[g.node(node).output(0)];
    return c.size() == 1 ? c[0] : -1;
  };
  auto near = [](std::optional<double> v, double want) { return v && std::abs(*v - want) < 1e-3; };
  auto other = [](const onnx::NodeProto& n, const std::string& one) {
    return n.input(0) == one ? n.input(1) : n.input(0);
  };
  for (int e = 0; e < g.node_size(); ++e) {
    if (g.node(e).op_type() != "Erf") continue;
    auto p = producer.find(g.node(e).input(0));
    if (p == producer.end()) continue;
    const int d = p->second;
    const onnx::NodeProto& dn = g.node(d);
    if (dn.input_size() != 2 || sole(d) != e) continue;
    const bool div =
        dn.op_type() == "Div" && near(StaticScalar(*m, dn.input(1), producer), M_SQRT2);
    const bool mul =
        dn.op_type() == "Mul" && near(StaticScalar(*m, dn.input(1), producer), M_SQRT1_2);
    if (!div && !mul) continue;
    const std::string x = dn.input(0);
    const int a = sole(e);
    if (a < 0 || g.node(a).op_type() != "Add" ||
        !near(StaticScalar(*m, other(g.node(a), g.node(e).output(0)), producer), 1.0))
      continue;
    const int m1 = sole(a);
    if (m1 < 0 || g.node(m1).op_type() != "Mul") continue;
    const std::string y = other(g.node(m1), g.node(a).output(0));
    std::vector<int> nodes = {d, e, a, m1};
    int end = -1;
    if (y == x) {  // (x·(1 + erf))·0.5
      const int m2 = sole(m1);
      if (m2 >= 0 && g.node(m2).op_type() == "Mul" &&
          near(StaticScalar(*m, other(g.node(m2), g.node(m1).output(0)), producer), 0.5)) {
        nodes.push_back(m2);
        end = m2;
      }
    } else if (auto h = producer.find(y); h != producer.end()) {  // (x·0.5)·(1 + erf)
      const onnx::NodeProto& hn = g.node(h->second);
      if (hn.op_type() == "Mul" && sole(h->second) == m1 &&
          (hn.input(0) == x || hn.input(1) == x) &&
          near(StaticScalar(*m, other(hn, x), producer), 0.5)) {
        nodes.push_back(h->second);
        end = m1;
      }
    }
    if (end < 0) continue;
    for (int n : nodes) m->fused[n] = true;
    m->gelu_end[end] = x;
  }
}

// Every node must map (`fused`: nodes read as part of a pattern; null: before the patterns
// are known, when only Erf, read only in a pattern, is let through).
Status CheckOperators(const OnnxModel& m, const std::vector<bool>* fused) {
  const onnx::GraphProto& g = m.proto.graph();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return Status::NotImplemented(DescribeNode(n, i) + ": domain '" + n.domain() +
                                    "' is not supported (the default ONNX domain only)");
    }
    if (FindConverter(n.op_type()) != nullptr || IsFoldable(n.op_type())) continue;
    if (fused == nullptr ? n.op_type() == "Erf" : (*fused)[i]) continue;
    std::string extra = n.op_type() == "Erf" ? " (Erf is read only as part of the GeLU pattern "
                                               "x·0.5·(1 + erf(x/√2)))"
                                             : "";
    return Status::NotImplemented(DescribeNode(n, i) + ": operator " + n.op_type() +
                                  " is not supported" + extra +
                                  "; supported: " + JoinNames(SupportedOnnxOps()));
  }
  return Status::Ok();
}

// ONNX 1.12's shape inference divides by a window's strides and dilations unchecked (a zero
// stride is a floating-point exception in the library): refuse such windows first.
Status CheckWindows(const onnx::ModelProto& proto) {
  for (const onnx::NodeProto& n : proto.graph().node()) {
    const std::string& op = n.op_type();
    if (op != "Conv" && op != "MaxPool" && op != "AveragePool" && op != "ConvTranspose" &&
        op != "LpPool") {
      continue;
    }
    for (const onnx::AttributeProto& a : n.attribute()) {
      const bool positive =
          a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
      if (!positive && a.name() != "pads") continue;
      for (int64_t v : a.ints()) {
        if (positive ? v >= 1 : v >= 0) continue;
        return Status::Invalid("node '" + n.name() + "' (" + op + "): attribute " + a.name() +
                               " holds " + std::to_string(v) + ", which must be at least " +
                               (positive ? "1" : "0"));
      }
    }
  }
  return Status::Ok();
}

Result<std::shared_ptr<const OnnxModel>> ParseUnguarded(const std::string& bytes,
                                                        const std::string& path,
                                                        const OnnxLoadOptions& options) {
  auto m = std::make_shared<OnnxModel>();
  m->path = path;
  auto fail = [&](const Status& s) { return s.WithContext(path); };
  if (bytes.empty() || !onnx::ParseProtoFromBytes(&m->proto, bytes.data(), bytes.size())) {
    return fail(
        Status::Invalid("not an ONNX model: the protobuf ModelProto does not parse "
                        "(truncated or another format)"));
  }
  for (const auto& op : m->proto.opset_import()) {
    if (!op.domain().empty() && op.domain() != "ai.onnx") continue;
    m->opset = static_cast<int>(op.version());
  }
  if (m->opset == 0) {
    return fail(Status::Invalid("the model imports no opset of the default ONNX domain"));
  }
  const int max_opset = MaxOpset();
  if (m->opset < kMinOpset || m->opset > max_opset) {
    return fail(Status::NotImplemented(
        "opset " + std::to_string(m->opset) + " of the default domain is not supported (" +
        std::to_string(kMinOpset) + " to " + std::to_string(max_opset) +
        "; re-export with torch.onnx.export(..., opset_version=17)"));
  }
  // Ours first: it lists what is supported, where the checker would only say "unknown".
  SHARDSCOPE_RETURN_IF_ERROR(fail(CheckOperators(*m, nullptr)));
  SHARDSCOPE_RETURN_IF_ERROR(fail(CheckWindows(m->proto)));
  SHARDSCOPE_RETURN_IF_ERROR(fail(RunChecker(&m->proto)));
  SHARDSCOPE_RETURN_IF_ERROR(fail(ReadInitializers(m.get(), options.load_weights)));
  SHARDSCOPE_RETURN_IF_ERROR(fail(ReadInputs(m.get())));
  FindGeluPatterns(m.get());
  SHARDSCOPE_RETURN_IF_ERROR(fail(CheckOperators(*m, &m->fused)));
  try {
    // Strict, without data propagation: ONNX 1.12's propagators read shape data without
    // bounds checks (a Gather index past a shape's rank); the folder here computes that.
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1,
                                       /*data_propagation=*/false);
    onnx::shape_inference::InferShapes(m->proto, onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const std::exception& e) {
    return fail(Status::Invalid(std::string("ONNX shape inference: ") + e.what()));
  }
  return std::shared_ptr<const OnnxModel>(std::move(m));
}

}  // namespace

Result<std::shared_ptr<const OnnxModel>> ParseOnnxModel(const std::string& bytes,
                                                        const std::string& path,
                                                        const OnnxLoadOptions& options) {
  try {  // libonnx and protobuf throw on some hostile files; no exception leaves the library
    return ParseUnguarded(bytes, path, options);
  } catch (const std::exception& e) {
    return Status::Invalid(path + ": not a readable ONNX model (" + e.what() + ")");
  }
}

Result<std::shared_ptr<const OnnxModel>> LoadOnnxModel(const std::string& path,
                                                       const OnnxLoadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": cannot read the ONNX model: no such file");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) return Status::Io(path + ": cannot read the ONNX model: read error");
  return ParseOnnxModel(bytes.str(), path, options);
}

const OnnxInputInfo& OnnxInput(const OnnxModel& model) { return model.input; }
const std::string& OnnxPath(const OnnxModel& model) { return model.path; }

std::vector<std::string> SupportedOnnxOps() {
  std::set<std::string> all;
  for (const std::string& op : ConverterOps()) all.insert(op);
  for (const std::string& op : FoldableOps()) all.insert(op);
  return {all.begin(), all.end()};
}

}  // namespace shardscope
