// Internal: the graph the searches work on — forward operators, their candidates and the
// symbolic costs of search.h — plus the three search algorithms.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/gradient_overlap.h"
#include "shardscope/redistribution/redistribution.h"
#include "shardscope/search.h"
#include "shardscope/sharding_rule.h"

namespace shardscope::search_internal {

// Split counts per letter of SearchOp::letters.
using Parts = std::vector<int64_t>;

// The devices a split uses: the product of its counts.
inline int64_t Product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

// One operand of an operator, indexed for the cost functions.
struct SearchOperand {
  std::vector<int> letter;   // per dimension: index into SearchOp::letters, -1 if not split
  std::vector<int> missing;  // inputs: split letters the operand lacks (its gradient's sum)
  std::vector<int> summed;   // outputs: split letters the output is a partial sum over
  bool read = true;          // outputs: some forward operator reads it
  bool needs_grad = true;    // inputs: depends on a parameter (the backward computes its gradient)
  double bytes = 0;
  ValueKind kind = ValueKind::kActivation;
  // Parts the operand is split into under `parts`.
  double Parts(const std::vector<int64_t>& parts) const {
    double p = 1;
    for (int l : letter) p *= l >= 0 ? static_cast<double>(parts[l]) : 1.0;
    return p;
  }
};

// One dimension of the GEMM a MatMul or BatchMatMul shard computes: its whole size and the
// letters (indices into SearchOp::letters) that split it.
struct GemmDimension {
  double size = 1;
  std::vector<int> letters;
  // Its size on one device under `parts`.
  double Shard(const std::vector<int64_t>& parts) const {
    double s = size;
    for (int l : letters) s /= static_cast<double>(parts[l]);
    return s;
  }
};

// MatMul / BatchMatMul as GEMMs: out[rows, cols] = a[rows, depth] . b[depth, cols], `batch` times.
struct GemmDimensions {
  GemmDimension batch, rows, depth, cols;
};

struct SearchOp {
  NodeId node = kNoNode;
  std::string name;
  ShardingSignature sig;
  std::string letters;                 // splittable input letters, by appearance (OperandsByRank)
  std::vector<int64_t> letter_size;    // per letter
  double flops = 0;                    // forward, whole operator
  double weight = 0;                   // ordering key of recursive_programming (= flops)
  std::optional<GemmDimensions> gemm;  // MatMul, BatchMatMul: priced at their shards' GEMM rate
  // Conv2D as its GEMM per image (batch = images, rows = output channels, depth = input
  // channels x window, cols = output pixels), priced at CostModel::conv_gemm_rates.
  std::optional<GemmDimensions> conv;
  double kernel_rate = 0;  // CostModel::KernelRate of its kind (input bytes/s), 0: none
  std::vector<Parts> candidates;
  bool narrowed = false;       // candidates cut by a shard block: searches must end in one
  std::optional<Parts> fixed;  // the user's strategy (as split counts)
  std::string fixed_text;
  std::string fixed_provenance;  // "user: ((2,4),(4,1))", or why it was fixed
  std::vector<int> edges;        // indices into SearchGraph::edges, in edge order
  std::vector<double> own_cost;  // SearchCost per candidate (CacheOwnCosts)
  std::vector<SearchOperand> inputs, outputs;
};

// A combination of memory options the searches weigh (search_memory.cc): a ZeRO stage and
// the name scopes recomputed ({"*"}: every top-level scope).
struct MemoryOption {
  int zero = 0;
  std::vector<std::string> recompute;
};

struct SearchEdge {
  int producer = -1, consumer = -1;  // op indices
  ValueId value = kNoValue;
  int output = 0, input = 0;  // producer output index, consumer input index
  double bytes = 0;           // whole tensor
  int fanout = 1;             // forward operators reading the value
  // Per tensor dimension, the letter index of the producer / consumer (-1: not split), and
  // the producer's summed letters (partial sums): precomputed, EdgeCost is the hot loop.
  std::vector<int> src_letter, dst_letter, summed_letter;
  // Backward: whether the consumer computes this input's gradient, and when the value has one,
  // the consumer's split letters its input lacks: that gradient is a partial sum over them
  // (MatMul's dX over n), reduced on its way back to the producer.
  bool needs_grad = true;
  std::vector<int> grad_summed_letter;
  std::vector<int> siblings;  // the other edges reading this value
  int add_partner = -1;       // AddPartner(this edge), kept for EdgeCostAmong's hot loop
};

class SearchGraph {
 public:
  static Result<SearchGraph> Build(const Graph& forward, const SearchOptions& options);

