// The redistribution planner (redistribution.h).
//
// Search. States are layouts on the planning mesh M (redistribution_internal.h). Edges are
// the structured steps: local slice (a replica axis appended to a dimension), all-gather
// (the last axis of a dimension dropped), all-to-all (the last axes of a dimension moved,
// in order, to the end of another), reduce-scatter (a partial axis appended to a
// dimension), all-reduce (partial axes dropped), permute (axes of a dimension reordered, or
// an axis replaced by a replica axis of the same size). From any state without pending
// reductions, one irregular exchange completes the plan exactly at the lower bound of that
// state. A* over predicted seconds (CostModel), with the heuristic max_r est(r) / fastest
// bandwidth, finds the cheapest plan; when byte optimality is required, states from which
// the estimate can no longer be met on some rank (received(r) + est_from_here(r) > est(r))
// are pruned, which keeps the search small. est is SearchEstimate: the lower bound without a
// pending sum, a ring-bound heuristic with one (not proven; the plan reports LowerBound).
// Every state's shard is at most max(source shard, target shard) elements.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "redistribution_internal.h"
#include "shardscope/base/format.h"
#include "shardscope/redistribution.h"

namespace shardscope {

using redist_internal::AllReduceRecv;
using redist_internal::AxesMask;
using redist_internal::AxesName;
using redist_internal::AxisList;
using redist_internal::Boxes;
using redist_internal::BoxesOf;
using redist_internal::BoxVolume;
using redist_internal::Exchange;
using redist_internal::GroupsAlong;
using redist_internal::IntersectVolume;
using redist_internal::MaskAxes;
using redist_internal::Problem;
using redist_internal::RingShare;
using redist_internal::State;

const char* RedistStepKindName(RedistStep::Kind kind) {
  switch (kind) {
    case RedistStep::Kind::kLocalSlice:
      return "local slice";
    case RedistStep::Kind::kAllGather:
      return "all-gather";
    case RedistStep::Kind::kAllToAll:
      return "all-to-all";
    case RedistStep::Kind::kReduceScatter:
      return "reduce-scatter";
    case RedistStep::Kind::kAllReduce:
      return "all-reduce";
    case RedistStep::Kind::kPermute:
      return "permute";
    case RedistStep::Kind::kLocalReshape:
      return "local reshape";
  }
  return "?";
}

std::string RedistStep::KindName() const {
  if (kind == Kind::kAllToAll && dim < 0) return "all-to-all-v";
  if (kind == Kind::kReduceScatter && dim < 0) return "reduce-scatter-v";
  if (kind == Kind::kAllReduce && !transfers.empty()) return "all-reduce (direct)";
  return RedistStepKindName(kind);
}

int RedistPlan::CountSteps(RedistStep::Kind kind) const {
  int n = 0;
  for (const RedistStep& s : steps) n += s.kind == kind;
  return n;
}

double PlanSeconds(const RedistPlan& plan, const CostModel& cost) {
  double t = 0;
  for (const RedistStep& s : plan.steps) {
    const double bw = cost.Bandwidth(plan.mesh, s.axes);
    t += cost.ExchangeSeconds(s.messages, static_cast<double>(s.bytes_recv_per_rank), bw);
  }
  return t;
}

RedistTransfers::RedistTransfers(std::vector<RedistTransfer> list)
    : count_(static_cast<int64_t>(list.size())) {
  if (!list.empty()) list_ = redist_detail::SharedLazyList<RedistTransfer>(std::move(list));
}

RedistTransfers RedistTransfers::Lazy(int64_t count,
                                      std::function<std::vector<RedistTransfer>()> expand) {
  RedistTransfers t;
  t.count_ = count;
  if (count > 0) t.list_ = redist_detail::SharedLazyList<RedistTransfer>(std::move(expand));
  return t;
}

const std::vector<RedistTransfer>& RedistTransfers::list() const {
  const std::vector<RedistTransfer>& out = list_.list();
  assert(static_cast<int64_t>(out.size()) == count_);
  return out;
}

RedistGroups::RedistGroups(std::vector<Group> list) : empty_(list.empty()) {
  if (!list.empty()) list_ = redist_detail::SharedLazyList<Group>(std::move(list));
}

RedistGroups RedistGroups::Lazy(bool empty, std::function<std::vector<Group>()> expand) {
  RedistGroups g;
  g.empty_ = empty;
  if (!empty) g.list_ = redist_detail::SharedLazyList<Group>(std::move(expand));
  return g;
}

namespace {

// Union-find over ranks 0..n-1.
class RankSets {
 public:
  explicit RankSets(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    int root = x;
    while (parent_[root] != root) root = parent_[root];
    while (parent_[x] != root) {
      const int next = parent_[x];
      parent_[x] = root;
      x = next;
    }
    return root;
  }
  void Join(int a, int b) { parent_[Find(a)] = Find(b); }
  // The sets of at least two ranks with involved[r] != 0, each ascending, sorted.
  std::vector<std::vector<int>> Groups(const std::vector<char>& involved) {
    const int n = static_cast<int>(parent_.size());
    std::vector<std::vector<int>> by_root(n);
    for (int r = 0; r < n; ++r) {
      if (involved[r]) by_root[Find(r)].push_back(r);
    }
    std::vector<std::vector<int>> out;
    for (auto& g : by_root) {
      if (g.size() >= 2) out.push_back(std::move(g));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::vector<int> parent_;
};

}  // namespace

namespace redist_internal {

Exchange ComputeExchange(const Problem& p, const State& s, const Boxes& cur,
                         const std::vector<int64_t>& tlo, const std::vector<int64_t>& thi,
                         const std::vector<char>& want, bool record, bool with_groups) {
  const int d = p.num_dims;
  const int n = p.num_ranks;
  Exchange ex;
  // Connected sets of communicating ranks (they do not depend on the order of the joins).
  RankSets sets(with_groups ? n : 0);
  ex.recv.assign(n, 0);
  ex.sent.assign(n, 0);
  // The owner of block idx nearest to rank r has r's coordinates on every axis that splits no
  // dimension of s, and idx's digits on the others: its grid position is r's with the
  // contribution of r's own block replaced by idx's. block_pos[i][b]: the grid-position
  // contribution of block index b along dimension i (mixed radix over s.dims[i]).
  std::vector<std::vector<int64_t>> block_pos(d);
  uint32_t used_mask = 0;
  for (int i = 0; i < d; ++i) {
    const AxisList& axes = s.dims[i];
    used_mask |= AxesMask(axes);
    block_pos[i].assign(cur.blocks[i], 0);
    std::vector<int64_t> digit(axes.size(), 0);
    for (int64_t b = 0; b < cur.blocks[i]; ++b) {
      int64_t off = 0;
      for (size_t k = 0; k < axes.size(); ++k) off += digit[k] * p.pos_stride[axes[k]];
      block_pos[i][b] = off;
      for (int k = static_cast<int>(axes.size()) - 1; k >= 0; --k) {
        if (++digit[k] < p.axis_size[axes[k]]) break;
        digit[k] = 0;
      }
    }
  }
  const std::vector<int> used = MaskAxes(used_mask);
  if (record) {
    // Reserve the transfer list: one per (rank, other block its target box meets).
    size_t count = 0;
    for (int r = 0; r < n; ++r) {
      if (!want[r]) continue;
      const int64_t* rlo = tlo.data() + r * d;
      const int64_t* rhi = thi.data() + r * d;
      if (BoxVolume(rlo, rhi, d) == 0) continue;
      size_t blocks = 1;
      for (int i = 0; i < d; ++i) {
        blocks *=
            static_cast<size_t>((rhi[i] - 1) / cur.block_size[i] - rlo[i] / cur.block_size[i] + 1);
      }
      count += blocks;
    }
    ex.transfers.reserve(count);
  }
  std::vector<int> recv_count(n, 0), send_count(n, 0);
  std::vector<int64_t> first(d), last(d), own(d), k(d);
  // Per rank, per dimension i, per block j in [first[i], last[i]] (entry seg[i] + j - first[i]):
  // the piece of the target box in that block (start, length) and the block's grid-position
  // contribution. The blocks are visited as an odometer (last dimension fastest) with prefix
  // products, so a transfer costs O(1) amortised instead of O(d).
  std::vector<int64_t> seg(d + 1), seg_lo, seg_len, seg_pos;
  std::vector<int64_t> pvol(d + 1), ppos(d + 1);
  std::vector<char> pown(d + 1);
  bool permute = true;
  for (int r = 0; r < n; ++r) {
    if (!want[r]) continue;
    const int64_t* rlo = tlo.data() + r * d;
    const int64_t* rhi = thi.data() + r * d;
    const int64_t need = BoxVolume(rlo, rhi, d);
    if (need == 0) continue;
    int64_t base = p.pos_of_rank[r];
    seg[0] = 0;
    for (int i = 0; i < d; ++i) {
      own[i] = cur.lo[r * d + i] / cur.block_size[i];
      base -= block_pos[i][own[i]];
      first[i] = rlo[i] / cur.block_size[i];
      last[i] = (rhi[i] - 1) / cur.block_size[i];
      k[i] = 0;
      seg[i + 1] = seg[i] + last[i] - first[i] + 1;
    }
    seg_lo.resize(seg[d]);
    seg_len.resize(seg[d]);
    seg_pos.resize(seg[d]);
    for (int i = 0; i < d; ++i) {
      for (int64_t j = first[i]; j <= last[i]; ++j) {
        const int64_t e = seg[i] + j - first[i];
        seg_lo[e] = std::max(rlo[i], j * cur.block_size[i]);
        seg_len[e] = std::min(rhi[i], (j + 1) * cur.block_size[i]) - seg_lo[e];
        seg_pos[e] = block_pos[i][j];
      }
    }
    pvol[0] = 1;
    ppos[0] = base;
    pown[0] = 1;
    int from = 0;  // the first dimension whose prefix is stale
    while (true) {
      for (int i = from; i < d; ++i) {
        const int64_t e = seg[i] + k[i];
        pvol[i + 1] = pvol[i] * seg_len[e];
        ppos[i + 1] = ppos[i] + seg_pos[e];
        pown[i + 1] = pown[i] && first[i] + k[i] == own[i];
      }
      if (!pown[d]) {
        const int64_t vol = pvol[d];
        const int q = p.rank_of_pos[ppos[d]];
        const int64_t bytes = vol * p.elem;
        // A permute moves whole blocks, each one a rank's entire new shard.
        if (vol != cur.shard_elems || vol != need) permute = false;
        ex.recv[r] += bytes;
        ex.sent[q] += bytes;
        ++recv_count[r];
        ++send_count[q];
        if (ex.axes_mask != used_mask) {
          for (int a : used) {
            if (p.coord(q, a) != p.coord(r, a)) ex.axes_mask |= 1u << a;
          }
        }
        ++ex.num_transfers;
        if (with_groups) sets.Join(q, r);
        if (record) {
          RedistTransfer t;
          t.src = q;
          t.dst = r;
          t.offset.resize(d);
          t.extent.resize(d);
          for (int i = 0; i < d; ++i) {
            t.offset[i] = seg_lo[seg[i] + k[i]];
            t.extent[i] = seg_len[seg[i] + k[i]];
          }
          ex.transfers.push_back(std::move(t));
        }
      }
      int i = d - 1;
      while (i >= 0 && first[i] + k[i] == last[i]) {
        k[i] = 0;
        --i;
      }
      if (i < 0) break;
      ++k[i];
      from = i;
    }
  }
  permute = permute && ex.num_transfers > 0;
  for (int r = 0; r < n; ++r) {
    ex.max_recv = std::max(ex.max_recv, ex.recv[r]);
    ex.max_sent = std::max(ex.max_sent, ex.sent[r]);
    ex.messages = std::max<int64_t>(ex.messages, std::max(recv_count[r], send_count[r]));
    ex.max_recv_peers = std::max<int64_t>(ex.max_recv_peers, recv_count[r]);
    if (recv_count[r] > 1 || send_count[r] > 1) permute = false;
  }
  ex.is_permute = permute;
  if (with_groups) {
    std::vector<char> involved(n, 0);
    for (int r = 0; r < n; ++r) involved[r] = recv_count[r] > 0 || send_count[r] > 0;
    ex.groups = sets.Groups(involved);
  }
  return ex;
}

void SetLazyExchangeLists(const Problem& p, const State& s, const State* into,
                          const Boxes* into_boxes, const std::vector<char>& want, int64_t count,
                          RedistStep* step) {
  // What the expansion needs, small: the per-rank data (coordinates, boxes) are rebuilt from
  // the mesh and the states then, rather than copied now (about 100 KiB at 1024 ranks).
  struct Args {
    DeviceMesh mesh;
    Shape shape;
    int64_t elem = 4;
    State s;
    std::optional<State> into;
    std::vector<int64_t> tlo, thi;  // when the landing is not a state on the mesh
    std::vector<char> want;
    Exchange Compute(bool record, bool with_groups) const {
      Problem q;
      q.mesh = mesh;
      q.shape = shape;
      q.num_dims = static_cast<int>(shape.size());
      q.elem = elem;
      FillRankGrid(&q);
      const Boxes cur = BoxesOf(q, s);
      if (!into) return ComputeExchange(q, s, cur, tlo, thi, want, record, with_groups);
      const Boxes target = BoxesOf(q, *into);
      return ComputeExchange(q, s, cur, target.lo, target.hi, want, record, with_groups);
    }
  };
  auto args = std::make_shared<Args>();
  args->mesh = p.mesh;
  args->shape = p.shape;
  args->elem = p.elem;
  args->s = s;
  if (into) {
    args->into = *into;
  } else {
    args->tlo = into_boxes->lo;
    args->thi = into_boxes->hi;
  }
  args->want = want;
  std::shared_ptr<const Args> shared = std::move(args);
  step->transfers = RedistTransfers::Lazy(
      count, [shared] { return shared->Compute(/*record=*/true, false).transfers; });
  step->groups = RedistGroups::Lazy(count == 0, [shared] {
    return shared->Compute(/*record=*/false, /*with_groups=*/true).groups;
  });
}

Exchange ExchangeCounts(const Problem& p, const State& s, const Boxes& cur, const State* into,
                        const Boxes& into_boxes, const std::vector<char>& want,
                        uint32_t zero_mask) {
  Exchange ex;
  if (into && CountExchange(p, s, *into, zero_mask, &ex)) return ex;
  return ComputeExchange(p, s, cur, into_boxes.lo, into_boxes.hi, want, /*record=*/false);
}

RedistGroups LazyGroupsAlong(const DeviceMesh& mesh, const std::vector<int>& axes) {
  auto args = std::make_shared<const std::pair<DeviceMesh, std::vector<int>>>(mesh, axes);
  return RedistGroups::Lazy(false, [args] { return GroupsAlong(args->first, args->second); });
}

std::string AxesName(const DeviceMesh& mesh, const std::vector<int>& axes) {
  std::string out;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i) out += '.';
    out += mesh.axis_name(axes[i]);
  }
  return out.empty() ? "-" : out;
}

namespace {

bool TargetSplitsDimOver(const ReasonContext& c, int axis, int dim) {
  if (!c.target) return false;
  const std::vector<int>& list = (*c.target)[dim];
  return std::find(list.begin(), list.end(), axis) != list.end();
}

bool TargetUsesAxis(const ReasonContext& c, int axis) {
  if (!c.target) return false;
  for (size_t d = 0; d < c.target->size(); ++d) {
    if (TargetSplitsDimOver(c, axis, static_cast<int>(d))) return true;
  }
  return false;
}

}  // namespace

std::string SliceReason(const ReasonContext& c, int axis, int dim) {
  const std::string ax = c.mesh->axis_name(axis);
  const std::string part = std::to_string(c.mesh->axis_size(axis));
  std::string out;
  out.reserve(160);
  if (TargetSplitsDimOver(c, axis, dim)) {
    out += "the target splits dimension ";
    out += std::to_string(dim);
    out += " over ";
    out += ax;
    out += ", which holds replicas here: each rank keeps its 1/";
    out += part;
    out += " part (no traffic); slicing first shrinks what later steps move";
    return out;
  }
  out += "keep only the 1/";
  out += part;
  out += " of dimension ";
  out += std::to_string(dim);
  out += " that this rank's ";
  out += ax;
  out += " index selects (no traffic), so that the following steps move less data";
  return out;
}

std::string GatherReason(const ReasonContext& c, int axis, int dim) {
  const std::string& ax = c.mesh->axis_name(axis);
  std::string out;
  out.reserve(200);
  out += "the target does not split dimension ";
  out += std::to_string(dim);
  out += " over ";
  out += ax;
  if (c.target && !TargetUsesAxis(c, axis)) {
    out += " (it holds replicas along ";
    out += ax;
    out += ')';
  }
  out += ": gather the ";
  out += std::to_string(c.mesh->axis_size(axis));
  out += " blocks along ";
  out += ax;
  out += "; gathering last means no rank receives data it will drop";
  return out;
}

std::string AllToAllReason(const ReasonContext& c, const std::vector<int>& axes, int dim,
                           int dim_to) {
  const std::string ax = AxesName(*c.mesh, axes);
  std::string out;
  out.reserve(220);
  out += "the split over ";
  out += ax;
  out += " moves from dimension ";
  out += std::to_string(dim);
  out += " to dimension ";
  out += std::to_string(dim_to);
  out += ": one all-to-all along ";
  out += ax;
  out += " (each rank keeps 1/";
  out += std::to_string(c.mesh->GroupSize(axes));
  out += " of its shard and exchanges the rest, never holding more than one shard)";
  return out;
}

std::string ReduceScatterReason(const ReasonContext& c, int axis, int dim) {
  const std::string& ax = c.mesh->axis_name(axis);
  std::string out;
  out.reserve(160);
  out += "the tensor is a partial sum over ";
  out += ax;
  if (TargetSplitsDimOver(c, axis, dim)) {
    out += " and the target splits dimension ";
    out += std::to_string(dim);
    out += " over ";
    out += ax;
    out += ": reduce and scatter in one collective";
    return out;
  }
  out += ": reduce-scatter along dimension ";
  out += std::to_string(dim);
  out +=
      " (half the traffic of an all-reduce); the blocks are re-assembled later at the lower "
      "bound";
  return out;
}

std::string ZeroFillReason() {
  return "the target is a partial sum over axes the source is not partial over: the ranks "
         "with index 0 along them keep the values, the others hold zeros (no traffic)";
}

std::vector<std::vector<int>> GroupsAlong(const DeviceMesh& mesh, const std::vector<int>& axes) {
  const int na = mesh.num_axes();
  std::vector<int64_t> stride(na, 1);
  for (int a = na - 2; a >= 0; --a) stride[a] = stride[a + 1] * mesh.axis_size(a + 1);
  std::vector<char> in_group(na, 0);
  for (int a : axes) in_group[a] = 1;
  std::vector<int> others;
  for (int a = 0; a < na; ++a) {
    if (!in_group[a]) others.push_back(a);
  }
  // Grid-position offset of every member (mixed radix over `axes`, first most significant)
  // and of every group (row-major over the other axes), both by odometer.
  auto offsets = [&](const std::vector<int>& list) {
    int64_t count = 1;
    for (int a : list) count *= mesh.axis_size(a);
    std::vector<int64_t> out(count, 0);
    std::vector<int64_t> digit(list.size(), 0);
    int64_t off = 0;
    for (int64_t i = 0; i < count; ++i) {
      out[i] = off;
      for (int k = static_cast<int>(list.size()) - 1; k >= 0; --k) {
        const int a = list[k];
        if (++digit[k] < mesh.axis_size(a)) {
          off += stride[a];
          break;
        }
        off -= (digit[k] - 1) * stride[a];
        digit[k] = 0;
      }
    }
    return out;
  };
  const std::vector<int64_t> member = offsets(axes);
  const std::vector<int64_t> group = offsets(others);
  std::vector<int> ranks;
  if (mesh.has_explicit_ranks()) ranks = mesh.rank_list();
  std::vector<std::vector<int>> out(group.size());
  for (size_t g = 0; g < group.size(); ++g) {
    std::vector<int>& members = out[g];
    members.resize(member.size());
    for (size_t m = 0; m < member.size(); ++m) {
      const int64_t pos = group[g] + member[m];
      members[m] = ranks.empty() ? static_cast<int>(pos) : ranks[pos];
    }
  }
  return out;
}

}  // namespace redist_internal

namespace {

using Kind = RedistStep::Kind;

enum class EdgeKind : uint8_t {
  kNone,
  kSlice,
  kGather,
  kAllToAll,
  kReduceScatter,
  kAllReduce,
  kPermute,
  kExchange,        // final irregular exchange to the target
  kReduceScatterV,  // final irregular reduce-scatter: each rank sums exactly its target box
  kZeroFill,        // final local step: inactive ranks become zeros
};

struct Edge {
  EdgeKind kind = EdgeKind::kNone;
  AxisList axes;  // inline: the search builds an edge for every candidate step
  int dim = -1;
  int dim_to = -1;
};

// Lexicographic score: primary, secondary (seconds or bytes), then fewer irregular steps,
// then fewer steps.
struct Score {
  double primary = 0;
  double secondary = 0;
  int exchanges = 0;
  int steps = 0;
};

bool Close(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-18;
}

bool Better(const Score& a, const Score& b) {
  if (!Close(a.primary, b.primary)) return a.primary < b.primary;
  if (!Close(a.secondary, b.secondary)) return a.secondary < b.secondary;
  if (a.exchanges != b.exchanges) return a.exchanges < b.exchanges;
  return a.steps < b.steps;
}

struct Node {
  State state;
  int parent = -1;
  Edge edge;
  double time = 0;
  double bytes = 0;  // sum over steps of the busiest rank's received bytes
  int exchanges = 0;
  int steps = 0;
  // Per rank, so far; empty for the search's root (nothing received yet: no 0 per rank to
  // write and read at every check). RecvOf reads either.
  std::vector<int64_t> recv;
  int64_t RecvOf(int rank) const { return recv.empty() ? 0 : recv[rank]; }
  // A permute edge: its exchange's counts (reused by the plan's assembly).
  std::shared_ptr<const Exchange> exchange;
};

struct Candidate {
  int node = -1;
  // kExchange / kReduceScatterV: an irregular step from the node's state into the landing;
  // kNone: the node's state is the landing. Then the landing's structured suffix.
  EdgeKind final = EdgeKind::kNone;
  int landing = 0;
  Score score;
  // kExchange: the exchange's counts and groups as the search computed them (so that the plan
  // is assembled without a second pass over up to N (N-1) transfers). Owned by the candidate
  // alone (Assemble takes it).
  std::shared_ptr<Exchange> exchange;
};

// A layout from which a known sequence of collectives reaches the target (landing 0 is the
// target itself, with an empty suffix). Plans may end with an irregular step into any
// landing: "exchange what is needed, then gather" is often cheaper than exchanging the
// target shards directly (fewer messages, same bytes).
struct Landing {
  State x;
  uint64_t signature = 0;  // DimsSignature(x.dims): most candidates are told apart by it
  int64_t shard = 0;       // ShardElems(x)
  // Computed on first use (Planner::LandingBoxes; most landings never need them). Out of
  // line: the planner builds up to 24 landings per plan.
  std::unique_ptr<Boxes> boxes;
  // The suffix, x -> ... -> target: `edge` leads to landing `next` (-1: this is the target),
  // whose suffix follows.
  Edge edge;
  int next = -1;
  int64_t recv = 0;  // bytes every rank receives in the suffix (collectives)
  double time = 0;
  double bytes = 0;
  int steps = 0;
};

// A hash of per-dimension axis lists (FNV-1a over the axes, a separator per dimension).
uint64_t DimsSignature(const redist_internal::DimList& dims) {
  uint64_t h = 1469598103934665603ULL;
  for (const AxisList& axes : dims) {
    for (int a : axes) h = (h ^ static_cast<uint64_t>(a + 1)) * 1099511628211ULL;
    h = (h ^ 0xffu) * 1099511628211ULL;
  }
  return h;
}

struct SearchConfig {
  bool bytes_first = false;  // primary objective: bytes (else seconds)
  bool tight = true;         // prune states that cannot meet the lower bound
  int64_t tolerance = 0;     // bytes of slack per rank in the tightness test
  int max_states = 3000;
};

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

// A rank with its coordinates on the planning mesh: the search's sampled ranks, read often (a
// coordinate from the grid position costs two divisions).
// Only the coordinates of the mesh's axes are set (not zero-filled: the planner builds these
// on every plan).
struct RankCoords {
  RankCoords() {}  // NOLINT: leaves `coord` uninitialized on purpose
  int rank = 0;
  int sample = -1;    // index among the planner's samples (Planner::samples_), or -1
  int32_t coord[32];  // per mesh axis (masks bound them to 32; a mesh has < 2^31 devices)
};

// Bytes rank r receives in an all-reduce of n elements along `axes` (AllReduceRecvPerRank).
int64_t AllReduceRecvOfRank(const Problem& p, const std::vector<int>& axes, int64_t n,
                            const RankCoords& r) {
  int64_t g = 1;
  for (int a : axes) g *= p.axis_size[a];
  if (g <= 1) return 0;
  int64_t i = 0;
  for (int a : axes) i = i * p.axis_size[a] + r.coord[a];
  const int64_t block = n / g + (i < n % g ? 1 : 0);
  return (n + (g - 2) * block) * p.elem;
}

// Elements of a state's shard (blocks are even).
int64_t ShardElems(const Problem& p, const State& s) {
  int64_t e = 1;
  for (int i = 0; i < p.num_dims; ++i) {
    int64_t blocks = 1;
    for (int a : s.dims[i]) blocks *= p.axis_size[a];
    e *= p.shape[i] / blocks;
  }
  return e;
}

// Rank r's box in state s (dims of s on the planning mesh).
void BoxOfRank(const Problem& p, const State& s, const RankCoords& r, int64_t* lo, int64_t* hi) {
  for (int i = 0; i < p.num_dims; ++i) {
    int64_t idx = 0, blocks = 1;
    for (int a : s.dims[i]) {
      idx = idx * p.axis_size[a] + r.coord[a];
      blocks *= p.axis_size[a];
    }
    const int64_t size = p.shape[i] / blocks;
    lo[i] = idx * size;
    hi[i] = (idx + 1) * size;
  }
}

class Planner;

// The per-rank boxes of a search state, built on first use: most expansions read only a few
// sampled ranks' boxes (Of), which need no table; the table comes from the planner, which
// keeps a few (Planner::BoxesFor). Refers to `p`, `s` and `planner`, which must outlive it.
class LazyBoxes {
 public:
  LazyBoxes(const Problem& p, const State& s, const Planner& planner)
      : p_(p), s_(s), planner_(planner) {}
  const Boxes& all() const;  // after Planner
  void Of(const RankCoords& r, int64_t* lo, int64_t* hi) const {
    if (!boxes_) return BoxOfRank(p_, s_, r, lo, hi);
    const int d = p_.num_dims;
    std::copy_n(boxes_->lo.data() + r.rank * d, d, lo);
    std::copy_n(boxes_->hi.data() + r.rank * d, d, hi);
  }

