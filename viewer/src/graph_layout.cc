#include "graph_layout.h"

#include <graphviz/gvc.h>

#include <QStringList>
#include <algorithm>
#include <functional>
#include <mutex>

#include "shardscope/viewer/scene.h"

namespace shardscope::viewer::graph_detail {
namespace {

// One Graphviz context for the process: creating it loads the plugins (slow).
GVC_t* GraphvizContext() {
  static GVC_t* context = gvContext();
  return context;
}
std::mutex& GraphvizMutex() {
  static std::mutex mu;
  return mu;
}

char* C(const std::string& s) { return const_cast<char*>(s.c_str()); }
void Set(void* object, const char* name, const std::string& value) {
  agsafeset(object, const_cast<char*>(name), C(value), const_cast<char*>(""));
}

}  // namespace

DrawnNode& DrawnGraph::Add(DrawnNode node) {
  node_index[node.key] = nodes.size();
  nodes.push_back(std::move(node));
  return nodes.back();
}

double TextWidth(const QString& label) {
  double widest = 0;
  for (const QString& line : label.split('\n')) widest = std::max<double>(widest, line.size());
  return widest * 6.2 + 18;
}

QSizeF NodeSize(const DrawnNode& node) {
  const int lines = static_cast<int>(node.label.count('\n')) + 1;
  return QSizeF(TextWidth(node.label), lines * 13 + 10);
}

std::string DotLabel(const QString& text) {
  return DrawableText(text).replace('\\', "\\\\").toStdString();
}

store::Status LayOut(DrawnGraph& graph, const std::string& run_name) {
  std::lock_guard<std::mutex> lock(GraphvizMutex());
  GVC_t* gvc = GraphvizContext();
  Agraph_t* g = agopen(C("run"), Agdirected, nullptr);
  Set(g, "rankdir", "TB");
  Set(g, "nodesep", "0.25");
  Set(g, "ranksep", "0.35");
  Set(g, "fontsize", "10");
  std::map<std::string, Agraph_t*> subgraphs;
  graph.cluster_order.clear();
  std::function<Agraph_t*(const std::string&)> cluster_graph =
      [&](const std::string& name) -> Agraph_t* {
    if (name.empty()) return g;
    auto it = subgraphs.find(name);
    if (it != subgraphs.end()) return it->second;
    const DrawnCluster& c = graph.clusters[name];
    Agraph_t* sub = agsubg(cluster_graph(c.parent), C("cluster_" + name), 1);
    Set(sub, "label", DotLabel(c.label));
    Set(sub, "fontsize", "10");
    subgraphs[name] = sub;
    graph.cluster_order.push_back(name);
    return sub;
  };
  std::vector<Agnode_t*> gv_nodes;
  for (DrawnNode& n : graph.nodes) {
    Agnode_t* node = agnode(cluster_graph(n.cluster), C(n.key), 1);
    Set(node, "shape", n.ellipse ? "ellipse" : "box");
    Set(node, "fixedsize", "true");
    const QSizeF size = NodeSize(n);
    Set(node, "width", std::to_string(size.width() / 72.0));
    Set(node, "height", std::to_string(size.height() / 72.0));
    Set(node, "label", "");
    gv_nodes.push_back(node);
  }
  std::vector<Agedge_t*> gv_edges;
  for (DrawnEdge& e : graph.edges) {
    Agedge_t* edge =
        agedge(g, gv_nodes[graph.node_index[e.src]], gv_nodes[graph.node_index[e.dst]], nullptr, 1);
    if (!e.label.isEmpty()) {
      Set(edge, "label", DotLabel(e.label));
      Set(edge, "fontsize", "8");
    }
    gv_edges.push_back(edge);
  }
  // With the default ranking Graphviz 2.43's spline router can corrupt its heap (a double
  // free in gvFreeLayout): seed 001's interleaved worker clusters and an 8-device FFN with its
  // backward both did. Ranking the whole graph at once avoids it.
  Set(g, "newrank", "true");
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    return store::Status(store::StatusCode::kInternal,
                         run_name + ": Graphviz dot could not lay out the graph");
  }
  const boxf bb = GD_bb(g);
  auto flip = [&](pointf p) { return QPointF(p.x, bb.UR.y - p.y); };
  for (const std::string& name : graph.cluster_order) {
    const boxf cb = GD_bb(subgraphs[name]);
    graph.clusters[name].rect = QRectF(flip({cb.LL.x, cb.UR.y}), flip({cb.UR.x, cb.LL.y}));
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const QPointF c = flip(ND_coord(gv_nodes[i]));
    const double w = ND_width(gv_nodes[i]) * 72, h = ND_height(gv_nodes[i]) * 72;
    graph.nodes[i].rect = QRectF(c.x() - w / 2, c.y() - h / 2, w, h);
  }
  for (size_t i = 0; i < graph.edges.size(); ++i) {
    DrawnEdge& e = graph.edges[i];
    const splines* spl = ED_spl(gv_edges[i]);
    if (!spl || spl->size == 0) continue;
    const bezier& bz = spl->list[0];
    for (int p = 0; p < bz.size; ++p) e.points << flip(bz.list[p]);
    if (bz.eflag) e.points << QPointF(e.points.back()) << flip(bz.ep) << flip(bz.ep);
    const textlabel_t* lbl = ED_label(gv_edges[i]);
    e.label_at = lbl ? flip(lbl->pos) : e.points[e.points.size() / 2];
  }
  graph.bounds = QRectF(0, 0, bb.UR.x, bb.UR.y);
  gvFreeLayout(gvc, g);
  agclose(g);
  return store::Status::Ok();
}

}  // namespace shardscope::viewer::graph_detail
