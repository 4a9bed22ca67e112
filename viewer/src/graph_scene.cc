#include "shardscope/viewer/graph_scene.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "graph_fold.h"
#include "graph_layout.h"
#include "graph_splice.h"
#include "shardscope/viewer/layout_text.h"

namespace shardscope::viewer {
namespace {

using graph_detail::DrawnEdge;
using graph_detail::DrawnGraph;
using graph_detail::DrawnNode;
using graph_detail::Grouping;

constexpr int kMaxLabelChars = 48;  // drawn names; the tooltip has the whole name
const QColor kRedistributionColour(230, 100, 0);
const QColor kSendRecvColour(30, 90, 200);

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

std::vector<const store::OperatorRecord*> ShownOperators(const RunData& run,
                                                         const GraphOptions& options) {
  std::vector<const store::OperatorRecord*> shown;
  for (const auto& op : run.operators) {
    if (op.is_backward && !options.show_backward) continue;
    if (!options.filter.empty() && op.name.find(options.filter) == std::string::npos) continue;
    shown.push_back(&op);
  }
  return shown;
}

// Operator fill colours: by strategy (same strategy, same colour), worker or memory.
struct Colouring {
  ColorBy by = ColorBy::kStrategy;
  std::map<std::string, int> strategy_colour;
  std::vector<std::string> strategy_order;
  std::map<int64_t, int64_t> memory;
  int64_t max_memory = 1;

