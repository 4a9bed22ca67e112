// The graph view's drawn graph and its layout by Graphviz `dot` (internal to the viewer).
// One GVC_t for the process, guarded by a mutex; node sizes are fixed from their labels, so
// dot only places them; coordinates come back y down with the origin at the top left.
#pragma once

#include <QColor>
#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shardscope/store/status.h"

namespace shardscope::viewer::graph_detail {

// A node: one operator, a fold or collapsed scope, a source tensor, the optimizer, "N more".
struct DrawnNode {
  std::string key{};
  QString label{}, tooltip{}, role{};
  std::string item_key{};  // SceneItem::key (clusters: the scope or unit to expand)
  int64_t id = -1;
  QColor fill{};
  std::string cluster{};  // "" = top level
  bool ellipse = false;
  QRectF rect{};  // set by LayOut
};

struct DrawnEdge {
  std::string src{}, dst{};
  int64_t tensor = -1;
  std::vector<int64_t> redistributions{};
  int64_t bytes = 0;
  bool send_recv = false;
  QString label{};
  QPolygonF points{};  // set by LayOut: start + (control, control, end)*, empty if not routed
  QPointF label_at{};  // set by LayOut when the edge has a label
};

struct DrawnCluster {
  std::string parent;  // "" = top level
  QString label;
  QRectF rect;  // set by LayOut
};

struct DrawnGraph {
  std::vector<DrawnNode> nodes;
  std::map<std::string, size_t> node_index;
  std::vector<DrawnEdge> edges;
  std::map<std::string, DrawnCluster> clusters;  // every cluster a node names, and parents
  std::vector<std::string> cluster_order;        // set by LayOut: outer before inner
  QRectF bounds;                                 // set by LayOut

  DrawnNode& Add(DrawnNode node);
};

// Width in points of a node label (6.2 points per character, 18 of padding).
double TextWidth(const QString& label);
// A node's size in points: its label's width, 13 points per line and 10 of padding.
QSizeF NodeSize(const DrawnNode& node);
// A label as Graphviz sizes it: drawable, backslashes doubled (\N, \G ... are expanded).
std::string DotLabel(const QString& text);

// Places the nodes, clusters and edges of `graph` with Graphviz dot (whole-graph ranking).
store::Status LayOut(DrawnGraph& graph, const std::string& run_name);

}  // namespace shardscope::viewer::graph_detail
