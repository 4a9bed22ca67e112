// Internal: what a converter (onnx_ops.cc) sees of the node it maps, and how it emits.
//
// Each ONNX value is a slot: a graph value, or a host constant not yet in the graph.
// Constants enter the graph only when an operator reads them as a tensor (ValueOf).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx/onnx_model.h"

namespace shardscope {

struct OnnxSlot {
  ValueId value = kNoValue;
  std::optional<HostConst> constant;
};

class ImportContext {
 public:
  ImportContext(const OnnxModel& model, Builder& b) : model_(model), b_(b) {}

  const OnnxModel& model() const { return model_; }
  Builder& builder() { return b_; }
  const onnx::NodeProto& node() const { return *node_; }
  const std::string& local() const { return local_; }
  void Begin(const onnx::NodeProto& node, std::string local) {
    node_ = &node;
    local_ = std::move(local);
  }

  int num_inputs() const { return node_->input_size(); }
  // An optional input left out ("" or past the end).
  bool HasInput(int i) const { return i < node_->input_size() && !node_->input(i).empty(); }
  // The slot of input i; fails naming the value when nothing defines it.
  Result<const OnnxSlot*> Slot(int i) const;
  const HostConst* ConstOf(int i) const;  // null unless input i is a host constant
  Result<Shape> ShapeOf(int i) const;
  // Input i as a graph value; a constant or weight is added to the graph on first use
  // (`init`: how a weight without data is initialised).
  Result<ValueId> ValueOf(int i, std::optional<InitSpec> init = std::nullopt);
  // An integer list given as attribute `attr` (older opsets) or as constant input `input`.
  Result<std::optional<std::vector<int64_t>>> IntsFrom(const std::string& attr, int input);

  int64_t AttrInt(const std::string& name, int64_t fallback) const;
  float AttrFloat(const std::string& name, float fallback) const;
  std::string AttrString(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> AttrInts(const std::string& name) const;

  // Adds one operator named "<scope>.<local><suffix>"; fails with the builder's error.
  Result<ValueId> Op(OpKind op, const std::string& suffix, std::vector<ValueId> inputs,
                     OpAttrs attrs = {});
  void SetOutput(int k, ValueId v);
  void SetOutputConst(int k, HostConst c);
  void SetSlot(const std::string& name, OnnxSlot slot) { slots_[name] = std::move(slot); }
  // Output `name` is input `of` unchanged (Identity, a Cast that keeps the type): one slot,
  // so a large constant (a causal mask each layer casts) enters the graph once.
  void SetAlias(const std::string& name, const std::string& of) { aliases_[name] = Resolve(of); }
  const std::string& Resolve(const std::string& name) const {
    auto it = aliases_.find(name);
    return it == aliases_.end() ? name : it->second;
  }
  const OnnxSlot* FindSlot(const std::string& name) const;
  // An output the converter did not give (a second output such as MaxPool's indices):
  // reading it later fails with `why`.
  void MarkUnsupported(const std::string& name, std::string why) { unsupported_[name] = why; }
  // The rows view ([rows, K]) a MatMul made of value `v`, kNoValue when none did yet: the
  // projections reading one value share it, so their input gradients meet in one sum.
  ValueId RowsOf(ValueId v) const {
    auto it = rows_of_.find(v);
    return it == rows_of_.end() ? kNoValue : it->second;
  }
  void SetRowsOf(ValueId v, ValueId rows) { rows_of_[v] = rows; }

  // "node '/fc1/Gemm' (Gemm): <message>" is added by the caller; converters say what broke.
  static Status Refuse(const std::string& message) { return Status::Invalid(message); }
  static const OnnxSlot kWeightSlot;  // a weight not yet in the graph

 private:
  const OnnxModel& model_;
  Builder& b_;
  const onnx::NodeProto* node_ = nullptr;
  std::string local_;
  std::unordered_map<std::string, OnnxSlot> slots_;  // lookups only, never iterated
  std::unordered_map<std::string, std::string> unsupported_;
  std::unordered_map<std::string, std::string> aliases_;
  std::unordered_map<ValueId, ValueId> rows_of_;
};

}  // namespace shardscope
