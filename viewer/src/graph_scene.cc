#include "shardscope/viewer/graph_scene.h"

#include <graphviz/gvc.h>

#include <QStringList>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "shardscope/viewer/layout_text.h"

namespace shardscope::viewer {
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

constexpr int kMaxLabelChars = 48;  // drawn names; the tooltip has the whole name

char* C(const std::string& s) { return const_cast<char*>(s.c_str()); }
void Set(void* object, const char* name, const std::string& value) {
  agsafeset(object, const_cast<char*>(name), C(value), const_cast<char*>(""));
}

// A node of the drawn graph: one operator, a collapsed scope, a source tensor or the
// optimizer.
struct DrawnNode {
  std::string key;
  QString label;
  QString tooltip;
  QString role;
  int64_t id = -1;
  QColor fill;
  std::string cluster;  // "" = top level
  bool ellipse = false;
  Agnode_t* gv = nullptr;
};

struct DrawnEdge {
  std::string src, dst;
  int64_t tensor = -1;
  std::vector<int64_t> redistributions;
  int64_t bytes = 0;
  bool send_recv = false;
  QString label;
  Agedge_t* gv = nullptr;
};

// The cluster path of an operator: its scope, at most two levels deep.
std::vector<std::string> ScopePath(const std::string& scope) {
  std::vector<std::string> path;
  std::string current;
  size_t start = 0;
  while (start <= scope.size() && path.size() < 2 && !scope.empty()) {
    const size_t dot = scope.find('.', start);
    const std::string part = scope.substr(start, dot == std::string::npos ? dot : dot - start);
    current = current.empty() ? part : current + "." + part;
    path.push_back(current);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return path;
}

int64_t OperatorMemory(const RunData& run, const store::OperatorRecord& op,
                       const std::map<int64_t, std::vector<const store::TensorRecord*>>& outputs) {
  for (const auto& c : op.candidates) {
    if (c.strategy == op.strategy && c.memory_bytes > 0) return c.memory_bytes;
  }
  int64_t bytes = 0;
  auto it = outputs.find(op.id);
  if (it == outputs.end()) return 0;
  for (const store::TensorRecord* t : it->second) {
    int64_t global = 4;
    for (int64_t d : t->shape) global *= d;
    int64_t blocks = 1;
    if (const store::MeshRecord* m = run.Mesh(t->mesh_id)) {
      auto mesh = MeshFromRecord(*m);
      if (mesh.ok()) {
        auto layout = ParseStoredLayout(t->layout, *mesh, t->shape);
        if (layout.ok()) blocks = layout->NumBlocks();
      }
    }
    bytes += global / std::max<int64_t>(blocks, 1);
  }
  return bytes;
}

// A name from the run file as a node or cluster label: drawable, at most kMaxLabelChars.
QString Label(const std::string& text) {
  return DrawableText(QString::fromStdString(text), kMaxLabelChars);
}

// A label handed to Graphviz (which only sizes it) as PaintItem will draw it, with its
// backslashes doubled, since Graphviz expands \N, \G, \l ... in labels.
std::string DotLabel(const QString& text) {
  return DrawableText(text).replace('\\', "\\\\").toStdString();
}

QString ShortName(const store::OperatorRecord& op, const std::string& cluster) {
  if (!cluster.empty() && op.name.rfind(cluster + ".", 0) == 0) {
    return Label(op.name.substr(cluster.size() + 1));
  }
  return Label(op.name);
}

int64_t WorkerOf(const RunData& run, int64_t op_id) {
  const store::OperatorRecord* op = run.Operator(op_id);
  return op ? op->worker : store::kNone;
}

double TextWidth(const QString& label) {
  double widest = 0;
  for (const QString& line : label.split('\n')) widest = std::max<double>(widest, line.size());
  return widest * 6.2 + 18;
}

}  // namespace

std::string DescribeCollectives(const store::RedistributionRecord& r) {
  if (r.steps.empty()) return "no communication";
  std::string text;
  for (const auto& s : r.steps) {
    if (!text.empty()) text += " + ";
    text += s.kind;
    if (!s.axis_names.empty()) {
      text += "(";
      for (size_t i = 0; i < s.axis_names.size(); ++i) text += (i ? "," : "") + s.axis_names[i];
      text += ")";
    }
  }
  return text;
}

store::Result<Scene> BuildGraphScene(const RunData& run, const GraphOptions& options) {
  Scene scene;
  // Which operators are shown.
  std::vector<const store::OperatorRecord*> shown;
  for (const auto& op : run.operators) {
    if (op.is_backward && !options.show_backward) continue;
    if (!options.filter.empty() && op.name.find(options.filter) == std::string::npos) continue;
    shown.push_back(&op);
  }
  // Cluster of each operator, and collapsing.
  std::map<std::string, int64_t> scope_count;
  std::map<int64_t, std::string> cluster_of;  // op id -> deepest visible cluster
  std::map<int64_t, std::string> collapsed_into;
  for (const auto* op : shown) {
    for (const auto& prefix : ScopePath(op->scope)) ++scope_count[prefix];
  }
  for (const auto* op : shown) {
    if (options.partitioned) {
      cluster_of[op->id] =
          op->worker == store::kNone ? "unplaced" : "worker " + std::to_string(op->worker);
      continue;
    }
    std::string cluster;
    for (const auto& prefix : ScopePath(op->scope)) {
      const bool collapse =
          options.collapsed.count(prefix) > 0 ||
          (scope_count[prefix] > options.collapse_above && options.expanded.count(prefix) == 0);
      if (collapse) {
        collapsed_into[op->id] = prefix;
        break;
      }
      cluster = prefix;
    }
    cluster_of[op->id] = cluster;
  }

  // Colours.
  std::map<std::string, int> strategy_colour;
  std::vector<std::string> strategy_order;
  for (const auto* op : shown) {
    if (strategy_colour.emplace(op->strategy, static_cast<int>(strategy_colour.size())).second) {
      strategy_order.push_back(op->strategy);
    }
  }
  std::map<int64_t, std::vector<const store::TensorRecord*>> outputs;
  for (const auto& t : run.tensors) {
    if (t.producer_op != store::kNone) outputs[t.producer_op].push_back(&t);
  }
  std::map<int64_t, int64_t> memory;
  int64_t max_memory = 1;
  if (options.color_by == ColorBy::kMemory) {
    for (const auto* op : shown) {
      memory[op->id] = OperatorMemory(run, *op, outputs);
      max_memory = std::max(max_memory, memory[op->id]);
    }
  }
  // The partitioned view colours by worker (placed runs have no strategies to tell apart).
  const ColorBy colour_by = options.partitioned && options.color_by == ColorBy::kStrategy
                                ? ColorBy::kWorker
                                : options.color_by;
  auto colour_of = [&](const store::OperatorRecord& op) -> QColor {
    switch (colour_by) {
      case ColorBy::kStrategy:
        return PaletteColor(strategy_colour[op.strategy]).lighter(115);
      case ColorBy::kWorker:
        return op.worker == store::kNone ? QColor(220, 220, 220)
                                         : PaletteColor(static_cast<int>(op.worker)).lighter(115);
      case ColorBy::kMemory: {
        const double f = std::log1p(static_cast<double>(memory[op.id])) /
                         std::log1p(static_cast<double>(max_memory));
        return QColor::fromRgbF(1.0, 1.0 - 0.75 * f, 1.0 - 0.85 * f);
      }
    }
    return Qt::white;
  };

  // Drawn nodes, in a deterministic order (operators by id, then collapsed scopes by name).
  std::vector<DrawnNode> nodes;
  std::map<std::string, size_t> node_index;
  std::map<int64_t, std::string> key_of_op;
  std::map<std::string, int64_t> collapsed_size;
  for (const auto& [id, scope] : collapsed_into) ++collapsed_size[scope];
  for (const auto* op : shown) {
    auto c = collapsed_into.find(op->id);
    if (c != collapsed_into.end()) {
      key_of_op[op->id] = "scope:" + c->second;
      continue;
    }
    DrawnNode n;
    n.key = "op" + std::to_string(op->id);
    n.cluster = cluster_of[op->id];
    n.label = ShortName(*op, options.partitioned ? std::string() : n.cluster) + "\n" +
              Label(op->kind + " " + op->strategy);
    n.tooltip = QString::fromStdString(op->name + "\nstrategy " + op->strategy + " (" +
                                       op->provenance + ")");
    n.role = "operator";
    n.id = op->id;
    n.fill = colour_of(*op);
    key_of_op[op->id] = n.key;
    node_index[n.key] = nodes.size();
    nodes.push_back(n);
  }
  for (const auto& [scope, count] : collapsed_size) {
    DrawnNode n;
    n.key = "scope:" + scope;
    // The parent cluster of a collapsed scope: its prefix one level up, if shown as cluster.
    const auto path = ScopePath(scope);
    n.cluster = path.size() >= 2 ? path[path.size() - 2] : "";
    n.label = Label(scope) + "\n" + QString::number(count) + " operators";
    n.tooltip = QString::fromStdString("scope " + scope + " (collapsed; expand to see it)");
    n.role = "cluster";
    n.fill = QColor(225, 225, 235);
    node_index[n.key] = nodes.size();
    nodes.push_back(n);
  }

  // Redistributions by (tensor, consumer).
  std::map<std::pair<int64_t, int64_t>, std::vector<const store::RedistributionRecord*>> redist_at;
  for (const auto& r : run.redistributions) redist_at[{r.tensor_id, r.consumer_op}].push_back(&r);

  std::vector<DrawnEdge> edges;
  std::map<std::pair<std::string, std::string>, size_t> edge_index;
  auto add_edge = [&](const std::string& src, const std::string& dst, int64_t tensor,
                      const std::vector<const store::RedistributionRecord*>& redists) {
    if (src == dst) return;
    auto [it, fresh] = edge_index.emplace(std::make_pair(src, dst), edges.size());
    if (fresh) {
      DrawnEdge e;
      e.src = src;
      e.dst = dst;
      e.tensor = tensor;
      edges.push_back(e);
    }
    DrawnEdge& e = edges[it->second];
    for (const auto* r : redists) {
      if (r->steps.empty()) continue;
      e.redistributions.push_back(r->id);
      e.bytes += r->bytes;
    }
  };
  std::set<std::pair<int64_t, int64_t>> sent_to;  // (tensor, destination worker)
  for (const auto& sr : run.send_recvs) sent_to.insert({sr.tensor_id, sr.dst_rank});
  for (const auto& e : run.edges) {
    auto dst = key_of_op.find(e.dst_op);
    if (dst == key_of_op.end()) continue;
    auto rit = redist_at.find({e.tensor_id, e.dst_op});
    const auto redists =
        rit == redist_at.end() ? std::vector<const store::RedistributionRecord*>{} : rit->second;
    if (e.src_op == store::kNone) {
      if (dst->second.rfind("op", 0) != 0) continue;  // into a collapsed scope: hidden
      const store::TensorRecord* t = run.Tensor(e.tensor_id);
      const std::string key = "t" + std::to_string(e.tensor_id);
      if (!node_index.count(key)) {
        DrawnNode n;
        n.key = key;
        n.label = t ? Label(t->name) : QString::number(e.tensor_id);
        n.tooltip = t ? QString::fromStdString(t->kind + " " + t->name + " " + t->layout) : "";
        n.role = "tensor";
        n.id = e.tensor_id;
        n.fill = QColor(250, 250, 240);
        n.ellipse = true;
        node_index[key] = nodes.size();
        nodes.push_back(n);
      }
      add_edge(key, dst->second, e.tensor_id, redists);
      continue;
    }
    auto src = key_of_op.find(e.src_op);
    if (src == key_of_op.end()) continue;
    // Across workers the send/receive edge stands for the data edge: draw it once.
    if (options.partitioned && sent_to.count({e.tensor_id, WorkerOf(run, e.dst_op)}) &&
        WorkerOf(run, e.src_op) != WorkerOf(run, e.dst_op)) {
      continue;
    }
    add_edge(src->second, dst->second, e.tensor_id, redists);
  }
  // Gradient reductions and other redistributions without a consumer.
  for (const auto& r : run.redistributions) {
    if (r.consumer_op != store::kNone || r.steps.empty()) continue;
    const store::TensorRecord* t = run.Tensor(r.tensor_id);
    if (!t || !key_of_op.count(t->producer_op)) continue;
    if (!node_index.count("optimizer")) {
      DrawnNode n;
      n.key = "optimizer";
      n.label = "optimizer\n(parameter update)";
      n.role = "label";
      n.fill = QColor(245, 245, 245);
      n.ellipse = true;
      node_index[n.key] = nodes.size();
      nodes.push_back(n);
    }
    add_edge(key_of_op[t->producer_op], "optimizer", r.tensor_id, {&r});
  }
  if (options.partitioned) {
    for (const auto& sr : run.send_recvs) {
      auto src = key_of_op.find(sr.src_op);
      auto dst = key_of_op.find(sr.dst_op);
      if (src == key_of_op.end() || dst == key_of_op.end()) continue;
      DrawnEdge e;
      e.src = src->second;
      e.dst = dst->second;
      e.tensor = sr.tensor_id;
      e.bytes = sr.bytes;
      e.send_recv = true;
      e.label = QString("send r%1→r%2\n%3")
                    .arg(sr.src_rank)
                    .arg(sr.dst_rank)
                    .arg(FormatBytes(static_cast<double>(sr.bytes)));
      edges.push_back(e);
    }
  }
  for (DrawnEdge& e : edges) {
    if (e.send_recv || e.redistributions.empty()) continue;
    if (e.redistributions.size() == 1) {
      const auto* r = run.Redistribution(e.redistributions[0]);
      e.label = QString::fromStdString(DescribeCollectives(*r)) + "\n" +
                FormatBytes(static_cast<double>(e.bytes));
    } else {
      e.label = QString("%1 redistributions\n%2")
                    .arg(e.redistributions.size())
                    .arg(FormatBytes(static_cast<double>(e.bytes)));
    }
  }

  // Lay out with dot.
  std::lock_guard<std::mutex> lock(GraphvizMutex());
  GVC_t* gvc = GraphvizContext();
  Agraph_t* g = agopen(C("run"), Agdirected, nullptr);
  Set(g, "rankdir", "TB");
  Set(g, "nodesep", "0.25");
  Set(g, "ranksep", "0.35");
  Set(g, "fontsize", "10");
  std::map<std::string, Agraph_t*> clusters;
  std::vector<std::string> cluster_names;
  std::function<Agraph_t*(const std::string&)> cluster_graph =
      [&](const std::string& name) -> Agraph_t* {
    if (name.empty()) return g;
    auto it = clusters.find(name);
    if (it != clusters.end()) return it->second;
    Agraph_t* parent = g;
    if (!options.partitioned) {
      const auto path = ScopePath(name);
      if (path.size() >= 2) parent = cluster_graph(path[path.size() - 2]);
    }
    Agraph_t* sub = agsubg(parent, C("cluster_" + name), 1);
    Set(sub, "label", DotLabel(Label(name)));
    Set(sub, "fontsize", "10");
    clusters[name] = sub;
    cluster_names.push_back(name);
    return sub;
  };
  for (DrawnNode& n : nodes) {
    Agraph_t* parent = cluster_graph(n.cluster);
    n.gv = agnode(parent, C(n.key), 1);
    Set(n.gv, "shape", n.ellipse ? "ellipse" : "box");
    Set(n.gv, "fixedsize", "true");
    const int lines = static_cast<int>(n.label.count('\n')) + 1;
    Set(n.gv, "width", std::to_string(TextWidth(n.label) / 72.0));
    Set(n.gv, "height", std::to_string((lines * 13 + 10) / 72.0));
    Set(n.gv, "label", "");
  }
  for (DrawnEdge& e : edges) {
    e.gv = agedge(g, nodes[node_index[e.src]].gv, nodes[node_index[e.dst]].gv, nullptr, 1);
    if (!e.label.isEmpty()) {
      Set(e.gv, "label", DotLabel(e.label));
      Set(e.gv, "fontsize", "8");
    }
    // A send/receive edge stands for the data edge it cuts (that one is not drawn), so it
    // ranks the layout like any data edge.
  }
  // Worker clusters interleave along the data flow (seed 001 goes 3→0→4→0→1→0→2→0): with
  // the default ranking Graphviz 2.43's spline router fails on them and corrupts its heap
  // ("triangulation failed", then a double free); ranking the whole graph at once avoids it.
  if (options.partitioned) Set(g, "newrank", "true");
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    return store::Status(store::StatusCode::kInternal,
                         run.run.name + ": Graphviz dot could not lay out the graph");
  }
  const boxf bb = GD_bb(g);
  auto flip = [&](pointf p) { return QPointF(p.x, bb.UR.y - p.y); };

