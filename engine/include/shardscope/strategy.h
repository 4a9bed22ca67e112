// Strategies: what the user writes per operator (seed notation) and what it resolves to.
//
// Two notations, as in the seeds:
//   splits   "((2,4),(4,1))"  per input, per dimension, how many parts (seed 002);
//   layouts  "(layout(\"mp\",(\"sp\",\"dp\")), layout((\"sp\",\"dp\"),\"None\"))" on a named
//            mesh declared as layout = Layout((2,2,2),("dp","sp","mp")) (seed 004).
// An operator's sharding rule (sharding_rule.h) turns either into an OpStrategy: the
// operator's mesh over all the run's devices and, per dimension letter, the mesh axes it is
// split over. Operand layouts follow from it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/sharding_rule.h"

namespace shardscope {

struct ParsedStrategy {
  enum Kind { kSplits, kLayouts };
  Kind kind = kSplits;
  std::vector<std::vector<int64_t>> splits;     // kSplits: per operand, per dimension
  std::string mesh_name;                        // kLayouts: the mesh variable used
  DeviceMesh mesh;                              // kLayouts
  std::vector<std::optional<DimAxes>> layouts;  // kLayouts: per operand; nullopt = None
  std::string text;
};

// Parses one strategy tuple. `meshes` maps the names a file declared (layout, layout2) to
// their meshes. Errors name the column and what was expected.
Result<ParsedStrategy> ParseStrategy(const std::string& text,
                                     const std::map<std::string, DeviceMesh>& meshes);

struct OpStrategy {
  DeviceMesh mesh;                           // over all devices of the run
  std::map<char, std::vector<int>> letters;  // dimension letter -> mesh axes (ordered)
  std::string provenance;                    // why: "user", "data-parallel default", ...

  // The layout of an operand with the given letters and shape; `partial_letters` are
  // summed letters whose axes make it a partial sum.
  Result<Layout> LayoutOf(const std::string& letters, const Shape& shape,
                          const std::string& partial_letters = "") const;
  // "{m: dp, k: mp} on mesh(dp=2,mp=4)"
  std::string ToString() const;
};

// The operand indices of `sig`, highest rank first (stable): the order in which a splits
// strategy's letters become mesh axes, here and in the searches.
std::vector<size_t> OperandsByRank(const ShardingSignature& sig);

// Resolves a user strategy for operator `op_name` with signature `sig` and operand shapes
// `inputs` on `devices` devices. A splits strategy makes a mesh with one axis per split
// letter (named after the letter, in order of appearance in OperandsByRank) and, when it uses fewer
// devices than the run, a replica axis "rep" appended last (the fastest-varying: consecutive ranks
// hold the same block). Errors name the operator, the rule broken and the numbers.
Result<OpStrategy> ResolveStrategy(const std::string& op_name, const ParsedStrategy& strategy,
                                   const ShardingSignature& sig, const std::vector<Shape>& inputs,
                                   int devices);

// The default of unconfigured operators: the batch letter split over all devices ("dp"),
// everything else replicated; fully replicated when the batch does not divide.
OpStrategy DataParallelStrategy(const ShardingSignature& sig, const std::vector<Shape>& inputs,
                                int devices);

// Letters of `sig` summed into output `out` (in an input, not in that output).
std::string SummedLetters(const ShardingSignature& sig, int out);

}  // namespace shardscope
