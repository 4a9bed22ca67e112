// Module redistribution (engine/src/redistribution, library shardscope_redistribution): the
// planner (problem, lower bound, search, plan assembly, exchange counts, plan cache) and the
// executor that runs a plan over a Communicator. Depends on layout and cost.
//
// Redistribution: turning a tensor from one Layout into another (DESIGN.md §2).
//
// PlanRedistribution(from, to, cost) is pure and deterministic. `from` and `to` describe the
// same global tensor over the same ranks 0..N-1; their meshes may differ (shape, names,
// rank list). The planner first unifies the two meshes (UnifyMeshes: the coarsest mesh of
// which both are regroupings, size-1 axes dropped) and plans on it; when no such mesh exists
// (unrelated rank orders) it plans on the source mesh and moves data with irregular
// exchanges.
//
// A plan is a list of steps, each a local slice, all-gather, all-to-all, reduce-scatter,
// all-reduce, permute (same blocks to other ranks) or local reshape, with its mesh axes,
// tensor dimension(s), rank groups, bytes sent and received per rank, the layout after it
// and the reason it exists. Irregular steps carry an explicit transfer list: all-to-all-v
// (kAllToAll, dim == -1: no collective along mesh axes reaches the layout at the lower bound),
// permute (kPermute), reduce-scatter-v (kReduceScatter, dim == -1: each rank receives the
// other addends of exactly its block, which need not be a contiguous chunk) and direct
// all-reduce (kAllReduce with transfers: p-1 messages in parallel instead of the ring's
// 2 (p-1); chosen for 2-member groups, where the bytes are the same).
//
// Lower bound (RedistributionLowerBound, public; proof in docs/redistribution.md). The figure
// is the busiest rank's bytes received: no plan's max over ranks of recv_bytes is below
// max_bytes. A plan moves values of single elements (an addend or a sum of addends); per rank:
//   move(r)   = the elements r's target shard needs that its source shard does not hold
//               (0 for a rank that ends as a zero addend of a new partial sum: see below);
//   without a pending sum, bound(r) = move(r): exact, and met on every rank;
//   with a pending sum over P addends (axes partial in `from` and not in `to`):
//     need(r) = all elements of r's target shard (r holds at most one addend of each);
//     T       = sum over ranks of need(r) + sum over needed items (element, kept class) of
//               P - 2, + 1 if none of its needers holds an addend of it: the fewest values
//               any plan moves (a reduction into the first rank to know the sum, then one
//               value per other needer);
//     bound(r) = max(need(r), L) whole elements, L the water level: the least L with
//               sum over all ranks of max(need(r), L) >= T.
//   So max_bytes = max(max need, ceil(T / ranks)) elements: for P ranks reducing their
//   blocks that is the reduce-scatter bound (P-1)/P n, or the all-reduce bound 2 (P-1)/P n
//   when all need everything; a replica axis of both layouts scales T and the ranks alike.
// The planner meets the bound when collectives along mesh axes can, and otherwise returns the
// cheapest plan by the cost model (RedistPlan::byte_optimal and bounded_search say which).
// total_bytes is the sum of the per-rank figures (each rounded up to a whole element).
//
// Partial sums in the target: an axis over which `to` is partial and `from` is not makes a
// new sum; the rank at index 0 along it keeps the values and the others become zeros (a
// free local step). Axes partial in both stay partial (their addends are not reduced).
//
// Choice among plans: the cheapest under the CostModel (latency + bytes / bandwidth per
// collective) among the byte-optimal plans built from collectives along mesh axes (slices
// first, one collective per axis, multi-axis all-to-alls and all-reduces, permutes, direct
// all-reduces), ending, when needed, with one irregular exchange (or reduce-scatter-v) into
// the target or into a layout a few collectives before it ("exchange what is needed, then
// gather"). Every intermediate shard is at most as large as the larger of the source and
// target shards, so a move across axes never goes through a full gather.
//
// Triangle inequality. Call a detour A->B->C (the plans for A->B and B->C, concatenated)
// admissible for A->C when the planner could have chosen it: within the memory cap, and, when
// A->C was chosen among bounded plans (always without partial sums), at A->C's bound on every
// rank. For admissible detours cost(A->C) <= cost(A->B) + cost(B->C); the tests check it on
// thousands of random triples in every regime. A detour that is not admissible can be cheaper
// when latency dominates: it receives more bytes than the bound, or holds more than the cap,
// but sends fewer messages (e.g. [a.b | -] -> [a | b] -> [- | b.a]: two all-to-alls over 2
// ranks instead of one over 4). Byte optimality and the memory cap are the contract, so they
// win; such triples are about 2% of random ones with tensors of a few hundred bytes, under 0.1%
// with 64 KiB elements, and with 16 MiB elements they are within 0.02% of the detour's cost.
// See tests/engine/cost/cost_model_test.cc.
//
// Planning time. The common regular cases are planned symbolically, in work proportional to
// axes x dimensions plus one pass per step to fill the per-rank vectors: a few microseconds up
// to 1024 devices. They are the cases where a plan can be proven optimal (byte-optimal, and no
// plan cheaper) without searching (docs/redistribution.md, "The fast path"): on the unified mesh,
//   - nothing to reduce, every dimension keeps a common prefix and then only gains axes the
//     source does not use (local slices) or only loses axes the target does not use
//     (all-gathers), except one group of axes that may move, in order, from the end of one
//     dimension to the end of another (one all-to-all);
//   - partial sums whose axes all become splits of one dimension of the target
//     (reduce-scatters), without replica axes, under one bandwidth;
//   - nothing to reduce and every rank needing its missing elements from one other rank, over
//     the fastest links, the target splitting only over axes the source splits (one permute,
//     or one all-to-all-v; also between meshes that do not unify).
// Tests check them against the search's (same bytes, price within 1e-9, simulated). The
// rest go to the search, whose per-rank work is kept down by testing a sample of ranks before
// every rank, computing landings and exchanges only when needed, and a flat lower bound.
// Irregular steps are chosen and assembled from per-rank counts computed in closed form
// (O(ranks x dims): per rank, the source blocks its target box meets and, per sender, the
// receivers whose boxes meet its block, from block indices along mesh coordinates; no (rank,
// peer) pair is visited), except with pending partial sums or meshes that do not unify. Their
// transfer lists (up to one per pair of ranks) and the groups of every step are built only when
// read (RedistTransfers, RedistGroups). Planning is O(ranks) per state the search touches;
// benchmarks/README.md has the figures against the median target of issue 3 (< 20 us per pair
// up to 4 axes and 1024 devices: met for 1-2 axes at every size, not for 3-4 axes, where a
// median pair is one all-to-all-v that the search still proves optimal with 2-3 passes over
// per-rank arrays: 23-36 us at 64 devices, 41-61 us at 512, 70-98 us at 1024; no direct path
// without the search is built).
//
// Thread safety: every function here is pure; RedistPlanCache is internally synchronised.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "shardscope/cost/cost_model.h"
#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