  // Legend on top; the graph below it.
  double legend_h = 0;
  auto add_legend = [&](const QColor& colour, const QString& text) {
    SceneItem swatch = BoxItem(QRectF(0, legend_h + 2, 12, 12), colour, "");
    swatch.role = "legend";
    scene.items.push_back(swatch);
    scene.items.push_back(TextItem(QRectF(18, legend_h, 600, 16), text, 9));
    legend_h += 16;
  };
  scene.items.push_back(TextItem(
      QRectF(0, 0, 700, 16),
      QString::fromStdString(run.run.name) +
          (options.partitioned
               ? " — partitioned view (one cluster per worker)"
               : " — colour by " + QString(options.color_by == ColorBy::kStrategy ? "strategy"
                                           : options.color_by == ColorBy::kWorker
                                               ? "worker"
                                               : "memory (darker: more bytes per device)")),
      10, true));
  legend_h = 18;
  if (colour_by == ColorBy::kWorker) {  // one row of swatches
    std::set<int64_t> workers;
    for (const auto* op : shown) workers.insert(op->worker);
    double x = 0;
    for (int64_t w : workers) {
      SceneItem swatch = BoxItem(QRectF(x, legend_h + 2, 12, 12),
                                 w == store::kNone ? QColor(220, 220, 220)
                                                   : PaletteColor(static_cast<int>(w)).lighter(115),
                                 "");
      swatch.role = "legend";
      scene.items.push_back(swatch);
      scene.items.push_back(
          TextItem(QRectF(x + 16, legend_h, 80, 16),
                   w == store::kNone ? "not placed" : "worker " + QString::number(w), 9));
      x += 90;
    }
    legend_h += 16;
  }
  if (options.color_by == ColorBy::kStrategy && !options.partitioned) {
    const size_t limit = 12;
    for (size_t i = 0; i < strategy_order.size() && i < limit; ++i) {
      add_legend(PaletteColor(static_cast<int>(i)).lighter(115),
                 "strategy " + QString::fromStdString(strategy_order[i]));
    }
    if (strategy_order.size() > limit) {
      scene.items.push_back(TextItem(
          QRectF(18, legend_h, 600, 16),
          QString("... %1 more strategies (colours repeat)").arg(strategy_order.size() - limit),
          9));
      legend_h += 16;
    }
  }
  auto add_line_legend = [&](const QColor& colour, bool dashed, const QString& text) {
    SceneItem line;
    line.shape = SceneItem::Shape::kPolyline;
    line.points << QPointF(0, legend_h + 8) << QPointF(12, legend_h + 8);
    line.stroke = colour;
    line.stroke_width = 2.5;
    line.dashed = dashed;
    line.role = "legend";
    scene.items.push_back(line);
    scene.items.push_back(TextItem(QRectF(18, legend_h, 600, 16), text, 9));
    legend_h += 16;
  };
  if (!run.redistributions.empty()) {  // no legend for edges the run does not have
    add_line_legend(QColor(230, 100, 0), false,
                    "redistribution (collectives, bytes received per rank, max)");
  }
  if (options.partitioned && !run.send_recvs.empty()) {
    add_line_legend(QColor(30, 90, 200), true,
                    "send/receive between workers rA→rB (bytes per training step)");
  }
  if (options.partitioned && run.send_recvs.empty()) {
    scene.items.push_back(
        TextItem(QRectF(0, legend_h, 700, 16),
                 "send/receive edges: none recorded (no place() workers in this run)", 9));
    legend_h += 16;
  }
  const double top = legend_h + 10;
  auto shift = [&](QPointF p) { return p + QPointF(0, top); };

