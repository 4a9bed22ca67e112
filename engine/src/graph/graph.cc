#include "shardscope/graph.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ops/op_registry.h"
#include "shardscope/checked_math.h"

namespace shardscope {

const char* ValueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kInput:
      return "input";
    case ValueKind::kLabel:
      return "label";
    case ValueKind::kParameter:
      return "parameter";
    case ValueKind::kConstant:
      return "constant";
    case ValueKind::kActivation:
      return "activation";
  }
  return "?";
}

Status Graph::CheckNewValue(const Shape& shape, DType dtype, const std::string& what) const {
  SHARDSCOPE_RETURN_IF_ERROR(CheckTensorSize(shape, DTypeBytes(dtype), what));
  const int64_t bytes = *CheckedBytes(shape, DTypeBytes(dtype));
  if (bytes > kMaxTensorBytes - std::min(total_value_bytes_, kMaxTensorBytes)) {
    return Status::Invalid(what + ": its " + std::to_string(bytes) + " bytes bring the graph's " +
                           "tensors to more than 2^56 bytes (64 PiB) together, the most a " +
                           "model may hold");
  }
  return Status::Ok();
}

ValueId Graph::AddValue(Value v) {
  // Saturating: values added without CheckNewValue only make later checks stricter.
  const auto bytes = CheckedBytes(v.shape, DTypeBytes(v.dtype));
  const auto total = bytes ? CheckedAdd(total_value_bytes_, *bytes) : std::nullopt;
  total_value_bytes_ = total ? *total : std::numeric_limits<int64_t>::max();
  v.id = static_cast<ValueId>(values_.size());
  value_by_name_.emplace(v.name, v.id);
  values_.push_back(std::move(v));
  return values_.back().id;
}

ValueId Graph::AddInput(std::string name, Shape shape, DType dtype) {
  return AddValue({.name = std::move(name),
                   .shape = std::move(shape),
                   .dtype = dtype,
                   .kind = ValueKind::kInput,
                   .producer = kNoNode,
                   .producer_output = 0,
                   .init = {}});
}

ValueId Graph::AddLabel(std::string name, Shape shape) {
  return AddValue({.name = std::move(name),
                   .shape = std::move(shape),
                   .dtype = DType::kI32,
                   .kind = ValueKind::kLabel,
                   .producer = kNoNode,
                   .producer_output = 0,
                   .init = {}});
}

ValueId Graph::AddParameter(std::string name, Shape shape, InitSpec init) {
  return AddValue({.name = std::move(name),
                   .shape = std::move(shape),
                   .dtype = DType::kF32,
                   .kind = ValueKind::kParameter,
                   .init = init});
}

ValueId Graph::AddConstant(std::string name, Shape shape, InitSpec init, DType dtype) {
  return AddValue({.name = std::move(name),
                   .shape = std::move(shape),
                   .dtype = dtype,
                   .kind = ValueKind::kConstant,
                   .init = init});
}

namespace {

std::string DescribeInputs(const Graph& g, const std::vector<ValueId>& inputs) {
  std::string s;
  for (ValueId v : inputs) {
    if (!s.empty()) s += ", ";
    if (v < 0 || v >= g.num_values()) {
      s += "<undefined>";
    } else {
      s += g.value(v).name + " " + ShapeToString(g.value(v).shape);
    }
  }
  return s;
}

// Operators that move or convert elements without arithmetic: any element type.
bool MovesAnyType(OpKind op) {
  switch (op) {
    case OpKind::kReshape:
    case OpKind::kIdentity:
    case OpKind::kCast:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kConcat:
    case OpKind::kSplit:
    case OpKind::kSlice:
      return true;
    default:
      return false;
  }
}

Status CheckNode(const Graph& g, OpKind op, const std::vector<ValueId>& inputs,
                 const OpAttrs& attrs, std::vector<ValueInfo>* out) {
  const OpDef& def = GetOpDef(op);
  if (def.num_inputs == kVariadic ? inputs.empty()
                                  : static_cast<int>(inputs.size()) != def.num_inputs) {
    return Status::Invalid(
        std::string(def.name) + " takes " +
        (def.num_inputs == kVariadic ? std::string("at least 1") : std::to_string(def.num_inputs)) +
        " inputs, got " + std::to_string(inputs.size()));
  }
  std::vector<ValueInfo> in;
  for (ValueId v : inputs) {
    if (v < 0 || v >= g.num_values())
      return Status::Invalid("input value " + std::to_string(v) + " is undefined");
    in.push_back({g.value(v).shape, g.value(v).dtype});
  }
  for (size_t i = 0; i < in.size(); ++i) {
    // Only the label/index operands of these operators are integers.
    const bool int_ok = (op == OpKind::kSoftmaxCrossEntropyWithLogits && i == 1) ||
                        (op == OpKind::kSoftmaxCrossEntropyGrad && i == 2) ||
                        ((op == OpKind::kGather || op == OpKind::kGatherGrad) && i == 1) ||
                        (op == OpKind::kWhere && i == 0) || MovesAnyType(op);
    if (in[i].dtype == DType::kI32 && !int_ok) {
      return Status::Invalid("input " + std::to_string(i) + " (" + g.value(inputs[i]).name +
                             ") is i32; " + def.name + " needs f32 there");
    }
  }
  Status st = def.shape(attrs, in, out);
  if (!st.ok())
    return st.WithContext(std::string(def.name) + "(" + DescribeInputs(g, inputs) + ")");
  if (def.num_outputs == kVariadic ? out->empty()
                                   : static_cast<int>(out->size()) != def.num_outputs) {
    return Status::Internal(std::string(def.name) + " shape rule gave the wrong number of outputs");
  }
  for (size_t k = 0; k < out->size(); ++k) {
    SHARDSCOPE_RETURN_IF_ERROR(g.CheckNewValue(
        (*out)[k].shape, (*out)[k].dtype, std::string(def.name) + " output " + std::to_string(k)));
  }
  return Status::Ok();
}

}  // namespace