class Communicator;

// ---------------------------------------------------------------------------------------
// Mesh unification.

// A mesh of which two meshes over the same ranks are both regroupings: every axis of `a`
// (and of `b`) is the product of an ordered list of axes of `mesh`, the first listed most
// significant. Size-1 axes of a and b map to no axis.
struct MeshUnification {
  DeviceMesh mesh;
  std::vector<std::vector<int>> axes_of_a;  // per axis of a, its axes of `mesh`
  std::vector<std::vector<int>> axes_of_b;  // per axis of b, its axes of `mesh`
};

// The coarsest common refinement of `a` and `b`, or kInvalidInput when the meshes have
// different sizes or no mesh refines both (their rank orders are unrelated). The result's
// rank list is a's; axes keep the name of the axis of a (or else b) they equal, sub-axes are
// named "<name>_<k>". When a and b are the same mesh without size-1 axes, mesh == a.
Result<MeshUnification> UnifyMeshes(const DeviceMesh& a, const DeviceMesh& b);

// `layout` (on a mesh whose axes map to `axes_map`, e.g. MeshUnification::axes_of_a)
// expressed on `mesh`: the same blocks on the same ranks.
Result<Layout> ExpressOnMesh(const Layout& layout, const DeviceMesh& mesh,
                             const std::vector<std::vector<int>>& axes_map);

// ---------------------------------------------------------------------------------------
// Lower bound.

struct RedistLowerBound {
  int64_t element_bytes = 4;
  std::vector<int64_t> per_rank;         // bound(r), bytes
  std::vector<int64_t> move_per_rank;    // move(r), bytes
  std::vector<int64_t> reduce_per_rank;  // reduce(r), bytes
  int64_t max_bytes = 0;                 // max over ranks of bound(r)
  int64_t total_bytes = 0;               // sum over ranks
};

