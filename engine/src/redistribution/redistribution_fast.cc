// The fast path of the redistribution planner: the regular cases planned symbolically, in
// O(axes x dims) work plus one pass per step to fill the per-rank vectors of the plan. Each
// class (moves, reduce-scatters) plans byte-optimally at the least price (no plan is cheaper;
// why: docs/redistribution.md, "The fast path"), without replaying the search. Everything else
// goes to the search, as does the single-message class (PlanSingleMessage in plan_assembly.cc).
#include <algorithm>
#include <cmath>
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

// The cheapest order of the gathers after the crossing: `cur` holds every gather axis, each
// dimension is gathered from its end, and a gather's price grows with the shard it gathers.
// Dynamic programming over the counts gathered per dimension; ties go to the lowest dimension.
// False when the orders are too many to price (then the search plans the case).
bool AppendGathers(const Context& c, DimAxes cur, std::vector<FastStep>* steps) {
  constexpr int64_t kMaxStates = 4096;
  std::vector<int> dims;      // the dimensions to gather
  std::vector<int64_t> left;  // per such dimension: its gathers
  std::vector<int64_t> stride;
  int64_t states = 1;
  for (int d = 0; d < c.nd; ++d) {
    const int64_t k = static_cast<int64_t>(cur[d].size()) - static_cast<int64_t>(c.tgt[d].size());
    if (k <= 0) continue;
    dims.push_back(d);
    left.push_back(k);
    stride.push_back(states);
    states *= k + 1;
    if (states > kMaxStates) return false;
  }
  const int n = static_cast<int>(dims.size());
  const int64_t base_shard = c.ShardElems(cur);
  // The axis that dimension i gathers after `done` of its gathers (from the end).
  auto axis = [&](int i, int64_t done) {
    const std::vector<int>& list = cur[dims[i]];
    return list[list.size() - 1 - static_cast<size_t>(done)];
  };
  std::vector<double> best(states, 0.0);  // seconds from a state to the target
  std::vector<int> choice(states, -1);
  for (int64_t s = states - 1; s >= 0; --s) {
    int64_t shard = base_shard;
    for (int i = 0; i < n; ++i) {
      const int64_t done = s / stride[i] % (left[i] + 1);
      for (int64_t j = 0; j < done; ++j) shard *= c.size[axis(i, j)];
    }
    for (int i = 0; i < n; ++i) {
      const int64_t done = s / stride[i] % (left[i] + 1);
      if (done == left[i]) continue;
      const int a = axis(i, done);
      const int64_t g = c.size[a];
      const double secs =
          c.cost.CollectiveSeconds(CollectiveKind::kAllGather,
                                   static_cast<double>(g * shard * c.elem), g, c.bw[a]) +
          best[s + stride[i]];
      if (choice[s] < 0 || (secs < best[s] && !CloseTo(secs, best[s]))) {
        best[s] = secs;
        choice[s] = i;
      }
    }
  }
  for (int64_t s = 0; choice[s] >= 0; s += stride[choice[s]]) {
    const int d = dims[choice[s]];
    const int x = cur[d].back();
    cur[d].pop_back();
    steps->push_back({FastKind::kGather, {x}, d, -1, cur, 0});
  }
  return true;
}

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
bool PlanMoves(const Context& c, uint32_t kept, uint32_t new_partial, RedistPlan* plan) {
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

  // The plan: every slice (free; each dimension's in its target order), the crossing (its
  // price is fixed once the slices are done), then the gathers in their cheapest order.
  std::vector<FastStep> steps;
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
  if (!AppendGathers(c, std::move(cur), &steps)) return false;
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
  return PlanMoves(c, kept, new_partial, plan);
}

}  // namespace shardscope::redist_internal
