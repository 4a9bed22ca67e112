// The Planner's setup, landings and final steps (planner.h): the sampled ranks, the
// layouts from which known collectives reach the target, and the irregular step into one.

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "planner.h"

namespace shardscope::redist_search {

// Bytes each rank receives in an all-reduce of n elements along `axes`: reduce-scatter of
// balanced blocks (block i one element longer for i < n % p) then all-gather, as the
// communicators count it: n + (p - 2) * block(i), i = the rank's index in its group.
std::vector<int64_t> AllReduceRecvPerRank(const Problem& p, const std::vector<int>& axes,
                                          int64_t n) {
  std::vector<int64_t> out(p.num_ranks, 0);
  int64_t g = 1;
  for (int a : axes) g *= p.axis_size[a];
  if (g <= 1) return out;
  for (int r = 0; r < p.num_ranks; ++r) {
    int64_t i = 0;
    for (int a : axes) i = i * p.axis_size[a] + p.coord(r, a);
    const int64_t block = n / g + (i < n % g ? 1 : 0);
    out[r] = (n + (g - 2) * block) * p.elem;
  }
  return out;
}

// The irregular reduce-scatter (see Planner::ReduceScatterV) from state s into boxes `into`
// for the ranks with want[r] != 0; nullopt when some wanted box is not inside its block.
std::optional<Exchange> ReduceScatterVExchange(const Problem& p, const State& s, const Boxes& boxes,
                                               const Boxes& into, const std::vector<char>& want,
                                               bool record) {
  const int d = p.num_dims;
  const int64_t* tlo = into.lo.data();
  const int64_t* thi = into.hi.data();
  for (int r = 0; r < p.num_ranks; ++r) {
    if (!want[r]) continue;
    for (int i = 0; i < d; ++i) {
      if (BoxVolume(tlo + r * d, thi + r * d, d) == 0) break;
      if (tlo[r * d + i] < boxes.lo[r * d + i] || thi[r * d + i] > boxes.hi[r * d + i])
        return std::nullopt;
    }
  }
  Exchange ex;
  ex.recv.assign(p.num_ranks, 0);
  ex.sent.assign(p.num_ranks, 0);
  ex.axes_mask = s.reduce_mask;
  const std::vector<int> axes = MaskAxes(s.reduce_mask);
  for (const std::vector<int>& g : GroupsAlong(p.mesh, axes)) {
    ex.messages = std::max<int64_t>(ex.messages, static_cast<int64_t>(g.size()) - 1);
    if (!record) {
      // Each wanting member receives its box from every other member; each member sends
      // every other wanting member its box.
      int64_t total = 0;
      for (int q : g) {
        if (want[q]) total += BoxVolume(tlo + q * d, thi + q * d, d);
      }
      for (int q : g) {
        const int64_t v = want[q] ? BoxVolume(tlo + q * d, thi + q * d, d) : 0;
        ex.recv[q] += static_cast<int64_t>(g.size() - 1) * v * p.elem;
        ex.sent[q] += (total - v) * p.elem;
        if (v > 0) ex.num_transfers += static_cast<int64_t>(g.size()) - 1;
      }
      continue;
    }
    for (int q : g) {
      if (!want[q]) continue;
      const int64_t v = BoxVolume(tlo + q * d, thi + q * d, d);
      if (v == 0) continue;
      for (int m : g) {
        if (m == q) continue;
        RedistTransfer t;
        t.src = m;
        t.dst = q;
        t.offset.assign(tlo + q * d, tlo + q * d + d);
        t.extent.resize(d);
        for (int i = 0; i < d; ++i) t.extent[i] = thi[q * d + i] - tlo[q * d + i];
        ex.recv[q] += v * p.elem;
        ex.sent[m] += v * p.elem;
        ex.transfers.push_back(std::move(t));
        ++ex.num_transfers;
      }
    }
  }
  for (int r = 0; r < p.num_ranks; ++r) {
    ex.max_recv = std::max(ex.max_recv, ex.recv[r]);
    ex.max_sent = std::max(ex.max_sent, ex.sent[r]);
  }
  return ex;
}

// Its transfers as a lazy list of `count`.
RedistTransfers LazyReduceScatterVTransfers(const Problem& p, const State& s, const Boxes& boxes,
                                            const Boxes& into, const std::vector<char>& want,
                                            int64_t count) {
  struct Args {
    Problem p;
    State s;
    Boxes boxes, into;
    std::vector<char> want;
  };
  auto args = std::make_shared<const Args>(Args{p, s, boxes, into, want});
  return RedistTransfers::Lazy(count, [args] {
    return ReduceScatterVExchange(args->p, args->s, args->boxes, args->into, args->want, true)
        ->transfers;
  });
}

Planner::Planner(const Problem& p, const CostModel& cost, SourceExchange source_into_target)
    : p_(p), cost_(cost) {
  bw_max_ = cost.MaxBandwidth(p.mesh);
  axis_bw_.reserve(p.num_axes);
  for (int a = 0; a < p.num_axes; ++a) axis_bw_.push_back(cost.AxisBandwidth(p.mesh.axis_name(a)));
  if (source_into_target.counted) {
    est_src_ = source_into_target.ex.recv;
    source_into_target_ = std::move(source_into_target.ex);
  }
  if (est_src_.empty()) est_src_ = redist_internal::SearchEstimate(p, p.src, p.source());
  // A fixed sample of ranks (deterministic) for the cheap rejection of non-tight states;
  // every rank on small meshes.
  std::vector<int> ranks;
  ranks.reserve(32);
  if (p.num_ranks <= 32) {
    for (int r = 0; r < p.num_ranks; ++r) ranks.push_back(r);
  } else {
    std::vector<int> pos = {0, p.num_ranks - 1};
    pos.reserve(16);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 14; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      pos.push_back(static_cast<int>((x >> 33) % static_cast<uint64_t>(p.num_ranks)));
    }
    std::sort(pos.begin(), pos.end());
    pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
    for (int q : pos) ranks.push_back(p.rank_of_pos[q]);
  }
  samples_.resize(ranks.size());
  for (size_t j = 0; j < ranks.size(); ++j) {
    samples_[j].rank = ranks[j];
    samples_[j].sample = static_cast<int>(j);
    // The coordinates from the grid position, last axis fastest (a shift and a mask per
    // axis on power-of-two meshes: divisions were most of this constructor's time).
    int64_t pos = p.pos_of_rank[ranks[j]];
    for (int a = p.num_axes - 1; a >= 0; --a) {
      const int64_t size = p.axis_size[a];
      if ((size & (size - 1)) == 0) {
        samples_[j].coord[a] = static_cast<int32_t>(pos & (size - 1));
        pos >>= __builtin_ctzll(static_cast<uint64_t>(size));
      } else {
        samples_[j].coord[a] = static_cast<int32_t>(pos % size);
        pos /= size;
      }
    }
  }
  // The samples' target boxes: every candidate's sample check reads them.
  if (p.num_dims <= kMaxSampleDims) {
    const int d = p.num_dims;
    sample_target_lo_.resize(samples_.size() * d);
    sample_target_hi_.resize(samples_.size() * d);
    for (const RankCoords& r : samples_) {
      int64_t* lo = sample_target_lo_.data() + r.sample * d;
      int64_t* hi = sample_target_hi_.data() + r.sample * d;
      if (p.has_target_state) {
        BoxOfRank(p, p.tgt, r, lo, hi);
      } else {
        std::copy_n(p.target().lo.data() + r.rank * d, d, lo);
        std::copy_n(p.target().hi.data() + r.rank * d, d, hi);
      }
    }
  }
  BuildLandings();
}

