#include "shardscope/composites.h"

namespace shardscope {
namespace {

Result<ValueId> Add(Graph& g, OpKind op, const std::string& name, std::vector<ValueId> in,
                    OpAttrs attrs = {}) {
  SHARDSCOPE_ASSIGN_OR_RETURN(NodeId n, g.AddNode(op, name, std::move(in), std::move(attrs)));
  return g.node(n).outputs[0];
}

}  // namespace

Result<ValueId> AddBatchNormTraining(Graph& g, const std::string& name, ValueId x, ValueId scale,
                                     ValueId bias, float epsilon) {
  const Shape& shape = g.value(x).shape;
  if (shape.size() < 2) {
    return Status::Invalid("operator '" + name + "': BatchNorm input must have rank ≥ 2, got " +
                           ShapeToString(shape));
  }
  OpAttrs stats;  // over every axis but the channel's, kept for broadcasting
  stats.keep_dims = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d != 1) stats.axes.push_back(static_cast<int64_t>(d));
  }
  OpAttrs channels;
  channels.shape = {shape[1]};
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId mean_kept,
                              Add(g, OpKind::kReduceMean, name + ".mean_kept", {x}, stats));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId centered,
                              Add(g, OpKind::kSub, name + ".centered", {x, mean_kept}));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId square,
                              Add(g, OpKind::kMul, name + ".square", {centered, centered}));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId var_kept,
                              Add(g, OpKind::kReduceMean, name + ".var_kept", {square}, stats));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId mean,
                              Add(g, OpKind::kReshape, name + ".mean", {mean_kept}, channels));
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId var,
                              Add(g, OpKind::kReshape, name + ".var", {var_kept}, channels));
  OpAttrs bn;
  bn.epsilon = epsilon;
  return Add(g, OpKind::kBatchNorm, name, {x, scale, bias, mean, var}, bn);
}

}  // namespace shardscope