// The lower bound described at the top. Errors: shapes differ, mesh sizes differ,
// element_bytes < 1.
Result<RedistLowerBound> RedistributionLowerBound(const Layout& from, const Layout& to,
                                                  int64_t element_bytes = 4);

// ---------------------------------------------------------------------------------------
// Plans.

// One piece of an irregular exchange: the box [offset, offset + extent) of the global tensor
// travels from rank `src` to rank `dst`.
struct RedistTransfer {
  int src = 0;
  int dst = 0;
  std::vector<int64_t> offset;
  Shape extent;
  friend bool operator==(const RedistTransfer&, const RedistTransfer&) = default;
};

namespace redist_detail {
// A list shared by copies, given up front or built by a function on first read (at most one
// call, thread-safe). Plans keep what only an executor or a printer reads this way, so that
// planning does not pay for it.
template <typename T>
class SharedLazyList {
 public:
  SharedLazyList() = default;
  explicit SharedLazyList(std::vector<T> list) : store_(std::make_shared<Store>()) {
    store_->list = std::move(list);
    store_->done = true;
  }
  explicit SharedLazyList(std::function<std::vector<T>()> expand)
      : store_(std::make_shared<Store>()) {
    store_->expand = std::move(expand);
  }
  bool expanded() const { return !store_ || store_->done.load(); }
  const std::vector<T>& list() const {
    static const std::vector<T> kEmpty;
    if (!store_) return kEmpty;
    Store& store = *store_;
    std::call_once(store.once, [&store] {
      if (store.expand) {
        store.list = store.expand();
        store.expand = nullptr;
      }
      store.done = true;
    });
    return store.list;
  }

 private:
  struct Store {
    std::once_flag once;
    std::function<std::vector<T>()> expand;  // empty once expanded, or for a given list
    std::vector<T> list;
    std::atomic<bool> done{false};
  };
  std::shared_ptr<Store> store_;
};
}  // namespace redist_detail

// The transfers of an irregular step, in a fixed order. Large exchanges (an all-to-all-v over
// N ranks has up to N (N-1) of them) are planned from per-rank counts alone and keep only a
// compact description, which is expanded into the list on first use (by an executor, a
// printer, the recorder) and then kept; size() and empty() never expand. Copies share the
// description and the expansion. Thread-safe.
class RedistTransfers {
 public:
  RedistTransfers() = default;
  RedistTransfers(std::vector<RedistTransfer> list);  // NOLINT: an explicit list
  // `count` transfers, listed by `expand` (called at most once).
  static RedistTransfers Lazy(int64_t count, std::function<std::vector<RedistTransfer>()> expand);

  int64_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  bool expanded() const { return list_.expanded(); }  // the list exists
  const std::vector<RedistTransfer>& list() const;
  std::vector<RedistTransfer>::const_iterator begin() const { return list().begin(); }
  std::vector<RedistTransfer>::const_iterator end() const { return list().end(); }
  const RedistTransfer& operator[](size_t i) const { return list()[i]; }
  friend bool operator==(const RedistTransfers& a, const RedistTransfers& b) {
    return a.count_ == b.count_ && (a.count_ == 0 || a.list() == b.list());
  }

 private:
  int64_t count_ = 0;
  redist_detail::SharedLazyList<RedistTransfer> list_;
};

// The rank groups of a step (RedistStep::groups), each ascending, built on first read: the
// groups of a collective along mesh axes (N / group size of them: at 1024 devices, hundreds of
// small vectors that planning itself never reads), the connected sets of communicating ranks
// of an irregular exchange (finding them visits every pair of communicating ranks). empty()
// never builds them; size(), operator[] and iteration do, once (copies share the result).
// Thread-safe. Compares with a plain list of groups.
class RedistGroups {
 public:
  using Group = std::vector<int>;
  RedistGroups() = default;
  RedistGroups(std::vector<Group> list);  // NOLINT: an explicit list
  // Groups listed by `expand` (called at most once); `empty`: whether that list is empty.
  static RedistGroups Lazy(bool empty, std::function<std::vector<Group>()> expand);

  size_t size() const { return list().size(); }
  bool empty() const { return empty_; }
  bool expanded() const { return list_.expanded(); }
  const std::vector<Group>& list() const { return list_.list(); }
  std::vector<Group>::const_iterator begin() const { return list().begin(); }
  std::vector<Group>::const_iterator end() const { return list().end(); }
  const Group& operator[](size_t i) const { return list()[i]; }
  friend bool operator==(const RedistGroups& a, const RedistGroups& b) {
    return a.list() == b.list();
  }
  friend bool operator==(const RedistGroups& a, const std::vector<Group>& b) {
    return a.list() == b;
  }

