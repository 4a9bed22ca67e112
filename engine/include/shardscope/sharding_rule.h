// Sharding rules: how each operator's dimensions may be split across devices.
//
// A rule labels every dimension of an operator's inputs and outputs with a letter; the same
// letter names the same logical dimension (MatMul: inputs "mk", "kn", output "mn"). A
// strategy assigns mesh axes to letters; the layouts of the operands follow directly:
//   - an operand dimension is split over the axes of its letter;
//   - a letter that appears in the inputs but not in an output is summed over by the
//     operator, so that output is a partial sum over the letter's axes (MatMul's k);
//   - letters in `whole` must not be split (softmax axis, convolution window, ...).
// Operators whose local kernel depends on global sizes (means over a split dimension,
// dropout masks, masked embedding lookups) get their attributes rewritten per rank by
// the partitioner; the rule only describes the dimensions.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "shardscope/graph.h"

namespace shardscope {

struct ShardingSignature {
  std::vector<std::string> inputs;   // one letter per dimension, per input
  std::vector<std::string> outputs;  // same, per output
  std::string whole;                 // letters that cannot be split
  char batch = 0;                    // the letter data parallelism splits; 0 = none
  // "mk,kn->mn" (whole letters listed after '|')
  std::string ToString() const;
};

// The signature of one operator of a graph, from its kind, attributes and shapes.
Result<ShardingSignature> GetShardingSignature(const Graph& graph, NodeId node);

}  // namespace shardscope
