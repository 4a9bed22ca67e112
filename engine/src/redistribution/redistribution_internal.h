// Internals shared by the redistribution planner (planner*.cc: the search; plan_assembly.cc;
// redistribution_fast.cc: the symbolic fast path), the problem and its bound (problem.cc,
// lower_bound.cc) and the executor (redistribution_executor.cc). Not a public header.
//
// Vocabulary. The planner works on one mesh M (the unified mesh, or the source mesh when the
// meshes cannot be unified). A search state is a layout on M given by its per-dimension axis
// lists plus the partial axes still to be reduced; axes that stay partial in the target
// ("kept") are fixed for the whole plan. Boxes are per-rank element boxes of the global
// tensor: [lo, hi) per dimension.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/cost/cost_model.h"
#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/redistribution/redistribution.h"
#include "shardscope/status.h"

namespace shardscope::redist_internal {

// The mesh axes of one tensor dimension, most significant first, stored inline: the search
// copies a state for every candidate step, and these copies allocate nothing. Converts
// implicitly from and to std::vector<int> (the mesh and layout APIs; allocates).
class AxisList {
 public:
  static constexpr size_t kCapacity = 15;
  AxisList() = default;
  AxisList(const std::vector<int>& axes) { assign(axes.begin(), axes.end()); }     // NOLINT
  AxisList(std::initializer_list<int> axes) { assign(axes.begin(), axes.end()); }  // NOLINT
  operator std::vector<int>() const { return std::vector<int>(begin(), end()); }   // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint8_t* data() const { return axes_; }
  const uint8_t* begin() const { return axes_; }
  const uint8_t* end() const { return axes_ + size_; }
  uint8_t* begin() { return axes_; }
  uint8_t* end() { return axes_ + size_; }
  uint8_t operator[](size_t i) const { return axes_[i]; }
  uint8_t& operator[](size_t i) { return axes_[i]; }
  int back() const { return axes_[size_ - 1]; }
  // Preconditions (asserted): at most kCapacity axes (MakeProblem checks layouts), axes < 256.
  void push_back(int axis) {
    assert(size_ < kCapacity && axis >= 0 && axis < 256);
    axes_[size_++] = static_cast<uint8_t>(axis);
  }
  void pop_back() { --size_; }
  // Shrinks to n axes (the planner only drops axes from the end).
  void resize(size_t n) {
    assert(n <= size_);
    size_ = static_cast<uint8_t>(n);
  }
  template <typename It>
  void assign(It first, It last) {
    size_ = 0;
    for (; first != last; ++first) push_back(*first);
  }
  // Inserts [first, last) before `at`.
  template <typename It>
  void insert(const uint8_t* at, It first, It last) {
    uint8_t tail[kCapacity];
    const size_t pos = static_cast<size_t>(at - axes_), count = size_ - pos;
    std::copy(axes_ + pos, axes_ + size_, tail);
    size_ = static_cast<uint8_t>(pos);
    for (; first != last; ++first) push_back(*first);
    for (size_t i = 0; i < count; ++i) push_back(tail[i]);
  }
  void insert(const uint8_t* at, int axis) { insert(at, &axis, &axis + 1); }
  friend bool operator==(const AxisList& a, const AxisList& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  uint8_t size_ = 0;
  uint8_t axes_[kCapacity] = {};
};

// Per tensor dimension its axes (a DimAxes stored inline; see AxisList).
class DimList {
 public:
  static constexpr size_t kCapacity = 12;
  DimList() = default;
  DimList(const DimAxes& dims) {  // NOLINT: precondition: at most kCapacity dimensions
    assert(dims.size() <= kCapacity);
    size_ = static_cast<uint8_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) dims_[i] = dims[i];
  }
  operator DimAxes() const { return DimAxes(begin(), end()); }  // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const AxisList* begin() const { return dims_; }
  const AxisList* end() const { return dims_ + size_; }
  AxisList* begin() { return dims_; }
  AxisList* end() { return dims_ + size_; }
  const AxisList& operator[](size_t i) const { return dims_[i]; }
  AxisList& operator[](size_t i) { return dims_[i]; }
  void assign(size_t n, const AxisList& value) {
    assert(n <= kCapacity);
    size_ = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i) dims_[i] = value;
  }
  friend bool operator==(const DimList& a, const DimList& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  uint8_t size_ = 0;
  AxisList dims_[kCapacity];
};

// A permutation of 0..n-1 read by index (Problem's rank order and its inverse): a view of the
// mesh's own tables, or of a shared identity for the default order, so that a problem copies
// no per-rank table (at 1024 ranks, each plan would write two 4 KiB tables).
class RankTable {
 public:
  RankTable() = default;
  // The identity of n entries.
  static RankTable Identity(int n);
  // A view of `table`, which must outlive every use.
  static RankTable Of(const std::vector<int>& table) { return RankTable(table.data()); }
  int operator[](size_t i) const { return data_[i]; }
  const int* data() const { return data_; }