Result<NodeId> Graph::AddNode(OpKind op, std::string name, std::vector<ValueId> inputs,
                              OpAttrs attrs) {
  std::vector<ValueInfo> out;
  Status st = CheckNode(*this, op, inputs, attrs, &out);
  if (!st.ok()) return st.WithContext("operator '" + name + "'");
  if (FindNode(name) != kNoNode || FindValue(name) != kNoValue) {
    return Status::Invalid("operator '" + name + "': the name is already used");
  }
  Node node;
  node.id = static_cast<NodeId>(nodes_.size());
  node.op = op;
  node.name = std::move(name);
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  for (size_t i = 0; i < out.size(); ++i) {
    Value v{.name = out.size() == 1 ? node.name : node.name + ":" + std::to_string(i),
            .shape = out[i].shape,
            .dtype = out[i].dtype,
            .kind = ValueKind::kActivation,
            .producer = node.id,
            .producer_output = static_cast<int>(i),
            .init = {}};
    node.outputs.push_back(AddValue(std::move(v)));
  }
  node_by_name_.emplace(node.name, node.id);
  nodes_.push_back(std::move(node));
  return nodes_.back().id;
}

Status LocatedAt(const Graph& g, NodeId id, Status status) {
  if (status.ok() || id == kNoNode) return status;
  const Node& n = g.node(id);
  const Node& origin = n.is_backward && n.forward_node != kNoNode ? g.node(n.forward_node) : n;
  if (origin.source.empty() || status.message().rfind(origin.source, 0) == 0) return status;
  return status.WithContext(origin.source);
}

NodeId Graph::FindNode(const std::string& name) const {
  auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? kNoNode : it->second;
}

ValueId Graph::FindValue(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? kNoValue : it->second;
}

std::vector<ValueId> Graph::Parameters() const {
  std::vector<ValueId> out;
  for (const Value& v : values_) {
    if (v.kind == ValueKind::kParameter) out.push_back(v.id);
  }
  return out;
}

std::vector<std::vector<NodeId>> Graph::Consumers() const {
  std::vector<std::vector<NodeId>> consumers(values_.size());
  for (const Node& n : nodes_) {
    for (ValueId v : n.inputs) {
      if (consumers[v].empty() || consumers[v].back() != n.id) consumers[v].push_back(n.id);
    }
  }
  return consumers;
}

Status Graph::Verify() const {
  if (total_value_bytes_ > kMaxTensorBytes) {
    return Status::Invalid("the graph's tensors hold more than 2^56 bytes (64 PiB) together");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < values_.size(); ++i) {
    const Value& v = values_[i];
    if (v.id != static_cast<ValueId>(i))
      return Status::Internal("value ids are not dense at " + v.name);
    if (!names.insert(v.name).second)
      return Status::Invalid("value name '" + v.name + "' is used twice");
    const bool produced = v.kind == ValueKind::kActivation;
    if (produced != (v.producer != kNoNode)) {
      return Status::Invalid("value '" + v.name + "' is a " + ValueKindName(v.kind) +
                             (produced ? " without a producer" : " with a producer"));
    }
  }
  std::vector<bool> defined(values_.size(), false);
  for (const Value& v : values_) defined[v.id] = v.producer == kNoNode;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    const std::string where = "operator '" + n.name + "' (" + OpName(n.op) + ")";
    if (n.id != static_cast<NodeId>(i)) return Status::Internal(where + ": node ids are not dense");
    for (ValueId v : n.inputs) {
      if (v < 0 || v >= num_values()) return Status::Invalid(where + ": input id out of range");
      if (!defined[v])
        return Status::Invalid(where + ": reads '" + values_[v].name + "' before it is produced");
    }
    std::vector<ValueInfo> out;
    SHARDSCOPE_RETURN_IF_ERROR(CheckNode(*this, n.op, n.inputs, n.attrs, &out).WithContext(where));
    if (out.size() != n.outputs.size()) return Status::Invalid(where + ": wrong number of outputs");
    for (size_t k = 0; k < out.size(); ++k) {
      const Value& v = values_[n.outputs[k]];
      if (v.producer != n.id || v.producer_output != static_cast<int>(k)) {
        return Status::Invalid(where + ": output '" + v.name + "' does not point back at it");
      }
      if (v.shape != out[k].shape) {
        return Status::Invalid(where + ": output '" + v.name + "' has shape " +
                               ShapeToString(v.shape) + " but the shape rule gives " +
                               ShapeToString(out[k].shape));
      }
      defined[v.id] = true;
    }
    if (n.is_backward && (n.forward_node < 0 || n.forward_node >= num_nodes())) {
      return Status::Invalid(where + ": backward operator without a forward operator");
    }
  }
  return Status::Ok();
}

