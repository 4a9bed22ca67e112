// Plan assembly (redistribution.h, PlanRedistribution): the search's best candidate as
// steps with reasons, groups and byte totals; the single-message path; the entry point.

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "planner.h"
#include "shardscope/base/format.h"

namespace shardscope {

namespace redist_search {
namespace {

bool TargetHasAxisInDim(const Problem& p, int axis, int dim) {
  if (!p.has_target_state) return false;
  const auto& list = p.tgt.dims[dim];
  return std::find(list.begin(), list.end(), axis) != list.end();
}

int TargetDimOfAxis(const Problem& p, int axis) {
  if (!p.has_target_state) return -1;
  for (int d = 0; d < p.num_dims; ++d) {
    if (TargetHasAxisInDim(p, axis, d)) return d;
  }
  return -1;
}

std::string Reason(const Problem& p, const Edge& e, const State& before, const Exchange* ex) {
  const DeviceMesh& m = p.mesh;
  // The target's dimensions as the shared reason texts take them (built only for those).
  DimAxes target_dims;
  auto context = [&] {
    redist_internal::ReasonContext rc;
    rc.mesh = &p.mesh;
    if (p.has_target_state) {
      target_dims = p.tgt.dims;
      rc.target = &target_dims;
    }
    return rc;
  };
  switch (e.kind) {
    case EdgeKind::kSlice:
      return redist_internal::SliceReason(context(), e.axes[0], e.dim);
    case EdgeKind::kGather:
      return redist_internal::GatherReason(context(), e.axes[0], e.dim);
    case EdgeKind::kAllToAll:
      return redist_internal::AllToAllReason(context(), e.axes, e.dim, e.dim_to);
    case EdgeKind::kReduceScatter:
      return redist_internal::ReduceScatterReason(context(), e.axes[0], e.dim);
    case EdgeKind::kAllReduce: {
      const std::string ax = AxesName(m, e.axes);
      std::string why = "the tensor is a partial sum over " + ax + " that the target needs whole";
      bool any_split = false;
      for (int a : e.axes) any_split |= TargetDimOfAxis(p, a) >= 0;
      if (!any_split) why += " on every rank along " + ax;
      return why + ": all-reduce";
    }
    case EdgeKind::kPermute: {
      const std::string dim = "dimension " + std::to_string(e.dim);
      if (before.dims[e.dim].size() >= 2 &&
          std::find(before.dims[e.dim].begin(), before.dims[e.dim].end(), e.axes[1]) !=
              before.dims[e.dim].end()) {
        return "the same blocks belong to other ranks: the order of axes " + AxesName(m, e.axes) +
               " in " + dim + " is swapped; point-to-point permutation";
      }
      return "the same blocks belong to other ranks: " + dim + " is split over " +
             m.axis_name(e.axes[1]) + " instead of " + m.axis_name(e.axes[0]) +
             " (same size); point-to-point permutation";
    }
    case EdgeKind::kExchange: {
      std::string why;
      if (!p.unified) {
        why =
            "the meshes have no common refinement (unrelated rank orders), so no collective "
            "along mesh axes fits: ";
      } else if (ex && ex->is_permute) {
        why =
            "each rank's target block is held whole by one other rank (same blocks, other "
            "ranks): ";
      } else {
        why =
            "no sequence of collectives along mesh axes reaches the target at the lower "
            "bound from here: ";
      }
      if (ex && ex->is_permute) return why + "send each block to its new owner";
      why += "each rank receives exactly the elements of its target shard it lacks";
      if (ex) why += " (from up to " + std::to_string(ex->messages) + " peers)";
      if (!p.zero_ranks.empty()) why += "; ranks that end as zero addends receive nothing";
      return why;
    }
    case EdgeKind::kZeroFill:
      return redist_internal::ZeroFillReason();
    case EdgeKind::kReduceScatterV:
    case EdgeKind::kNone:
      break;
  }
  return "";
}

// Sets the plan's maxima and sums over ranks of recv_bytes and lower_bound (both filled, of
// equal length) and byte_optimal.
void SetByteTotals(RedistPlan* plan) {
  const int64_t* recv = plan->recv_bytes.data();
  const int64_t* bound = plan->lower_bound.data();
  const size_t n = plan->recv_bytes.size();
  assert(plan->lower_bound.size() == n);
  // (Plain integer reductions in one loop: it vectorizes.)
  int64_t recv_max = 0, bound_max = 0, recv_sum = 0, bound_sum = 0, over = 0;
  for (size_t r = 0; r < n; ++r) {
    recv_max = std::max(recv_max, recv[r]);
    bound_max = std::max(bound_max, bound[r]);
    recv_sum += recv[r];
    bound_sum += bound[r];
    over |= recv[r] > bound[r];
  }
  const bool within = over == 0;
  plan->planned_bytes = recv_max;
  plan->lower_bound_bytes = bound_max;
  plan->total_planned_bytes = recv_sum;
  plan->total_lower_bound_bytes = bound_sum;
  plan->byte_optimal = within;
}

// Takes the candidate's exchange and the planner's bound (both done with once assembled).
Result<RedistPlan> Assemble(const Problem& p, const CostModel& cost, Planner& planner,
                            Candidate cand) {
  RedistPlan plan;
  plan.from = *p.from;
  plan.to = *p.to;
  // (plan.mesh: the caller moves the problem's mesh in once the plan is assembled.)
  plan.meshes_unified = p.unified;
  plan.element_bytes = p.elem;
  const int n = p.num_ranks;
  const std::deque<Node>& nodes = planner.nodes();
  const Landing& landing = planner.landings()[cand.landing];
  auto landing_boxes = [&]() -> const Boxes& { return planner.LandingBoxes(cand.landing); };
  std::vector<int> path;
  for (int i = cand.node; i >= 0; i = nodes[i].parent) path.push_back(i);
  std::reverse(path.begin(), path.end());

  auto fill_bytes = [&](RedistStep* st, std::vector<int64_t> recv, std::vector<int64_t> sent) {
    st->bytes_recv_per_rank = recv.empty() ? 0 : *std::max_element(recv.begin(), recv.end());
    st->bytes_sent_per_rank = sent.empty() ? 0 : *std::max_element(sent.begin(), sent.end());
    st->bytes_recv = std::move(recv);
    st->bytes_sent = std::move(sent);
  };
  // Every rank receiving and sending `bytes` (known maxima: no pass over the ranks).
  auto uniform_bytes = [&](RedistStep* st, int64_t bytes) {
    st->bytes_recv.assign(n, bytes);
    st->bytes_sent.assign(n, bytes);
    st->bytes_recv_per_rank = bytes;
    st->bytes_sent_per_rank = bytes;
  };
  auto set_axes = [&](RedistStep* st, std::vector<int> axes) {
    st->axes = std::move(axes);
    st->axis_names.clear();
    for (int a : st->axes) st->axis_names.push_back(p.mesh.axis_name(a));
  };
  // Takes the exchange's transfers and per-rank bytes (its counts stay); its maxima are those
  // of its per-rank bytes.
  auto irregular = [&](RedistStep* st, Exchange& ex) {
    set_axes(st, MaskAxes(ex.axes_mask));
    st->transfers = std::move(ex.transfers);
    assert(ex.max_recv == *std::max_element(ex.recv.begin(), ex.recv.end()));
    assert(ex.max_sent == *std::max_element(ex.sent.begin(), ex.sent.end()));
    st->bytes_recv_per_rank = ex.max_recv;
    st->bytes_sent_per_rank = ex.max_sent;
    st->bytes_recv = std::move(ex.recv);
    st->bytes_sent = std::move(ex.sent);
    st->messages = ex.messages;
    st->seconds = planner.ExchangeSeconds(ex);
  };

  // One structured step prev -> next along edge e.
  // `known`: a permute's exchange counts as the search computed them, or null.
  auto structured = [&](const State& prev, const Edge& e, const State& next,
                        const Exchange* known) -> Result<RedistStep> {
    RedistStep st;
    set_axes(&st, e.axes);
    st.dim = e.dim;
    st.dim_to = e.dim_to;
    SHARDSCOPE_ASSIGN_OR_RETURN(st.after, redist_internal::LayoutOf(p, next));
    const int64_t g = p.mesh.GroupSize(e.axes);
    const int64_t shard = ShardElems(p, prev);
    const double bw = cost.Bandwidth(p.mesh, e.axes);
    auto uniform = [&](int64_t elems, int64_t messages) {
      uniform_bytes(&st, elems * p.elem);
      st.messages = messages;
      st.groups = redist_internal::LazyGroupsAlong(p.mesh, e.axes);
    };
    switch (e.kind) {
      case EdgeKind::kSlice:
        st.kind = Kind::kLocalSlice;
        uniform_bytes(&st, 0);
        break;
      case EdgeKind::kGather:
        st.kind = Kind::kAllGather;
        uniform((g - 1) * shard, g - 1);
        st.seconds = cost.CollectiveSeconds(CollectiveKind::kAllGather,
                                            static_cast<double>(g * shard * p.elem), g, bw);
        break;
      case EdgeKind::kAllToAll:
        st.kind = Kind::kAllToAll;
        uniform(RingShare(shard, g), g - 1);
        st.seconds = cost.CollectiveSeconds(CollectiveKind::kAllToAll,
                                            static_cast<double>(shard * p.elem), g, bw);
        break;
      case EdgeKind::kReduceScatter:
        st.kind = Kind::kReduceScatter;
        uniform(RingShare(shard, g), g - 1);
        st.seconds = cost.CollectiveSeconds(CollectiveKind::kReduceScatter,
                                            static_cast<double>(shard * p.elem), g, bw);
        break;
      case EdgeKind::kAllReduce: {
        st.kind = Kind::kAllReduce;
        uniform(0, 2 * (g - 1));
        std::vector<int64_t> recv = AllReduceRecvPerRank(p, e.axes, shard);
        std::vector<int64_t> sent = recv;  // (copied first: argument order is unspecified)
        fill_bytes(&st, std::move(recv), std::move(sent));
        st.seconds = cost.CollectiveSeconds(CollectiveKind::kAllReduce,
                                            static_cast<double>(shard * p.elem), g, bw);
        // The tree when it was the cheaper (tree_all_reduce): its latency terms, not the ring's.
        if (cost.tree_all_reduce &&
            st.seconds == cost.TreeAllReduceSeconds(static_cast<double>(shard * p.elem), g, bw))
          st.messages = 2 * static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(g))));
        break;
      }
      case EdgeKind::kPermute: {
        const std::vector<char> all(n, 1);
        Exchange ex;
        if (known) {
          ex = *known;
        } else if (!redist_internal::CountExchange(p, prev, &next, {}, &ex)) {
          const auto from_boxes = planner.BoxesFor(prev), into_boxes = planner.BoxesFor(next);
          const ExchangeBoxes by_rank{from_boxes.get(), into_boxes.get(), &all};
          redist_internal::CountExchange(p, prev, nullptr, {.enumerate = &by_rank}, &ex);
        }
        st.kind = Kind::kPermute;
        st.reason = Reason(p, e, prev, &ex);
        st.dim = -1;
        st.dim_to = -1;
        irregular(&st, ex);
        redist_internal::SetLazyExchangeLists(p, prev, &next, nullptr, all, ex.num_transfers, &st);
        break;
      }
      case EdgeKind::kReduceScatterV: {
        const std::vector<char> all(n, 1);
        const Boxes& b = *planner.BoxesFor(prev);
        std::optional<Exchange> ex = planner.ReduceScatterV(prev, b, b, all, /*record=*/false);
        if (!ex) return Status::Internal("redistribution planner: direct all-reduce failed");
        st.kind = Kind::kAllReduce;
        st.dim = -1;
        st.dim_to = -1;
        irregular(&st, *ex);
        st.transfers = LazyReduceScatterVTransfers(p, prev, b, b, all, ex->num_transfers);
        st.groups = redist_internal::LazyGroupsAlong(p.mesh, st.axes);
        st.reason = "the tensor is a partial sum over " + AxesName(p.mesh, e.axes) +
                    " that every rank needs whole: a direct all-reduce, each rank receiving "
                    "the other addends of its block at once (" +
                    std::to_string(ex->messages) + " messages in parallel instead of the ring's " +
                    std::to_string(2 * ex->messages) + ")";
        break;
      }
      default:
        return Status::Internal("redistribution planner: unexpected edge in a plan path");
    }
    if (st.reason.empty()) st.reason = Reason(p, e, prev, nullptr);
    return st;
  };