  const std::vector<SearchOp>& ops() const { return ops_; }
  const std::vector<SearchEdge>& edges() const { return edges_; }
  const SearchOptions& options() const { return options_; }
  const Graph& graph() const { return *graph_; }
  // The other end of edge `e` seen from op `op`.
  int Other(int e, int op) const {
    return edges_[e].producer == op ? edges_[e].consumer : edges_[e].producer;
  }

  // Own cost of op `op` under `parts` (computation + gradient all-reduce), seconds.
  double OpCost(int op, const Parts& parts) const;
  // Of OpCost: the computation, seconds.
  double OpCompute(int op, const Parts& parts) const;
  // The computation a collective after op `op` follows, for its hand-off
  // (CostModel::SearchHandoffSeconds): the operator's forward and backward on its shard
  // (OpCompute; 0 when the cost model has no hand-off). With long_phase_handoff_s, what that
  // computation costs beyond its price when it runs on one core (devices x its work, the
  // start of a phase between collectives on oversubscribed cores; 0 without).
  double ComputeBeforeCollective(int op, const Parts& parts) const;
  // Of OpCompute: the backward's computation (the overlap's window), seconds.
  double OpBackward(int op, const Parts& parts) const;
  // Of OpCompute: the forward's computation (what a recomputation replays), seconds.
  double OpForward(int op, const Parts& parts) const;
  // Of OpCost: the parameter gradients' all-reduces (an activation's gradient is reduced on its
  // edge, EdgeCost), seconds; adds their number to `*collectives`. With `gradients`, the
  // parameter gradients' reductions go there instead (with the operator after whose backward
  // each is ready, GradientReadyOp) and the result is the rest (the loss's all-reduce).
  // `scattered`: ZeRO 2/3's reduce-scatters replace the reductions of replicated parameters.
  using ReadyGradients = std::vector<std::pair<int, GradientReduction>>;
  double OpCommunication(int op, const Parts& parts, double* collectives = nullptr,
                         ReadyGradients* gradients = nullptr, bool scattered = false) const;
  // The operator whose backward completes parameter `param`'s gradient: its first reader in
  // forward order (the last to run backward); -1 for no parameter.
  int GradientReadyOp(ValueId param) const;
  // CostModel::overlap_gradients: the gradients' reductions on one stream beside the backward
  // (gradient_overlap.h); adds the rest of the operators' price (computation, the loss's
  // all-reduce) to `*serial`.
  GradientOverlap Overlap(const std::vector<Parts>& assignment, double* serial,
                          bool scattered = false) const;
  // The searches' local stand-in for the overlap: OpCost prices a gradient's reduction at the
  // weight of the operator it is ready after (GradientReadyOp) x its seconds (empty: 1, whole;
  // Total always prices the overlap). Caches own costs again.
  // Prices gradients in buckets of `bytes` (CostModel::gradient_bucket_bytes) from now on;
  // the own costs are cached again by RefreshOwnCosts.
  void SetGradientBucket(double bytes) {
    options_.cost.gradient_bucket_bytes = bytes;
    own_costs_stale_ = true;
  }
  // The gradient bytes of every parameter operand, unsharded: at least one bucket of all.
  double GradientBytes() const;
  void SetGradientWeights(std::vector<double> per_op) {
    gradient_weights_ = std::move(per_op);
    CacheOwnCosts();
  }
  // Memory per device of op `op` under `parts`, bytes.
  double OpMemory(int op, const Parts& parts) const;
  // Redistribution cost of edge `e` with its producer / consumer under these parts; adds the
  // number of collectives and exchanges it prices to `*collectives` (fractional when a value's
  // readers share one).
  double EdgeCost(int e, const Parts& producer, const Parts& consumer,
                  double* collectives = nullptr) const;
  // Edge `e`'s part of its value's price with `op` under `parts` and every other operator as in
  // `assignment`, those `known` (nullptr: all) decided: readers in one layout (SameLayout)
  // share one redistribution each way, so a reader joining its layout's group adds nothing, a
  // producer pays each group once (the greedy searches' local price; Total keeps EdgeCost's
  // 1/fanout share, which dynamic_programming minimizes exactly).
  double EdgeCostAmong(int e, int op, const Parts& parts, const std::vector<Parts>& assignment,
                       const std::vector<bool>* known) const;
  // Whether edges `e1` and `e2` of one value read it in one layout on the same ranks (and
  // reduce their gradients alike) with their consumers under `c1` and `c2`.
  bool SameLayout(int e1, const Parts& c1, int e2, const Parts& c2) const;
  // Of SameLayout: the same blocks on the same ranks (what the partitioner's SumLayout and the
  // forward's one redistribution per layout compare).
  bool SamePlacement(int e1, const Parts& c1, int e2, const Parts& c2) const;
  // The price of the value edge `e` reads as the partitioned program moves it, with every
  // operator as in `a`: once per distinct reader layout forward; backward, the readers'
  // gradients summed where they were read when every reader agrees (one move back), else each
  // moved back into the producer's layout (SumLayout in partition/partition.cc; search_value.cc).
  double ValuePrice(int e, const std::vector<Parts>& a, double* collectives = nullptr) const;
  // Of the value prices, what an Add over same-shape inputs counts twice: its backward hands
  // one gradient to both inputs, moved once when both producers want it in one layout (and
  // each input's gradient is that one, not a sum); 0 for other operators. Total subtracts it.
  double SharedAddGradient(int op, const std::vector<Parts>& a,
                           double* collectives = nullptr) const;
  // EdgeCost with the producer under its candidate `pc` and the consumer under its `cc`,
  // remembered per class of alike edges (layers repeat) for every copy of the graph.
  double CandidateEdgeCost(int e, size_t pc, size_t cc) const;
  // Edge cost with `op` under `parts` and the other end under `other`.
  double EdgeCostFrom(int e, int op, const Parts& parts, const Parts& other) const {
    return edges_[e].producer == op ? EdgeCost(e, parts, other) : EdgeCost(e, other, parts);
  }
  // A redistribution step as both pricings price it (step_price.cc; PriceProgram prices the
  // program's steps with it): the planner's price with the step's groups over the physical
  // axes they span, latency and overhead raised to the group sync of its groups, and the
  // hand-off after `compute_before` seconds of computation.
  double StepSeconds(const RedistPlan& plan, const RedistStep& step, double compute_before) const;
  // A parameter gradient of `bytes` per rank in a bucket with others (share < 1 of it,
  // CostModel::GradientBucketShare): its share of the bucket's all-reduce.
  double BucketedGradientSeconds(const RedistPlan& plan, const RedistStep& step, double bytes,
                                 double share) const;
  // Whether `train` defers a gradient's plan into a bucket: one plain all-reduce, share < 1
  // (grad_buckets.cc); any other plan runs, and is priced, step by step.
  static bool Bucketed(const RedistPlan& plan, double share);
  // Parameter input `input` of op `op` under `parts`: its gradient's reduction as the planner
  // plans it (memoized by shape and splits: layers share it), each step priced as above;
  // adds the steps to `*collectives`.
  double PlannedGradientSeconds(int op, const Parts& parts, int input, double compute_before,
                                double* collectives) const;
  // Total predicted step time of a complete assignment (with CostModel::overlap_gradients,
  // the reductions' exposed tail instead of their sum); each value priced by ValuePrice.
  double Total(const std::vector<Parts>& assignment) const;
  // Of Total: the computation, and the number of collectives and exchanges per step.
  struct Breakdown {
    double compute_s = 0;
    double collectives = 0;
  };
  Breakdown Explain(const std::vector<Parts>& assignment) const;
  // "((2,4),(4,1))".
  std::string Notation(int op, const Parts& parts) const;
  // The data-parallel default of op `op` as split counts (what the partitioner would do).
  Parts DataParallel(int op) const;
  // With SearchOptions::device_mesh: the slowest bandwidth and the hops (HopLatency: the largest
  // latency, the node's) of the physical axes on which ranks of one of `groups` differ (a
  // redistribution step's groups); false without a device mesh or when no group spans an axis.
  // `rails`: a ring or tree collective, whose bandwidth on an axis counts the group's links
  // into it (hierarchical_collectives).
  bool GroupsLink(const RedistGroups& groups, bool rails, double* bandwidth,
                  HopLatency* latency) const;
  // The link of a ring or tree along `axes` of `mesh` (a mesh of every device, ranks row-major)
  // on the device mesh, as the searches price reductions; false without a device mesh.
  bool MeshAxesLink(const DeviceMesh& mesh, const std::vector<int>& axes, double* bandwidth,
                    HopLatency* latency) const;
  // Whether `parts` can still grow into one of op's candidates (always, unless narrowed).
  bool Reaches(int op, const Parts& parts) const;
  // Fills SearchOp::own_cost (after the candidates are final).
  void CacheOwnCosts();