 private:
  bool empty_ = true;
  redist_detail::SharedLazyList<Group> list_;
};

struct RedistStep {
  enum class Kind {
    kLocalSlice,     // keep a part of the local shard (dim, axes appended to it); no traffic
    kAllGather,      // gather along dim over `axes` (removed from the end of dim's list)
    kAllToAll,       // dim -> dim_to over `axes`; dim == -1: irregular (see transfers)
    kReduceScatter,  // sum over partial `axes`, scattered along dim; dim == -1: irregular
                     // (each rank receives the other addends of exactly its target box)
    kAllReduce,      // sum over partial `axes` (ring); with transfers: direct (each rank
                     // receives the other addends of its block at once)
    kPermute,        // same blocks to other ranks (transfers; dim == -1)
    kLocalReshape,   // local only: zero_ranks become zero addends of a new partial sum
  };
  Kind kind = Kind::kLocalSlice;
  // Axes of RedistPlan::mesh (indices and names) the step works along. For an irregular
  // exchange: every axis along which some pair of communicating ranks differs.
  std::vector<int> axes;
  std::vector<std::string> axis_names;
  int dim = -1;     // tensor dimension (gathered, sliced, scattered, or moved from)
  int dim_to = -1;  // all-to-all: the dimension the split moves to
  // Collectives: the groups along `axes`, member i holding block i (DeviceMesh::Groups).
  // Irregular exchanges: the connected sets of communicating ranks. Built on first read.
  RedistGroups groups;
  int64_t bytes_sent_per_rank = 0;  // max over ranks
  int64_t bytes_recv_per_rank = 0;  // max over ranks
  std::vector<int64_t> bytes_sent;  // per rank (index = rank)
  std::vector<int64_t> bytes_recv;  // per rank
  int64_t messages = 0;             // latency count: sequential receives of the busiest rank
  double seconds = 0;               // CostModel price
  Layout after;                     // layout once the step is done
  std::string reason;
  RedistTransfers transfers;    // irregular exchanges only (dim == -1)
  std::vector<int> zero_ranks;  // kLocalReshape (and a final exchange): become zeros

  // Irregular steps carry explicit transfers: all-to-all-v and permute (dst takes the box),
  // reduce-scatter-v and direct all-reduce (dst adds the box to its own addend of it).
  bool irregular() const {
    if (kind == Kind::kAllReduce) return !transfers.empty();
    return dim < 0 &&
           (kind == Kind::kAllToAll || kind == Kind::kPermute || kind == Kind::kReduceScatter);
  }
  // "all-gather", "local slice", ...; irregular steps print "all-to-all-v",
  // "reduce-scatter-v", "all-reduce (direct)".
  std::string KindName() const;
};
const char* RedistStepKindName(RedistStep::Kind kind);

struct RedistOptions {
  int64_t element_bytes = 4;  // bytes per tensor element
  // Only plans that meet the lower bound on every rank (always possible without partial
  // sums). false: the cheapest plan the search finds, whatever its bytes.
  bool byte_optimal = true;
  // Search budget (layouts expanded); the best plan found so far is returned when it runs out.
  int max_states = 3000;
  // Plan the regular cases symbolically (see "Planning time" at the top) instead of by the
  // search: plans as cheap (cheaper when max_states cuts the search short of its best plan),
  // much sooner. false forces the search (tests compare the two).
  // Not part of RedistPlanCache's key.
  bool fast_path = true;
};

struct RedistPlan {
  Layout from;
  Layout to;
  DeviceMesh mesh;  // the mesh the steps' axes refer to (unified mesh or from's mesh)
  bool meshes_unified = true;
  int64_t element_bytes = 4;
  std::vector<RedistStep> steps;
  std::vector<int64_t> recv_bytes;   // per rank, total over steps
  std::vector<int64_t> lower_bound;  // per rank, RedistributionLowerBound
  int64_t planned_bytes = 0;         // max over ranks of recv_bytes
  int64_t lower_bound_bytes = 0;     // max over ranks of lower_bound
  int64_t total_planned_bytes = 0;   // sums over ranks
  int64_t total_lower_bound_bytes = 0;
  bool byte_optimal = true;  // recv_bytes[r] <= lower_bound[r] on every rank
  // How the plan was chosen: among the plans receiving at most the search's estimate +
  // bound_slack_bytes on every rank (the estimate is lower_bound without partial sums, a
  // ring-bound heuristic with them: bound_slack_bytes > 0 then, balanced blocks round it up),
  // or, when bounded_search is false (an estimate collectives cannot reach), among all plans.
  bool bounded_search = true;
  int64_t bound_slack_bytes = 0;
  double predicted_seconds = 0;  // sum of the steps' prices
  int states_explored = 0;       // search effort (for benchmarks)