  for (size_t k = 1; k < path.size(); ++k) {
    SHARDSCOPE_ASSIGN_OR_RETURN(RedistStep st,
                                structured(nodes[path[k - 1]].state, nodes[path[k]].edge,
                                           nodes[path[k]].state, nodes[path[k]].exchange.get()));
    plan.steps.push_back(std::move(st));
  }

  const Node& last = nodes[path.back()];
  const bool into_target = cand.landing == 0;
  const std::string suffix_note =
      into_target ? ""
                  : "; then " + std::to_string(landing.steps) +
                        " collective(s) finish the job, which needs fewer messages than "
                        "exchanging the target shards directly";
  if (cand.final == EdgeKind::kReduceScatterV) {
    const std::shared_ptr<const Boxes> last_boxes = planner.BoxesFor(last.state);
    const Boxes& b = *last_boxes;
    std::optional<Exchange> ex =
        planner.ReduceScatterV(last.state, b, cand.landing, /*record=*/false);
    if (!ex) return Status::Internal("redistribution planner: reduce-scatter-v not applicable");
    RedistStep st;
    // Every rank keeping its whole block: a direct all-reduce; else a reduce-scatter-v.
    bool whole = true;
    for (int r = 0; r < n && whole; ++r) {
      if (!planner.Want(cand.landing)[r]) continue;
      for (int i = 0; i < p.num_dims; ++i) {
        whole &= b.lo[r * p.num_dims + i] == landing_boxes().lo[r * p.num_dims + i] &&
                 b.hi[r * p.num_dims + i] == landing_boxes().hi[r * p.num_dims + i];
      }
    }
    st.kind = whole ? Kind::kAllReduce : Kind::kReduceScatter;
    irregular(&st, *ex);
    st.transfers = LazyReduceScatterVTransfers(p, last.state, b, landing_boxes(),
                                               planner.Want(cand.landing), ex->num_transfers);
    st.groups = redist_internal::LazyGroupsAlong(p.mesh, st.axes);
    if (into_target) {
      st.zero_ranks = p.zero_ranks;
      st.after = *p.to;
    } else {
      SHARDSCOPE_ASSIGN_OR_RETURN(st.after, redist_internal::LayoutOf(p, landing.x));
    }
    if (whole) {
      st.reason = "the tensor is a partial sum over " + AxesName(p.mesh, st.axes) +
                  " that every rank needs whole: a direct all-reduce, each rank receiving the "
                  "other addends of its block at once (" +
                  std::to_string(ex->messages) + " message(s) in parallel instead of the ring's " +
                  std::to_string(2 * ex->messages) + ")" + suffix_note;
    } else {
      st.reason = "the tensor is a partial sum over " + AxesName(p.mesh, st.axes) +
                  " and every rank's block of " +
                  (into_target ? "the target" : st.after.ToString()) +
                  " lies inside its own block, but not as one contiguous chunk of it: each rank "
                  "receives the other addends of exactly that block (a reduce-scatter with "
                  "irregular blocks)" +
                  suffix_note;
    }
    plan.steps.push_back(std::move(st));
  } else if (cand.final == EdgeKind::kExchange) {
    auto b = [&]() -> const Boxes& { return *planner.BoxesFor(last.state); };
    // Counts and groups only: the transfer list (up to one per pair of ranks) is expanded
    // when someone reads it.
    Exchange ex = cand.exchange ? std::move(*cand.exchange)
                                : planner.ExchangeInto(last.state, b(), cand.landing);
    RedistStep st;
    if (ex.num_transfers == 0) {
      // Nothing travels: every rank already holds its block of the landing (or becomes 0).
      bool boxes_change = false;
      for (int r = 0; r < n && !boxes_change; ++r) {
        if (!planner.Want(cand.landing)[r]) continue;
        for (int i = 0; i < p.num_dims; ++i) {
          boxes_change |= b().lo[r * p.num_dims + i] != landing_boxes().lo[r * p.num_dims + i] ||
                          b().hi[r * p.num_dims + i] != landing_boxes().hi[r * p.num_dims + i];
        }
      }
      st.kind = boxes_change ? Kind::kLocalSlice : Kind::kLocalReshape;
      if (boxes_change) {
        st.reason =
            "every rank already holds its target shard: each keeps that part of its "
            "shard (no traffic)";
        if (!p.zero_ranks.empty()) st.reason += "; ranks that end as zero addends hold zeros";
      } else {
        st.reason = p.zero_ranks.empty()
                        ? "no element has to move (every rank already holds exactly its target "
                          "shard, or the tensor is empty): only the layout's description changes"
                        : Reason(p, {EdgeKind::kZeroFill, {}, -1, -1}, last.state, nullptr);
      }
    } else {
      st.kind = ex.is_permute ? Kind::kPermute : Kind::kAllToAll;
      st.reason = Reason(p, {EdgeKind::kExchange, {}, -1, -1}, last.state, &ex) + suffix_note;
    }
    irregular(&st, ex);
    redist_internal::SetLazyExchangeLists(p, last.state, p.has_target_state ? &landing.x : nullptr,
                                          p.has_target_state ? nullptr : &landing_boxes(),
                                          planner.Want(cand.landing), ex.num_transfers, &st);
    if (into_target) {
      st.zero_ranks = p.zero_ranks;
      st.after = *p.to;
    } else {
      SHARDSCOPE_ASSIGN_OR_RETURN(st.after, redist_internal::LayoutOf(p, landing.x));
    }
    plan.steps.push_back(std::move(st));
  }
  // The landing's suffix.
  const Landing* l = &landing;
  for (; l->next >= 0; l = &planner.landings()[l->next]) {
    const Landing& after = planner.landings()[l->next];
    SHARDSCOPE_ASSIGN_OR_RETURN(RedistStep st, structured(l->x, l->edge, after.x, nullptr));
    plan.steps.push_back(std::move(st));
  }
  const State& prev = l->x;
  const bool zeros_done = cand.final != EdgeKind::kNone && into_target;
  if (!p.zero_ranks.empty() && !zeros_done) {
    RedistStep st;
    st.kind = Kind::kLocalReshape;
    set_axes(&st, MaskAxes(p.new_partial_mask));
    uniform_bytes(&st, 0);
    st.zero_ranks = p.zero_ranks;
    st.after = *p.to;
    st.reason = Reason(p, {EdgeKind::kZeroFill, {}, -1, -1}, prev, nullptr);
    plan.steps.push_back(std::move(st));
  } else if (!plan.steps.empty()) {
    plan.steps.back().after = *p.to;  // the same distribution, in the target's own terms
  }

