// The fast path of the redistribution planner: the regular cases planned symbolically, in
// O(axes x dims) work plus one pass per step to fill the per-rank vectors of the plan.
//
// Scope. The meshes unify; nothing is to be reduced (every partial axis of the source stays
// partial in the target); and, on the unified mesh M, every tensor dimension d is
// "prefix-related": after the longest common prefix P_d of its source list S_d and target list
// T_d, one of the two rests is empty, except for one group of axes mu that may move, in
// order, from the end of one dimension to the end of another:
//   - slice axes: in the rest of some T_d, used by no dimension of the source;
//   - gather axes: in the rest of some S_d, used by no dimension of the target;
//   - mu: the last axes of S_d and, in the same order, the last axes of T_e (e != d); then
//     T_d = P_d (d only loses axes) and S_e = P_e (e only gains axes);
//   - no other axis changes dimension or position.
// With new partial axes in the target (zero addends), only plans without traffic are covered
// (slices only). Everything else (partial sums to reduce, reordered axes, several moving
// groups, non-unifiable meshes, byte_optimal == false) goes to the search.
//
// The plan: every slice (lowest axis first, each dimension's in its target order), then one
// all-to-all of mu from d to e, then every gather (each dimension's from its end), in the
// order of least price (a small dynamic program over the gather orders; ties: the cheaper
// step first, then the lower axis).
//
// Why this is the search's plan. Without partial sums the search keeps only plans receiving
// exactly the lower bound on every rank ("tight" plans): rank r receives only elements of its
// target block T(r) it does not hold in its source block S(r), each once, and never drops an
// element of S(r) n T(r). So every layout X a tight plan passes through (a state, or a
// landing an irregular exchange lands in) satisfies, for every rank,
//     S(r) n T(r)  is in  X(r)  is in  S(r) u T(r).                                  (1)
// In every dimension here one of S_d, T_d is a prefix of the other, so S(r) n T(r) is, in
// each dimension, the block of the longer list M_d. Mesh axes are independent coordinates,
// so a block along a list L contains the block along M_d on every rank only if L is a prefix
// of M_d. Likewise, since each dimension is nested, a box inside S(r) u T(r) lies inside S(r)
// or inside T(r) (if x is in X \ S and y in X \ T, they differ from S and T in different
// dimensions, and mixing their coordinates gives a point of X outside both). Hence the only
// layouts satisfying (1) are
//   S-side: S with some of the slices applied (each dimension's in its target order), and
//   T-side: T with some of the gathers not yet done (each dimension's from its end).
// A tight plan therefore applies slices, crosses once from an S-side layout to a T-side one,
// then gathers. The crossing changes dimensions d and e at once, so it is the all-to-all of
// mu (with every slice done before it), or a gather when mu is empty, or an irregular
// exchange. No edge of the search other than slices, gathers, that all-to-all and exchanges
// keeps (1): an all-to-all of other axes, a permute or a multi-axis step breaks a prefix.
//
// Exchanges never win. An exchange from X to Y receives, on every rank, the elements of
// Y(r) outside X(r); Y(r) covers prod(g) blocks of X (the product over the axes it removes,
// mu included) and each comes from a different owner, so it needs at least prod(g) - 1
// messages, against sum(g - 1) <= prod(g) - 1 for the all-to-all and gathers it replaces;
// it receives the same bytes, at the bandwidth of the slowest axis involved, never faster
// than each collective's own. So it costs at least as much and, on a tie, loses to the
// structured plan (fewer irregular steps). Among structured tight plans the slices are free
// and their order only breaks ties; the gather order is optimised exactly.
//
// The bytes: every step is uniform, the plan receives on every rank
//     |T| - |S n T| elements  (block sizes are uniform),
// which is the lower bound, computed here in closed form. The memory cap holds: S-side
// layouts are finer than S, T-side layouts finer than T.
//
// tests/engine/layout/redistribution_property_test.cc checks all this against the search on
// thousands of random cases: same price, same bytes on every rank, same bounds, and the
// plans simulated.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/redistribution.h"