Exchange Planner::ExchangeInto(const State& s, const Boxes& boxes, size_t i) const {
  if (std::optional<Exchange> ex = CountedExchangeInto(s, i)) return std::move(*ex);
  const Boxes& lb = LandingBoxes(i);
  return redist_internal::ComputeExchange(p_, s, boxes, lb.lo, lb.hi, Want(i),
                                          /*record=*/false);
}

void Planner::CompleteExchangeInto(const State& s, size_t i, Exchange* receiving) const {
  const bool covered = redist_internal::CountExchange(
      p_, s, &landings_[i].x,
      {.zero_mask = i == 0 ? p_.new_partial_mask : 0, .part = CountPart::kSending}, receiving);
  assert(covered);  // as the receiving side
  (void)covered;
}

void Planner::Finish(int index, const Node& node, const LazyBoxes& boxes, Candidate* best) const {
  const double alpha = cost_.latency_s;
  const int d = p_.num_dims;
  for (size_t i = 0; i < landings_.size(); ++i) {
    const Landing& l = landings_[i];
    Score rest;
    rest.primary = cfg_.bytes_first ? l.bytes : l.time;
    rest.secondary = cfg_.bytes_first ? l.time : l.bytes;
    rest.steps = l.steps;
    if (node.state.reduce_mask == 0 && p_.has_target_state && node.state.dims == l.x.dims) {
      if (i == 0 || Fits(node.recv, nullptr, l.recv)) {
        Offer(best, index, EdgeKind::kNone, static_cast<int>(i), Add(G(node), rest));
      }
      continue;
    }
    // Cheap bound first: the suffix plus at least one message.
    Score floor = Add(G(node), rest);
    floor.primary += cfg_.bytes_first ? 0 : alpha;
    if (best->node >= 0 && Better(best->score, floor) && i > 0) continue;
    std::optional<Exchange> ex;
    EdgeKind kind;
    bool within_bound = false;  // known without a check: the root receiving the bound itself
    if (node.state.reduce_mask == 0) {
      // The exchange receives exactly the missing elements: check the bound on a sample of
      // ranks, then on all, and the price floor before building it.
      if (cfg_.tight && Sampled()) {
        bool fits = true;
        for (const RankCoords& r : samples_) {
          if (!Want(i)[r.rank]) continue;
          int64_t lo[kMaxSampleDims], hi[kMaxSampleDims], nlo[kMaxSampleDims], nhi[kMaxSampleDims];
          if (i == 0) {
            TargetBoxOf(r, lo, hi);
          } else if (l.boxes) {
            const Boxes& lb = LandingBoxes(i);
            std::copy_n(lb.lo.data() + r.rank * d, d, lo);
            std::copy_n(lb.hi.data() + r.rank * d, d, hi);
          } else {
            BoxOfRank(p_, l.x, r, lo, hi);
          }
          boxes.Of(r, nlo, nhi);
          const int64_t missing =
              (BoxVolume(lo, hi, d) - IntersectVolume(lo, hi, nlo, nhi, d)) * p_.elem;
          if (node.RecvOf(r.rank) + missing + l.recv > est_src_[r.rank] + cfg_.tolerance) {
            fits = false;
            break;
          }
        }
        if (!fits) continue;
      }
      // The exchange's counts in closed form when the landing is a state (its receive counts
      // are the missing bytes); else the missing bytes first, the exchange if still in play.
      // (From the source into the target, counted already: taken, not copied; a second
      // search counts again.)
      // (Other exchanges: the receiving side first, the sending side for survivors.)
      std::optional<Exchange> counted;
      bool complete = true;
      if (i == 0 && source_into_target_ && node.state == p_.src) {
        counted = std::move(source_into_target_);
        source_into_target_.reset();
        within_bound = node.steps == 0;
      } else {
        bool exceeds = false;
        counted = CountedExchangeIntoWithin(node.state, i, node.recv, nullptr, l.recv, &exceeds);
        if (exceeds) continue;  // the bound is out of reach through this landing
        complete = false;
      }
      int64_t peers = 0;
      std::vector<int64_t> missing_bytes;
      if (counted) {
        peers = counted->max_recv_peers;
      } else {
        missing_bytes = MissingBytes(boxes.all(), i, &peers);
      }
      const std::vector<int64_t>& missing = counted ? counted->recv : missing_bytes;
      if (!within_bound && !Fits(node.recv, &missing, l.recv)) continue;
      const int64_t m = counted ? counted->max_recv : MaxOf(missing);
      // Each block a rank lacks comes from a different peer: at least `peers` messages.
      Score floor2 = floor;
      floor2.primary += cfg_.bytes_first
                            ? static_cast<double>(m)
                            : static_cast<double>(m) / bw_max_ +
                                  static_cast<double>(std::max<int64_t>(0, peers - 1)) * alpha;
      if (best->node >= 0 && Better(best->score, floor2)) continue;
      if (counted && !complete) CompleteExchangeInto(node.state, i, &*counted);
      ex = counted ? std::move(counted) : ExchangeInto(node.state, boxes.all(), i);
      kind = EdgeKind::kExchange;
    } else {
      ex = ReduceScatterV(node.state, boxes.all(), i, /*record=*/false);
      kind = EdgeKind::kReduceScatterV;
    }
    if (!ex || (!within_bound && !Fits(node.recv, &ex->recv, l.recv))) continue;
    Score sc = Add(G(node), StepScore(ExchangeSeconds(*ex), static_cast<double>(ex->max_recv), 1));
    sc = Add(sc, rest);
    if (!Accepts(*best, sc)) continue;
    Offer(best, index, kind, static_cast<int>(i), sc,
          kind == EdgeKind::kExchange ? std::make_shared<Exchange>(std::move(*ex)) : nullptr);
  }
}