  // Memory as the searches weigh it (search_memory.cc). The cost they minimise: OpCost plus
  // the memory weight times OpMemoryUnder (OpCost alone while the weight is 0).
  double SearchCost(int op, const Parts& parts) const {
    const double cost = OpCost(op, parts);
    return memory_weight_ > 0 ? cost + memory_weight_ * OpMemoryUnder(op, parts) : cost;
  }
  // Op `op`'s bytes per device under `parts` and the memory option set: its parameters'
  // shards (a slice under ZeRO 3), gradients, optimizer states and fp32 master copies (a
  // slice under ZeRO 1-3), and its outputs a backward operator reads (under recomputation only
  // those read outside its scope).
  double OpMemoryUnder(int op, const Parts& parts) const;
  // Sets the option and weight SearchCost uses; the own costs are cached again by
  // RefreshOwnCosts (before a search runs), only when they changed.
  void SetMemoryObjective(const MemoryOption& option, double weight);
  void RefreshOwnCosts();
  const MemoryOption& memory_option() const { return memory_option_; }
  double memory_weight() const { return memory_weight_; }
  // A rank's memory estimate of an assignment under the option set: the operators' sum, the
  // largest whole parameter drawn at initialisation and, recomputing, the largest scope's
  // replay. `largest`: the operator that holds the most.
  double AssignmentMemory(const std::vector<Parts>& assignment, std::string* largest = nullptr,
                          double* largest_bytes = nullptr) const;
  // What the option set adds to the step of an assignment: ZeRO's all-gathers and
  // reduce-scatters for the gradient all-reduces they replace, and the replays' forward.
  double OptionSeconds(const std::vector<Parts>& assignment) const;