  // Per-rank totals over the steps (the first step's copied: most plans have one or two).
  if (plan.steps.empty()) {
    plan.recv_bytes.assign(n, 0);
  } else {
    plan.recv_bytes = plan.steps[0].bytes_recv;
  }
  int64_t* total = plan.recv_bytes.data();
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const RedistStep& st = plan.steps[k];
    if (k > 0) {
      const int64_t* step = st.bytes_recv.data();
      for (int r = 0; r < n; ++r) total[r] += step[r];
    }
    plan.predicted_seconds += st.seconds;
  }
  // The proven bound; the search pruned with its own estimate, which differs with a pending sum.
  plan.lower_bound = p.src.reduce_mask ? redist_internal::LowerBound(p, p.src, p.source())
                                       : planner.TakeEstimateSrc();
  SetByteTotals(&plan);
  plan.states_explored = planner.states_explored();
  return plan;
}

// The fast path's single-message class (the others are in redistribution_fast.cc): nothing to
// reduce, and the direct exchange into the target makes every rank receive from at most one
// peer and send to at most one, over axes of the fastest bandwidth. Any plan with traffic has
// at least one message and receives at least the lower bound, so no plan is cheaper than
// alpha + bound / fastest bandwidth, which this one step costs. Among plans of that price the
// search prefers fewer irregular steps, then fewer steps: a permute edge (a swap of two
// adjacent axes of one dimension) when the target is one, else the exchange itself. No other
// step reaches the target with one message: a single gather or all-to-all is the class
// "moves" (tried first); replacing an axis by a free one, or slicing first, needs the target
// to use an axis the source does not split, which is excluded; without a unified mesh every
// plan ends with an exchange, and this one has the fewest steps.
bool PlanSingleMessage(const Problem& p, const CostModel& cost, SourceExchange* counted,
                       RedistPlan* out) {
  if (p.src.reduce_mask) return false;
  Edge swap;
  bool is_swap = false;
  if (p.unified) {
    if (p.new_partial_mask || p.src.dims == p.tgt.dims) return false;
    uint32_t s_axes = 0, t_axes = 0;
    for (int d = 0; d < p.num_dims; ++d) {
      s_axes |= AxesMask(p.src.dims[d]);
      t_axes |= AxesMask(p.tgt.dims[d]);
    }
    if (t_axes & ~s_axes) return false;
    int diff = -1;
    for (int d = 0; d < p.num_dims; ++d) {
      if (p.src.dims[d] == p.tgt.dims[d]) continue;
      if (diff >= 0) {
        diff = -2;
        break;
      }
      diff = d;
    }
    if (diff >= 0) {
      const AxisList& a = p.src.dims[diff];
      const AxisList& b = p.tgt.dims[diff];
      for (size_t i = 0; a.size() == b.size() && i + 1 < a.size(); ++i) {
        if (a[i] == b[i]) continue;
        AxisList swapped = a;
        std::swap(swapped[i], swapped[i + 1]);
        if (swapped == b) {
          is_swap = true;
          swap = Edge{EdgeKind::kPermute, {}, diff, -1};
          swap.axes.push_back(a[i]);
          swap.axes.push_back(a[i + 1]);
        }
        break;
      }
    }
  }
  Exchange computed;
  if (counted->counted) {
    // Cheap test first: every rank's target box meets at most one other block of the source.
    if (counted->ex.max_recv_peers > 1) return false;
  } else {
    const Boxes& b = p.source();
    // Cheap test first: every rank's target box meets at most one other block of the source.
    const int d = p.num_dims;
    for (int r = 0; r < p.num_ranks; ++r) {
      if (!p.active[r]) continue;
      const int64_t* lo = p.target().lo.data() + r * d;
      const int64_t* hi = p.target().hi.data() + r * d;
      const int64_t vol = BoxVolume(lo, hi, d);
      const int64_t have = IntersectVolume(lo, hi, b.lo.data() + r * d, b.hi.data() + r * d, d);
      if (vol == have) continue;
      int64_t count = 1;
      for (int k = 0; k < d; ++k)
        count *= (hi[k] - 1) / b.block_size[k] - lo[k] / b.block_size[k] + 1;
      if (count - (have > 0 ? 1 : 0) > 1) return false;
    }
    const ExchangeBoxes by_rank{&b, &p.target(), &p.active};
    redist_internal::CountExchange(p, p.src, p.unified ? &p.tgt : nullptr,
                                   {.zero_mask = p.new_partial_mask, .enumerate = &by_rank},
                                   &computed);
  }
  // (Taken, not copied, once the plan is certain: the search reads it otherwise.)
  Exchange& ex = counted->counted ? counted->ex : computed;
  if (ex.messages != 1) return false;
  const double bw = cost.Bandwidth(p.mesh, MaskAxes(ex.axes_mask));
  if (bw != cost.MaxBandwidth(p.mesh)) return false;
  RedistStep st;
  st.kind = is_swap || ex.is_permute ? Kind::kPermute : Kind::kAllToAll;
  st.reason = is_swap ? Reason(p, swap, p.src, &ex)
                      : Reason(p, {EdgeKind::kExchange, {}, -1, -1}, p.src, &ex);
  st.axes = MaskAxes(ex.axes_mask);
  for (int a : st.axes) st.axis_names.push_back(p.mesh.axis_name(a));
  redist_internal::SetLazyExchangeLists(p, p.src, p.unified ? &p.tgt : nullptr,
                                        p.unified ? nullptr : &p.target(), p.active,
                                        ex.num_transfers, &st);
  st.bytes_recv = ex.recv;
  st.bytes_sent = std::move(ex.sent);
  st.bytes_recv_per_rank = ex.max_recv;
  st.bytes_sent_per_rank = ex.max_sent;
  st.messages = ex.messages;
  st.seconds = cost.ExchangeSeconds(ex.messages, static_cast<double>(ex.max_recv), bw);
  if (!is_swap) st.zero_ranks = p.zero_ranks;
  st.after = *p.to;
  RedistPlan& plan = *out;
  plan.from = *p.from;
  plan.to = *p.to;
  // (plan.mesh: the caller moves the problem's mesh in.)
  plan.meshes_unified = p.unified;
  plan.element_bytes = p.elem;
  plan.recv_bytes = st.bytes_recv;
  plan.lower_bound = std::move(ex.recv);  // nothing to reduce: the bound is the missing elements
  plan.predicted_seconds = st.seconds;
  plan.steps.push_back(std::move(st));
  SetByteTotals(&plan);
  plan.bounded_search = true;
  plan.bound_slack_bytes = 0;
  plan.states_explored = 0;
  return plan.byte_optimal;  // always (the exchange receives exactly the missing elements)
}

}  // namespace
}  // namespace redist_search