std::vector<int64_t> Planner::MissingBytes(const Boxes& boxes, size_t i, int64_t* peers) const {
  const std::vector<char>& want = Want(i);
  const Boxes& lb = LandingBoxes(i);
  const int d = p_.num_dims;
  std::vector<int64_t> out(p_.num_ranks, 0);
  int64_t most = 0;
  for (int r = 0; r < p_.num_ranks; ++r) {
    if (!want[r]) continue;
    const int64_t* lo = lb.lo.data() + r * d;
    const int64_t* hi = lb.hi.data() + r * d;
    const int64_t vol = BoxVolume(lo, hi, d);
    const int64_t have =
        IntersectVolume(lo, hi, boxes.lo.data() + r * d, boxes.hi.data() + r * d, d);
    out[r] = (vol - have) * p_.elem;
    if (vol == 0 || vol == have) continue;
    int64_t count = 1;
    for (int k = 0; k < d; ++k) {
      count *= (hi[k] - 1) / boxes.block_size[k] - lo[k] / boxes.block_size[k] + 1;
    }
    most = std::max(most, count - (have > 0 ? 1 : 0));
  }
  *peers = most;
  return out;
}

bool Planner::Fits(const std::vector<int64_t>& a, const std::vector<int64_t>* b, int64_t c) const {
  if (!cfg_.tight) return true;
  const int64_t slack = cfg_.tolerance - c;
  const int64_t* bound = est_src_.data();
  const int64_t* x = a.empty() ? nullptr : a.data();
  const int64_t* y = b ? b->data() : nullptr;
  const int n = p_.num_ranks;
  // In blocks without an early exit inside (so that they vectorize): most calls pass.
  constexpr int kBlock = 64;
  for (int start = 0; start < n; start += kBlock) {
    const int end = std::min(n, start + kBlock);
    bool over = false;
    if (x && y) {
      for (int r = start; r < end; ++r) over |= x[r] + y[r] > bound[r] + slack;
    } else if (x || y) {
      const int64_t* z = x ? x : y;
      for (int r = start; r < end; ++r) over |= z[r] > bound[r] + slack;
    } else {
      for (int r = start; r < end; ++r) over |= 0 > bound[r] + slack;
    }
    if (over) return false;
  }
  return true;
}

