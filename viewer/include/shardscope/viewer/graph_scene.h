// Graph view: the forward and backward operator graph of a run, laid out by Graphviz `dot`
// in-process (libgvc; one GVC_t for the process, guarded by a mutex).
//
// Repeated structure folds when more than `fold_above` operators are shown: consecutive
// units with the same operators (`layer0` … `layer135`) become one box for their forward and
// one for their backward operators (role "cluster", key = the first unit; expanding a unit
// draws it in full). Name scopes are clusters (backward ones, "grad.<scope>", beside their
// forward scope); a scope with more than `collapse_above` operators is drawn as one box
// (role "cluster", key = scope) unless listed in `expanded`. At most `max_nodes` nodes are
// drawn: scopes collapse further, then one node (role "more", id = operators left out)
// stands for the rest. Operators (role "operator", id = operator id) are coloured by strategy (same
// strategy, same colour; a legend lists them), by worker or by memory. Edges (role "edge",
// id = tensor id) that carry a redistribution are drawn thick and orange (role
// "redistribution", id = redistribution id) and labelled with their collectives and bytes;
// gradient reductions (no consumer) go to an "optimizer" node. The partitioned view draws one
// cluster per worker (place()) and the send/receive edges of the send_recv table (role
// "send_recv"); without placement it says so.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "shardscope/store/status.h"
#include "shardscope/viewer/run_document.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

enum class ColorBy { kStrategy, kWorker, kMemory };

struct GraphOptions {
  ColorBy color_by = ColorBy::kStrategy;
  bool show_backward = true;
  bool partitioned = false;         // one cluster per worker, send/recv edges
  int collapse_above = 40;          // scopes with more operators are collapsed ...
  std::set<std::string> expanded;   // ... unless listed here
  std::set<std::string> collapsed;  // always collapsed
  int64_t fold_above = 150;         // repeats fold when more operators than this are shown
  int64_t max_nodes = 300;          // drawn nodes at most (see above)
  std::string filter;               // only operators whose name contains this (empty: all)
  bool operator==(const GraphOptions&) const = default;
};

// The graph view of `options`: laid out with the units it opens folded, then each opened
// unit spliced in (GraphSceneOn); a full layout where splicing cannot work.
store::Result<Scene> BuildGraphScene(const RunData& run, const GraphOptions& options = {});
// The same graph always laid out in full by dot (what a splice is checked against).
store::Result<Scene> BuildGraphSceneInFull(const RunData& run, const GraphOptions& options = {});

// Opening a folded layer without a new layout of the whole graph (viewer/src/graph_splice.h):
// a GraphLayout is the graph laid out for BaseGraphOptions (every folded unit closed); the
// scene of options that open units (`expanded`) or close them again is made from it by
// splicing each opened unit, laid out alone and cached by its shape, in place of its box.
struct GraphLayout;
enum class GraphGeometry {
  kSpliced,  // from the base layout (and cached unit layouts): no dot run
  kLaidOut,  // a full dot layout: more changed than opened units
  kNotYet,   // needs dot, and `may_lay_out` was false: the scene is empty
};
// `options` with the unit names (`layer5`, `layers.0`) taken out of `expanded` and `collapsed`.
GraphOptions BaseGraphOptions(const RunData& run, const GraphOptions& options);
store::Result<std::shared_ptr<const GraphLayout>> LayOutGraph(const RunData& run,
                                                              const GraphOptions& options);
const GraphOptions& LaidOutOptions(const GraphLayout& layout);
// The scene of `options` on `base` (laid out for the same run and BaseGraphOptions(options)).
// Lays out the first unit of each fold of `base` (cached by shape): opening any layer of
// those folds then needs no dot. For a worker thread, once the graph is shown.
void PrepareOpening(const RunData& run, const GraphLayout& base);
store::Result<Scene> GraphSceneOn(const RunData& run, const GraphLayout& base,
                                  const GraphOptions& options, bool may_lay_out,
                                  GraphGeometry* geometry);

// The collectives of a redistribution in words: "all-gather(mp) + local slice(dp)", or
// "no communication" when it has no steps.
std::string DescribeCollectives(const store::RedistributionRecord& redistribution);

}  // namespace shardscope::viewer