using redist_internal::MaskAxes;
using redist_internal::Problem;
using redist_search::Assemble;
using redist_search::Candidate;
using redist_search::Planner;
using redist_search::PlanSingleMessage;
using redist_search::SearchConfig;
using redist_search::SourceExchange;

Result<RedistPlan> PlanRedistribution(const Layout& from, const Layout& to, const CostModel& cost,
                                      const RedistOptions& options) {
  SHARDSCOPE_ASSIGN_OR_RETURN(redist_internal::Setup setup,
                              redist_internal::MakeSetup(from, to, options.element_bytes));
  if (options.fast_path && options.byte_optimal) {
    RedistPlan plan;
    if (redist_internal::PlanFast(setup, cost, options, &plan)) return plan;
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(Problem p, redist_internal::MakeProblem(std::move(setup)));
  SourceExchange source_into_target(p);
  if (options.fast_path && options.byte_optimal) {
    RedistPlan plan;
    if (PlanSingleMessage(p, cost, &source_into_target, &plan)) {
      plan.mesh = std::move(p.mesh);  // the problem is done with
      return plan;
    }
  }
  Planner planner(p, cost, std::move(source_into_target));
  SearchConfig cfg;
  cfg.max_states = std::max(1, options.max_states);
  Candidate best;
  if (options.byte_optimal) {
    cfg.tight = true;
    cfg.bytes_first = false;
    // The pending-sum estimate is a ring bound of fractional size; balanced ring blocks round
    // it up by less than one element per group member.
    cfg.tolerance =
        p.src.reduce_mask ? (p.mesh.GroupSize(MaskAxes(p.src.reduce_mask)) - 1) * p.elem : 0;
    best = planner.Search(cfg);
    if (best.node < 0) {
      // The bound is out of reach with collectives along mesh axes (partial sums only):
      // the cheapest plan by the cost model.
      cfg.tight = false;
      cfg.bytes_first = false;
      cfg.max_states = std::max(1, options.max_states / 3);
      best = planner.Search(cfg);
    }
  } else {
    cfg.tight = false;
    cfg.bytes_first = false;
    best = planner.Search(cfg);
  }
  const bool bounded = cfg.tight && best.node >= 0;
  if (best.node < 0) best = planner.Baseline();
  SHARDSCOPE_ASSIGN_OR_RETURN(RedistPlan plan, Assemble(p, cost, planner, std::move(best)));
  plan.mesh = std::move(p.mesh);  // the problem (and the planner) are done with
  plan.bounded_search = bounded;
  plan.bound_slack_bytes = bounded ? cfg.tolerance : 0;
  return plan;
}

}  // namespace shardscope