  // Steps of kind `kind`.
  int CountSteps(RedistStep::Kind kind) const;
  // Multi-line human-readable form: header, one block per step, totals.
  std::string ToString() const;
  // The same as a JSON object (layouts as ToString/ToSpec, meshes as ToString, per-step
  // groups, bytes, reasons, transfers).
  std::string ToJson() const;
};

// Plans `from` -> `to` (see top). Errors (kInvalidInput): different global shapes, meshes of
// different sizes, element_bytes < 1.
Result<RedistPlan> PlanRedistribution(const Layout& from, const Layout& to, const CostModel& cost,
                                      const RedistOptions& options = {});

// The price of a plan under `cost` (sum over its steps; PlanRedistribution fills
// predicted_seconds with it).
double PlanSeconds(const RedistPlan& plan, const CostModel& cost);

// A thread-safe cache of plans keyed by (from, to, cost model, options). Plans are immutable
// once cached and shared. Evicts everything when `capacity` is exceeded (plans are cheap to
// rebuild; layouts of one model are few).
class RedistPlanCache {
 public:
  explicit RedistPlanCache(size_t capacity = 4096) : capacity_(capacity) {}
  Result<std::shared_ptr<const RedistPlan>> Get(const Layout& from, const Layout& to,
                                                const CostModel& cost,
                                                const RedistOptions& options = {});
  size_t size() const;
  int64_t hits() const;
  int64_t misses() const;
  void Clear();

 private:
  struct Key {
    Layout from;
    Layout to;
    size_t cost_fingerprint;
    int64_t element_bytes;
    bool byte_optimal;
    int max_states;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const RedistPlan>, KeyHash> plans_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

// ---------------------------------------------------------------------------------------
// Execution (defined in library shardscope_redist_exec, which links shardscope_comm).

// Runs `plan` on this rank: `world` is the communicator of all plan.from.mesh().size() ranks
// (rank i = mesh rank i), `local_in` this rank's shard of plan.from (its addend when
// partial), `local_out` receives its shard of plan.to. Collective over `world`: every rank
// calls it with the same plan. Structured steps run as collectives on groups split from
// `world` (GroupAlong), irregular ones as one AllToAllV on `world`; the traffic the
// communicator counts equals plan.recv_bytes[rank]. Data are float32, so plan.element_bytes
// must be 4. Errors: shard shape, element size or communicator size mismatch, communication
// failures.
//
// Memory: the last step writes straight into *local_out, reusing its storage when it already
// has the target shard's shape (so a caller that keeps its output tensors allocates nothing
// there). `workspace` (optional) holds the intermediate and packing buffers and the split
// communicators across calls: pass the same one to every call of a rank (any plans, the same
// `world`) and, once it has grown to the largest plan's needs, calls allocate no buffers and
// split no communicators. Without it, each call uses a scratch workspace of its own.
class RedistWorkspace;
Status ExecuteRedistribution(const RedistPlan& plan, Communicator& world, const Tensor& local_in,
                             Tensor* local_out, RedistWorkspace* workspace = nullptr);

// Per-rank scratch state of ExecuteRedistribution (see above). Not thread-safe: one per rank
// (thread). Bound to the `world` it was last used with; a call with another communicator
// drops the split communicators it holds.
class RedistWorkspace {
 public:
  RedistWorkspace();
  ~RedistWorkspace();
  RedistWorkspace(RedistWorkspace&&) noexcept;
  RedistWorkspace& operator=(RedistWorkspace&&) noexcept;

  struct Impl;  // the buffers and communicators; defined by the executor
  Impl& impl() { return *impl_; }
  // While set, every executed step appends its end time (steady clock, seconds) to `ends`:
  // the per-instruction timing of training runs (DistExecutor::last_spans). Null: off.
  void set_step_ends(std::vector<double>* ends);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope
