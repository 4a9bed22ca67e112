#include "graph_splice.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <vector>

namespace shardscope::viewer::graph_detail {
namespace {

constexpr double kGap = 25;  // between stacked pieces, as dot's ranksep (0.35 in)
constexpr size_t kMaxCached = 256;

using EdgeKey = std::pair<std::string, std::string>;

struct Route {
  QPolygonF points;
  QPointF label_at;
};

// One laid-out unit shape: geometry by index of its canonical graph.
struct Shape {
  std::vector<QRectF> nodes;
  std::vector<QRectF> clusters;  // by canonical cluster index
  std::vector<std::string> cluster_order;
  std::vector<Route> edges;
  QRectF bounds;
};

std::mutex& CacheMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::shared_ptr<const Shape>>& Cache() {
  static std::map<std::string, std::shared_ptr<const Shape>> cache;
  return cache;
}

// Opening a box moves what lies right of its centre line and below its bottom by the size it
// grew (a monotone map: order is kept, nothing moves onto the opened part); nodes move whole,
// and routes keep their ends on their nodes.
struct SplitMap {
  QRectF box;
  double dx = 0, dy = 0;
  QPointF operator()(QPointF p) const {
    constexpr double kSlack = 2;  // points on the box's edges stay
    return {p.x() > box.right() + kSlack ? p.x() + dx : p.x(),
            p.y() > box.bottom() + kSlack ? p.y() + dy : p.y()};
  }
  QRectF Node(const QRectF& r) const {
    QRectF out = r;
    out.moveCenter((*this)(r.center()));
    return out;
  }
  QPointF Delta(const QRectF& r) const { return (*this)(r.center()) - r.center(); }
  void Move(Route& route, QPointF from, QPointF to) const {
    QPolygonF& p = route.points;
    const qsizetype n = p.size();
    for (qsizetype i = 0; i < n; ++i) {
      p[i] = i < 2 ? p[i] + from : i >= n - 2 ? p[i] + to : (*this)(p[i]);
    }
    route.label_at = (*this)(route.label_at);
  }
};

// A cluster's frame around its members: `members` with the margins `was` had around `had`.
QRectF Frame(const QRectF& was, const QRectF& had, const QRectF& members) {
  if (had.isNull()) return was;
  return members.adjusted(was.left() - had.left(), was.top() - had.top(), was.right() - had.right(),
                          was.bottom() - had.bottom());
}

// A cubic from `a` to `b`, leaving and arriving vertically.
QPolygonF Curve(QPointF a, QPointF b) {
  const double sign = b.y() >= a.y() ? 1 : -1;
  const double k = std::max(20.0, std::abs(b.y() - a.y()) / 3);
  QPolygonF p;
  p << a << a + QPointF(0, sign * k) << b - QPointF(0, sign * k) << b;
  return p;
}

// The graph of one opened unit with canonical names, and the key its shape is cached by.
struct Canonical {
  DrawnGraph graph;
  std::vector<std::string> cluster_names;  // canonical index -> target cluster
  std::vector<size_t> edges;               // canonical edge -> target edge
  std::string key;
};

Canonical MakeCanonical(const DrawnGraph& target, const std::vector<size_t>& nodes,
                        const std::set<std::string>& new_clusters) {
  Canonical c;
  std::map<std::string, size_t> cluster_index;
  std::function<std::string(const std::string&)> canon = [&](const std::string& name) {
    if (!new_clusters.count(name)) return std::string();
    auto it = cluster_index.find(name);
    if (it != cluster_index.end()) return "c" + std::to_string(it->second);
    const std::string parent = canon(target.clusters.at(name).parent);
    const size_t index = c.cluster_names.size();
    cluster_index[name] = index;
    c.cluster_names.push_back(name);
    c.graph.clusters["c" + std::to_string(index)] = {parent, target.clusters.at(name).label, {}};
    c.key += "C" + parent + ";";
    return "c" + std::to_string(index);
  };
  std::map<std::string, size_t> node_index;
  for (size_t i : nodes) {
    const DrawnNode& n = target.nodes[i];
    DrawnNode copy{.key = "n" + std::to_string(node_index.size()),
                   .label = n.label,
                   .cluster = canon(n.cluster),
                   .ellipse = n.ellipse};
    const QSizeF size = NodeSize(n);
    c.key += "N" + std::to_string(size.width()) + "x" + std::to_string(size.height()) +
             (n.ellipse ? "e" : "") + copy.cluster + ";";
    node_index[n.key] = node_index.size();
    c.graph.Add(std::move(copy));
  }
  for (size_t e = 0; e < target.edges.size(); ++e) {
    const DrawnEdge& edge = target.edges[e];
    auto s = node_index.find(edge.src), d = node_index.find(edge.dst);
    if (s == node_index.end() || d == node_index.end()) continue;
    c.graph.edges.push_back({.src = "n" + std::to_string(s->second),
                             .dst = "n" + std::to_string(d->second),
                             .label = edge.label});
    c.edges.push_back(e);
    c.key += "E" + std::to_string(s->second) + ">" + std::to_string(d->second) + ":" +
             edge.label.toStdString() + ";";
  }
  return c;
}

// The cached shape of `c`, laid out now when `may_lay_out`; null when not cached and not
// allowed, or when dot fails.
std::shared_ptr<const Shape> ShapeOf(Canonical& c, bool may_lay_out, const std::string& run_name) {
  {
    std::lock_guard<std::mutex> lock(CacheMutex());
    auto it = Cache().find(c.key);
    if (it != Cache().end()) return it->second;
  }
  if (!may_lay_out || !LayOut(c.graph, run_name).ok()) return nullptr;
  auto shape = std::make_shared<Shape>();
  for (const DrawnNode& n : c.graph.nodes) shape->nodes.push_back(n.rect);
  for (size_t i = 0; i < c.cluster_names.size(); ++i) {
    shape->clusters.push_back(c.graph.clusters.at("c" + std::to_string(i)).rect);
  }
  shape->cluster_order = c.graph.cluster_order;
  for (const DrawnEdge& e : c.graph.edges) shape->edges.push_back({e.points, e.label_at});
  shape->bounds = c.graph.bounds;
  std::lock_guard<std::mutex> lock(CacheMutex());
  if (Cache().size() >= kMaxCached) Cache().clear();
  Cache()[c.key] = shape;
  return shape;
}

// One stacked part of an opened box: a box node, or a unit laid out alone.
struct Piece {
  std::vector<size_t> nodes;  // target node indices, in target order
  Canonical canonical;
  std::shared_ptr<const Shape> shape;  // null for a single box
  QSizeF size;
};

// Union-find over target node indices.
struct Sets {
  std::vector<size_t> parent;
  explicit Sets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t Find(size_t i) { return parent[i] == i ? i : parent[i] = Find(parent[i]); }
  void Join(size_t a, size_t b) { parent[Find(a)] = Find(b); }
};

}  // namespace

Splice SpliceLayout(const DrawnGraph& base, const std::map<int64_t, std::string>& base_key_of_op,
                    DrawnGraph& target, const std::map<int64_t, std::string>& target_key_of_op,
                    bool may_lay_out, const std::string& run_name) {
  // Which base boxes opened: their operators are no longer all drawn by them.
  std::map<std::string, size_t> base_ops, kept_ops;
  std::map<std::string, std::set<std::string>> origin;  // target node -> base nodes of its ops
  if (base_key_of_op.size() != target_key_of_op.size()) return Splice::kCannot;  // other ops
  for (const auto& [op, key] : base_key_of_op) ++base_ops[key];
  for (const auto& [op, key] : target_key_of_op) {
    auto b = base_key_of_op.find(op);
    if (b == base_key_of_op.end()) return Splice::kCannot;
    origin[key].insert(b->second);
    kept_ops[key] += b->second == key;
  }
  std::set<std::string> opened;
  for (const auto& [key, count] : base_ops) {
    if (kept_ops[key] == count && target.node_index.count(key)) continue;
    const DrawnNode& n = base.nodes[base.node_index.at(key)];
    if (n.role != "cluster") return Splice::kCannot;  // only boxes open
    opened.insert(key);
  }
  // Each target node: in the part of an opened box ("region"), or kept from base.
  std::map<std::string, std::string> region;  // target node -> the base box it came from
  for (const DrawnNode& n : target.nodes) {
    auto o = origin.find(n.key);
    if (o == origin.end()) continue;
    bool from_opened = false;
    for (const auto& b : o->second) from_opened = from_opened || opened.count(b);
    if (!from_opened) continue;
    if (o->second.size() != 1) return Splice::kCannot;
    region[n.key] = *o->second.begin();
  }
  for (const DrawnEdge& e : target.edges) {  // new inputs (parameters) go with their reader
    if (!base.node_index.count(e.src) && !region.count(e.src) && region.count(e.dst)) {
      region[e.src] = region[e.dst];
    }
  }
  for (DrawnNode& n : target.nodes) {
    if (region.count(n.key)) continue;
    auto b = base.node_index.find(n.key);
    if (b == base.node_index.end()) return Splice::kCannot;
    const DrawnNode& was = base.nodes[b->second];
    if (was.label != n.label || was.role != n.role || was.id != n.id || was.cluster != n.cluster ||
        was.ellipse != n.ellipse) {
      return Splice::kCannot;
    }
    n.rect = was.rect;
  }
  for (const DrawnNode& n : base.nodes) {
    if (!opened.count(n.key) && !target.node_index.count(n.key)) return Splice::kCannot;
  }
  // Clusters: new ones hold region nodes only and sit where their box sat.
  std::set<std::string> new_clusters;
  for (const auto& [name, cluster] : target.clusters) {
    if (!base.clusters.count(name)) new_clusters.insert(name);
  }
  for (const auto& [name, cluster] : base.clusters) {
    if (!target.clusters.count(name)) return Splice::kCannot;
  }
  for (const DrawnNode& n : target.nodes) {
    std::string c = n.cluster;
    while (!c.empty() && new_clusters.count(c)) c = target.clusters.at(c).parent;
    auto r = region.find(n.key);
    if (r == region.end() ? c != n.cluster
                          : c != base.nodes[base.node_index.at(r->second)].cluster) {
      return Splice::kCannot;
    }
  }
  // Edges between kept nodes keep their route.
  std::map<EdgeKey, std::vector<Route>> routes;  // several send/receive edges may join a pair
  for (const DrawnEdge& e : base.edges) routes[{e.src, e.dst}].push_back({e.points, e.label_at});
  size_t kept_edges = 0;
  for (const DrawnEdge& e : target.edges) {
    if (region.count(e.src) || region.count(e.dst)) continue;
    if (!routes.count({e.src, e.dst})) return Splice::kCannot;
    ++kept_edges;
  }
  size_t base_kept_edges = 0;
  for (const DrawnEdge& e : base.edges)
    base_kept_edges += !opened.count(e.src) && !opened.count(e.dst);
  if (kept_edges != base_kept_edges) return Splice::kCannot;

  // The pieces of each opened box: its boxes alone, units joined by their edges.
  Sets sets(target.nodes.size());
  auto top_cluster = [&](const std::string& cluster) {
    std::string c = cluster, top;
    while (!c.empty() && new_clusters.count(c)) top = c, c = target.clusters.at(c).parent;
    return top;
  };
  auto is_box = [&](const DrawnNode& n) { return n.role == "cluster" && n.cluster.empty(); };
  std::map<std::string, size_t> first_in_cluster;
  for (size_t i = 0; i < target.nodes.size(); ++i) {
    const DrawnNode& n = target.nodes[i];
    if (!region.count(n.key)) continue;
    const std::string top = top_cluster(n.cluster);
    if (top.empty()) continue;
    auto [it, fresh] = first_in_cluster.emplace(top, i);
    if (!fresh) sets.Join(i, it->second);
  }
  for (const DrawnEdge& e : target.edges) {
    auto s = region.find(e.src), d = region.find(e.dst);
    if (s == region.end() || d == region.end() || s->second != d->second) continue;
    const size_t si = target.node_index.at(e.src), di = target.node_index.at(e.dst);
    if (!is_box(target.nodes[si]) && !is_box(target.nodes[di])) sets.Join(si, di);
  }
  std::map<std::string, std::map<size_t, Piece>> pieces;  // opened box -> root -> piece
  for (size_t i = 0; i < target.nodes.size(); ++i) {
    auto r = region.find(target.nodes[i].key);
    if (r != region.end()) pieces[r->second][sets.Find(i)].nodes.push_back(i);
  }
  if (pieces.size() != opened.size()) return Splice::kCannot;  // a box whose ops went elsewhere
  for (auto& [box, parts] : pieces) {
    for (auto& [root, piece] : parts) {
      const DrawnNode& first = target.nodes[piece.nodes.front()];
      if (piece.nodes.size() == 1 && first.cluster == base.nodes[base.node_index.at(box)].cluster &&
          !new_clusters.count(first.cluster)) {
        piece.size = NodeSize(first);
        continue;
      }
      piece.canonical = MakeCanonical(target, piece.nodes, new_clusters);
      piece.shape = ShapeOf(piece.canonical, may_lay_out, run_name);
      if (!piece.shape) return may_lay_out ? Splice::kCannot : Splice::kNeedsLayout;
      piece.size = piece.shape->bounds.size();
    }
  }

  // Geometry that moves as boxes open: kept nodes, routes, clusters, boxes still closed.
  std::map<std::string, QRectF> boxes;
  for (const std::string& key : opened) boxes[key] = base.nodes[base.node_index.at(key)].rect;
  // Cluster frames are drawn again around their members at the end, with the margins they
  // had (`was` around `had`): base clusters from base, new ones from their unit's layout.
  std::map<std::string, std::pair<QRectF, QRectF>> margins;
  for (const auto& [name, cluster] : base.clusters) margins[name].first = cluster.rect;
  for (const DrawnNode& n : base.nodes) {
    if (!n.cluster.empty()) margins[n.cluster].second |= n.rect;
  }
  for (const auto& [name, cluster] : base.clusters) {
    if (!cluster.parent.empty()) margins[cluster.parent].second |= cluster.rect;
  }
  std::map<size_t, Route> inner;  // target edge -> route inside a unit
  std::vector<std::string> opened_order(opened.begin(), opened.end());
  std::sort(opened_order.begin(), opened_order.end(), [&](const auto& a, const auto& b) {
    const QRectF ra = boxes[a], rb = boxes[b];
    return ra.top() != rb.top() ? ra.top() < rb.top() : ra.left() < rb.left();
  });
  for (const std::string& box : opened_order) {
    auto& parts = pieces[box];
    // Data order: pieces fed by others go after them; ties in drawing order.
    std::map<size_t, size_t> piece_of;  // target node -> piece root
    for (auto& [root, piece] : parts) {
      for (size_t i : piece.nodes) piece_of[i] = root;
    }
    std::map<size_t, std::set<size_t>> after;
    std::map<size_t, int> feeds;
    for (const DrawnEdge& e : target.edges) {
      auto s = piece_of.find(target.node_index.at(e.src));
      auto d = piece_of.find(target.node_index.at(e.dst));
      if (s == piece_of.end() || d == piece_of.end() || s->second == d->second) continue;
      if (after[s->second].insert(d->second).second) ++feeds[d->second];
    }
    std::vector<size_t> order;
    std::set<std::pair<size_t, size_t>> ready;  // (first node, root)
    for (auto& [root, piece] : parts) {
      if (!feeds[root]) ready.insert({piece.nodes.front(), root});
    }
    while (order.size() < parts.size()) {
      if (ready.empty()) {  // a cycle: take the earliest piece not placed
        for (auto& [root, piece] : parts) {
          if (std::find(order.begin(), order.end(), root) == order.end()) {
            ready.insert({piece.nodes.front(), root});
            break;
          }
        }
      }
      const size_t root = ready.begin()->second;
      ready.erase(ready.begin());
      if (std::find(order.begin(), order.end(), root) != order.end()) continue;
      order.push_back(root);
      for (size_t next : after[root]) {
        if (--feeds[next] == 0) ready.insert({parts[next].nodes.front(), next});
      }
    }
    double width = 0, height = -kGap;
    for (size_t root : order) {
      width = std::max(width, parts[root].size.width());
      height += parts[root].size.height() + kGap;
    }
    const QRectF at = boxes[box];
    const SplitMap map{at, std::max(0.0, width - at.width()), std::max(0.0, height - at.height())};
    // How a route's end moves: with its node; on the opening box, to the opened part's edge.
    auto moves = [&](const std::string& key, bool leaving) {
      if (key == box) return QPointF(map.dx / 2, leaving ? map.dy : 0);
      auto b = boxes.find(key);
      return map.Delta(b != boxes.end() ? b->second : target.nodes[target.node_index.at(key)].rect);
    };
    for (auto& [key, pair] : routes) {
      for (Route& route : pair) map.Move(route, moves(key.first, true), moves(key.second, false));
    }
    for (auto& [e, route] : inner) {
      map.Move(route, moves(target.edges[e].src, true), moves(target.edges[e].dst, false));
    }
    for (DrawnNode& n : target.nodes) {
      if (!n.rect.isNull()) n.rect = map.Node(n.rect);
    }
    for (auto& [key, rect] : boxes) {
      rect = key == box ? QRectF(at.topLeft(), at.size() + QSizeF(map.dx, map.dy)) : map.Node(rect);
    }
    // Stack the pieces in the space the box now has.
    const QRectF space = boxes[box];
    double y = space.top() + (space.height() - height) / 2;
    for (size_t root : order) {
      Piece& piece = parts[root];
      const QPointF origin(space.center().x() - piece.size.width() / 2, y);
      y += piece.size.height() + kGap;
      if (!piece.shape) {
        target.nodes[piece.nodes.front()].rect = QRectF(origin, piece.size);
        continue;
      }
      const QPointF shift = origin - piece.shape->bounds.topLeft();
      for (size_t i = 0; i < piece.nodes.size(); ++i) {
        target.nodes[piece.nodes[i]].rect = piece.shape->nodes[i].translated(shift);
      }
      for (size_t c = 0; c < piece.canonical.cluster_names.size(); ++c) {
        margins[piece.canonical.cluster_names[c]].first = piece.shape->clusters[c];
      }
      for (size_t i = 0; i < piece.nodes.size(); ++i) {
        const std::string& c = target.nodes[piece.nodes[i]].cluster;
        if (new_clusters.count(c)) margins[c].second |= piece.shape->nodes[i];
      }
      for (const std::string& c : piece.canonical.cluster_names) {
        const std::string& parent = target.clusters.at(c).parent;
        if (new_clusters.count(parent)) {
          margins[parent].second |= margins[c].first;
        }
      }
      for (size_t e = 0; e < piece.canonical.edges.size(); ++e) {
        const Route& r = piece.shape->edges[e];
        inner[piece.canonical.edges[e]] = {r.points.translated(shift), r.label_at + shift};
      }
    }
  }

  // Edges: kept, inside a unit, or through the route the opened box had.
  auto bottom = [](const QRectF& r) { return QPointF(r.center().x(), r.bottom()); };
  auto top = [](const QRectF& r) { return QPointF(r.center().x(), r.top()); };
  std::map<EdgeKey, size_t> used;
  for (size_t i = 0; i < target.edges.size(); ++i) {
    DrawnEdge& e = target.edges[i];
    auto s = region.find(e.src), d = region.find(e.dst);
    if (s == region.end() && d == region.end()) {
      const auto& pair = routes.at({e.src, e.dst});
      const Route& r = pair[std::min(used[{e.src, e.dst}]++, pair.size() - 1)];
      e.points = r.points, e.label_at = r.label_at;
      continue;
    }
    if (auto it = inner.find(i); it != inner.end()) {
      e.points = it->second.points, e.label_at = it->second.label_at;
      continue;
    }
    const QRectF src = target.nodes[target.node_index.at(e.src)].rect;
    const QRectF dst = target.nodes[target.node_index.at(e.dst)].rect;
    const bool down = dst.center().y() >= src.center().y();
    const QPointF from = down ? bottom(src) : top(src), to = down ? top(dst) : bottom(dst);
    const std::string bs = s == region.end() ? e.src : s->second;
    const std::string bd = d == region.end() ? e.dst : d->second;
    auto r = bs == bd ? routes.end() : routes.find({bs, bd});
    if (r == routes.end() || r->second.front().points.size() < 4) {
      e.points = Curve(from, to);
      e.label_at = (from + to) / 2;
      continue;
    }
    const Route& through = r->second.front();
    QPolygonF points = through.points;
    if (s != region.end()) points = Curve(from, points.front()) + points.mid(1);
    if (d != region.end()) points += Curve(points.back(), to).mid(1);
    e.points = points;
    e.label_at = through.label_at;
  }
  // Clusters, outer before inner, and the bounds of everything.
  target.cluster_order.clear();
  for (const std::string& name : base.cluster_order) {
    if (target.clusters.count(name)) target.cluster_order.push_back(name);
  }
  for (auto& [box, parts] : pieces) {
    for (auto& [root, piece] : parts) {
      if (!piece.shape) continue;
      for (const std::string& c : piece.shape->cluster_order) {
        target.cluster_order.push_back(piece.canonical.cluster_names.at(std::stoul(c.substr(1))));
      }
    }
  }
  std::map<std::string, QRectF> members;
  for (const DrawnNode& n : target.nodes) {
    if (!n.cluster.empty()) members[n.cluster] |= n.rect;
  }
  QRectF bounds(0, 0, 1, 1);
  for (auto c = target.cluster_order.rbegin(); c != target.cluster_order.rend(); ++c) {
    DrawnCluster& cluster = target.clusters.at(*c);
    const auto& [was, had] = margins[*c];
    cluster.rect = Frame(was, had, members[*c]);
    if (!cluster.parent.empty()) members[cluster.parent] |= cluster.rect;
    bounds |= cluster.rect;
  }
  for (const DrawnNode& n : target.nodes) bounds |= n.rect;
  for (const DrawnEdge& e : target.edges) bounds |= e.points.boundingRect();
  target.bounds = QRectF(0, 0, bounds.right(), bounds.bottom());
  return Splice::kDone;
}

}  // namespace shardscope::viewer::graph_detail
