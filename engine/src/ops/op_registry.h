// Internal: the per-operator functions behind the operator table.
//
// For every X(Name, in, out) in SHARDSCOPE_OP_LIST, the family file in this directory
// defines NameShape, NameForward and NameGrad with the signatures below.
#pragma once

#include <span>
#include <vector>

#include "shardscope/graph.h"
#include "shardscope/ops.h"
#include "shardscope/tensor.h"

namespace shardscope {

// Fills `out` (one ValueInfo per output) or returns an error naming the rule broken.
// The caller prefixes the operator's name.
using ShapeFn = Status (*)(const OpAttrs& attrs, std::span<const ValueInfo> in,
                           std::vector<ValueInfo>* out);

struct KernelContext {
  const OpAttrs& attrs;
  std::span<const Tensor* const> in;
  std::span<Tensor* const> out;  // allocated with the inferred shapes; kernels overwrite them
  int64_t step = 0;              // training step, for seeded stochastic operators
  bool training = true;
};
using KernelFn = void (*)(const KernelContext& ctx);

class GradContext;
// Emits the backward operators of one forward node into the graph (through ctx).
using GradFn = Status (*)(GradContext& ctx);

struct OpDef {
  OpKind kind;
  const char* name;
  int num_inputs;
  int num_outputs;
  ShapeFn shape;
  KernelFn forward;
  GradFn grad;
};

const OpDef& GetOpDef(OpKind op);

#define SHARDSCOPE_DECLARE_OP(name, in, out)                                               \
  Status name##Shape(const OpAttrs&, std::span<const ValueInfo>, std::vector<ValueInfo>*); \
  void name##Forward(const KernelContext&);                                                \
  Status name##Grad(GradContext&);
SHARDSCOPE_OP_LIST(SHARDSCOPE_DECLARE_OP)
#undef SHARDSCOPE_DECLARE_OP

// Rules shared by several operators.
Status ExpectRank(const char* what, const Shape& shape, int rank);
// Numpy broadcasting of two shapes, or an error naming both.
Result<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis for a given rank, or an error.
Result<int64_t> NormalizeAxis(int64_t axis, int rank);

}  // namespace shardscope