std::string Graph::ToText() const {
  std::ostringstream out;
  for (const Value& v : values_) {
    if (v.producer != kNoNode) continue;
    out << ValueKindName(v.kind) << ' ' << v.name << ' ' << ShapeToString(v.shape) << ' '
        << DTypeName(v.dtype) << '\n';
  }
  for (const Node& n : nodes_) {
    for (size_t k = 0; k < n.outputs.size(); ++k)
      out << (k ? ", " : "") << values_[n.outputs[k]].name;
    out << " = " << OpName(n.op) << '(' << DescribeInputs(*this, n.inputs) << ") -> ";
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      out << (k ? ", " : "") << ShapeToString(values_[n.outputs[k]].shape);
    }
    out << '\n';
  }
  return out.str();
}

namespace {
std::string DotEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
// "a.b.c" -> {"a", "a.b"}: the scopes that contain the name.
std::vector<std::string> Scopes(const std::string& name) {
  std::vector<std::string> scopes;
  for (size_t p = name.find('.'); p != std::string::npos; p = name.find('.', p + 1)) {
    scopes.push_back(name.substr(0, p));
  }
  return scopes;
}
}  // namespace

std::string Graph::ToDot() const {
  // Scope tree: scope path -> node ids directly inside; emitted as nested clusters.
  std::map<std::string, std::vector<NodeId>> members;
  std::set<std::string> all_scopes;
  for (const Node& n : nodes_) {
    auto scopes = Scopes(n.name);
    members[scopes.empty() ? "" : scopes.back()].push_back(n.id);
    for (auto& s : scopes) all_scopes.insert(s);
  }
  std::ostringstream out;
  out << "digraph G {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
  for (const Value& v : values_) {
    if (v.producer != kNoNode) continue;
    out << "  v" << v.id << " [shape=ellipse, label=\"" << DotEscape(v.name) << "\\n"
        << ShapeToString(v.shape) << "\"];\n";
  }
  int cluster = 0;
  auto emit = [&](auto&& self, const std::string& scope, int depth) -> void {
    for (NodeId id : members[scope]) {
      const Node& n = nodes_[id];
      out << std::string(depth * 2 + 2, ' ') << "n" << id << " [label=\"" << DotEscape(n.name)
          << "\\n"
          << OpName(n.op) << "\"" << (n.is_backward ? ", style=dashed" : "") << "];\n";
    }
    for (const std::string& child : all_scopes) {
      auto parent = Scopes(child + ".x");
      parent.pop_back();
      if ((parent.empty() ? "" : parent.back()) != scope || child == scope) continue;
      out << std::string(depth * 2 + 2, ' ') << "subgraph cluster_" << cluster++ << " {\n"
          << std::string(depth * 2 + 4, ' ') << "label=\"" << DotEscape(child) << "\";\n";
      self(self, child, depth + 1);
      out << std::string(depth * 2 + 2, ' ') << "}\n";
    }
  };
  emit(emit, "", 0);
  for (const Node& n : nodes_) {
    for (ValueId v : n.inputs) {
      const Value& val = values_[v];
      out << "  "
          << (val.producer == kNoNode ? "v" + std::to_string(v)
                                      : "n" + std::to_string(val.producer))
          << " -> n" << n.id << " [label=\"" << ShapeToString(val.shape) << "\", fontsize=8];\n";
    }
  }
  out << "}\n";
  return out.str();
}

std::vector<bool> NodesNeededFor(const Graph& g, const std::vector<ValueId>& targets) {
  std::vector<bool> needed_value(g.num_values(), false);
  for (ValueId v : targets) needed_value[v] = true;
  std::vector<bool> run(g.num_nodes(), false);
  for (NodeId n = g.num_nodes() - 1; n >= 0; --n) {
    const Node& node = g.node(n);
    for (ValueId v : node.outputs) run[n] = run[n] || needed_value[v];
    if (!run[n]) continue;
    for (ValueId v : node.inputs) needed_value[v] = true;
  }
  return run;
}

std::vector<bool> ValuesDependingOn(const Graph& g, const std::vector<ValueId>& sources) {
  std::vector<bool> depends(g.num_values(), false);
  for (ValueId v : sources) depends[v] = true;
  for (const Node& node : g.nodes()) {
    bool any = false;
    for (ValueId v : node.inputs) any = any || depends[v];
    for (ValueId v : node.outputs) depends[v] = depends[v] || any;
  }
  return depends;
}

}  // namespace shardscope