  // Clusters first (behind), outer before inner.
  for (const std::string& name : cluster_names) {
    Agraph_t* sub = clusters[name];
    const boxf cb = GD_bb(sub);
    SceneItem box;
    box.shape = SceneItem::Shape::kRoundedRect;
    box.rect = QRectF(shift(flip({cb.LL.x, cb.UR.y})), shift(flip({cb.UR.x, cb.LL.y})));
    const int depth = static_cast<int>(std::count(name.begin(), name.end(), '.'));
    box.fill = options.partitioned ? QColor(248, 248, 255)
                                   : QColor(245 - 10 * depth, 247 - 10 * depth, 250);
    box.stroke = QColor(150, 150, 170);
    box.role = "cluster";
    box.key = QString::fromStdString(name);
    box.tooltip = "scope " + box.key;
    scene.items.push_back(box);
    SceneItem label =
        TextItem(QRectF(box.rect.left() + 4, box.rect.top() + 1, box.rect.width() - 8, 14),
                 Label(name), 8, true, 0x0084);
    scene.items.push_back(label);
  }
  for (const DrawnEdge& e : edges) {
    const splines* spl = ED_spl(e.gv);
    if (!spl || spl->size == 0) continue;
    const bezier& bz = spl->list[0];
    SceneItem item;
    item.shape = SceneItem::Shape::kBezier;
    for (int i = 0; i < bz.size; ++i) item.points << shift(flip(bz.list[i]));
    if (bz.eflag)
      item.points << QPointF(item.points.back()) << shift(flip(bz.ep)) << shift(flip(bz.ep));
    item.arrow = true;
    item.id = e.tensor;
    item.role = "edge";
    item.stroke = QColor(90, 90, 90);
    if (!e.redistributions.empty()) {
      item.role = "redistribution";
      item.id = e.redistributions.front();
      item.stroke = QColor(230, 100, 0);
      item.stroke_width = 2.5;
    }
    if (e.send_recv) {
      item.role = "send_recv";
      item.stroke = QColor(30, 90, 200);
      item.stroke_width = 2;
      item.dashed = true;
    }
    const store::TensorRecord* t = run.Tensor(e.tensor);
    item.tooltip = t ? QString::fromStdString(t->name + " " + t->layout) : "";
    if (!e.label.isEmpty()) {
      item.text = e.label;
      item.font_size = 7.5;
      item.text_color = e.send_recv ? QColor(30, 90, 200) : QColor(170, 60, 0);
      const textlabel_t* lbl = ED_label(e.gv);
      const QPointF at = lbl ? shift(flip(lbl->pos)) : item.points[item.points.size() / 2];
      const double w = TextWidth(e.label) * 0.9;
      item.rect = QRectF(at.x() - w / 2, at.y() - 12, w, 24);
      item.tooltip += "\n" + e.label;
    }
    scene.items.push_back(item);
  }
  for (const DrawnNode& n : nodes) {
    const QPointF c = shift(flip(ND_coord(n.gv)));
    const double w = ND_width(n.gv) * 72, h = ND_height(n.gv) * 72;
    SceneItem item =
        BoxItem(QRectF(c.x() - w / 2, c.y() - h / 2, w, h), n.fill, n.label, n.role, n.id);
    item.shape = n.ellipse ? SceneItem::Shape::kEllipse : SceneItem::Shape::kRoundedRect;
    item.key = QString::fromStdString(n.role == "cluster" ? n.key.substr(6) : n.key);
    item.tooltip = n.tooltip;
    item.font_size = 8;
    if (n.role == "cluster") item.stroke_width = 2;
    scene.items.push_back(item);
  }
  // Bounds: everything drawn (edge labels may stick out of Graphviz's box).
  QRectF extent(0, 0, std::max(bb.UR.x, 500.0), bb.UR.y + top);
  for (const SceneItem& item : scene.items) {
    if (item.shape != SceneItem::Shape::kText) extent |= item.rect;
    if (!item.points.isEmpty()) extent |= item.points.boundingRect();
  }
  scene.bounds = extent.adjusted(-10, -10, 10, 10);
  gvFreeLayout(gvc, g);
  agclose(g);
  return scene;
}

}  // namespace shardscope::viewer