 private:
  explicit RankTable(const int* data) : data_(data) {}
  const int* data_ = nullptr;
  std::shared_ptr<const std::vector<int>> owned_;  // an identity larger than the shared one
};

// A layout on the planning mesh as a search state.
struct State {
  DimList dims;
  uint32_t reduce_mask = 0;  // partial axes of M still to be reduced (bit = axis)
  std::string Key() const;
  friend bool operator==(const State&, const State&) = default;
};

// Per-rank boxes of a state (or of any layout), flat: rank r, dim d at [r * D + d].
struct Boxes {
  int num_dims = 0;
  std::vector<int64_t> lo, hi;
  std::vector<int64_t> block_id;    // per rank, row-major over the block grid
  std::vector<int64_t> block_size;  // per dim
  std::vector<int64_t> blocks;      // per dim (number of blocks)
  int64_t shard_elems = 0;
};

// UnifyMeshes by trying every choice of prime factor orders (UnifyMeshes takes a shortcut for
// meshes with the same rank order and calls this otherwise; tests compare the two).
Result<MeshUnification> UnifyMeshesGeneral(const DeviceMesh& a, const DeviceMesh& b);

// Boxes of `layout` (any mesh over the same ranks).
Boxes BoxesOfLayout(const Layout& layout);

// The inputs of a plan, validated and brought onto one mesh: everything the fast path needs
// (no per-rank work except what mesh unification does). Refers to the caller's layouts,
// which must outlive it.
struct Setup {
  const Layout* from = nullptr;
  const Layout* to = nullptr;
  DeviceMesh mesh;  // M
  bool unified = false;
  std::vector<std::vector<int>> axes_of_from;  // from's mesh axis -> axes of M (when unified)
  std::vector<std::vector<int>> axes_of_to;
  // `from` / `to` on M when unified (else themselves; `to` then stays on its own mesh).
  const Layout& from_m() const { return from_is_m ? *from : from_on_m; }
  const Layout& to_m() const { return to_is_m ? *to : to_on_m; }
  int64_t elem = 4;