namespace shardscope::redist_internal {

namespace {

enum class FastKind { kSlice, kAllToAll, kGather };

struct FastStep {
  FastKind kind;
  std::vector<int> axes;
  int dim = -1;
  int dim_to = -1;
};

bool CloseTo(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-18;
}

// The gathers after the crossing: per dimension, the axes to pop, last first. Finds the
// cheapest order by a dynamic program over how many each dimension has popped.
class GatherOrder {
 public:
  GatherOrder(std::vector<int> dims, std::vector<std::vector<int>> chains, int64_t shard,
              int64_t elem, const std::vector<int64_t>& size, const std::vector<double>& bw,
              const CostModel& cost)
      : dims_(std::move(dims)),
        chains_(std::move(chains)),
        shard_(shard),
        elem_(elem),
        size_(size),
        bw_(bw),
        cost_(cost) {
    radix_.resize(chains_.size());
    int64_t states = 1;
    for (size_t i = 0; i < chains_.size(); ++i) {
      radix_[i] = states;
      states *= static_cast<int64_t>(chains_[i].size()) + 1;
    }
    best_.assign(states, -1.0);
  }

  // The order as (dimension, axis) pairs.
  std::vector<std::pair<int, int>> Order() {
    std::vector<std::pair<int, int>> out;
    std::vector<int> popped(chains_.size(), 0);
    int64_t shard = shard_;
    while (true) {
      int pick = -1;
      double pick_step = 0;
      const double best = Best(popped, shard);
      for (size_t i = 0; i < chains_.size(); ++i) {
        if (popped[i] == static_cast<int>(chains_[i].size())) continue;
        const int x = chains_[i][popped[i]];
        const double step = StepSeconds(x, shard);
        ++popped[i];
        const double rest = Best(popped, shard * size_[x]);
        --popped[i];
        if (!CloseTo(step + rest, best)) continue;
        if (pick < 0 || (!CloseTo(step, pick_step) && step < pick_step) ||
            (CloseTo(step, pick_step) && x < chains_[pick][popped[pick]])) {
          pick = static_cast<int>(i);
          pick_step = step;
        }
      }
      if (pick < 0) break;
      const int x = chains_[pick][popped[pick]];
      out.emplace_back(dims_[pick], x);
      ++popped[pick];
      shard *= size_[x];
    }
    return out;
  }

 private:
  double StepSeconds(int axis, int64_t shard) const {
    const int64_t g = size_[axis];
    return cost_.CollectiveSeconds(CollectiveKind::kAllGather,
                                   static_cast<double>(g * shard * elem_), g, bw_[axis]);
  }
  // The least price of the remaining gathers from `popped` (shard = current shard).
  double Best(std::vector<int>& popped, int64_t shard) {
    int64_t key = 0;
    for (size_t i = 0; i < chains_.size(); ++i) key += popped[i] * radix_[i];
    if (best_[key] >= 0) return best_[key];
    double best = 0;
    bool any = false;
    for (size_t i = 0; i < chains_.size(); ++i) {
      if (popped[i] == static_cast<int>(chains_[i].size())) continue;
      const int x = chains_[i][popped[i]];
      ++popped[i];
      const double c = StepSeconds(x, shard) + Best(popped, shard * size_[x]);
      --popped[i];
      if (!any || c < best) best = c;
      any = true;
    }
    best_[key] = best;
    return best;
  }