  QColor Of(const store::OperatorRecord& op) const {
    switch (by) {
      case ColorBy::kStrategy:
        return PaletteColor(strategy_colour.at(op.strategy)).lighter(115);
      case ColorBy::kWorker:
        return op.worker == store::kNone ? QColor(220, 220, 220)
                                         : PaletteColor(static_cast<int>(op.worker)).lighter(115);
      case ColorBy::kMemory: {
        const double f = std::log1p(static_cast<double>(memory.at(op.id))) /
                         std::log1p(static_cast<double>(max_memory));
        return QColor::fromRgbF(1.0, 1.0 - 0.75 * f, 1.0 - 0.85 * f);
      }
    }
    return Qt::white;
  }
};

Colouring MakeColouring(const RunData& run, const std::vector<const store::OperatorRecord*>& shown,
                        const GraphOptions& options) {
  Colouring c;
  // The partitioned view colours by worker (placed runs have no strategies to tell apart).
  c.by = options.partitioned && options.color_by == ColorBy::kStrategy ? ColorBy::kWorker
                                                                       : options.color_by;
  for (const auto* op : shown) {
    if (c.strategy_colour.emplace(op->strategy, static_cast<int>(c.strategy_colour.size()))
            .second) {
      c.strategy_order.push_back(op->strategy);
    }
  }
  if (c.by == ColorBy::kMemory) {
    std::map<int64_t, std::vector<const store::TensorRecord*>> outputs;
    for (const auto& t : run.tensors) {
      if (t.producer_op != store::kNone) outputs[t.producer_op].push_back(&t);
    }
    for (const auto* op : shown) {
      c.memory[op->id] = OperatorMemory(run, *op, outputs);
      c.max_memory = std::max(c.max_memory, c.memory[op->id]);
    }
  }
  return c;
}

// Groups the shown operators, collapsing ever smaller scopes while the nodes exceed the cap.
Grouping GroupWithinCap(const RunData& run, const std::vector<const store::OperatorRecord*>& shown,
                        const GraphOptions& options) {
  const bool fold = static_cast<int64_t>(shown.size()) > options.fold_above;
  int threshold = options.collapse_above;
  Grouping g = graph_detail::GroupOperators(run, shown, options, threshold, fold);
  while (static_cast<int64_t>(g.cluster_of.size() + g.groups.size()) > options.max_nodes &&
         threshold > 1 && !options.partitioned) {
    threshold = std::max(1, threshold / 2);
    g = graph_detail::GroupOperators(run, shown, options, threshold, fold);
  }
  return g;
}

// Operators, groups and the "N more" node; returns each operator's node key. Folds are
// always drawn; operators and collapsed scopes fill the remaining room in operator order.
std::map<int64_t, std::string> AddNodes(DrawnGraph& graph,
                                        const std::vector<const store::OperatorRecord*>& shown,
                                        const Grouping& grouping, const Colouring& colouring,
                                        const GraphOptions& options) {
  std::map<int64_t, std::string> key_of_op;
  std::map<std::string, const graph_detail::GroupNode*> groups;
  for (const auto& group : grouping.groups) groups[group.key] = &group;
  auto add_group = [&](const graph_detail::GroupNode& group) {
    const bool fold = group.key.rfind("fold:", 0) == 0;
    graph.Add({.key = group.key,
               .label = DrawableText(group.label, 2 * kMaxLabelChars),
               .tooltip = group.tooltip,
               .role = "cluster",
               .item_key = group.item_key,
               .fill = fold && colouring.by == ColorBy::kWorker && group.worker >= 0
                           ? PaletteColor(static_cast<int>(group.worker)).lighter(140)
                       : fold ? QColor(215, 228, 245)
                              : QColor(225, 225, 235),
               .cluster = group.cluster});
  };
  int64_t room = options.max_nodes;
  for (const auto& group : grouping.groups) {
    if (group.key.rfind("fold:", 0) == 0) add_group(group), --room;
  }
  int64_t left_out = 0;
  for (const auto* op : shown) {
    auto g = grouping.grouped_in.find(op->id);
    const bool grouped = g != grouping.grouped_in.end();
    if (grouped && graph.node_index.count(g->second)) {
      key_of_op[op->id] = g->second;
      continue;
    }
    if (room <= 0) {  // over the cap: stands in the "more" node
      key_of_op[op->id] = "more";
      ++left_out;
      continue;
    }
    --room;
    if (grouped) {
      add_group(*groups.at(g->second));
      key_of_op[op->id] = g->second;
      continue;
    }
    DrawnNode n;
    n.key = "op" + std::to_string(op->id);
    n.cluster = grouping.cluster_of.at(op->id);
    n.label = ShortName(*op, options.partitioned ? std::string() : n.cluster) + "\n" +
              Label(op->kind + " " + op->strategy);
    n.tooltip = QString::fromStdString(op->name + "\nstrategy " + op->strategy + " (" +
                                       op->provenance + ")");
    n.role = "operator";
    n.id = op->id;
    n.fill = colouring.Of(*op);
    key_of_op[op->id] = n.key;
    graph.Add(std::move(n));
  }
  if (left_out > 0) {
    DrawnNode n;
    n.key = "more";
    n.label = QString(
                  "\u2026 %1 more operators not drawn\n(a view draws at most %2 nodes:"
                  " filter or open a scope)")
                  .arg(left_out)
                  .arg(options.max_nodes);
    n.tooltip = n.label;
    n.role = "more";
    n.id = left_out;
    n.fill = QColor(250, 235, 200);
    graph.Add(std::move(n));
  }
  for (const auto& [name, parent] : grouping.cluster_parent) {
    graph.clusters[name] = {parent, Label(grouping.cluster_label.at(name).toStdString()), {}};
  }
  return key_of_op;
}

void AddEdges(DrawnGraph& graph, const RunData& run,
              const std::map<int64_t, std::string>& key_of_op, const GraphOptions& options) {
  std::map<std::pair<int64_t, int64_t>, std::vector<const store::RedistributionRecord*>> redist_at;
  for (const auto& r : run.redistributions) redist_at[{r.tensor_id, r.consumer_op}].push_back(&r);
  std::map<std::pair<std::string, std::string>, size_t> edge_index;
  auto add_edge = [&](const std::string& src, const std::string& dst, int64_t tensor,
                      const std::vector<const store::RedistributionRecord*>& redists) {
    if (src == dst) return;
    auto [it, fresh] = edge_index.emplace(std::make_pair(src, dst), graph.edges.size());
    if (fresh) graph.edges.push_back({.src = src, .dst = dst, .tensor = tensor});
    DrawnEdge& e = graph.edges[it->second];
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
      const store::TensorRecord* t = run.Tensor(e.tensor_id);
      // Parameters into a group are hidden (hundreds of them); the network input is not.
      const bool input = t && (t->kind == "input" || t->kind == "label");
      if (dst->second.rfind("op", 0) != 0 && !input) continue;
      const std::string key = "t" + std::to_string(e.tensor_id);
      if (!graph.node_index.count(key)) {
        graph.Add(
            {.key = key,
             .label = t ? Label(t->name) : QString::number(e.tensor_id),
             .tooltip = t ? QString::fromStdString(t->kind + " " + t->name + " " + t->layout) : "",
             .role = "tensor",
             .id = e.tensor_id,
             .fill = QColor(250, 250, 240),
             .ellipse = true});
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
    if (!t) continue;
    auto src = key_of_op.find(t->producer_op);
    if (src == key_of_op.end()) continue;
    if (!graph.node_index.count("optimizer")) {
      graph.Add({.key = "optimizer",
                 .label = "optimizer\n(parameter update)",
                 .role = "label",
                 .fill = QColor(245, 245, 245),
                 .ellipse = true});
    }
    add_edge(src->second, "optimizer", r.tensor_id, {&r});
  }
  if (options.partitioned) {
    for (const auto& sr : run.send_recvs) {
      auto src = key_of_op.find(sr.src_op);
      auto dst = key_of_op.find(sr.dst_op);
      if (src == key_of_op.end() || dst == key_of_op.end()) continue;
      graph.edges.push_back({.src = src->second,
                             .dst = dst->second,
                             .tensor = sr.tensor_id,
                             .bytes = sr.bytes,
                             .send_recv = true,
                             .label = QString("send r%1\u2192r%2\n%3")
                                          .arg(sr.src_rank)
                                          .arg(sr.dst_rank)
                                          .arg(FormatBytes(static_cast<double>(sr.bytes)))});
    }
  }
  for (DrawnEdge& e : graph.edges) {
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
}

// The title and legend rows; returns their height.
double AddLegend(Scene& scene, const RunData& run, const GraphOptions& options,
                 const Colouring& colouring, const std::vector<const store::OperatorRecord*>& shown,
                 const Grouping& grouping) {
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
  if (colouring.by == ColorBy::kWorker) {  // one row of swatches
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
    const auto& order = colouring.strategy_order;
    for (size_t i = 0; i < order.size() && i < limit; ++i) {
      add_legend(PaletteColor(static_cast<int>(i)).lighter(115),
                 "strategy " + QString::fromStdString(order[i]));
    }
    if (order.size() > limit) {
      scene.items.push_back(TextItem(
          QRectF(18, legend_h, 600, 16),
          QString("... %1 more strategies (colours repeat)").arg(order.size() - limit), 9));
      legend_h += 16;
    }
  }
  if (grouping.folded_units > 0) {
    add_legend(QColor(215, 228, 245),
               QString("repeated units folded (%1 units); open one to draw it in full")
                   .arg(grouping.folded_units));
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
    add_line_legend(kRedistributionColour, false,
                    "redistribution (collectives, bytes received per rank, max)");
  }
  if (options.partitioned && !run.send_recvs.empty()) {
    add_line_legend(kSendRecvColour, true,
                    "send/receive between workers rA→rB (bytes per training step)");
  }
  if (options.partitioned && run.send_recvs.empty()) {
    scene.items.push_back(
        TextItem(QRectF(0, legend_h, 700, 16),
                 "send/receive edges: none recorded (no place() workers in this run)", 9));
    legend_h += 16;
  }
  return legend_h;
}

// The laid-out graph as scene items below the legend: clusters, edges, then nodes.
void EmitGraph(Scene& scene, const DrawnGraph& graph, const RunData& run, double top,
               bool partitioned) {
  const QPointF shift(0, top);
  for (const std::string& name : graph.cluster_order) {
    const auto& cluster = graph.clusters.at(name);
    SceneItem box;
    box.shape = SceneItem::Shape::kRoundedRect;
    box.rect = cluster.rect.translated(shift);
    const int depth = static_cast<int>(std::count(name.begin(), name.end(), '.'));
    box.fill =
        partitioned ? QColor(248, 248, 255) : QColor(245 - 10 * depth, 247 - 10 * depth, 250);
    box.stroke = QColor(150, 150, 170);
    box.role = "cluster";
    box.key = QString::fromStdString(name);
    box.tooltip = "scope " + cluster.label;
    scene.items.push_back(box);
    scene.items.push_back(
        TextItem(QRectF(box.rect.left() + 4, box.rect.top() + 1, box.rect.width() - 8, 14),
                 cluster.label, 8, true, 0x0084));
  }
  for (const DrawnEdge& e : graph.edges) {
    if (e.points.isEmpty()) continue;
    SceneItem item;
    item.shape = SceneItem::Shape::kBezier;
    item.points = e.points.translated(shift);
    item.arrow = true;
    item.id = e.tensor;
    item.role = "edge";
    item.stroke = QColor(90, 90, 90);
    if (!e.redistributions.empty()) {
      item.role = "redistribution";
      item.id = e.redistributions.front();
      item.stroke = kRedistributionColour;
      item.stroke_width = 2.5;
    }
    if (e.send_recv) {
      item.role = "send_recv";
      item.stroke = kSendRecvColour;
      item.stroke_width = 2;
      item.dashed = true;
    }
    const store::TensorRecord* t = run.Tensor(e.tensor);
    item.tooltip = t ? QString::fromStdString(t->name + " " + t->layout) : "";
    if (!e.label.isEmpty()) {
      item.text = e.label;
      item.font_size = 7.5;
      item.text_color = e.send_recv ? kSendRecvColour : QColor(170, 60, 0);
      const QPointF at = e.label_at + shift;
      const double w = graph_detail::TextWidth(e.label) * 0.9;
      item.rect = QRectF(at.x() - w / 2, at.y() - 12, w, 24);
      item.tooltip += "\n" + e.label;
    }
    scene.items.push_back(item);
  }
  for (const DrawnNode& n : graph.nodes) {
    SceneItem item = BoxItem(n.rect.translated(shift), n.fill, n.label, n.role, n.id);
    item.shape = n.ellipse ? SceneItem::Shape::kEllipse : SceneItem::Shape::kRoundedRect;
    item.key = QString::fromStdString(n.role == "cluster" ? n.item_key : n.key);
    item.tooltip = n.tooltip;
    item.font_size = 8;
    if (n.role == "cluster") item.stroke_width = 2;
    if (n.role == "more") item.dashed = true;
    scene.items.push_back(item);
  }
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

namespace {

// A graph view before its layout: what is drawn and how.
struct Drawn {
  std::vector<const store::OperatorRecord*> shown;
  Grouping grouping;
  Colouring colouring;
  DrawnGraph graph;
  std::map<int64_t, std::string> key_of_op;
};

Drawn Draw(const RunData& run, const GraphOptions& options) {
  Drawn d;
  d.shown = ShownOperators(run, options);
  d.grouping = GroupWithinCap(run, d.shown, options);
  d.colouring = MakeColouring(run, d.shown, options);
  d.key_of_op = AddNodes(d.graph, d.shown, d.grouping, d.colouring, options);
  AddEdges(d.graph, run, d.key_of_op, options);
  return d;
}

Scene SceneOf(const RunData& run, const GraphOptions& options, const Drawn& d) {
  Scene scene;
  const double top = AddLegend(scene, run, options, d.colouring, d.shown, d.grouping) + 10;
  EmitGraph(scene, d.graph, run, top, options.partitioned);
  // Bounds: everything drawn (edge labels may stick out of Graphviz's box).
  QRectF extent(0, 0, std::max(d.graph.bounds.width(), 500.0), d.graph.bounds.height() + top);
  for (const SceneItem& item : scene.items) {
    if (item.shape != SceneItem::Shape::kText) extent |= item.rect;
    if (!item.points.isEmpty()) extent |= item.points.boundingRect();
  }
  scene.bounds = extent.adjusted(-10, -10, 10, 10);
  return scene;
}

}  // namespace

GraphOptions BaseGraphOptions(const RunData& run, const GraphOptions& options) {
  GraphOptions base = options;
  if (options.expanded.empty() && options.collapsed.empty()) return base;
  std::set<std::string> units;
  for (const auto& op : run.operators) units.insert(graph_detail::UnitOf(op));
  for (auto* names : {&base.expanded, &base.collapsed}) {
    for (auto it = names->begin(); it != names->end();) {
      it = units.count(*it) ? names->erase(it) : std::next(it);
    }
  }
  return base;
}

store::Result<std::shared_ptr<const GraphLayout>> LayOutGraph(const RunData& run,
                                                              const GraphOptions& options) {
  auto layout = std::make_shared<GraphLayout>();
  layout->options = BaseGraphOptions(run, options);
  Drawn d = Draw(run, layout->options);
  if (auto laid = graph_detail::LayOut(d.graph, run.run.name); !laid.ok()) return laid;
  layout->graph = std::move(d.graph);
  layout->key_of_op = std::move(d.key_of_op);
  return std::shared_ptr<const GraphLayout>(std::move(layout));
}

const GraphOptions& LaidOutOptions(const GraphLayout& layout) { return layout.options; }

store::Result<Scene> GraphSceneOn(const RunData& run, const GraphLayout& base,
                                  const GraphOptions& options, bool may_lay_out,
                                  GraphGeometry* geometry) {
  Drawn d = Draw(run, options);
  switch (graph_detail::SpliceLayout(base.graph, base.key_of_op, d.graph, d.key_of_op, may_lay_out,
                                     run.run.name)) {
    case graph_detail::Splice::kDone:
      *geometry = GraphGeometry::kSpliced;
      return SceneOf(run, options, d);
    case graph_detail::Splice::kNeedsLayout:
      break;
    case graph_detail::Splice::kCannot:
      if (!may_lay_out) break;
      if (auto laid = graph_detail::LayOut(d.graph, run.run.name); !laid.ok()) return laid;
      *geometry = GraphGeometry::kLaidOut;
      return SceneOf(run, options, d);
  }
  *geometry = GraphGeometry::kNotYet;
  return Scene{};
}

void PrepareOpening(const RunData& run, const GraphLayout& base) {
  std::set<std::string> units;
  for (const DrawnNode& n : base.graph.nodes) {
    if (n.key.rfind("fold:", 0) != 0 || !units.insert(n.item_key).second) continue;
    GraphOptions open = base.options;
    open.expanded.insert(n.item_key);
    Drawn d = Draw(run, open);
    (void)graph_detail::SpliceLayout(base.graph, base.key_of_op, d.graph, d.key_of_op,
                                     /*may_lay_out=*/true, run.run.name);
  }
}

store::Result<Scene> BuildGraphScene(const RunData& run, const GraphOptions& options) {
  if (BaseGraphOptions(run, options) == options) return BuildGraphSceneInFull(run, options);
  auto base = LayOutGraph(run, options);
  if (!base.ok()) return base.status();
  GraphGeometry geometry;
  return GraphSceneOn(run, **base, options, /*may_lay_out=*/true, &geometry);
}

store::Result<Scene> BuildGraphSceneInFull(const RunData& run, const GraphOptions& options) {
  Drawn d = Draw(run, options);
  if (auto laid = graph_detail::LayOut(d.graph, run.run.name); !laid.ok()) return laid;
  return SceneOf(run, options, d);
}

}  // namespace shardscope::viewer