  bool from_is_m = true;  // `from` is already a layout on M
  bool to_is_m = true;
  Layout from_on_m;
  Layout to_on_m;
};

// Validates (errors of PlanRedistribution / RedistributionLowerBound) and unifies the meshes.
Result<Setup> MakeSetup(const Layout& from, const Layout& to, int64_t element_bytes);

// The planning problem: both layouts brought onto one mesh, with per-rank data. Refers to the
// caller's layouts (as Setup does), which must outlive it.
struct Problem {
  const Layout* from = nullptr;
  const Layout* to = nullptr;
  DeviceMesh mesh;  // M
  bool unified = false;
  std::vector<std::vector<int>> axes_of_from;  // from's mesh axis -> axes of M (when unified)
  std::vector<std::vector<int>> axes_of_to;
  Shape shape;
  int num_dims = 0;
  int num_ranks = 0;
  int num_axes = 0;
  int64_t elem = 4;
  std::vector<int64_t> axis_size;  // per axis of M
  // Rank r's coordinate along axis a at [r * A + a]; filled on first use (coord()): the
  // common paths walk ranks in grid order and need none. Not thread-safe (one plan, one thread).
  mutable std::vector<int64_t> coords;
  RankTable pos_of_rank;            // grid position (row-major over M) of each rank
  RankTable rank_of_pos;            // rank at each grid position
  std::vector<int64_t> pos_stride;  // per axis: grid position stride (row-major)
  uint32_t kept_mask = 0;           // partial in both: never reduced, never moved along
  uint32_t new_partial_mask = 0;    // partial in `to` only (unified case)
  State src;
  bool has_target_state = false;  // unified: the target as a state (without new partial)
  State tgt;
  std::vector<char> active;     // ranks that must end with data (not new zero addends)
  std::vector<int> zero_ranks;  // inactive ranks, ascending
  int64_t max_shard_elems = 0;  // memory cap for intermediate states

  // Per-rank boxes of src, of the target (on to's own mesh) and per rank the target block
  // id (-1 when inactive): computed on first use (the closed-form counts need none), like
  // coords; not thread-safe.
  const Boxes& source() const {
    if (!source_ready_) FillSource();
    return source_;
  }
  const Boxes& target() const {
    if (!target_ready_) FillTarget();
    return target_;
  }
  const std::vector<int64_t>& target_block() const {
    if (!target_ready_) FillTarget();
    return target_block_;
  }

  int64_t coord(int rank, int axis) const {
    if (coords.empty()) FillCoords();
    return coords[rank * num_axes + axis];
  }
  void FillCoords() const;

