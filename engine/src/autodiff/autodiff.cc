#include "shardscope/autodiff.h"

#include "autodiff/grad_context.h"
#include "ops/op_registry.h"

namespace shardscope {

Result<std::vector<ValueId>> GradContext::EmitAll(OpKind op, const std::string& part,
                                                  std::vector<ValueId> inputs, OpAttrs attrs) {
  const std::string name = "grad." + node().name + "." + part;
  SHARDSCOPE_ASSIGN_OR_RETURN(NodeId id,
                              graph_.AddNode(op, name, std::move(inputs), std::move(attrs)));
  Node& n = graph_.mutable_node(id);
  n.is_backward = true;
  n.forward_node = node_;
  return n.outputs;
}

ValueId GradContext::Zeros(const Shape& shape, const std::string& part) {
  return graph_.AddConstant("grad." + node().name + "." + part, shape, {InitSpec::kZeros, 0.0f});
}

Result<Gradients> BuildBackward(Graph& graph, ValueId loss, const std::vector<ValueId>& wrt) {
  if (loss < 0 || loss >= graph.num_values()) return Status::Invalid("loss value is undefined");
  if (!graph.value(loss).shape.empty()) {
    return Status::Invalid("loss '" + graph.value(loss).name + "' must be a scalar, got " +
                           ShapeToString(graph.value(loss).shape));
  }
  const int num_forward = graph.num_nodes();

  // Values that depend on some wrt value (forward reachability).
  const std::vector<bool> depends = ValuesDependingOn(graph, wrt);

  // Accumulated gradient per value, seeded with dL/dL = 1.
  std::vector<ValueId> grad(graph.num_values(), kNoValue);
  std::vector<int> num_terms(graph.num_values(), 0);
  grad[loss] = graph.AddConstant("grad.seed", {}, {InitSpec::kOnes});

  for (NodeId n = num_forward - 1; n >= 0; --n) {
    const Node& node = graph.node(n);
    std::vector<ValueId> out_grads;
    bool any_out = false;
    for (ValueId v : node.outputs) {
      out_grads.push_back(grad[v]);
      any_out = any_out || grad[v] != kNoValue;
    }
    std::vector<bool> needs;
    bool any_in = false;
    for (ValueId v : node.inputs) {
      needs.push_back(depends[v] && graph.value(v).dtype == DType::kF32);
      any_in = any_in || needs.back();
    }
    if (!any_out || !any_in) continue;
    if (node.outputs.size() == 1 && out_grads[0] == kNoValue) continue;

    GradContext ctx(graph, n, out_grads, needs);
    Status st = GetOpDef(node.op).grad(ctx);
    if (!st.ok()) {  // `node` may dangle: the rule added nodes to the graph
      return LocatedAt(graph, n,
                       st.WithContext("gradient of operator '" + graph.node(n).name + "'"));
    }
    const std::vector<ValueId>& in_grads = ctx.input_grads();
    const std::vector<ValueId> inputs = graph.node(n).inputs;  // copy: the graph grew
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ValueId v = inputs[i], g = in_grads[i];
      if (g == kNoValue) continue;
      if (grad[v] == kNoValue) {
        grad[v] = g;
        continue;
      }
      // A value read by several operators: its gradient is the sum of theirs.
      const std::string name =
          "grad." + graph.value(v).name + ".sum" + std::to_string(++num_terms[v]);
      Result<NodeId> add = graph.AddNode(OpKind::kAdd, name, {grad[v], g});
      if (!add.ok()) return LocatedAt(graph, n, add.status());
      Node& add_node = graph.mutable_node(*add);
      add_node.is_backward = true;
      add_node.forward_node = n;
      grad[v] = add_node.outputs[0];
    }
  }

  Gradients result;
  result.wrt = wrt;
  for (ValueId v : wrt) result.grads.push_back(grad[v]);
  return result;
}

}  // namespace shardscope
