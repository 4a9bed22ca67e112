// Which drawn node each shown operator of the graph view belongs to (internal to the viewer).
//
// Repeated structure folds first: the operators are cut into units (the first name component
// that ends in a number: `layer17` of `layer17.attn.qkv`, `relu5`); a backward operator
// belongs to its forward operator's unit. Runs of consecutive units (or of groups of up to 8
// units, as `dense3, relu3`) with identical operator sequences fold into one node for the
// forward operators and one for the backward ones ("layer0 … layer135 ×136"). A unit in
// GraphOptions::expanded is drawn in full and splits the run around it.
// The rest is clustered by name scope (two levels; backward operators in "grad.<scope>"
// clusters beside their forward scope); scopes with more than `collapse_above` operators
// become one node unless expanded.
#pragma once

#include <QString>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shardscope/viewer/graph_scene.h"

namespace shardscope::viewer::graph_detail {

// A node standing for several operators: a fold of repeated units or a collapsed scope.
struct GroupNode {
  std::string key;       // node key: "fold:<first unit>[:bwd]" or "scope:<scope>"
  std::string item_key;  // what expanding it names (GraphOptions::expanded): a unit or scope
  std::string cluster;   // enclosing cluster ("" = top level)
  QString label, tooltip;
  int64_t operators = 0;
  int64_t worker = -1;  // a fold's operators all on one worker (pipeline stage): it; else -1
};

struct Grouping {
  std::map<int64_t, std::string> cluster_of;  // drawn operators: their cluster ("" = none)
  std::map<int64_t, std::string> grouped_in;  // operators inside a GroupNode: its key
  std::vector<GroupNode> groups;              // in a deterministic order
  int64_t folded_units = 0;                   // units inside folds
  // Clusters: parent ("" = top level) and drawn label, for every cluster an operator names.
  std::map<std::string, std::string> cluster_parent;
  std::map<std::string, QString> cluster_label;
};

// The unit of an operator ("" when its name has no numbered component).
std::string UnitOf(const store::OperatorRecord& op);

// `fold` false: no repeat folding (small graphs keep their familiar picture).
Grouping GroupOperators(const RunData& run, const std::vector<const store::OperatorRecord*>& shown,
                        const GraphOptions& options, int collapse_above, bool fold);

// The cluster path of a scope: at most two levels ("layer3", "layer3.attn"); within `root`
// (a unit), `root` and the level below it ("layers.3", "layers.3.attn").
std::vector<std::string> ScopePath(const std::string& scope, const std::string& root = "");

}  // namespace shardscope::viewer::graph_detail