 private:
  void FillSource() const;
  void FillTarget() const;
  mutable bool source_ready_ = false, target_ready_ = false;
  mutable Boxes source_, target_;
  mutable std::vector<int64_t> target_block_;
};

// Takes the setup's mesh and axis maps.
Result<Problem> MakeProblem(Setup setup);
// Fills the per-rank grid data of `p` (num_ranks, num_axes, axis_size, coords, pos_of_rank,
// rank_of_pos, pos_stride) from p->mesh.
void FillRankGrid(Problem* p);
Result<Problem> MakeProblem(const Layout& from, const Layout& to, int64_t element_bytes);

// Boxes of a state on M.
Boxes BoxesOf(const Problem& p, const State& s);
// The layout of a state on M (kept axes added back as partial).
Result<Layout> LayoutOf(const Problem& p, const State& s);

// Lower bound from state `s` (with boxes `b`) to the target, per rank, in bytes; `move` and
// `reduce` receive the two parts when not null.
std::vector<int64_t> LowerBound(const Problem& p, const State& s, const Boxes& b,
                                std::vector<int64_t>* move = nullptr,
                                std::vector<int64_t>* reduce = nullptr);
// Per rank, the bytes of its target shard that boxes `b` do not hold (the move part).
std::vector<int64_t> MissingBytes(const Problem& p, const Boxes& b);
// The search's pruning estimate from state `s`: the missing bytes plus, with a pending sum, a
// per-group ring-bound heuristic. Not a proven bound (it may exceed LowerBound): pruning only.
std::vector<int64_t> SearchEstimate(const Problem& p, const State& s, const Boxes& b);

// An irregular exchange from the blocks of state `s` (boxes `cur`) to target boxes
// `tlo/thi` for ranks with want[r] != 0. Every element a rank lacks comes from the nearest
// rank holding its block in `s`: the one with the same coordinates on every mesh axis that
// does not split a dimension of `s` (so kept partial axes, whose addend index must match,
// always match). That owner is unique, so each rank receives each block it needs from one
// peer, and the peers it receives from are distinct.
struct Exchange {
  std::vector<RedistTransfer> transfers;
  std::vector<int64_t> recv, sent;  // bytes per rank
  int64_t max_recv = 0, max_sent = 0;
  int64_t messages = 0;
  int64_t max_recv_peers = 0;  // the most peers a rank receives from
  uint32_t axes_mask = 0;      // axes of M along which some communicating pair differs
  bool is_permute = false;
  int64_t num_transfers = 0;
  std::vector<std::vector<int>> groups;  // with_groups: connected sets of communicating ranks
};
// With record = false only the counts are computed (no transfer list; faster). with_groups:
// also the connected sets (sorted, each ascending, at least 2 ranks).
Exchange ComputeExchange(const Problem& p, const State& s, const Boxes& cur,
                         const std::vector<int64_t>& tlo, const std::vector<int64_t>& thi,
                         const std::vector<char>& want, bool record = true,
                         bool with_groups = false);
// What a rank r may receive: used[r] + more[r] (used and more may be null: 0) + its receive
// count must stay within bound[r] + slack (arrays of one entry per rank).
struct RecvCap {
  const int64_t* bound = nullptr;
  const int64_t* used = nullptr;
  const int64_t* more = nullptr;
  int64_t slack = 0;
};
// Which sides of an exchange one count gives.
//  kBoth: recv, sent, max_recv, max_sent, messages, max_recv_peers, axes_mask, is_permute,
//    num_transfers (no transfers, no groups).
//  kReceiving: recv, max_recv, max_recv_peers, num_transfers; sent stays 0, messages is the
//    most peers a rank receives from, axes_mask and is_permute are not computed.
//  kSending: completes `out`, the kReceiving count of the same arguments, into the kBoth one
//    without counting the receiving side again (for callers that reject most exchanges on
//    their receive counts).
enum class CountPart { kBoth, kReceiving, kSending };
// The per-rank boxes an enumerated count reads: from `cur` into `into` for the ranks with
// want[r] != 0.
struct ExchangeBoxes {
  const Boxes* cur = nullptr;
  const Boxes* into = nullptr;
  const std::vector<char>* want = nullptr;
};
struct ExchangeCountOptions {
  // The wanting ranks: those with coordinate 0 on every axis of zero_mask (new partial sums).
  uint32_t zero_mask = 0;
  CountPart part = CountPart::kBoth;
  // kReceiving, when not null: on nested blocks (HasNestedBlocks) without new partial sums
  // the count stops at the first rank over the cap and sets *exceeds (`out` then incomplete);
  // otherwise *exceeds is false and the caller checks `out` itself.
  const RecvCap* cap = nullptr;
  bool* exceeds = nullptr;
  // kBoth, when not null: where the closed form does not apply (or `into` is null), the
  // counts of ComputeExchange(p, s, *cur, into->lo, into->hi, *want, false): never false.
  const ExchangeBoxes* enumerate = nullptr;
};
// The one exchange counter: the counts of the irregular exchange from state `s` into state
// `into` (a state on p.mesh, or null: then `enumerate` must be given), as ComputeExchange
// gives them with record = false. In closed form, O(ranks x dims x axes) instead of one
// visit per (rank, peer) pair, needing no per-rank boxes (exchange_count.cc has the
// derivation; a test compares the two on random cases). False (out untouched) when the closed
// form does not cover the case (pending reductions in `s`, an empty dimension) and no
// `enumerate` boxes are given.
bool CountExchange(const Problem& p, const State& s, const State* into,
                   const ExchangeCountOptions& o, Exchange* out);
// Whether CountExchange(p, ...) takes its nested-blocks path (for every pair of states of
// p): every mesh axis a power of two long, so along every dimension each block of one state
// lies inside a block of the other and every per-rank factor is a bit test (no per-block
// tables). Tests use it to check that both paths are exercised.
bool HasNestedBlocks(const Problem& p);

// Sets step->transfers and step->groups to the transfer list and the connected sets of
// communicating ranks of ComputeExchange(p, s, BoxesOf(p, s), into_boxes.lo, into_boxes.hi,
// want), as lazy lists (`count` = the exchange's num_transfers) computed on first read.
// `into`: the state of the landing boxes on p.mesh, or null; then `into_boxes` are the boxes
// (else unused). What they keep is small (mesh, states, `want`): the per-rank data are rebuilt
// on expansion (only `into_boxes` is copied when `into` is null).
void SetLazyExchangeLists(const Problem& p, const State& s, const State* into,
                          const Boxes* into_boxes, const std::vector<char>& want, int64_t count,
                          RedistStep* step);

// Ring receive volume: what each rank of a group of p receives when n elements are reduced
// and scattered (n - floor(n / p)).
inline int64_t RingShare(int64_t n, int64_t p) { return p <= 1 ? 0 : n - n / p; }
// All-reduce of n elements over p ranks: reduce-scatter of balanced blocks + all-gather.
inline int64_t AllReduceRecv(int64_t n, int64_t p) {
  return p <= 1 ? 0 : n + (p - 2) * ((n + p - 1) / p);
}

std::vector<int> MaskAxes(uint32_t mask);
// The set of `axes` (a std::vector<int> or an AxisList) as a bit mask.
template <typename Axes>
uint32_t AxesMask(const Axes& axes) {
  uint32_t m = 0;
  for (int a : axes) m |= 1u << a;
  return m;
}

// Box helpers on flat [lo, hi) arrays of `d` dims.
// (Inline: the search calls them for every sampled rank of every candidate.)
inline int64_t BoxVolume(const int64_t* lo, const int64_t* hi, int d) {
  int64_t v = 1;
  for (int i = 0; i < d; ++i) v *= std::max<int64_t>(0, hi[i] - lo[i]);
  return v;
}
inline int64_t IntersectVolume(const int64_t* alo, const int64_t* ahi, const int64_t* blo,
                               const int64_t* bhi, int d) {
  int64_t v = 1;
  for (int i = 0; i < d; ++i) {
    const int64_t len = std::min(ahi[i], bhi[i]) - std::max(alo[i], blo[i]);
    if (len <= 0) return 0;
    v *= len;
  }
  return v;
}

// DeviceMesh::Groups(axes), computed without per-member divisions.
std::vector<std::vector<int>> GroupsAlong(const DeviceMesh& mesh, const std::vector<int>& axes);
// The same, computed on first read (RedistStep::groups of a collective).
RedistGroups LazyGroupsAlong(const DeviceMesh& mesh, const std::vector<int>& axes);

// ---------------------------------------------------------------------------------------
// Step reasons (shared by the search and the fast path, so that both explain a step alike).

struct ReasonContext {
  const DeviceMesh* mesh = nullptr;
  const DimAxes* target = nullptr;  // the target's dimensions on the mesh (unified only)
};
// "a.b", or "-" for none.
std::string AxesName(const DeviceMesh& mesh, const std::vector<int>& axes);
std::string SliceReason(const ReasonContext& c, int axis, int dim);
std::string GatherReason(const ReasonContext& c, int axis, int dim);
std::string AllToAllReason(const ReasonContext& c, const std::vector<int>& axes, int dim,
                           int dim_to);
std::string ReduceScatterReason(const ReasonContext& c, int axis, int dim);
std::string ZeroFillReason();

// ---------------------------------------------------------------------------------------
// The fast path (redistribution_fast.cc). Plans the regular cases symbolically and fills
// `plan` with a byte-optimal plan no plan is cheaper than; false when the case is not one it
// covers (then the search plans it).
bool PlanFast(const Setup& setup, const CostModel& cost, const RedistOptions& options,
              RedistPlan* plan);

}  // namespace shardscope::redist_internal
