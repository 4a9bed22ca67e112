// The planner's search (redistribution.h), internal to shardscope_redistribution: edges,
// scores, nodes, landings and the Planner. Members are defined in planner.cc (setup, landings,
// final steps) and planner_search.cc (the search); plan_assembly.cc turns a candidate into a plan.
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
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::redist_search {

using redist_internal::AllReduceRecv;
using redist_internal::AxesMask;
using redist_internal::AxesName;
using redist_internal::AxisList;
using redist_internal::Boxes;
using redist_internal::BoxesOf;
using redist_internal::BoxVolume;
using redist_internal::CountPart;
using redist_internal::Exchange;
using redist_internal::ExchangeBoxes;
using redist_internal::GroupsAlong;
using redist_internal::IntersectVolume;
using redist_internal::MaskAxes;
using redist_internal::Problem;
using redist_internal::RingShare;
using redist_internal::State;

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

inline bool Close(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-18;
}

inline bool Better(const Score& a, const Score& b) {
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
inline uint64_t DimsSignature(const redist_internal::DimList& dims) {
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
                                          int64_t n);

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
inline int64_t AllReduceRecvOfRank(const Problem& p, const std::vector<int>& axes, int64_t n,
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
inline int64_t ShardElems(const Problem& p, const State& s) {
  int64_t e = 1;
  for (int i = 0; i < p.num_dims; ++i) {
    int64_t blocks = 1;
    for (int a : s.dims[i]) blocks *= p.axis_size[a];
    e *= p.shape[i] / blocks;
  }
  return e;
}

// Rank r's box in state s (dims of s on the planning mesh).
inline void BoxOfRank(const Problem& p, const State& s, const RankCoords& r, int64_t* lo,
                      int64_t* hi) {
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
                                               bool record);

// Its transfers as a lazy list of `count`.
RedistTransfers LazyReduceScatterVTransfers(const Problem& p, const State& s, const Boxes& boxes,
                                            const Boxes& into, const std::vector<char>& want,
                                            int64_t count);

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
      counted =
          redist_internal::CountExchange(p, p.src, &p.tgt, {.zero_mask = p.new_partial_mask}, &ex);
    }
  }
};

class Planner {
 public:
  Planner(const Problem& p, const CostModel& cost, SourceExchange source_into_target);

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
  Candidate Search(const SearchConfig& cfg);

  // The fallback for partial sources: all-reduce every pending axis, then one exchange.
  Candidate Baseline();

  // The irregular exchange from state s (boxes `boxes`) into landing i.
  Exchange ExchangeInto(const State& s, const Boxes& boxes, size_t i) const;
  // The same in closed form (CountExchange), or nullopt when not covered. Landings are states
  // on M when the target is one (unified meshes); landing 0 is wanted by the active ranks
  // (index 0 along new partial axes), the others by every rank.
  // with_senders = false: the receiving side only (CompleteExchangeInto adds the other).
  std::optional<Exchange> CountedExchangeInto(const State& s, size_t i,
                                              bool with_senders = true) const {
    Exchange ex;
    if (!p_.has_target_state ||
        !redist_internal::CountExchange(
            p_, s, &landings_[i].x,
            {.zero_mask = i == 0 ? p_.new_partial_mask : 0,
             .part = with_senders ? CountPart::kBoth : CountPart::kReceiving},
            &ex)) {
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
    if (!redist_internal::CountExchange(p_, s, &landings_[i].x,
                                        {.zero_mask = i == 0 ? p_.new_partial_mask : 0,
                                         .part = CountPart::kReceiving,
                                         .cap = &cap,
                                         .exceeds = exceeds},
                                        &ex)) {
      return std::nullopt;
    }
    return ex;
  }
  void CompleteExchangeInto(const State& s, size_t i, Exchange* receiving) const;

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
  void Finish(int index, const Node& node, const LazyBoxes& boxes, Candidate* best) const;

  // Per rank, the elements of landing i's blocks the state `boxes` lacks (bytes): what an
  // exchange into it receives; *peers: the most blocks of `boxes` any rank needs a part of.
  std::vector<int64_t> MissingBytes(const Boxes& boxes, size_t i, int64_t* peers) const;

  // Whether a + b + c (per rank; a may be empty and b null: 0; c is uniform) stays within the
  // bound.
  bool Fits(const std::vector<int64_t>& a, const std::vector<int64_t>* b, int64_t c) const;

  // Landing 0: the target. Then layouts a few collectives before the target (gathers and
  // all-to-alls reversed, slices reversed), breadth first.
  void BuildLandings();

  // Generates the children of `node` and passes them (with their lower bound) to `emit`.
  template <typename Emit>
  void Expand(int index, const Node& node, const LazyBoxes& boxes, Emit emit);

  // A child: rejected when over the memory cap or (tight search) when it cannot meet the
  // bound on some rank; a sample of ranks is checked first, against the move part of the
  // bound only (a necessary condition), so that most rejected children cost no per-rank
  // work. `seconds` < 0: a permute, priced by its exchange.
  template <typename Emit>
  void Consider(int index, const Node& node, Edge edge, State next, const StepRecv& sr,
                double seconds, bool exchange, Emit& emit, const LazyBoxes* next_boxes = nullptr);

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

}  // namespace shardscope::redist_search