 private:
  const Problem& p_;
  const State& s_;
  const Planner& planner_;
  mutable std::shared_ptr<const Boxes> boxes_;
};

// What one step makes each rank receive, evaluated rank by rank (the search first checks a
// sample of ranks against the bound, and builds the whole vector only for survivors).
struct StepRecv {
  enum class Kind { kUniform, kAllReduce, kNewBlocks } kind = Kind::kUniform;
  int64_t bytes = 0;               // kUniform
  std::vector<int> axes;           // kAllReduce: along these axes ...
  int64_t elems = 0;               // ... of this many elements
  const LazyBoxes* cur = nullptr;  // kNewBlocks: each rank receives what its new block lacks
};

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

// The exchange from the source into the target, counted once (CountExchange) for the
// single-message path and the search: without pending reductions its receiving side is the
// bound from the source, and the search prices the exchange first, from the root.
struct SourceExchange {
  bool counted = false;
  Exchange ex;

  // Counts when the problem allows: no pending reductions, the target a state on the mesh,
  // other than the source.
  explicit SourceExchange(const Problem& p) {
    if (p.src.reduce_mask == 0 && p.has_target_state && p.src.dims != p.tgt.dims) {
      counted = redist_internal::CountExchange(p, p.src, p.tgt, p.new_partial_mask, &ex);
    }
  }
};

class Planner {
 public:
  Planner(const Problem& p, const CostModel& cost, SourceExchange source_into_target)
      : p_(p), cost_(cost) {
    bw_max_ = cost.MaxBandwidth(p.mesh);
    axis_bw_.reserve(p.num_axes);
    for (int a = 0; a < p.num_axes; ++a)
      axis_bw_.push_back(cost.AxisBandwidth(p.mesh.axis_name(a)));
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

  const std::vector<Landing>& landings() const { return landings_; }
  // The ranks that must hold their block of landing i: the active ranks for the target,
  // every rank for the others.
  const std::vector<char>& Want(size_t i) const {
    if (i == 0) return p_.active;
    if (every_rank_.empty()) every_rank_.assign(p_.num_ranks, 1);
    return every_rank_;
  }
  // Landing i's boxes (computed on first use; landing 0's are the problem's target boxes).
  const Boxes& LandingBoxes(size_t i) const {
    if (i == 0) return p_.target();
    Landing& l = landings_[i];
    if (!l.boxes) l.boxes = std::make_unique<Boxes>(BoxesOf(p_, l.x));
    return *l.boxes;
  }

  // The pruning estimate from the source, taken once the search is done with it (for the
  // plan: without a pending sum it is the missing bytes, the lower bound itself).
  std::vector<int64_t> TakeEstimateSrc() { return std::move(est_src_); }
  LazyBoxes LazyBoxesOf(const State& s) const { return LazyBoxes(p_, s, *this); }
  // Boxes of state s (kept for later calls while the cache is small).
  std::shared_ptr<const Boxes> BoxesFor(const State& s) const {
    if (s.dims == p_.src.dims) return {std::shared_ptr<const Boxes>(), &p_.source()};
    State dims_only;
    dims_only.dims = s.dims;
    std::string key = dims_only.Key();
    if (auto it = boxes_.find(key); it != boxes_.end()) return it->second;
    auto boxes = std::make_shared<const Boxes>(BoxesOf(p_, s));
    if (boxes_.size() < kMaxCachedBoxes) boxes_.emplace(std::move(key), boxes);
    return boxes;
  }
  int states_explored() const { return explored_; }

  // Runs the search; returns the best candidate (node < 0 when none).
  Candidate Search(const SearchConfig& cfg) {
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

  // The fallback for partial sources: all-reduce every pending axis, then one exchange.
  Candidate Baseline() {
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
      child.time =
          cost_.CollectiveSeconds(CollectiveKind::kAllReduce, static_cast<double>(shard * p_.elem),
                                  p_.mesh, child.edge.axes);
      child.bytes = static_cast<double>(*std::max_element(recv.begin(), recv.end()));
      child.steps = 1;
      for (int r = 0; r < p_.num_ranks; ++r) child.recv[r] += recv[r];
      nodes_.push_back(child);
      index = 1;
    }
    Candidate c;
    c.node = index;
    c.final = (p_.has_target_state && nodes_[index].state.dims == p_.tgt.dims)
                  ? EdgeKind::kNone
                  : EdgeKind::kExchange;
    c.landing = 0;
    return c;
  }

  // The irregular exchange from state s (boxes `boxes`) into landing i.
  Exchange ExchangeInto(const State& s, const Boxes& boxes, size_t i) const {
    if (std::optional<Exchange> ex = CountedExchangeInto(s, i)) return std::move(*ex);
    const Boxes& lb = LandingBoxes(i);
    return redist_internal::ComputeExchange(p_, s, boxes, lb.lo, lb.hi, Want(i),
                                            /*record=*/false);
  }
  // The same in closed form (CountExchange), or nullopt when not covered. Landings are states
  // on M when the target is one (unified meshes); landing 0 is wanted by the active ranks
  // (index 0 along new partial axes), the others by every rank.
  // with_senders = false: the receiving side only (CompleteExchangeInto adds the other).
  std::optional<Exchange> CountedExchangeInto(const State& s, size_t i,
                                              bool with_senders = true) const {
    Exchange ex;
    if (!p_.has_target_state ||
        !redist_internal::CountExchange(p_, s, landings_[i].x, i == 0 ? p_.new_partial_mask : 0,
                                        &ex, with_senders)) {
      return std::nullopt;
    }
    return ex;
  }
  // The same, receiving side, for an exchange that keeps the plan within the bound only if
  // every rank r receives at most est_src_[r] + tolerance - used[r] - more[r] - uniform bytes:
  // *exceeds when some rank would (found on nested blocks, where the count stops there; the
  // caller checks the bound itself otherwise, and outside a tight search there is none).
  std::optional<Exchange> CountedExchangeIntoWithin(const State& s, size_t i,
                                                    const std::vector<int64_t>& used,
                                                    const std::vector<int64_t>* more,
                                                    int64_t uniform, bool* exceeds) const {
    *exceeds = false;
    if (!cfg_.tight) return CountedExchangeInto(s, i, /*with_senders=*/false);
    if (!p_.has_target_state) return std::nullopt;
    redist_internal::RecvCap cap;
    cap.bound = est_src_.data();
    cap.used = used.empty() ? nullptr : used.data();  // (empty: nothing received yet)
    cap.more = more ? more->data() : nullptr;
    cap.slack = cfg_.tolerance - uniform;
    Exchange ex;
    if (!redist_internal::CountExchangeReceivingWithin(
            p_, s, landings_[i].x, i == 0 ? p_.new_partial_mask : 0, cap, &ex, exceeds)) {
      return std::nullopt;
    }
    return ex;
  }
  void CompleteExchangeInto(const State& s, size_t i, Exchange* receiving) const {
    const bool covered = redist_internal::CountExchangeSenders(
        p_, s, landings_[i].x, i == 0 ? p_.new_partial_mask : 0, receiving);
    assert(covered);  // as the receiving side
    (void)covered;
  }

  // The irregular reduce-scatter that ends the plan from a state with pending reductions,
  // when every active rank's target box lies inside its block: within each reduction group,
  // every member sends each active member its addend of that member's target box. With
  // record = false only the counts are computed.
  std::optional<Exchange> ReduceScatterV(const State& s, const Boxes& boxes, size_t i,
                                         bool record = true) const {
    return ReduceScatterV(s, boxes, LandingBoxes(i), Want(i), record);
  }
  std::optional<Exchange> ReduceScatterV(const State& s, const Boxes& boxes, const Boxes& into,
                                         const std::vector<char>& want, bool record = true) const {
    return ReduceScatterVExchange(p_, s, boxes, into, want, record);
  }

  const std::deque<Node>& nodes() const { return nodes_; }

  // cost_.CollectiveSeconds(kind, bytes, p_.mesh, axes) without converting the axes.
  double CollectiveSeconds(CollectiveKind kind, double bytes, const AxisList& axes) const {
    int64_t group = 1;
    double bw = axes.empty() ? cost_.default_bandwidth : -1;
    for (int a : axes) {
      group *= p_.axis_size[a];
      bw = bw < 0 ? axis_bw_[a] : std::min(bw, axis_bw_[a]);
    }
    return cost_.CollectiveSeconds(kind, bytes, group, bw);
  }

  double ExchangeSeconds(const Exchange& ex) const {
    const double bw = cost_.Bandwidth(p_.mesh, MaskAxes(ex.axes_mask));
    return cost_.ExchangeSeconds(ex.messages, static_cast<double>(ex.max_recv), bw);
  }

 private:
  Score G(const Node& n) const {
    Score s;
    s.primary = cfg_.bytes_first ? n.bytes : n.time;
    s.secondary = cfg_.bytes_first ? n.time : n.bytes;
    s.exchanges = n.exchanges;
    s.steps = n.steps;
    return s;
  }
  Score StepScore(double seconds, double bytes, int exchanges) const {
    Score s;
    s.primary = cfg_.bytes_first ? bytes : seconds;
    s.secondary = cfg_.bytes_first ? seconds : bytes;
    s.exchanges = exchanges;
    s.steps = 1;
    return s;
  }
  static Score Add(Score a, const Score& b) {
    a.primary += b.primary;
    a.secondary += b.secondary;
    a.exchanges += b.exchanges;
    a.steps += b.steps;
    return a;
  }
  static int64_t MaxOf(const std::vector<int64_t>& v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  }
  Score H(const std::vector<int64_t>& lb) const {
    const int64_t m = MaxOf(lb);
    const double t = m > 0 ? cost_.latency_s + static_cast<double>(m) / bw_max_ : 0.0;
    Score s;
    s.primary = cfg_.bytes_first ? static_cast<double>(m) : t;
    s.secondary = cfg_.bytes_first ? t : static_cast<double>(m);
    return s;
  }
  bool Accepts(const Candidate& best, const Score& s) const {
    return best.node < 0 || Better(s, best.score);
  }
  void Offer(Candidate* best, int node, EdgeKind final, int landing, const Score& s,
             std::shared_ptr<Exchange> exchange = nullptr) const {
    if (Accepts(*best, s)) {
      best->node = node;
      best->final = final;
      best->landing = landing;
      best->score = s;
      best->exchange = std::move(exchange);
    }
  }

  // Elements of rank r's block of state s that its target block needs and s lacks, in bytes
  // (the move part of the bound from s).
  int64_t MoveBytes(const State& s, const RankCoords& r) const {
    if (!p_.active[r.rank]) return 0;
    const int d = p_.num_dims;
    int64_t lo[kMaxSampleDims], hi[kMaxSampleDims];
    int64_t tlo[kMaxSampleDims], thi[kMaxSampleDims];
    BoxOfRank(p_, s, r, lo, hi);
    TargetBoxOf(r, tlo, thi);
    return (BoxVolume(tlo, thi, d) - IntersectVolume(tlo, thi, lo, hi, d)) * p_.elem;
  }
  // Sampled rank r's target box (precomputed).
  void TargetBoxOf(const RankCoords& r, int64_t* lo, int64_t* hi) const {
    assert(r.sample >= 0);
    const int d = p_.num_dims;
    std::copy_n(sample_target_lo_.data() + r.sample * d, d, lo);
    std::copy_n(sample_target_hi_.data() + r.sample * d, d, hi);
  }
  int64_t StepRecvOf(const StepRecv& sr, const State& next, const RankCoords& r) const {
    switch (sr.kind) {
      case StepRecv::Kind::kUniform:
        return sr.bytes;
      case StepRecv::Kind::kAllReduce:
        return AllReduceRecvOfRank(p_, sr.axes, sr.elems, r);
      case StepRecv::Kind::kNewBlocks: {
        const int d = p_.num_dims;
        int64_t lo[kMaxSampleDims], hi[kMaxSampleDims];
        int64_t clo[kMaxSampleDims], chi[kMaxSampleDims];
        BoxOfRank(p_, next, r, lo, hi);
        sr.cur->Of(r, clo, chi);
        return (BoxVolume(lo, hi, d) - IntersectVolume(lo, hi, clo, chi, d)) * p_.elem;
      }
    }
    return 0;
  }
  bool Sampled() const { return !samples_.empty() && p_.num_dims <= kMaxSampleDims; }

  // Offers the plans that end from `node`: reaching a landing structurally, or an irregular
  // exchange (no pending reductions) / reduce-scatter-v (pending reductions) into a landing,
  // followed by the landing's suffix.
  void Finish(int index, const Node& node, const LazyBoxes& boxes, Candidate* best) const {
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
            int64_t lo[kMaxSampleDims], hi[kMaxSampleDims], nlo[kMaxSampleDims],
                nhi[kMaxSampleDims];
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
      Score sc =
          Add(G(node), StepScore(ExchangeSeconds(*ex), static_cast<double>(ex->max_recv), 1));
      sc = Add(sc, rest);
      if (!Accepts(*best, sc)) continue;
      Offer(best, index, kind, static_cast<int>(i), sc,
            kind == EdgeKind::kExchange ? std::make_shared<Exchange>(std::move(*ex)) : nullptr);
    }
  }

