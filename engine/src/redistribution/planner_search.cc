// The Planner's A* search (planner.h): children of a state (structured steps along mesh
// axes), their pruning against the bound, and the fallback for partial sources.

#include <algorithm>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "planner.h"

namespace shardscope::redist_search {

template <typename Emit>
void Planner::Consider(int index, const Node& node, Edge edge, State next, const StepRecv& sr,
                       double seconds, bool exchange, Emit& emit, const LazyBoxes* next_boxes) {
  if (ShardElems(p_, next) > p_.max_shard_elems) return;
  if (cfg_.tight && Sampled()) {
    for (const RankCoords& r : samples_) {
      if (node.RecvOf(r.rank) + StepRecvOf(sr, next, r) + MoveBytes(next, r) >
          est_src_[r.rank] + cfg_.tolerance) {
        return;
      }
    }
  }
  // In closed form when the states allow (no per-rank boxes needed): a permute's exchange,
  // and the bound from `next` (its move part: the exchange from it into the target).
  std::optional<Exchange> moved;  // receiving side first: most children are rejected
  if (sr.kind == StepRecv::Kind::kNewBlocks) {
    Exchange ex;
    if (redist_internal::CountExchange(p_, node.state, &next, {.part = CountPart::kReceiving},
                                       &ex)) {
      moved = std::move(ex);
    }
  }
  std::shared_ptr<const Boxes> owned;
  auto boxes = [&]() -> const Boxes& {
    if (next_boxes) return next_boxes->all();
    if (!owned) owned = BoxesFor(next);
    return *owned;
  };
  std::vector<int64_t> step_recv;
  switch (sr.kind) {
    case StepRecv::Kind::kUniform:
      step_recv.assign(p_.num_ranks, sr.bytes);
      break;
    case StepRecv::Kind::kAllReduce:
      step_recv = AllReduceRecvPerRank(p_, sr.axes, sr.elems);
      break;
    case StepRecv::Kind::kNewBlocks: {
      // Each rank receives what its new block lacks (the exchange's receive counts); the
      // exchange itself (for its messages) is built only for a child that survives.
      if (moved) {
        step_recv = moved->recv;
        break;
      }
      const int d = p_.num_dims;
      step_recv.assign(p_.num_ranks, 0);
      const Boxes& nb = boxes();
      const Boxes& cur = sr.cur->all();
      for (int r = 0; r < p_.num_ranks; ++r) {
        const int64_t* lo = nb.lo.data() + r * d;
        const int64_t* hi = nb.hi.data() + r * d;
        step_recv[r] = (BoxVolume(lo, hi, d) -
                        IntersectVolume(lo, hi, cur.lo.data() + r * d, cur.hi.data() + r * d, d)) *
                       p_.elem;
      }
      break;
    }
  }
  // The estimate from `next`: the receiving side of its exchange into the target (in a
  // tight search, stopped at the first rank the child would take over the estimate).
  std::vector<int64_t> lb;
  if (p_.has_target_state && next.reduce_mask == 0) {
    bool exceeds = false;
    std::optional<Exchange> to_target =
        CountedExchangeIntoWithin(next, 0, node.recv, &step_recv, 0, &exceeds);
    if (exceeds) return;
    if (to_target) lb = std::move(to_target->recv);
  }
  if (lb.empty()) lb = redist_internal::SearchEstimate(p_, next, boxes());
  Node child;
  child.state = std::move(next);
  child.parent = index;
  child.edge = std::move(edge);
  int64_t max_recv = 0;
  if (node.recv.empty()) {  // the root's child: what it has received is this step's
    for (int r = 0; r < p_.num_ranks; ++r) {
      max_recv = std::max(max_recv, step_recv[r]);
      if (cfg_.tight && step_recv[r] + lb[r] > est_src_[r] + cfg_.tolerance) return;
    }
    child.recv = std::move(step_recv);
  } else {
    child.recv = node.recv;
    for (int r = 0; r < p_.num_ranks; ++r) {
      child.recv[r] += step_recv[r];
      max_recv = std::max(max_recv, step_recv[r]);
      if (cfg_.tight && child.recv[r] + lb[r] > est_src_[r] + cfg_.tolerance) return;
    }
  }
  if (sr.kind == StepRecv::Kind::kNewBlocks) {
    // (`next` has moved into the child.) The sending side completes the receiving side.
    Exchange ex;
    if (moved) {
      ex = std::move(*moved);
      const bool covered = redist_internal::CountExchange(p_, node.state, &child.state,
                                                          {.part = CountPart::kSending}, &ex);
      assert(covered);  // as the receiving side
      (void)covered;
    } else if (!redist_internal::CountExchange(p_, node.state, &child.state, {}, &ex)) {
      const std::shared_ptr<const Boxes> child_boxes = BoxesFor(child.state);
      const std::vector<char> every_rank(p_.num_ranks, 1);
      const ExchangeBoxes by_rank{&sr.cur->all(), child_boxes.get(), &every_rank};
      redist_internal::CountExchange(p_, node.state, nullptr, {.enumerate = &by_rank}, &ex);
    }
    seconds = ExchangeSeconds(ex);
    child.exchange = std::make_shared<const Exchange>(std::move(ex));
  }
  child.time = node.time + seconds;
  child.bytes = node.bytes + static_cast<double>(max_recv);
  child.exchanges = node.exchanges + (exchange ? 1 : 0);
  child.steps = node.steps + 1;
  emit(std::move(child), lb);
}

template <typename Emit>
void Planner::Expand(int index, const Node& node, const LazyBoxes& boxes, Emit emit) {
  const State& s = node.state;
  const int na = p_.num_axes;
  const int nd = p_.num_dims;
  int dim_of[32];  // per mesh axis (masks bound them to 32)
  std::fill(dim_of, dim_of + na, -1);
  std::vector<int64_t> blocks(nd, 1);
  for (int d = 0; d < nd; ++d) {
    for (int a : s.dims[d]) {
      dim_of[a] = d;
      blocks[d] *= p_.axis_size[a];
    }
  }
  const int64_t shard_elems = ShardElems(p_, s);
  auto divisible = [&](int d, int64_t factor) { return p_.shape[d] % (blocks[d] * factor) == 0; };
  auto uniform = [&](Edge edge, State next, CollectiveKind kind, int64_t recv_elems,
                     int64_t n_elems) {
    StepRecv sr;
    sr.bytes = recv_elems * p_.elem;
    const double secs = CollectiveSeconds(kind, static_cast<double>(n_elems * p_.elem), edge.axes);
    Consider(index, node, std::move(edge), std::move(next), sr, secs, false, emit);
  };
  auto all_reduce = [&](std::vector<int> axes, State next) {
    StepRecv sr;
    sr.kind = StepRecv::Kind::kAllReduce;
    sr.axes = axes;
    sr.elems = shard_elems;
    const double secs = cost_.CollectiveSeconds(
        CollectiveKind::kAllReduce, static_cast<double>(shard_elems * p_.elem), p_.mesh, axes);
    Consider(index, node, {EdgeKind::kAllReduce, std::move(axes), -1, -1}, std::move(next), sr,
             secs, false, emit);
  };
  for (int x = 0; x < na; ++x) {
    if (p_.axis_size[x] == 1 || (p_.kept_mask & (1u << x))) continue;
    const int64_t px = p_.axis_size[x];
    if (s.reduce_mask & (1u << x)) {
      for (int e = 0; e < nd; ++e) {
        if (!divisible(e, px)) continue;
        State next = s;
        next.reduce_mask &= ~(1u << x);
        next.dims[e].push_back(x);
        uniform({EdgeKind::kReduceScatter, {x}, e, -1}, std::move(next),
                CollectiveKind::kReduceScatter, RingShare(shard_elems, px), shard_elems);
      }
      State next = s;
      next.reduce_mask &= ~(1u << x);
      all_reduce({x}, std::move(next));
    } else if (dim_of[x] < 0) {
      for (int e = 0; e < nd; ++e) {
        if (!divisible(e, px)) continue;
        State next = s;
        next.dims[e].push_back(x);
        Consider(index, node, {EdgeKind::kSlice, {x}, e, -1}, std::move(next), StepRecv{}, 0.0,
                 false, emit);
      }
    } else if (s.dims[dim_of[x]].back() == x) {
      const int d = dim_of[x];
      {
        State next = s;
        next.dims[d].pop_back();
        uniform({EdgeKind::kGather, {x}, d, -1}, std::move(next), CollectiveKind::kAllGather,
                (px - 1) * shard_elems, px * shard_elems);
      }
      // All-to-all of the last k axes of d, in order, to the end of e.
      const AxisList& list = s.dims[d];
      for (size_t k = 1; k <= list.size(); ++k) {
        AxisList suffix;
        suffix.assign(list.end() - k, list.end());
        int64_t g = 1;
        for (int a : suffix) g *= p_.axis_size[a];
        for (int e = 0; e < nd; ++e) {
          if (e == d || !divisible(e, g)) continue;
          State next = s;
          next.dims[d].resize(list.size() - k);
          next.dims[e].insert(next.dims[e].end(), suffix.begin(), suffix.end());
          uniform({EdgeKind::kAllToAll, suffix, d, e}, std::move(next), CollectiveKind::kAllToAll,
                  RingShare(shard_elems, g), shard_elems);
        }
      }
    }
  }
  // Direct all-reduce of every pending axis: each member receives the other addends of its
  // whole block at once (p-1 messages in parallel, against 2 (p-1) for a ring all-reduce;
  // more bytes when p > 2). Every rank receives its block from the p-1 others.
  if (s.reduce_mask) {
    State next = s;
    next.reduce_mask = 0;
    const std::vector<int> axes = MaskAxes(s.reduce_mask);
    const int64_t g = p_.mesh.GroupSize(axes);
    StepRecv sr;
    sr.bytes = (g - 1) * shard_elems * p_.elem;
    const double secs =
        cost_.ExchangeSeconds(g - 1, static_cast<double>(sr.bytes), cost_.Bandwidth(p_.mesh, axes));
    Consider(index, node, {EdgeKind::kReduceScatterV, axes, -1, -1}, std::move(next), sr, secs,
             true, emit, &boxes);
  }
  // Multi-axis all-reduce over two or more pending axes at once.
  const std::vector<int> pending = MaskAxes(s.reduce_mask);
  if (pending.size() >= 2) {
    const uint32_t full = (1u << pending.size()) - 1;
    for (uint32_t sub = 1; sub <= full; ++sub) {
      if (__builtin_popcount(sub) < 2) continue;
      std::vector<int> axes;
      for (size_t i = 0; i < pending.size(); ++i) {
        if (sub & (1u << i)) axes.push_back(pending[i]);
      }
      State next = s;
      next.reduce_mask &= ~AxesMask(axes);
      all_reduce(axes, std::move(next));
    }
  }
  // Permutes: reorder adjacent axes of a dimension; replace an axis by a replica axis of
  // the same size.
  auto permute = [&](Edge edge, State next) {
    StepRecv sr;
    sr.kind = StepRecv::Kind::kNewBlocks;
    sr.cur = &boxes;
    Consider(index, node, std::move(edge), std::move(next), sr, -1.0, false, emit);
  };
  for (int d = 0; d < nd; ++d) {
    const AxisList& list = s.dims[d];
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      State next = s;
      std::swap(next.dims[d][i], next.dims[d][i + 1]);
      permute({EdgeKind::kPermute, {list[i], list[i + 1]}, d, -1}, std::move(next));
    }
    for (size_t i = 0; i < list.size(); ++i) {
      for (int y = 0; y < na; ++y) {
        if (dim_of[y] >= 0 || (s.reduce_mask & (1u << y)) || (p_.kept_mask & (1u << y)) ||
            p_.axis_size[y] != p_.axis_size[list[i]]) {
          continue;
        }
        State next = s;
        next.dims[d][i] = y;
        permute({EdgeKind::kPermute, {list[i], y}, d, -1}, std::move(next));
      }
    }
  }
}

