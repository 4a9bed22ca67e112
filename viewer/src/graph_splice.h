// Opening a folded layer without laying the whole graph out again (internal to the viewer).
//
// `base` is the graph laid out with the layer folded; `target` is the same graph with it open
// (nodes and edges as BuildGraphScene draws them, no geometry yet). Each box of `base` that
// opened (a fold, a collapsed scope) is replaced by what came out of it, stacked in data
// order: the folds left of it as boxes, each opened unit laid out alone by dot (cached by its
// shape, so one layout serves every repeat of `layer ×136`). What lies below or right of the
// box moves by the size difference (a monotone map, so no node changes its order or overlaps
// the spliced part); edges in and out keep their route outside and reach the new nodes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "graph_layout.h"
#include "shardscope/viewer/graph_scene.h"

namespace shardscope::viewer::graph_detail {

enum class Splice {
  kDone,         // target has its geometry
  kNeedsLayout,  // a unit's shape is not cached and `may_lay_out` was false
  kCannot,       // more changed than opened boxes: lay the target out in full
};

// Fills the geometry of `target` from `base`; `*_key_of_op` map each operator to its node.
Splice SpliceLayout(const DrawnGraph& base, const std::map<int64_t, std::string>& base_key_of_op,
                    DrawnGraph& target, const std::map<int64_t, std::string>& target_key_of_op,
                    bool may_lay_out, const std::string& run_name);

}  // namespace shardscope::viewer::graph_detail

namespace shardscope::viewer {

struct GraphLayout {
  GraphOptions options;  // what was laid out: BaseGraphOptions of the request
  graph_detail::DrawnGraph graph;
  std::map<int64_t, std::string> key_of_op;
};

}  // namespace shardscope::viewer