  // Per rank, the elements of landing i's blocks the state `boxes` lacks (bytes): what an
  // exchange into it receives; *peers: the most blocks of `boxes` any rank needs a part of.
  std::vector<int64_t> MissingBytes(const Boxes& boxes, size_t i, int64_t* peers) const {
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

  // Whether a + b + c (per rank; a may be empty and b null: 0; c is uniform) stays within the
  // bound.
  bool Fits(const std::vector<int64_t>& a, const std::vector<int64_t>* b, int64_t c) const {
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

  // Landing 0: the target. Then layouts a few collectives before the target (gathers and
  // all-to-alls reversed, slices reversed), breadth first.
  void BuildLandings() {
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

  // Generates the children of `node` and passes them (with their lower bound) to `emit`.
  template <typename Emit>
  void Expand(int index, const Node& node, const LazyBoxes& boxes, Emit emit) {
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
      const double secs =
          CollectiveSeconds(kind, static_cast<double>(n_elems * p_.elem), edge.axes);
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
      const double secs = cost_.ExchangeSeconds(g - 1, static_cast<double>(sr.bytes),
                                                cost_.Bandwidth(p_.mesh, axes));
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

  // A child: rejected when over the memory cap or (tight search) when it cannot meet the
  // bound on some rank; a sample of ranks is checked first, against the move part of the
  // bound only (a necessary condition), so that most rejected children cost no per-rank
  // work. `seconds` < 0: a permute, priced by its exchange.
  template <typename Emit>
  void Consider(int index, const Node& node, Edge edge, State next, const StepRecv& sr,
                double seconds, bool exchange, Emit& emit, const LazyBoxes* next_boxes = nullptr) {
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
      if (redist_internal::CountExchange(p_, node.state, next, 0, &ex, /*with_senders=*/false)) {
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
          step_recv[r] = (BoxVolume(lo, hi, d) - IntersectVolume(lo, hi, cur.lo.data() + r * d,
                                                                 cur.hi.data() + r * d, d)) *
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
        const bool covered =
            redist_internal::CountExchangeSenders(p_, node.state, child.state, 0, &ex);
        assert(covered);  // as the receiving side
        (void)covered;
      } else if (!redist_internal::CountExchange(p_, node.state, child.state, 0, &ex)) {
        const std::shared_ptr<const Boxes> child_boxes = BoxesFor(child.state);
        ex = redist_internal::ComputeExchange(p_, node.state, sr.cur->all(), child_boxes->lo,
                                              child_boxes->hi, std::vector<char>(p_.num_ranks, 1),
                                              /*record=*/false);
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

  static constexpr int kMaxSampleDims = 16;

  const Problem& p_;
  const CostModel& cost_;
  SearchConfig cfg_;
  double bw_max_ = 1;
  std::vector<double> axis_bw_;  // per mesh axis: CostModel::AxisBandwidth
  // Boxes of states met so far (a few: they are N x dims each), by their dimensions.
  static constexpr size_t kMaxCachedBoxes = 64;
  mutable std::unordered_map<std::string, std::shared_ptr<const Boxes>> boxes_;
  std::vector<int64_t> est_src_;
  // The counts of the exchange from the source into the target, when counted and not yet
  // taken by Finish.
  mutable std::optional<Exchange> source_into_target_;
  std::vector<RankCoords> samples_;
  std::vector<int64_t> sample_target_lo_, sample_target_hi_;  // per sample, num_dims each
  mutable std::vector<Landing> landings_;
  mutable std::vector<char> every_rank_;  // Want(i > 0)
  std::deque<Node> nodes_;  // a deque: Search holds a node while its children are added
  int explored_ = 0;
};

const Boxes& LazyBoxes::all() const {
  if (!boxes_) boxes_ = planner_.BoxesFor(s_);
  return *boxes_;
}

// ---------------------------------------------------------------------------------------
// Plan assembly.

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
        } else if (!redist_internal::CountExchange(p, prev, next, 0, &ex)) {
          ex = redist_internal::ExchangeCounts(p, prev, *planner.BoxesFor(prev), nullptr,
                                               *planner.BoxesFor(next), all, 0);
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
    computed = redist_internal::ExchangeCounts(p, p.src, b, p.unified ? &p.tgt : nullptr,
                                               p.target(), p.active, p.new_partial_mask);
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

std::string GroupsString(const std::vector<std::vector<int>>& groups, size_t limit = 8) {
  std::string out;
  for (size_t i = 0; i < groups.size() && i < limit; ++i) {
    if (i) out += " ";
    out += "{";
    for (size_t j = 0; j < groups[i].size(); ++j) {
      if (j) out += ",";
      out += std::to_string(groups[i][j]);
    }
    out += "}";
  }
  if (groups.size() > limit) out += " ... (" + std::to_string(groups.size()) + " groups)";
  return out;
}

}  // namespace

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

std::string RedistPlan::ToString() const {
  std::ostringstream os;
  os << "redistribution " << from.ToString() << " -> " << to.ToString() << "  (shape "
     << ShapeToString(from.shape()) << ", " << element_bytes << " B/element)\n";
  os << "  from " << from.mesh().ToString() << "  to " << to.mesh().ToString() << "\n";
  if (!meshes_unified) {
    os << "  meshes not unifiable: planned on the source mesh with irregular exchanges\n";
  } else if (!(mesh == from.mesh() && mesh == to.mesh())) {
    os << "  planned on unified " << mesh.ToString() << "\n";
  }
  if (steps.empty()) os << "  (no steps: every rank already holds its target shard)\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const RedistStep& s = steps[i];
    os << "  " << (i + 1) << ". " << s.KindName();
    if (!s.axis_names.empty()) {
      os << " along ";
      for (size_t k = 0; k < s.axis_names.size(); ++k) os << (k ? "." : "") << s.axis_names[k];
    }
    if (s.dim >= 0) os << ", dim " << s.dim;
    if (s.dim_to >= 0) os << " -> " << s.dim_to;
    os << "  => " << s.after.ToString() << "\n";
    if (!s.groups.empty()) os << "     groups " << GroupsString(s.groups.list()) << "\n";
    if (s.bytes_recv_per_rank || s.bytes_sent_per_rank) {
      os << "     recv " << FormatBytes(s.bytes_recv_per_rank) << "/rank, sent "
         << FormatBytes(s.bytes_sent_per_rank) << "/rank (max), " << s.messages << " messages, "
         << FormatSeconds(s.seconds) << "\n";
    }
    if (!s.transfers.empty()) os << "     " << s.transfers.size() << " transfers\n";
    if (!s.zero_ranks.empty()) os << "     " << s.zero_ranks.size() << " ranks become zeros\n";
    os << "     why: " << s.reason << "\n";
  }
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f",
                lower_bound_bytes ? static_cast<double>(planned_bytes) / lower_bound_bytes
                                  : (planned_bytes ? INFINITY : 1.0));
  os << "  planned " << FormatBytes(planned_bytes) << "/rank (" << FormatBytes(total_planned_bytes)
     << " in all), lower bound " << FormatBytes(lower_bound_bytes) << "/rank ("
     << FormatBytes(total_lower_bound_bytes) << "), ratio " << ratio
     << (byte_optimal ? ", byte-optimal" : ", above the bound on some rank") << "; predicted "
     << FormatSeconds(predicted_seconds) << "\n";
  return os.str();
}

std::string RedistPlan::ToJson() const {
  using nlohmann::json;
  auto layout_json = [](const Layout& l) {
    return json{{"layout", l.ToString()}, {"spec", l.ToSpec()}, {"mesh", l.mesh().ToString()}};
  };
  json j;
  j["from"] = layout_json(from);
  j["to"] = layout_json(to);
  j["shape"] = from.shape();
  j["mesh"] = mesh.ToString();
  j["meshes_unified"] = meshes_unified;
  j["element_bytes"] = element_bytes;
  j["planned_bytes"] = planned_bytes;
  j["lower_bound_bytes"] = lower_bound_bytes;
  j["total_planned_bytes"] = total_planned_bytes;
  j["total_lower_bound_bytes"] = total_lower_bound_bytes;
  j["recv_bytes"] = recv_bytes;
  j["lower_bound"] = lower_bound;
  j["byte_optimal"] = byte_optimal;
  j["bounded_search"] = bounded_search;
  j["bound_slack_bytes"] = bound_slack_bytes;
  j["predicted_seconds"] = predicted_seconds;
  json steps_json = json::array();
  for (const RedistStep& s : steps) {
    json st;
    st["kind"] = s.KindName();
    st["axes"] = s.axis_names;
    st["dim"] = s.dim;
    st["dim_to"] = s.dim_to;
    st["groups"] = s.groups.list();
    st["bytes_sent_per_rank"] = s.bytes_sent_per_rank;
    st["bytes_recv_per_rank"] = s.bytes_recv_per_rank;
    st["bytes_sent"] = s.bytes_sent;
    st["bytes_recv"] = s.bytes_recv;
    st["messages"] = s.messages;
    st["seconds"] = s.seconds;
    st["after"] = layout_json(s.after);
    st["reason"] = s.reason;
    if (!s.transfers.empty()) {
      json ts = json::array();
      for (const RedistTransfer& t : s.transfers) {
        ts.push_back({{"src", t.src}, {"dst", t.dst}, {"offset", t.offset}, {"extent", t.extent}});
      }
      st["transfers"] = ts;
    }
    if (!s.zero_ranks.empty()) st["zero_ranks"] = s.zero_ranks;
    steps_json.push_back(std::move(st));
  }
  j["steps"] = std::move(steps_json);
  return j.dump();
}

}  // namespace shardscope