 private:
  // Options::shard_blocks: restricts candidates (see ShardBlockSpec).
  Status ApplyShardBlocks();
  // Of the value edge `e` reads under `a`: whether its readers' layouts agree (SumLayout), and
  // how many of them compute its gradient.
  int GradientReaders(int e, const std::vector<Parts>& a, bool* agree) const;
  // Edge `e` into an Add over same-shape inputs (SharedAddGradient): its other input's edge,
  // else -1.
  int AddPartner(int e) const;
  // Whether the producers of edges `e1` and `e2` under `p1` and `p2` hold their values in one
  // placement (a gradient moved back to one suits both).
  bool SameSource(int e1, const Parts& p1, int e2, const Parts& p2) const;

 private:
  // One axis of SearchOptions::device_mesh: ranks `stride` apart differ in it.
  struct PhysicalAxis {
    int64_t stride = 1, size = 1;
    double bandwidth = 0, latency = 0;
  };
  // What a group's messages travel over: the slowest bandwidth and the hops of the axes it
  // spans (the largest latency; a ring's or tree's hops inside a node at the node's, HopLatency).
  // latency.outer < 0: CostModel::latency_s (no device mesh).
  struct Link {
    double bandwidth = 0;
    HopLatency latency;
  };
  // One direction of an edge's exchange: per rank, the target block over what it may hold in
  // common (overlap), the ranks holding its pieces, the collective steps gathering them, and
  // whether it holds none (misaligned: its source block lies elsewhere).
  // A group as lines of ranks: `size` ranks `stride` apart each, one line per mesh axis.
  struct Line {  // trivial: Move's arrays of them stay unwritten until used
    int64_t stride, size;
  };
  // Whether two lines' ranks [stride, stride x size) overlap in the digits they differ in.
  static bool Meet(const Line& x, const Line& y) {
    return x.stride < y.stride * y.size && y.stride < x.stride * x.size;
  }
  // Aligned coarser dimensions gather over `lines` (one per tensor dimension); finer ones
  // slice along `slices`. A slice on ranks of a gather makes it an all-to-all (`exchange`).
  struct Move {
    double overlap = 1, peers = 1;
    int gathered = 0;
    bool misaligned = false, exchange = false;
    Link link;
    int lines = 0, sliced = 0;
    std::array<Line, 4> line, slices;  // more: priced as misaligned
  };
  // The axis boundaries (strides and stride x size) of an edge's two meshes, ascending: the
  // planner's unified mesh, one collective per axis of it.
  struct Cuts {
    int n = 0;
    std::array<int64_t, 48> at;
  };
  void AddCuts(const Parts& parts, Cuts* cuts) const;
  // An aligned move as the planner makes it: per tensor dimension one all-gather per axis of
  // the unified mesh its line crosses (minor first), the dimensions interleaved so the bytes
  // grow on the fastest links (Sidney's order of chains), into `target` bytes per rank.
  double GatherSeconds(const Move& move, const Cuts& cuts, double target, double compute_before,
                       double* steps) const;
  // Folds one tensor dimension into `move`: split into `a` blocks `sa` ranks apart at the
  // source, `b` blocks `sb` apart at the target; the link spans only the ranks exchanging.
  void MoveAlong(int64_t a, int64_t sa, int64_t b, int64_t sb, Move* move) const;
  // EdgeCost with each direction's price times `share` (1: the whole redistribution), of the
  // directions asked (kForward: the activation, kBackward: its gradient).
  static constexpr int kForward = 1, kBackward = 2;
  double EdgePrice(int e, const Parts& producer, const Parts& consumer, double share,
                   double* collectives, int directions = kForward | kBackward) const {
    return EdgePrice(edges_[e], producer, consumer, share, collectives, directions);
  }
  double EdgePrice(const SearchEdge& edge, const Parts& producer, const Parts& consumer,
                   double share, double* collectives, int directions) const;
  // Reader `i`'s forward move of a value (`edge(i)`, `reader(i)`: its readers in order,
  // `same(j, i)`: one layout): from the producer, or from an earlier reader's copy when that
  // is cheaper (the partitioner's Obtain: a block of a gathered copy is a local slice).
  template <typename Edge, typename Reader, typename Same>
  double ForwardFromCopies(const Edge& edge, const Reader& reader, const Same& same, size_t i,
                           const Parts& producer, double* collectives) const;
  // An Add over same-shape inputs whose output has one reader hands that reader's gradient
  // to its inputs as it is (autodiff's AddGrad; no move into the Add's layout): the edge the
  // gradient comes back on (through such Adds in a row), else -1.
  int PassedGradient(int op) const;
  // The backward price of edge `e` (its value's one reader): moved straight from where the
  // gradient comes back (PassedGradient of its consumer), else from the consumer's layout.
  double InputGradient(int e, const std::vector<Parts>& a, double* collectives) const;
  // ZeRO 2/3's reduce-scatter of input `input`'s gradient over its replicas (its share of a
  // bucket); 0 when the parameter has no replicas.
  double ScatteredGradientSeconds(int op, const Parts& parts, int input) const;
  // Ranks between consecutive members of letter `l`'s groups under `parts`.
  int64_t LetterStride(const Parts& parts, int l) const;
  // Folds into `link` the axes spanned by a group of `size` ranks `stride` apart.
  void Span(int64_t stride, int64_t size, Link* link) const;
  // The link of a group along `letters` of an operator under `parts`: default_bandwidth and
  // latency_s without a device mesh.
  Link GroupLink(const Parts& parts, const std::vector<int>& letters) const;
  Link LinesLink(const std::vector<Line>& lines) const {
    return LinesLink(lines.data(), lines.size());
  }
  Link LinesLink(const Line* lines, size_t count) const;
  Link NoMeshLink() const;
  // The hops of a group whose ranks differ in the physical axes `spans` marks: the slowest
  // axis's latency between the blocks of it (nodes), the slowest latency of the spanned axes
  // inside among the group's `members(axis)` ranks in one block (NCCL's blend, HopLatency).
  template <typename Spans, typename Members>
  HopLatency SpannedHops(const Spans& spans, const Members& members) const;
  std::vector<PhysicalAxis> physical_;
  // The latency and, with a device mesh, the link of a plan's step (StepSeconds).
  bool StepLink(const RedistStep& step, double* bandwidth, HopLatency* latency) const;
  // PlannedGradientSeconds' prices and plans, shared by copies of the graph.
  struct Priced {
    double seconds = 0, collectives = 0;
  };
  struct GradientPlans {
    std::mutex mu;
    std::map<std::vector<int64_t>, Priced> priced;
  };
  std::shared_ptr<GradientPlans> gradient_plans_ = std::make_shared<GradientPlans>();
  // CandidateEdgeCost's tables, per class of alike edges (search_edge_table.cc).
  struct EdgeTables;
  std::shared_ptr<EdgeTables> edge_tables_;
  std::shared_ptr<RedistPlanCache> plans_ = std::make_shared<RedistPlanCache>(1 << 12);
  std::vector<int64_t> TensorParts(int op, const std::string& letters, const Parts& parts) const;
  const Graph* graph_ = nullptr;
  SearchOptions options_;
  std::vector<SearchOp> ops_;
  std::vector<SearchEdge> edges_;
  // SetMemoryObjective: per op its recomputed scope (-1: none), per op and output whether it
  // is held for backward (saved: a backward operator reads it, or nothing reads it) and
  // whether it still is under the option (kept: recomputation keeps what leaves its scope).
  MemoryOption memory_option_;
  std::vector<std::vector<char>> saved_output_;
  double memory_weight_ = 0;
  bool own_costs_stale_ = false;
  std::vector<double> gradient_weights_;
  std::map<ValueId, int> first_reader_;  // GradientReadyOp
  // OpCompute's forward and backward work (before ComputeSlowdown); `forward` its forward.
  double OpWork(int op, const Parts& parts, double* forward) const;
  std::vector<int> recompute_scope_;
  std::vector<std::vector<char>> kept_output_;
};

// A search's decisions: parts and provenance per op.
struct Assignment {
  std::vector<Parts> parts;
  std::vector<std::string> provenance;
};

// The strategies and memory options the searches choose within SearchOptions::memory_budget_bytes
// (search_memory.cc).
struct MemoryChoice {
  Assignment assignment;
  MemoryOption option;
  double memory_bytes = 0;
  bool fits = true;
  std::string note;  // none fits: the least estimate and the largest consumer
};
using RunSearch = std::function<Result<Assignment>(const SearchGraph&)>;
// `run` as asked; when its strategies fit under no open option, again with memory weighed
// (the least weight whose strategies fit, per option) and the cheapest by objective plus
// OptionSeconds kept. Leaves `g` with the chosen option and no weight.
Result<MemoryChoice> SearchWithinMemory(SearchGraph& g, const RunSearch& run);
// Every open option's estimate under `assignment` (SearchResult::memory_options).
std::vector<MemoryOptionEstimate> EstimateMemoryOptions(SearchGraph& g,
                                                        const std::vector<Parts>& assignment);

Assignment RunPropagation(const SearchGraph& g);
Assignment RunRecursive(const SearchGraph& g);
Result<Assignment> RunDynamicProgramming(const SearchGraph& g);
// Local descent on the exact objective (Total, plus the memory weight's term while one is
// set; search_descent.cc): per operator in order, its candidate of least local price, kept
// when the objective falls strictly and a plan within `memory_cap` bytes (0: none) stays so;
// at most `passes` sweeps, deterministic. Returns how many moves it kept.
int DescendExact(const SearchGraph& g, Assignment* a, double memory_cap, int passes);

// Every candidate list of `n` devices' splits: letter sizes and which letters may split.
std::vector<Parts> CandidateSplits(const std::vector<int64_t>& letter_size, int devices);
// Prime factors of n, largest first (12 -> 3, 2, 2).
std::vector<int> PrimeFactorsDescending(int n);

}  // namespace shardscope::search_internal
