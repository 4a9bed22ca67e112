// Internal: what a gradient rule sees of the forward node it differentiates.
#pragma once

#include <string>
#include <vector>

#include "shardscope/graph.h"

namespace shardscope {

class GradContext {
 public:
  GradContext(Graph& graph, NodeId node, std::vector<ValueId> output_grads,
              std::vector<bool> input_needs_grad)
      : graph_(graph),
        node_(node),
        output_grads_(std::move(output_grads)),
        needs_grad_(std::move(input_needs_grad)),
        input_grads_(graph.node(node).inputs.size(), kNoValue) {}

  const Node& node() const { return graph_.node(node_); }
  const OpAttrs& attrs() const { return node().attrs; }
  ValueId input(int i) const { return node().inputs[i]; }
  ValueId output(int i = 0) const { return node().outputs[i]; }
  const Shape& shape(ValueId v) const { return graph_.value(v).shape; }
  // The gradient flowing into output i (kNoValue when none flows).
  ValueId output_grad(int i = 0) const { return output_grads_[i]; }
  bool needs_grad(int input) const { return needs_grad_[input]; }

  // Emits a backward node "grad.<forward name>.<part>" and returns its outputs.
  Result<std::vector<ValueId>> EmitAll(OpKind op, const std::string& part,
                                       std::vector<ValueId> inputs, OpAttrs attrs = {});
  Result<ValueId> Emit(OpKind op, const std::string& part, std::vector<ValueId> inputs,
                       OpAttrs attrs = {}) {
    auto outs = EmitAll(op, part, std::move(inputs), std::move(attrs));
    if (!outs.ok()) return outs.status();
    return outs.value()[0];
  }
  // A zero constant "grad.<forward name>.<part>" (for outputs no gradient reached).
  ValueId Zeros(const Shape& shape, const std::string& part);
  // Returns `v` reshaped to `shape` (itself when it has that shape already).
  Result<ValueId> ReshapeTo(ValueId v, const Shape& shape, const std::string& part);
  // Returns `grad` summed down to `shape` (a SumToShape node when broadcasting happened).
  Result<ValueId> SumTo(ValueId grad, const Shape& shape, const std::string& part);

  void SetInputGrad(int i, ValueId grad) { input_grads_[i] = grad; }
  const std::vector<ValueId>& input_grads() const { return input_grads_; }

 private:
  Graph& graph_;
  NodeId node_;
  std::vector<ValueId> output_grads_;
  std::vector<bool> needs_grad_;
  std::vector<ValueId> input_grads_;
};

}  // namespace shardscope
