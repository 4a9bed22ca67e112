// The fast path of the redistribution planner: the regular cases planned symbolically, in
// O(axes x dims) work plus one pass per step to fill the per-rank vectors of the plan. Each
// class (moves, reduce-scatters) returns exactly the search's plan (planner_search.cc); why:
// docs/redistribution.md, "The fast path". Everything else goes to the search, as does the
// single-message class (PlanSingleMessage in plan_assembly.cc).
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::redist_internal {

namespace {

enum class FastKind { kSlice, kAllToAll, kGather, kReduceScatter };

struct FastStep {
  FastKind kind;
  std::vector<int> axes;
  int dim = -1;
  int dim_to = -1;
  DimAxes after;         // dimensions after the step
  uint32_t pending = 0;  // axes still to be reduced after the step
};

bool CloseTo(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-18;
}

// What both classes need: the mesh's sizes and bandwidths.
struct Context {
  Context(const Setup& setup, const CostModel& cost)
      : setup(setup),
        cost(cost),
        mesh(setup.mesh),
        from(setup.from_m()),
        to(setup.to_m()),
        src(from.dims_axes()),
        tgt(to.dims_axes()),
        shape(from.shape()),
        nd(from.rank()),
        na(mesh.num_axes()),
        elem(setup.elem) {
    size.resize(na);
    bw.resize(na);
    for (int a = 0; a < na; ++a) {
      size[a] = mesh.axis_size(a);
      bw[a] = cost.AxisBandwidth(mesh.axis_name(a));
    }
  }
  double Bandwidth(const std::vector<int>& axes) const {  // CostModel::Bandwidth
    if (axes.empty()) return cost.default_bandwidth;
    double b = -1;
    for (int a : axes) b = b < 0 ? bw[a] : std::min(b, bw[a]);
    return b;
  }
  int64_t Blocks(const std::vector<int>& axes) const {
    int64_t b = 1;
    for (int a : axes) b *= size[a];
    return b;
  }
  int64_t ShardElems(const DimAxes& dims) const {
    int64_t e = 1;
    for (int d = 0; d < nd; ++d) e *= shape[d] / Blocks(dims[d]);
    return e;
  }

  const Setup& setup;
  const CostModel& cost;
  const DeviceMesh& mesh;
  const Layout& from;
  const Layout& to;
  const DimAxes& src;
  const DimAxes& tgt;
  const Shape& shape;
  const int nd;
  const int na;
  const int64_t elem;
  std::vector<int64_t> size;
  std::vector<double> bw;
};

// The class "moves" as the search sees it: its tight states are the S-side layouts (S with
// the first slices of each slice dimension applied) and the T-side ones (T with the last
// gathers of each gather dimension not yet done); see the top of the file.
struct MoveClass {
  std::vector<size_t> prefix;  // per dimension: common prefix of S_d and T_d
  std::vector<int> mu;         // the moving group (may be empty)
  int move_from = -1, move_to = -1;
};

// The search (planner_search.cc, Planner::Search) replayed on the tight states only: the same
// children in the same order, the same prices, the same A* order and ties, the same landings
// and offers. Exchanges and permutes are left out: no permute is tight here, and an exchange
// never beats the structured plans (top of the file), so the search picks the same plan.
class TightSearch {
 public:
  TightSearch(const Context& c, const MoveClass& m, uint32_t kept) : c_(c), m_(m), kept_(kept) {
    bw_max_ = c.cost.MaxBandwidth(c.mesh);
    cap_ = std::max(c.ShardElems(c.src), c.ShardElems(c.tgt));
    lb_src_ = Bound(c.src);
  }

  // False when the search would run out of its budget of `max_pops` expanded states first
  // (then the search itself plans the case).
  bool Run(int max_pops, std::vector<FastStep>* steps) {
    BuildLandings();
    Node root;
    root.dims = c_.src;
    nodes_.push_back(root);
    std::map<DimAxes, Score> best_g;
    using Entry = std::pair<Score, int>;
    auto worse = [](const Entry& a, const Entry& b) {
      if (Better(a.first, b.first)) return false;
      if (Better(b.first, a.first)) return true;
      return a.second > b.second;
    };
    std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> open(worse);
    open.push({Add(G(root), H(lb_src_)), 0});
    best_g[root.dims] = G(root);
    int best_node = -1, best_landing = 0;
    Score best;
    int pops = 0;
    bool done = false;
    while (!open.empty()) {
      if (pops >= max_pops) break;
      const auto [f, index] = open.top();
      open.pop();
      if (best_node >= 0 && Better(best, f) && !Close(best.primary, f.primary)) {
        done = true;
        break;
      }
      const Node& node = nodes_[index];  // (a deque: stays valid as children are added)
      if (auto it = best_g.find(node.dims); it != best_g.end() && Better(it->second, G(node)))
        continue;
      ++pops;
      // Finish: the landings this state is (structured plans only).
      for (size_t i = 0; i < landings_.size(); ++i) {
        const Landing& l = landings_[i];
        if (node.dims != l.dims) continue;
        if (i > 0 && node.recv + l.recv > lb_src_) continue;
        Score s = G(node);
        s.primary += l.time;
        s.secondary += l.bytes;
        s.steps += l.steps;
        if (best_node < 0 || Better(s, best)) {
          best_node = index;
          best_landing = static_cast<int>(i);
          best = s;
        }
      }
      // Expand: the tight children, in the search's order.
      Children(index, node, [&](Node child) {
        const Score g = G(child);
        auto it = best_g.find(child.dims);
        if (it != best_g.end() && !Better(g, it->second)) return;
        best_g[child.dims] = g;
        const int64_t lb = Bound(child.dims);
        nodes_.push_back(std::move(child));
        open.push({Add(g, H(lb)), static_cast<int>(nodes_.size()) - 1});
      });
    }
    if (open.empty()) done = true;
    if (!done || best_node < 0) return false;
    std::vector<int> path;
    for (int i = best_node; i > 0; i = nodes_[i].parent) path.push_back(i);
    std::reverse(path.begin(), path.end());
    for (int i : path) steps->push_back(nodes_[i].edge);
    const Landing& l = landings_[best_landing];
    for (const FastStep& e : l.suffix) steps->push_back(e);
    return true;
  }

 private:
  struct Score {
    double primary = 0, secondary = 0;
    int steps = 0;
  };
  static bool Better(const Score& a, const Score& b) {  // Planner's, without exchanges
    if (!CloseTo(a.primary, b.primary)) return a.primary < b.primary;
    if (!CloseTo(a.secondary, b.secondary)) return a.secondary < b.secondary;
    return a.steps < b.steps;
  }
  static bool Close(double a, double b) { return CloseTo(a, b); }
  static Score Add(Score a, const Score& b) {
    a.primary += b.primary;
    a.secondary += b.secondary;
    a.steps += b.steps;
    return a;
  }
  struct Node {
    DimAxes dims;
    int parent = -1;
    FastStep edge{FastKind::kSlice, {}, -1, -1, {}, 0};
    double time = 0, bytes = 0;
    int steps = 0;
    int64_t recv = 0;  // bytes so far, every rank
  };
  struct Landing {
    DimAxes dims;
    std::vector<FastStep> suffix;  // dims -> ... -> target (each with the layout after it)
    int64_t recv = 0;
    double time = 0, bytes = 0;
    int steps = 0;
  };
  Score G(const Node& n) const { return {n.time, n.bytes, n.steps}; }
  Score H(int64_t m) const {
    return {m > 0 ? c_.cost.latency_s + static_cast<double>(m) / bw_max_ : 0.0,
            static_cast<double>(m), 0};
  }
  // The bound from a tight state: |T| - |T n X| elements on every rank (nested blocks).
  int64_t Bound(const DimAxes& x) const {
    int64_t overlap = 1;
    for (int d = 0; d < c_.nd; ++d) {
      overlap *= std::min(c_.shape[d] / c_.Blocks(x[d]), c_.shape[d] / c_.Blocks(c_.tgt[d]));
    }
    return (c_.ShardElems(c_.tgt) - overlap) * c_.elem;
  }
  // The end of dimension d's slices (move_to: mu comes after them).
  size_t SliceEnd(int d) const { return c_.tgt[d].size() - (d == m_.move_to ? m_.mu.size() : 0); }
  bool SliceDim(int d) const { return c_.src[d].size() == m_.prefix[d]; }
  bool AllSlicesDone(const DimAxes& x) const {
    for (int d = 0; d < c_.nd; ++d) {
      if (SliceDim(d) && x[d].size() < SliceEnd(d)) return false;
    }
    return true;
  }
  // Crossed: the all-to-all of mu is done (with no mu: every slice is done).
  bool Crossed(const DimAxes& x) const {
    if (m_.mu.empty()) return AllSlicesDone(x);
    return x[m_.move_to].size() == c_.tgt[m_.move_to].size();
  }

  template <typename Emit>
  void Children(int index, const Node& node, Emit emit) const {
    const DimAxes& x = node.dims;
    const int nd = c_.nd;
    std::vector<int> dim_of(c_.na, -1);
    for (int d = 0; d < nd; ++d) {
      for (int a : x[d]) dim_of[a] = d;
    }
    const int64_t shard = c_.ShardElems(x);
    const bool crossed = Crossed(x);
    auto child = [&](FastStep e, CollectiveKind kind, int64_t recv_elems, int64_t n_elems,
                     bool priced) {
      Node ch;
      ch.dims = e.after;
      if (c_.ShardElems(ch.dims) > cap_) return;
      const int64_t g = c_.Blocks(e.axes);
      const double secs =
          priced ? c_.cost.CollectiveSeconds(kind, static_cast<double>(n_elems * c_.elem), g,
                                             c_.Bandwidth(e.axes))
                 : 0.0;
      ch.parent = index;
      ch.edge = std::move(e);
      ch.recv = node.recv + recv_elems * c_.elem;
      ch.time = node.time + secs;
      ch.bytes = node.bytes + static_cast<double>(recv_elems * c_.elem);
      ch.steps = node.steps + 1;
      emit(std::move(ch));
    };
    for (int a = 0; a < c_.na; ++a) {
      if (kept_ & (1u << a)) continue;
      const int64_t pa = c_.size[a];
      if (dim_of[a] < 0) {
        // Slices: tight only on the S side, each slice dimension's next axis.
        if (crossed && !m_.mu.empty()) continue;
        for (int e = 0; e < nd; ++e) {
          if (c_.shape[e] % (c_.Blocks(x[e]) * pa) != 0) continue;
          if (!SliceDim(e) || x[e].size() >= SliceEnd(e) || c_.tgt[e][x[e].size()] != a) continue;
          FastStep s{FastKind::kSlice, {a}, e, -1, x, 0};
          s.after[e].push_back(a);
          child(std::move(s), CollectiveKind::kAllGather, 0, 0, false);
        }
      } else if (x[dim_of[a]].back() == a) {
        const int d = dim_of[a];
        // Gather: tight once crossed, a gather dimension's last axis beyond the target.
        if (crossed && x[d].size() > c_.tgt[d].size()) {
          FastStep s{FastKind::kGather, {a}, d, -1, x, 0};
          s.after[d].pop_back();
          child(std::move(s), CollectiveKind::kAllGather, (pa - 1) * shard, pa * shard, true);
        }
        // All-to-all: tight only as the crossing, mu from move_from to move_to.
        if (!m_.mu.empty() && !crossed && d == m_.move_from && AllSlicesDone(x)) {
          const std::vector<int>& list = x[d];
          for (size_t k = 1; k <= list.size(); ++k) {
            if (k != m_.mu.size() || !std::equal(m_.mu.begin(), m_.mu.end(),
                                                 list.end() - static_cast<std::ptrdiff_t>(k)))
              continue;
            const int64_t g = c_.Blocks(m_.mu);
            for (int e = 0; e < nd; ++e) {
              if (e == d || c_.shape[e] % (c_.Blocks(x[e]) * g) != 0 || e != m_.move_to) continue;
              FastStep s{FastKind::kAllToAll, m_.mu, d, e, x, 0};
              s.after[d].resize(list.size() - k);
              s.after[e].insert(s.after[e].end(), m_.mu.begin(), m_.mu.end());
              child(std::move(s), CollectiveKind::kAllToAll, RingShare(shard, g), shard, true);
            }
          }
        }
      }
    }
  }

  // Planner::BuildLandings, symbolically: the target, then layouts a few collectives before it
  // (reversed gathers and all-to-alls), breadth first, at most 24, depth 2, within the cap.
  void BuildLandings() {
    constexpr size_t kMaxLandings = 24;
    landings_.reserve(kMaxLandings);  // references into it stay valid below
    Landing t;
    t.dims = c_.tgt;
    landings_.push_back(std::move(t));
    constexpr int kMaxDepth = 2;
    std::set<DimAxes> seen = {c_.tgt};
    size_t begin = 0;
    for (int depth = 0; depth < kMaxDepth; ++depth) {
      const size_t end = landings_.size();
      for (size_t i = begin; i < end && landings_.size() < kMaxLandings; ++i) {
        const Landing& y = landings_[i];
        auto add = [&](DimAxes x, FastStep e) {
          if (landings_.size() >= kMaxLandings || !seen.insert(x).second) return;
          const int64_t shard = c_.ShardElems(x);
          if (shard > cap_) return;
          const int64_t g = c_.Blocks(e.axes);
          int64_t recv = 0;
          double secs = 0;
          const double n = static_cast<double>(shard * c_.elem);
          if (e.kind == FastKind::kGather) {
            recv = (g - 1) * shard;
            secs = c_.cost.CollectiveSeconds(CollectiveKind::kAllGather, n * g, g,
                                             c_.Bandwidth(e.axes));
          } else {
            recv = RingShare(shard, g);
            secs = c_.cost.CollectiveSeconds(CollectiveKind::kAllToAll, n, g, c_.Bandwidth(e.axes));
          }
          Landing l;
          l.dims = std::move(x);
          e.after = y.dims;
          l.suffix.push_back(std::move(e));
          l.suffix.insert(l.suffix.end(), y.suffix.begin(), y.suffix.end());
          l.recv = y.recv + recv * c_.elem;
          l.time = y.time + secs;
          l.bytes = y.bytes + static_cast<double>(recv * c_.elem);
          l.steps = y.steps + 1;
          landings_.push_back(std::move(l));
        };
        const DimAxes& ys = y.dims;
        std::vector<int> dim_of(c_.na, -1);
        for (int d = 0; d < c_.nd; ++d) {
          for (int a : ys[d]) dim_of[a] = d;
        }
        for (int d = 0; d < c_.nd; ++d) {
          const int64_t blocks = c_.Blocks(ys[d]);
          for (int x = 0; x < c_.na; ++x) {
            if (dim_of[x] >= 0 || (kept_ & (1u << x))) continue;
            if (c_.shape[d] % (blocks * c_.size[x]) != 0) continue;
            DimAxes xs = ys;
            xs[d].push_back(x);
            add(std::move(xs), FastStep{FastKind::kGather, {x}, d, -1, {}, 0});
          }
          const std::vector<int>& list = ys[d];
          for (size_t k = 1; k <= list.size(); ++k) {
            std::vector<int> suffix(list.end() - static_cast<std::ptrdiff_t>(k), list.end());
            const int64_t g = c_.Blocks(suffix);
            for (int e = 0; e < c_.nd; ++e) {
              if (e == d) continue;
              if (c_.shape[e] % (c_.Blocks(ys[e]) * g) != 0) continue;
              DimAxes xs = ys;
              xs[d].resize(list.size() - k);
              xs[e].insert(xs[e].end(), suffix.begin(), suffix.end());
              add(std::move(xs), FastStep{FastKind::kAllToAll, suffix, e, d, {}, 0});
            }
          }
        }
      }
      begin = end;
    }
  }

  const Context& c_;
  const MoveClass& m_;
  const uint32_t kept_;
  double bw_max_ = 1;
  int64_t cap_ = 0;
  int64_t lb_src_ = 0;
  std::deque<Node> nodes_;  // grows while a node is expanded, by reference
  std::vector<Landing> landings_;
};

// Fills `plan` with the steps (every one uniform over the ranks) and the per-rank bound
// `bound` (uniform too). False if something does not add up (cannot happen for the classes
// below; the search then plans the case).
bool FillPlan(const Context& c, const std::vector<FastStep>& steps, uint32_t kept, uint32_t reduce,
              uint32_t new_partial, int64_t bound, int64_t slack, RedistPlan* plan) {
  const Setup& setup = c.setup;
  const DeviceMesh& mesh = c.mesh;
  const int n = mesh.size();
  const int64_t elem = c.elem;
  const int64_t src_shard = NumElements(setup.from->ShardShape());
  const int64_t tgt_shard = NumElements(setup.to->ShardShape());
  const int64_t cap = std::max(src_shard, tgt_shard);
  ReasonContext rc;
  rc.mesh = &mesh;
  rc.target = &c.tgt;
  plan->from = *setup.from;
  plan->to = *setup.to;
  plan->mesh = mesh;
  plan->meshes_unified = true;
  plan->element_bytes = elem;
  plan->steps.clear();
  plan->steps.reserve(steps.size() + 1);
  int64_t recv_total = 0;
  double seconds_total = 0;
  int64_t shard = src_shard;
  for (const FastStep& fs : steps) {
    RedistStep st;
    st.axes = fs.axes;
    for (int a : st.axes) st.axis_names.push_back(mesh.axis_name(a));
    st.dim = fs.dim;
    st.dim_to = fs.dim_to;
    const int64_t g = c.Blocks(fs.axes);
    int64_t recv = 0;
    int64_t next_shard = shard;
    switch (fs.kind) {
      case FastKind::kSlice:
        st.kind = RedistStep::Kind::kLocalSlice;
        next_shard = shard / g;
        st.reason = SliceReason(rc, fs.axes[0], fs.dim);
        break;
      case FastKind::kAllToAll:
        st.kind = RedistStep::Kind::kAllToAll;
        recv = RingShare(shard, g);
        st.messages = g - 1;
        st.seconds = c.cost.CollectiveSeconds(
            CollectiveKind::kAllToAll, static_cast<double>(shard * elem), g, c.Bandwidth(fs.axes));
        st.reason = AllToAllReason(rc, fs.axes, fs.dim, fs.dim_to);
        break;
      case FastKind::kGather:
        st.kind = RedistStep::Kind::kAllGather;
        recv = (g - 1) * shard;
        next_shard = shard * g;
        st.messages = g - 1;
        st.seconds = c.cost.CollectiveSeconds(CollectiveKind::kAllGather,
                                              static_cast<double>(g * shard * elem), g,
                                              c.Bandwidth(fs.axes));
        st.reason = GatherReason(rc, fs.axes[0], fs.dim);
        break;
      case FastKind::kReduceScatter:
        st.kind = RedistStep::Kind::kReduceScatter;
        recv = RingShare(shard, g);
        next_shard = shard / g;
        st.messages = g - 1;
        st.seconds =
            c.cost.CollectiveSeconds(CollectiveKind::kReduceScatter,
                                     static_cast<double>(shard * elem), g, c.Bandwidth(fs.axes));
        st.reason = ReduceScatterReason(rc, fs.axes[0], fs.dim);
        break;
    }
    if (next_shard > cap) return false;
    if (fs.kind != FastKind::kSlice) st.groups = LazyGroupsAlong(mesh, fs.axes);
    st.bytes_recv.assign(n, recv * elem);
    st.bytes_sent.assign(n, recv * elem);
    st.bytes_recv_per_rank = recv * elem;
    st.bytes_sent_per_rank = recv * elem;
    Result<Layout> after = Layout::Create(mesh, fs.after, MaskAxes(kept | fs.pending), c.shape);
    if (!after.ok()) return false;
    st.after = std::move(after).value();
    recv_total += recv * elem;
    seconds_total += st.seconds;
    shard = next_shard;
    plan->steps.push_back(std::move(st));
  }
  if (new_partial) {
    // Ranks with a nonzero index along a new partial axis become zero addends.
    std::vector<int> zero_ranks;
    const std::vector<int> ranks = mesh.rank_list();
    std::vector<int64_t> coord(c.na, 0);
    for (int pos = 0; pos < n; ++pos) {
      bool zero = false;
      for (int a = 0; a < c.na; ++a) zero |= ((new_partial >> a) & 1u) && coord[a] != 0;
      if (zero) zero_ranks.push_back(ranks[pos]);
      for (int a = c.na - 1; a >= 0; --a) {
        if (++coord[a] < c.size[a]) break;
        coord[a] = 0;
      }
    }
    std::sort(zero_ranks.begin(), zero_ranks.end());
    RedistStep st;
    st.kind = RedistStep::Kind::kLocalReshape;
    st.axes = MaskAxes(new_partial);
    for (int a : st.axes) st.axis_names.push_back(mesh.axis_name(a));
    st.bytes_recv.assign(n, 0);
    st.bytes_sent.assign(n, 0);
    st.zero_ranks = std::move(zero_ranks);
    st.after = *setup.to;
    st.reason = ZeroFillReason();
    plan->steps.push_back(std::move(st));
  } else if (!plan->steps.empty()) {
    plan->steps.back().after = *setup.to;  // the same distribution, in the target's own terms
  }
  if (bound != recv_total) return false;
  plan->recv_bytes.assign(n, recv_total);
  plan->lower_bound.assign(n, bound);
  plan->planned_bytes = recv_total;
  plan->lower_bound_bytes = bound;
  plan->total_planned_bytes = recv_total * n;
  plan->total_lower_bound_bytes = bound * n;
  plan->byte_optimal = true;
  plan->bounded_search = true;
  plan->bound_slack_bytes = reduce ? slack : 0;
  plan->predicted_seconds = seconds_total;
  plan->states_explored = 0;
  return true;
}

// Class "moves": nothing to reduce (see the top of the file).
bool PlanMoves(const Context& c, uint32_t kept, uint32_t new_partial, int max_states,
               RedistPlan* plan) {
  const int nd = c.nd;
  const int na = c.na;
  const DimAxes& src = c.src;
  const DimAxes& tgt = c.tgt;
  std::vector<int> src_dim(na, -1), tgt_dim(na, -1);
  for (int d = 0; d < nd; ++d) {
    for (int a : src[d]) src_dim[a] = d;
    for (int a : tgt[d]) tgt_dim[a] = d;
  }
  // Common prefixes, and the moving group.
  std::vector<size_t> prefix(nd, 0);
  int move_from = -1, move_to = -1;
  size_t moved = 0;
  bool any_gather = false;
  for (int d = 0; d < nd; ++d) {
    size_t k = 0;
    while (k < src[d].size() && k < tgt[d].size() && src[d][k] == tgt[d][k]) ++k;
    prefix[d] = k;
    for (size_t i = k; i < src[d].size(); ++i) {
      const int a = src[d][i];
      if (tgt_dim[a] < 0) {
        any_gather = true;
        continue;
      }
      if (tgt_dim[a] == d) return false;  // reordered inside the dimension
      if (move_from >= 0 && (move_from != d || move_to != tgt_dim[a])) return false;
      move_from = d;
      move_to = tgt_dim[a];
      ++moved;
    }
  }
  std::vector<int> mu;
  if (moved > 0) {
    const std::vector<int>& s = src[move_from];
    const std::vector<int>& t = tgt[move_to];
    if (s.size() - prefix[move_from] < moved || t.size() - prefix[move_to] < moved) return false;
    mu.assign(s.end() - static_cast<std::ptrdiff_t>(moved), s.end());
    if (!std::equal(mu.begin(), mu.end(), t.end() - static_cast<std::ptrdiff_t>(moved))) {
      return false;
    }
    // d only loses axes, e only gains axes.
    if (tgt[move_from].size() != prefix[move_from]) return false;
    if (src[move_to].size() != prefix[move_to]) return false;
  }
  for (int d = 0; d < nd; ++d) {
    if (d == move_from || d == move_to) continue;
    if (src[d].size() != prefix[d] && tgt[d].size() != prefix[d]) return false;
  }
  // Slice axes are used by no dimension of the source (a moving axis is, and sits in mu).
  for (int d = 0; d < nd; ++d) {
    const size_t end = d == move_to ? tgt[d].size() - moved : tgt[d].size();
    for (size_t i = prefix[d]; i < end; ++i) {
      if (src_dim[tgt[d][i]] >= 0) return false;
    }
  }
  if (new_partial && (moved > 0 || any_gather)) return false;  // zero addends: no traffic only

  MoveClass m;
  m.prefix = prefix;
  m.mu = mu;
  m.move_from = move_from;
  m.move_to = move_to;
  std::vector<FastStep> steps;
  // With at most one dimension to slice and one to gather, a single tight structured plan
  // exists (slices, the crossing, gathers, each dimension in its order): it is the search's.
  // Otherwise the order of equal-priced steps is the search's choice: replay it.
  int slice_dims = 0, gather_dims = 0;
  for (int d = 0; d < nd; ++d) {
    const size_t slice_end = d == move_to ? tgt[d].size() - moved : tgt[d].size();
    if (src[d].size() == prefix[d] && slice_end > prefix[d]) ++slice_dims;
    const size_t keep = d == move_from ? src[d].size() - moved : src[d].size();
    if (keep > tgt[d].size()) ++gather_dims;
  }
  if (slice_dims <= 1 && gather_dims <= 1) {
    DimAxes cur = src;
    for (int d = 0; d < nd; ++d) {
      const size_t slice_end = d == move_to ? tgt[d].size() - moved : tgt[d].size();
      if (src[d].size() != prefix[d]) continue;
      for (size_t i = prefix[d]; i < slice_end; ++i) {
        cur[d].push_back(tgt[d][i]);
        steps.push_back({FastKind::kSlice, {tgt[d][i]}, d, -1, cur, 0});
      }
    }
    if (!mu.empty()) {
      cur[move_from].resize(cur[move_from].size() - mu.size());
      cur[move_to].insert(cur[move_to].end(), mu.begin(), mu.end());
      steps.push_back({FastKind::kAllToAll, mu, move_from, move_to, cur, 0});
    }
    for (int d = 0; d < nd; ++d) {
      while (cur[d].size() > tgt[d].size()) {
        const int x = cur[d].back();
        cur[d].pop_back();
        steps.push_back({FastKind::kGather, {x}, d, -1, cur, 0});
      }
    }
  } else if (!TightSearch(c, m, kept).Run(std::max(1, max_states), &steps)) {
    return false;
  }
  if ((steps.empty() ? src : steps.back().after) != tgt) return false;  // cannot happen

  // The lower bound in closed form: |T| - |S n T| elements on every rank (nested blocks), 0
  // on zero addends (only plans without traffic get here with them, where it is 0 anyway).
  int64_t overlap = 1;
  for (int d = 0; d < nd; ++d) {
    overlap *= std::min(c.shape[d] / c.Blocks(src[d]), c.shape[d] / c.Blocks(tgt[d]));
  }
  const int64_t bound = (c.ShardElems(tgt) - overlap) * c.elem;
  return FillPlan(c, steps, kept, 0, new_partial, bound, 0, plan);
}

// Class "reduce-scatters": the partial axes to reduce become splits (see the top of the file).
bool PlanReduceScatters(const Context& c, uint32_t kept, uint32_t reduce, RedistPlan* plan) {
  const int nd = c.nd;
  const int na = c.na;
  const DimAxes& src = c.src;
  const DimAxes& tgt = c.tgt;
  // One bandwidth on every axis: then every step with traffic runs at it.
  for (int a = 1; a < na; ++a) {
    if (c.bw[a] != c.bw[0]) return false;
  }
  // Every dimension: the source's list, then reduced axes only.
  uint32_t used = 0, appended = 0;
  for (int d = 0; d < nd; ++d) {
    if (tgt[d].size() < src[d].size() || !std::equal(src[d].begin(), src[d].end(), tgt[d].begin()))
      return false;
    for (int a : src[d]) used |= 1u << a;
    for (size_t i = src[d].size(); i < tgt[d].size(); ++i) {
      if (!(reduce & (1u << tgt[d][i]))) return false;
      appended |= 1u << tgt[d][i];
    }
  }
  if (appended != reduce) return false;  // a reduced axis the target does not split over
  // One dimension receives them all: a single order (reduce-scatters into several dimensions
  // tie in price, and the search's choice among them follows its A* order: the search).
  int receiving = 0;
  for (int d = 0; d < nd; ++d) receiving += tgt[d].size() > src[d].size();
  if (receiving > 1) return false;
  // No replicas: every axis splits the source or is partial in it.
  for (int a = 0; a < na; ++a) {
    if (!((used | reduce | kept) & (1u << a))) return false;
  }
  // The plan: the reduced axes in the target order of the receiving dimension.
  std::vector<FastStep> steps;
  DimAxes cur = src;
  uint32_t pending = reduce;
  for (int d = 0; d < nd; ++d) {
    for (size_t i = src[d].size(); i < tgt[d].size(); ++i) {
      const int x = tgt[d][i];
      cur[d].push_back(x);
      pending &= ~(1u << x);
      steps.push_back({FastKind::kReduceScatter, {x}, d, -1, cur, pending});
    }
  }
  // The bound: no replicas, so no sharing (rho = 1), and the members of a reduction group
  // need disjoint parts of their block that tile it: the ring bound of a reduce-scatter
  // over the group, (P - 1) / P of the source shard (P divides it).
  const int64_t group = c.Blocks(MaskAxes(reduce));
  const int64_t shard = c.ShardElems(src);
  const int64_t bound = (group - 1) * (shard / group) * c.elem;
  return FillPlan(c, steps, kept, reduce, 0, bound, (group - 1) * c.elem, plan);
}

}  // namespace

bool PlanFast(const Setup& setup, const CostModel& cost, const RedistOptions& options,
              RedistPlan* plan) {
  if (!setup.unified || !options.byte_optimal) return false;
  const Context c(setup, cost);
  const uint32_t from_partial = AxesMask(c.from.partial_axes());
  const uint32_t to_partial = AxesMask(c.to.partial_axes());
  const uint32_t kept = from_partial & to_partial;
  const uint32_t reduce = from_partial & ~to_partial;
  const uint32_t new_partial = to_partial & ~from_partial;
  if (reduce) return new_partial == 0 && PlanReduceScatters(c, kept, reduce, plan);
  return PlanMoves(c, kept, new_partial, options.max_states, plan);
}

}  // namespace shardscope::redist_internal
