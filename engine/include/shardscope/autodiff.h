// Reverse-mode automatic differentiation that emits the backward graph as ordinary operators.
#pragma once

#include <vector>

#include "shardscope/graph.h"

namespace shardscope {

struct Gradients {
  // grads[i] is the value holding d(loss)/d(wrt[i]); kNoValue when wrt[i] does not
  // influence the loss.
  std::vector<ValueId> wrt;
  std::vector<ValueId> grads;
};

// Appends to `graph` the backward operators of every forward node between `loss` (a
// scalar) and the values in `wrt`. Backward nodes are named "grad.<forward name>.<part>",
// have is_backward set and point at their forward node. Fails, naming the operator, if a
// needed gradient rule is missing.
Result<Gradients> BuildBackward(Graph& graph, ValueId loss, const std::vector<ValueId>& wrt);

}  // namespace shardscope
