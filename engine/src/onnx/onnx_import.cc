// The walk over an ONNX graph: one slot per ONNX value, host constants folded, every other
// node handed to its converter (onnx_ops.cc) inside the node's name scope.
#include <algorithm>
#include <map>

#include "onnx/onnx_context.h"

namespace shardscope {

namespace {
std::vector<std::string> NameParts(const std::string& name) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : name + "/") {
    if (c != '/') {
      part += c;
    } else if (!part.empty()) {
      parts.push_back(part);
      part.clear();
    }
  }
  return parts;
}
}  // namespace

std::string OnnxOperatorName(const std::string& node_name) {
  std::string out;
  for (const std::string& p : NameParts(node_name)) out += (out.empty() ? "" : ".") + p;
  return out;
}

NodeName SplitNodeName(const onnx::NodeProto& node, int index) {
  const std::vector<std::string> parts = NameParts(node.name());
  NodeName n;
  if (parts.empty()) {
    n.local = node.op_type() + "_" + std::to_string(index);
    return n;
  }
  n.local = parts.back();
  for (size_t i = 0; i + 1 < parts.size(); ++i) n.scope += (i ? "." : "") + parts[i];
  return n;
}

std::string DescribeNode(const onnx::NodeProto& node, int index) {
  const std::string name =
      node.name().empty() ? "#" + std::to_string(index) + " (unnamed)" : "'" + node.name() + "'";
  return "node " + name + " (" + node.op_type() + ")";
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// ---------------------------------------------------------------- ImportContext

const OnnxSlot* ImportContext::FindSlot(const std::string& name) const {
  auto it = slots_.find(Resolve(name));
  return it == slots_.end() ? nullptr : &it->second;
}

Result<const OnnxSlot*> ImportContext::Slot(int i) const {
  if (!HasInput(i)) return Status::Invalid("input " + std::to_string(i) + " is missing");
  const std::string& name = node_->input(i);
  if (const OnnxSlot* s = FindSlot(name)) return s;
  if (model_.weights.count(name)) return &kWeightSlot;
  if (auto it = unsupported_.find(name); it != unsupported_.end()) {
    return Status::NotImplemented("input '" + name + "' is " + it->second);
  }
  return Status::Invalid("input '" + name + "' is not defined before this node");
}

const HostConst* ImportContext::ConstOf(int i) const {
  if (!HasInput(i)) return nullptr;
  const OnnxSlot* s = FindSlot(node_->input(i));
  return s != nullptr && s->constant ? &*s->constant : nullptr;
}

Result<Shape> ImportContext::ShapeOf(int i) const {
  SHARDSCOPE_ASSIGN_OR_RETURN(const OnnxSlot* s, Slot(i));
  if (s->constant) return s->constant->shape;
  if (s->value != kNoValue) return b_.graph().value(s->value).shape;
  return model_.weights.at(node_->input(i)).shape;
}

Result<ValueId> ImportContext::ValueOf(int i, std::optional<InitSpec> init) {
  SHARDSCOPE_ASSIGN_OR_RETURN(const OnnxSlot* s, Slot(i));
  if (s->value != kNoValue) return s->value;
  const std::string& name = node_->input(i);
  Graph& g = b_.graph();
  ValueId v = kNoValue;
  if (s->constant) {  // a host constant read as a tensor: a graph constant
    const HostConst& c = *s->constant;
    auto t = std::make_shared<Tensor>(c.shape, c.integer ? DType::kI32 : DType::kF32);
    for (size_t k = 0; k < c.values.size(); ++k) {
      if (c.integer) {
        t->ints()[k] = static_cast<int32_t>(c.values[k]);
      } else {
        (*t)[static_cast<int64_t>(k)] = static_cast<float>(c.values[k]);
      }
    }
    InitSpec spec{InitSpec::kData, 0.0f, std::shared_ptr<const Tensor>(std::move(t))};
    v = g.AddConstant(name, c.shape, spec, c.integer ? DType::kI32 : DType::kF32);
  } else {
    const OnnxWeight& w = model_.weights.at(name);
    InitSpec spec = init.value_or(w.shape.size() >= 2 ? InitSpec{InitSpec::kFanInUniform, 1.0f}
                                                      : InitSpec{InitSpec::kZeros, 0.0f});
    if (w.data != nullptr) spec = {InitSpec::kData, 0.0f, w.data};
    v = g.AddParameter(name, w.shape, spec);
  }
  if (v == kNoValue) return Status::Invalid("cannot add value '" + name + "' to the graph");
  slots_[Resolve(name)].value = v;
  return v;
}

Result<std::optional<std::vector<int64_t>>> ImportContext::IntsFrom(const std::string& attr,
                                                                    int input) {
  if (HasInput(input)) {
    const HostConst* c = ConstOf(input);
    if (c == nullptr) {
      return Refuse("input " + std::to_string(input) + " ('" + node_->input(input) +
                    "') must be a constant (known at import)");
    }
    return std::optional<std::vector<int64_t>>(c->Ints());
  }
  return AttrInts(attr);
}

int64_t ImportContext::AttrInt(const std::string& name, int64_t fallback) const {
  const onnx::AttributeProto* a = FindAttr(*node_, name);
  return a != nullptr ? a->i() : fallback;
}
float ImportContext::AttrFloat(const std::string& name, float fallback) const {
  const onnx::AttributeProto* a = FindAttr(*node_, name);
  return a != nullptr ? a->f() : fallback;
}
std::string ImportContext::AttrString(const std::string& name, const std::string& fallback) const {
  const onnx::AttributeProto* a = FindAttr(*node_, name);
  return a != nullptr ? a->s() : fallback;
}
std::optional<std::vector<int64_t>> ImportContext::AttrInts(const std::string& name) const {
  const onnx::AttributeProto* a = FindAttr(*node_, name);
  if (a == nullptr) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Result<ValueId> ImportContext::Op(OpKind op, const std::string& suffix, std::vector<ValueId> inputs,
                                  OpAttrs attrs) {
  const ValueId v = b_.Op(op, local_ + suffix, std::move(inputs), std::move(attrs));
  if (!b_.ok()) return b_.status();
  return v;
}

void ImportContext::SetOutput(int k, ValueId v) {
  if (k < node_->output_size() && !node_->output(k).empty()) slots_[node_->output(k)] = {v, {}};
}
void ImportContext::SetOutputConst(int k, HostConst c) {
  if (k < node_->output_size() && !node_->output(k).empty())
    slots_[node_->output(k)] = {kNoValue, std::move(c)};
}

// ---------------------------------------------------------------- the walk

namespace {

// Folds a node whose inputs are all known at import; false when some input is a tensor.
Result<bool> TryFold(ImportContext& ctx, const onnx::NodeProto& n) {
  if (!IsFoldable(n.op_type())) return false;
  const bool shape_only = n.op_type() == "Shape" || n.op_type() == "Size";
  std::vector<const HostConst*> in;
  std::vector<Shape> shapes;
  for (int i = 0; i < n.input_size(); ++i) {
    in.push_back(ctx.ConstOf(i));
    shapes.emplace_back();
    if (!ctx.HasInput(i)) continue;
    if (shape_only) {
      SHARDSCOPE_ASSIGN_OR_RETURN(shapes.back(), ctx.ShapeOf(i));
    } else if (in.back() == nullptr) {
      return false;
    }
  }
  const bool same_kind =
      n.op_type() == "Identity" ||
      (n.op_type() == "Cast" && in[0] != nullptr &&
       in[0]->integer ==
           IsIntegerType(static_cast<int>(ctx.AttrInt("to", onnx::TensorProto_DataType_FLOAT))));
  if (same_kind && n.output_size() == 1) {
    ctx.SetAlias(n.output(0), n.input(0));
    return true;
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<HostConst> out, FoldNode(n, in, shapes));
  for (size_t k = 0; k < out.size(); ++k)
    ctx.SetOutputConst(static_cast<int>(k), std::move(out[k]));
  return true;
}

// The scope paths of `scope` and its prefixes: "a.b.c" -> "a", "a.b", "a.b.c".
std::vector<std::string> ScopePrefixes(const std::string& scope) {
  std::vector<std::string> out;
  for (size_t i = 0; i <= scope.size(); ++i) {
    if (i == scope.size() || scope[i] == '.') {
      if (i > 0) out.push_back(scope.substr(0, i));
    }
  }
  return out;
}

}  // namespace

const OnnxSlot ImportContext::kWeightSlot{};

namespace {

Result<ValueId> ImportUnguarded(const OnnxModel& model, Builder& b, ValueId input,
                                std::vector<OnnxScope>* scopes) {
  ImportContext ctx(model, b);
  const Graph& g = b.graph();
  const Shape& x = g.value(input).shape;
  Shape want = {x[0]};
  want.insert(want.end(), model.input.example_shape.begin(), model.input.example_shape.end());
  if (model.input.fixed_batch > 0 && x[0] != model.input.fixed_batch) {
    return Status::Invalid(model.path + ": the data input '" + model.input.name +
                           "' has a fixed batch of " + std::to_string(model.input.fixed_batch) +
                           ", not " + std::to_string(x[0]) +
                           "; use that batch, or export with "
                           "dynamic_axes={'" +
                           model.input.name + "': {0: 'batch'}}");
  }
  ValueId data = input;
  if (x != want) {  // e.g. MNIST's [N, 1, 28, 28] into an MLP reading [N, 784]
    if (NumElements(x) != NumElements(want)) {
      return Status::Invalid(model.path + ": the data has examples of shape " +
                             ShapeToString(Shape(x.begin() + 1, x.end())) +
                             " but the model's input '" + model.input.name + "' reads " +
                             ShapeToString(model.input.example_shape));
    }
    OpAttrs a;
    a.shape = want;
    data = b.Op(OpKind::kReshape, "input.reshape", {input}, a);
    if (!b.ok()) return b.status();
  }
  ctx.SetSlot(model.input.name, {data, {}});
  for (const auto& [name, c] : model.constants) ctx.SetSlot(name, {kNoValue, c});

  std::map<std::string, size_t> scope_index;
  const onnx::GraphProto& gp = model.proto.graph();
  for (int i = 0; i < gp.node_size(); ++i) {
    if (model.fused[i] && !model.gelu_end.count(i)) continue;
    const onnx::NodeProto& n = gp.node(i);
    const NodeName name = SplitNodeName(n, i);
    ctx.Begin(n, name.local);
    if (!name.scope.empty()) b.PushScope(name.scope);
    const NodeId first = g.num_nodes();
    Status st = Status::Ok();
    if (auto gelu = model.gelu_end.find(i); gelu != model.gelu_end.end()) {
      const OnnxSlot* xs = ctx.FindSlot(gelu->second);
      if (xs == nullptr || xs->value == kNoValue) {
        st = Status::Invalid("the GeLU pattern's input '" + gelu->second + "' is not a tensor");
      } else {
        auto y = ctx.Op(OpKind::kGeLU, "", {xs->value});
        if (y.ok()) ctx.SetOutput(0, *y);
        st = y.status();
      }
    } else {
      auto folded = TryFold(ctx, n);
      if (!folded.ok()) {
        st = folded.status();
      } else if (!*folded) {
        const OnnxConverter convert = FindConverter(n.op_type());
        st = convert != nullptr
                 ? convert(ctx)
                 : Status::NotImplemented("operator " + n.op_type() +
                                          " is supported only on constant inputs (shape "
                                          "arithmetic), but an input here is a tensor");
      }
    }
    if (!name.scope.empty()) b.PopScope();
    if (!st.ok()) return st.WithContext(model.path + ": " + DescribeNode(n, i));
    for (int k = 0; k < n.output_size(); ++k) {
      if (!n.output(k).empty() && ctx.FindSlot(n.output(k)) == nullptr) {
        ctx.MarkUnsupported(n.output(k), "output " + std::to_string(k) + " of " +
                                             DescribeNode(n, i) + ", which is not supported");
      }
    }
    if (scopes == nullptr || g.num_nodes() == first) continue;
    for (const std::string& path : ScopePrefixes(name.scope)) {
      auto [it, fresh] = scope_index.emplace(path, scopes->size());
      if (fresh) scopes->push_back({path, {}, {}, {}});
      OnnxScope& s = (*scopes)[it->second];
      for (NodeId id = first; id < g.num_nodes(); ++id) s.nodes.push_back(id);
    }
  }
  const OnnxSlot* out = ctx.FindSlot(model.output);
  if (out == nullptr || out->value == kNoValue) {
    return Status::Invalid(model.path + ": the graph output '" + model.output +
                           "' is not computed from the input (a constant, or an unsupported "
                           "output)");
  }
  if (scopes != nullptr) {
    for (OnnxScope& s : *scopes) {  // the boundary shapes shard blocks are checked against
      const Node& head = g.node(s.nodes.front());
      for (ValueId v : head.inputs) {
        const ValueKind k = g.value(v).kind;
        if (k == ValueKind::kParameter || k == ValueKind::kConstant) continue;
        s.input_shape = g.value(v).shape;
        break;
      }
      s.output_shape = g.value(g.node(s.nodes.back()).outputs[0]).shape;
    }
  }
  return out->value;
}

}  // namespace

Result<ValueId> ImportOnnxGraph(const OnnxModel& model, Builder& b, ValueId input,
                                std::vector<OnnxScope>* scopes) {
  try {  // a hostile file's figures can still make a container throw; no exception leaves
    return ImportUnguarded(model, b, input, scopes);
  } catch (const std::exception& e) {
    return Status::Invalid(model.path + ": importing the graph failed (" + e.what() + ")");
  }
}

}  // namespace shardscope