Candidate Planner::Search(const SearchConfig& cfg) {
  cfg_ = cfg;
  nodes_.clear();
  Node root;
  root.state = p_.src;
  nodes_.push_back(std::move(root));
  const Node& root_node = nodes_.front();
  std::unordered_map<std::string, Score> best_g;
  using Entry = std::pair<Score, int>;
  auto worse = [](const Entry& a, const Entry& b) {
    if (Better(a.first, b.first)) return false;
    if (Better(b.first, a.first)) return true;
    return a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> open(worse);
  open.push({Add(G(root_node), H(est_src_)), 0});
  best_g[root_node.state.Key()] = G(root_node);
  Candidate best;
  int pops = 0;
  while (!open.empty() && pops < cfg_.max_states) {
    const auto [f, index] = open.top();
    open.pop();
    if (best.node >= 0 && Better(best.score, f) && !Close(best.score.primary, f.primary)) break;
    const Node& node = nodes_[index];  // (a deque: stays valid while nodes_ grows below)
    const std::string key = node.state.Key();
    if (auto it = best_g.find(key); it != best_g.end() && Better(it->second, G(node))) continue;
    ++pops;
    const LazyBoxes boxes = LazyBoxesOf(node.state);
    Finish(index, node, boxes, &best);
    Expand(index, node, boxes, [&](Node child, const std::vector<int64_t>& lb) {
      const Score g = G(child);
      const std::string ckey = child.state.Key();
      auto it = best_g.find(ckey);
      if (it != best_g.end() && !Better(g, it->second)) return;
      best_g[ckey] = g;
      nodes_.push_back(std::move(child));
      const int ci = static_cast<int>(nodes_.size()) - 1;
      open.push({Add(g, H(lb)), ci});
    });
  }
  explored_ += pops;
  return best;
}

Candidate Planner::Baseline() {
  nodes_.clear();
  Node root;
  root.state = p_.src;
  root.recv.assign(p_.num_ranks, 0);
  nodes_.push_back(root);
  int index = 0;
  if (p_.src.reduce_mask) {
    Node child = root;
    child.parent = 0;
    child.edge.kind = EdgeKind::kAllReduce;
    child.edge.axes = MaskAxes(p_.src.reduce_mask);
    child.state.reduce_mask = 0;
    const int64_t shard = ShardElems(p_, root.state);
    const std::vector<int64_t> recv = AllReduceRecvPerRank(p_, child.edge.axes, shard);
    child.time = cost_.CollectiveSeconds(
        CollectiveKind::kAllReduce, static_cast<double>(shard * p_.elem), p_.mesh, child.edge.axes);
    child.bytes = static_cast<double>(*std::max_element(recv.begin(), recv.end()));
    child.steps = 1;
    for (int r = 0; r < p_.num_ranks; ++r) child.recv[r] += recv[r];
    nodes_.push_back(child);
    index = 1;
  }
  Candidate c;
  c.node = index;
  c.final = (p_.has_target_state && nodes_[index].state.dims == p_.tgt.dims) ? EdgeKind::kNone
                                                                             : EdgeKind::kExchange;
  c.landing = 0;
  return c;
}

}  // namespace shardscope::redist_search
