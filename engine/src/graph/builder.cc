#include "shardscope/builder.h"

namespace shardscope {

std::string Builder::ScopedName(const std::string& local) const {
  std::string name;
  for (const std::string& s : scopes_) name += s + ".";
  return name + local;
}

std::string Builder::UniqueName(const std::string& base) const {
  if (graph_->FindNode(base) == kNoNode && graph_->FindValue(base) == kNoValue) return base;
  for (int i = 1;; ++i) {
    std::string name = base + "_" + std::to_string(i);
    if (graph_->FindNode(name) == kNoNode && graph_->FindValue(name) == kNoValue) return name;
  }
}

void Builder::Fail(Status status) {
  if (status_.ok() && !status.ok()) status_ = std::move(status);
}

ValueId Builder::Input(const std::string& name, Shape shape, DType dtype) {
  if (!ok()) return kNoValue;
  if (graph_->FindValue(name) != kNoValue) {
    Fail(Status::Invalid("input '" + name + "': the name is already used"));
    return kNoValue;
  }
  if (Status st = graph_->CheckNewValue(shape, dtype, "input '" + name + "'"); !st.ok()) {
    Fail(st);
    return kNoValue;
  }
  return graph_->AddInput(name, std::move(shape), dtype);
}

ValueId Builder::Label(const std::string& name, Shape shape) {
  if (!ok()) return kNoValue;
  if (graph_->FindValue(name) != kNoValue) {
    Fail(Status::Invalid("labels '" + name + "': the name is already used"));
    return kNoValue;
  }
  if (Status st = graph_->CheckNewValue(shape, DType::kI32, "labels '" + name + "'"); !st.ok()) {
    Fail(st);
    return kNoValue;
  }
  return graph_->AddLabel(name, std::move(shape));
}

ValueId Builder::Parameter(const std::string& local_name, Shape shape, InitSpec init) {
  if (!ok()) return kNoValue;
  const std::string name = ScopedName(local_name);
  if (graph_->FindValue(name) != kNoValue) {
    Fail(Status::Invalid("parameter '" + name + "': the name is already used"));
    return kNoValue;
  }
  for (int64_t d : shape) {
    if (d <= 0) {
      Fail(Status::Invalid("parameter '" + name + "': shape " + ShapeToString(shape) +
                           " has a non-positive dimension"));
      return kNoValue;
    }
  }
  if (Status st = graph_->CheckNewValue(shape, DType::kF32, "parameter '" + name + "'"); !st.ok()) {
    Fail(st);
    return kNoValue;
  }
  return graph_->AddParameter(name, std::move(shape), init);
}

std::vector<ValueId> Builder::OpAll(OpKind op, const std::string& local_name,
                                    std::vector<ValueId> inputs, OpAttrs attrs,
                                    const OpAnnotations& annotations) {
  if (!ok()) return {};
  for (ValueId v : inputs) {
    if (v == kNoValue) {
      Fail(Status::Invalid("operator '" + ScopedName(local_name) + "': an input is undefined"));
      return {};
    }
  }
  auto node =
      graph_->AddNode(op, UniqueName(ScopedName(local_name)), std::move(inputs), std::move(attrs));
  if (!node.ok()) {
    Fail(node.status());
    return {};
  }
  Node& n = graph_->mutable_node(*node);
  n.annotations = annotations;
  if (n.annotations.worker < 0) n.annotations.worker = default_worker_;
  return graph_->node(*node).outputs;
}

ValueId Builder::Op(OpKind op, const std::string& local_name, std::vector<ValueId> inputs,
                    OpAttrs attrs, const OpAnnotations& annotations) {
  auto outs = OpAll(op, local_name, std::move(inputs), std::move(attrs), annotations);
  return outs.empty() ? kNoValue : outs[0];
}

}  // namespace shardscope