  std::vector<int> dims_;
  std::vector<std::vector<int>> chains_;
  int64_t shard_;
  int64_t elem_;
  const std::vector<int64_t>& size_;
  const std::vector<double>& bw_;
  const CostModel& cost_;
  std::vector<int64_t> radix_;
  std::vector<double> best_;
};

}  // namespace

bool PlanFast(const Setup& setup, const CostModel& cost, const RedistOptions& options,
              RedistPlan* plan) {
  if (!setup.unified || !options.byte_optimal) return false;
  const Layout& from = setup.from_m();
  const Layout& to = setup.to_m();
  const DeviceMesh& mesh = setup.mesh;
  const int nd = from.rank();
  const int na = mesh.num_axes();
  const uint32_t from_partial = AxesMask(from.partial_axes());
  const uint32_t to_partial = AxesMask(to.partial_axes());
  if (from_partial & ~to_partial) return false;  // partial sums to reduce: the search
  const uint32_t kept = from_partial & to_partial;
  const uint32_t new_partial = to_partial & ~from_partial;
  const DimAxes& src = from.dims_axes();
  const DimAxes& tgt = to.dims_axes();
  const Shape& shape = from.shape();

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

  const int64_t elem = setup.elem;
  std::vector<int64_t> size(na);
  std::vector<double> bw(na);
  for (int a = 0; a < na; ++a) {
    size[a] = mesh.axis_size(a);
    bw[a] = cost.AxisBandwidth(mesh.axis_name(a));
  }
  auto bandwidth = [&](const std::vector<int>& axes) {
    if (axes.empty()) return cost.default_bandwidth;
    double b = -1;
    for (int a : axes) b = b < 0 ? bw[a] : std::min(b, bw[a]);
    return b;
  };
  auto blocks_of = [&](const std::vector<int>& axes) {
    int64_t b = 1;
    for (int a : axes) b *= size[a];
    return b;
  };

  // The steps and the layouts after them.
  std::vector<FastStep> steps;
  std::vector<DimAxes> afters;
  DimAxes cur = src;
  // 1. Slices: lowest axis first among each dimension's next one (the search's order).
  std::vector<size_t> next(nd);
  for (int d = 0; d < nd; ++d) next[d] = cur[d].size();
  while (true) {
    int pick_dim = -1;
    for (int d = 0; d < nd; ++d) {
      if (src[d].size() != prefix[d]) continue;  // not a slice dimension
      const size_t end = d == move_to ? tgt[d].size() - moved : tgt[d].size();
      if (next[d] >= end) continue;
      if (pick_dim < 0 || tgt[d][next[d]] < tgt[pick_dim][next[pick_dim]]) pick_dim = d;
    }
    if (pick_dim < 0) break;
    const int x = tgt[pick_dim][next[pick_dim]++];
    cur[pick_dim].push_back(x);
    steps.push_back({FastKind::kSlice, {x}, pick_dim, -1});
    afters.push_back(cur);
  }
  // 2. The all-to-all of mu.
  if (!mu.empty()) {
    cur[move_from].resize(cur[move_from].size() - mu.size());
    cur[move_to].insert(cur[move_to].end(), mu.begin(), mu.end());
    steps.push_back({FastKind::kAllToAll, mu, move_from, move_to});
    afters.push_back(cur);
  }
  // 3. Gathers.
  int64_t shard = 1;
  for (int d = 0; d < nd; ++d) shard *= shape[d] / blocks_of(cur[d]);
  {
    std::vector<int> gdims;
    std::vector<std::vector<int>> chains;
    int total = 0;
    for (int d = 0; d < nd; ++d) {
      if (cur[d].size() <= tgt[d].size()) continue;
      gdims.push_back(d);
      chains.emplace_back(cur[d].rbegin(),
                          cur[d].rbegin() + static_cast<std::ptrdiff_t>(cur[d].size() -
                                                                         tgt[d].size()));
      total += static_cast<int>(chains.back().size());
    }
    if (total > 12) return false;  // the dynamic program would be too big: the search
    GatherOrder order(gdims, chains, shard, elem, size, bw, cost);
    for (const auto& [d, x] : order.Order()) {
      cur[d].pop_back();
      steps.push_back({FastKind::kGather, {x}, d, -1});
      afters.push_back(cur);
    }
  }
  if (cur != tgt) return false;  // cannot happen: the classification reaches the target

  // The plan. Bytes per step are uniform over the ranks.
  const int n = mesh.size();
  const int64_t src_shard = NumElements(setup.from->ShardShape());
  const int64_t tgt_shard = NumElements(setup.to->ShardShape());
  const int64_t cap = std::max(src_shard, tgt_shard);
  ReasonContext rc;
  rc.mesh = &mesh;
  rc.target = &tgt;
  const std::vector<int> kept_axes = MaskAxes(kept);
  plan->from = *setup.from;
  plan->to = *setup.to;
  plan->mesh = mesh;
  plan->meshes_unified = true;
  plan->element_bytes = elem;
  plan->steps.clear();
  plan->steps.reserve(steps.size() + 1);
  int64_t recv_total = 0;
  double seconds_total = 0;
  shard = src_shard;
  for (size_t k = 0; k < steps.size(); ++k) {
    const FastStep& fs = steps[k];
    RedistStep st;
    st.axes = fs.axes;
    for (int a : st.axes) st.axis_names.push_back(mesh.axis_name(a));
    st.dim = fs.dim;
    st.dim_to = fs.dim_to;
    const int64_t g = blocks_of(fs.axes);
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
        st.seconds = cost.CollectiveSeconds(CollectiveKind::kAllToAll,
                                            static_cast<double>(shard * elem), g,
                                            bandwidth(fs.axes));
        st.reason = AllToAllReason(rc, fs.axes, fs.dim, fs.dim_to);
        break;
      case FastKind::kGather:
        st.kind = RedistStep::Kind::kAllGather;
        recv = (g - 1) * shard;
        next_shard = shard * g;
        st.messages = g - 1;
        st.seconds = cost.CollectiveSeconds(CollectiveKind::kAllGather,
                                            static_cast<double>(g * shard * elem), g,
                                            bandwidth(fs.axes));
        st.reason = GatherReason(rc, fs.axes[0], fs.dim);
        break;
    }
    if (next_shard > cap) return false;  // cannot happen (see top)
    if (fs.kind != FastKind::kSlice) st.groups = GroupsAlong(mesh, fs.axes);
    st.bytes_recv.assign(n, recv * elem);
    st.bytes_sent.assign(n, recv * elem);
    st.bytes_recv_per_rank = recv * elem;
    st.bytes_sent_per_rank = recv * elem;
    Result<Layout> after = Layout::Create(mesh, afters[k], kept_axes, shape);
    if (!after.ok()) return false;
    st.after = std::move(after).value();
    recv_total += recv * elem;
    seconds_total += st.seconds;
    shard = next_shard;
    plan->steps.push_back(std::move(st));
  }
  std::vector<int> zero_ranks;
  if (new_partial) {
    // Ranks with a nonzero index along a new partial axis become zero addends.
    const std::vector<int> ranks = mesh.rank_list();
    std::vector<int64_t> c(na, 0);
    for (int pos = 0; pos < n; ++pos) {
      bool zero = false;
      for (int a = 0; a < na; ++a) zero |= ((new_partial >> a) & 1u) && c[a] != 0;
      if (zero) zero_ranks.push_back(ranks[pos]);
      for (int a = na - 1; a >= 0; --a) {
        if (++c[a] < size[a]) break;
        c[a] = 0;
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

  // The lower bound in closed form: |T| - |S n T| elements on every rank (nested blocks), 0
  // on zero addends (only plans without traffic get here with them, where it is 0 anyway).
  int64_t overlap = 1;
  for (int d = 0; d < nd; ++d) {
    overlap *= std::min(shape[d] / blocks_of(src[d]), shape[d] / blocks_of(tgt[d]));
  }
  const int64_t bound = (tgt_shard - overlap) * elem;
  if (bound != recv_total) return false;  // cannot happen (see top)
  plan->recv_bytes.assign(n, recv_total);
  plan->lower_bound.assign(n, bound);
  plan->planned_bytes = recv_total;
  plan->lower_bound_bytes = bound;
  plan->total_planned_bytes = recv_total * n;
  plan->total_lower_bound_bytes = bound * n;
  plan->byte_optimal = true;
  plan->bounded_search = true;
  plan->bound_slack_bytes = 0;
  plan->predicted_seconds = seconds_total;
  plan->states_explored = 0;
  return true;
}

}  // namespace shardscope::redist_internal