void Planner::BuildLandings() {
  Landing t;
  if (p_.has_target_state) t.x = p_.tgt;
  t.signature = DimsSignature(t.x.dims);
  if (p_.has_target_state) t.shard = ShardElems(p_, t.x);
  landings_.push_back(std::move(t));
  if (!p_.has_target_state) return;
  constexpr size_t kMaxLandings = 24;
  constexpr int kMaxDepth = 2;
  landings_.reserve(kMaxLandings);  // references into it stay valid below
  size_t begin = 0;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const size_t end = landings_.size();
    for (size_t i = begin; i < end && landings_.size() < kMaxLandings; ++i) {
      const Landing& y = landings_[i];
      // (The edge is built only for a new landing: most candidates are seen already.)
      // `shard`: x's shard elements (from y's: a reversed gather divides it by the axis, a
      // reversed all-to-all keeps it).
      auto add = [&](const State& x, int64_t shard, EdgeKind kind, const uint8_t* axes,
                     size_t num_axes, int dim, int dim_to) {
        if (landings_.size() >= kMaxLandings) return;
        const uint64_t signature = DimsSignature(x.dims);
        for (const Landing& seen : landings_) {
          if (seen.signature == signature && seen.x.dims == x.dims) return;
        }
        assert(shard == ShardElems(p_, x));
        if (shard > p_.max_shard_elems) return;
        // (In place: a Landing is a few hundred bytes; `y` stays valid, see reserve above.)
        Landing& l = landings_.emplace_back();
        l.x = x;
        l.signature = signature;
        l.shard = shard;
        Edge& e = l.edge;
        e = Edge{kind, {}, dim, dim_to};
        e.axes.assign(axes, axes + num_axes);
        int64_t g = 1;
        for (size_t j = 0; j < num_axes; ++j) g *= p_.axis_size[axes[j]];
        int64_t recv = 0;
        double secs = 0;
        const double n = static_cast<double>(shard * p_.elem);
        if (e.kind == EdgeKind::kGather) {
          recv = (g - 1) * shard;
          secs = CollectiveSeconds(CollectiveKind::kAllGather, n * g, e.axes);
        } else if (e.kind == EdgeKind::kAllToAll) {
          recv = RingShare(shard, g);
          secs = CollectiveSeconds(CollectiveKind::kAllToAll, n, e.axes);
        }
        l.next = static_cast<int>(i);
        l.recv = y.recv + recv * p_.elem;
        l.time = y.time + secs;
        l.bytes = y.bytes + static_cast<double>(recv * p_.elem);
        l.steps = y.steps + 1;
      };
      const State& ys = y.x;
      int dim_of[32];  // per mesh axis (masks bound them to 32)
      std::fill(dim_of, dim_of + p_.num_axes, -1);
      for (int d = 0; d < p_.num_dims; ++d) {
        for (int a : ys.dims[d]) dim_of[a] = d;
      }
      for (int d = 0; d < p_.num_dims; ++d) {
        int64_t blocks = 1;
        for (int a : ys.dims[d]) blocks *= p_.axis_size[a];
        // Reversed gather: a replica axis of y appended to d.
        for (int x = 0; x < p_.num_axes; ++x) {
          if (dim_of[x] >= 0 || p_.axis_size[x] == 1 || (p_.kept_mask & (1u << x))) continue;
          if (p_.shape[d] % (blocks * p_.axis_size[x]) != 0) continue;
          State xs = ys;
          xs.dims[d].push_back(x);
          const uint8_t axis = static_cast<uint8_t>(x);
          add(xs, y.shard / p_.axis_size[x], EdgeKind::kGather, &axis, 1, d, -1);
        }
        // Reversed all-to-all: the last k axes of d moved to the end of e.
        const AxisList& list = ys.dims[d];
        for (size_t k = 1; k <= list.size(); ++k) {
          const uint8_t* suffix = list.end() - k;
          int64_t g = 1;
          for (size_t j = 0; j < k; ++j) g *= p_.axis_size[suffix[j]];
          for (int e = 0; e < p_.num_dims; ++e) {
            if (e == d) continue;
            int64_t be = 1;
            for (int a : ys.dims[e]) be *= p_.axis_size[a];
            if (p_.shape[e] % (be * g) != 0) continue;
            State xs = ys;
            xs.dims[d].resize(list.size() - k);
            xs.dims[e].insert(xs.dims[e].end(), suffix, suffix + k);
            add(xs, y.shard, EdgeKind::kAllToAll, suffix, k, e, d);
          }
        }
      }
    }
    begin = end;
  }
}

const Boxes& LazyBoxes::all() const {
  if (!boxes_) boxes_ = planner_.BoxesFor(s_);
  return *boxes_;
}

}  // namespace shardscope::redist_search
