// Strategy search (DESIGN.md §2 "Search modes"): chooses a sharding strategy for every
// forward operator that the user did not configure, and explains each choice.
//
// The output is plain seed notation written into the forward graph's annotations
// (OpAnnotations::in_strategy, splits such as "((2,4),(4,1))"), so the partitioner turns a
// searched graph into an SPMD program exactly as it does a hand-annotated one. Operators the
// user configured keep their strategy; backward operators follow their forward operator.
//
// Candidates (CandidateSplits): every assignment of split counts to an operator's splittable
// dimension letters (not `whole`, dimension divisible) whose product divides the device
// count, keeping those that use the most devices (all N whenever some split does). Any N
// works, not only powers of two: counts are products of N's prime factors.
//
// Costs (the symbolic model all modes share; seconds per training step, from CostModel):
//   operator   3 x max(flops / flops_rate, bytes touched / memory_bandwidth) on its shard
//              (forward + backward; with CostModel::gemm_rates a MatMul/BatchMatMul is its
//              GEMMs at the rates of their shard shapes, without the gradient GEMM of an
//              input that needs none) plus the optimizer's update of its parameter shards
//              (bytes moved / memory_bandwidth), times ComputeSlowdown; plus the all-reduce of
//              each parameter's gradient over the split letters it lacks (not over the
//              replica axis: replicas compute the same sum), and of a result nothing reads
//              (the loss) left as a partial sum;
//   edge       the reduction of a partial-sum producer (reduce-scatter or all-reduce over
//              the summed parts) plus the exchange from the producer's blocks to the
//              consumer's and back (the gradient): a rank receives the part of its target
//              block its source block lacks, latency per peer (at least group_sync_s per
//              gathered dimension), at the bandwidth of the axes of
//              SearchOptions::device_mesh the moving letters span (default_bandwidth
//              without one).
//   memory     per device: parameters x (weight + gradient + optimizer states) / parts, plus
//              each saved output / parts (OpMemory). With a budget, the searches minimise the
//              price plus a weight x the estimate of search_memory.cc (ZeRO stage, recomputed
//              scopes), the least weight whose strategies fit (search_memory.cc).
// The total of a whole assignment is the predicted step time (SearchResult::step_seconds).
//
// Modes:
//   semi_auto               the user's strategies; everything else data-parallel (no search).
//   sharding_propagation    from the configured operators outward along edges, breadth
//                           first; a reached operator takes the candidate with the least
//                           own cost plus redistribution to all already-decided neighbours.
//                           When nothing configured reaches an operator, the heaviest
//                           unreached operator takes its cheapest candidate on its own (a
//                           "reasoned default") and propagation continues from it.
//   recursive_programming   fully automatic: one round per prime factor of N (largest
//                           first); each round, operators in descending weight (flops) pick
//                           which letter to multiply by the factor, by own cost plus the
//                           redistribution penalty to neighbours; linear per round.
//   dynamic_programming     the exact optimum of a pairwise objective over the candidates
//                           (each reader its 1/fanout share of a value's moves: the objective
//                           itself where a value's readers agree on its layout) by leaf,
//                           series and parallel elimination, then a descent on the whole
//                           objective; recursive_programming's and sharding_propagation's
//                           plans are kept when their objective is lower. Refuses
//                           graphs that exceed max_dp_operators. A graph that does not reduce that
//                           way (ResNet's batch statistics), or whose elimination outgrows
//                           max_dp_work, gets recursive_programming's strategies and a
//                           SearchResult::note naming why, with the gap to a lower bound
//                           (every operator at its cheapest own cost, edges free).
//
// Determinism: operators in node order, stable sorts, ties to the lower candidate index;
// every rank computes the same result.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "shardscope/cost/cost_model.h"
#include "shardscope/cost/dtype.h"
#include "shardscope/graph.h"
#include "shardscope/status.h"

namespace shardscope {

enum class SearchMode {
  kSemiAuto,
  kShardingPropagation,
  kRecursiveProgramming,
  kDynamicProgramming
};
// "semi_auto", "sharding_propagation", "recursive_programming", "dynamic_programming".
const char* SearchModeName(SearchMode mode);
Result<SearchMode> ParseSearchMode(const std::string& name);

// ShardBlockSpec (graph.h): shard() blocks, searched inside with their level.

struct SearchOptions {
  SearchMode mode = SearchMode::kShardingPropagation;
  int devices = 1;
  CostModel cost;
  // Per-device memory budget in bytes; 0 = unlimited. The searches respect it (below). Their
  // estimate leaves out temporaries (partial sums, redistributed copies): memory_target < 1
  // aims below the budget (strategies fitting only the whole budget are the fallback).
  double memory_budget_bytes = 0;
  double memory_target = 1.0;
  // Memory options the searches may choose when the strategies do not fit the budget
  // (search_memory.cc, docs/memory.md): ZeRO stages, and name scopes to recompute ({"*"}:
  // every top-level scope). The first of each is the one asked for.
  std::vector<int> optimizer_sharding_options = {0};
  std::vector<std::vector<std::string>> recompute_options = {{}};
  // Optimizer state tensors per parameter (OptimizerStateTensors: SGD 0, Momentum 1, Adam 2;
  // `plan`, `train` and the samples set it from the optimizer they train with).
  int optimizer_states = 1;
  // The element type the byte figures assume (memory, communication): f32, or bf16/fp16 with
  // fp32 master weights and optimizer states (cost/dtype.h). Planning only: training is f32.
  Precision dtype = Precision::kF32;
  // Runners-up recorded per operator.
  int top_k = 3;
  // dynamic_programming refuses larger graphs (forward operators).
  int max_dp_operators = 5000;
  // dynamic_programming's effort budget: candidate pairs and triples its elimination may
  // visit; beyond it, recursive_programming's strategies and a note with their gap.
  double max_dp_work = 4e9;
  // Named meshes that layout-notation strategies in the annotations refer to.
  std::map<std::string, DeviceMesh> meshes;
  // How the `devices` are arranged (ranks row-major, last axis fastest), e.g. node=2,local=4
  // for two hosts of four: a collective whose group spans an axis runs at that axis's
  // bandwidth (cost.axis_bandwidth by axis name, else default_bandwidth) and latency
  // (cost.axis_latency, else latency_s), the slowest of its axes when it spans several. An
  // operator's mesh maps onto the ranks row-major too (its split letters in order, then the replica
  // axis), so a letter's group of ranks is known. Without axes (the default) every collective runs
  // at default_bandwidth. Its size must be `devices`.
  DeviceMesh device_mesh;
  std::vector<ShardBlockSpec> shard_blocks;
  // Gradient bucket sizes to choose from, bytes (`--bucket-mb auto`): the searched plan is
  // priced with each (and one bucket of every gradient) and the cheapest is kept, its step the
  // objective (SearchResult::gradient_bucket_bytes). Empty: cost.gradient_bucket_bytes alone.
  std::vector<double> gradient_bucket_choices;
};

struct ScoredCandidate {
  std::string strategy;     // splits notation
  double cost_s = 0;        // own cost + redistribution to its neighbours as chosen
  double compute_s = 0;     // of which own cost (computation + gradient reduction)
  double memory_bytes = 0;  // per device
};

struct OperatorChoice {
  NodeId node = kNoNode;
  std::string name;
  std::string strategy;     // splits notation ("((2,4),(4,1))"), or the user's text
  std::string provenance;   // "user", "propagated from X over edge E", "round k of ...", ...
  double compute_s = 0;     // own cost (computation + gradient reduction)
  double local_cost_s = 0;  // own cost + redistribution to neighbours as chosen
  double memory_bytes = 0;  // per device
  std::vector<ScoredCandidate> runners_up;  // best first, at most top_k
};

// One combination of memory options under the chosen strategies: the search's estimate of a
// rank's memory and of what the option adds to the step (ZeRO's collectives, the replays).
struct MemoryOptionEstimate {
  int optimizer_sharding = 0;
  std::vector<std::string> recompute;
  double memory_bytes = 0;
  double extra_seconds = 0;
};

struct SearchResult {
  SearchMode mode = SearchMode::kSemiAuto;
  int devices = 1;
  std::vector<OperatorChoice> operators;  // forward operators in node order
  double step_seconds = 0;                // predicted: operators + edges
  double compute_seconds = 0;             // of which operators
  double operator_seconds = 0;            // of which computation (no gradient reductions)
  double collectives = 0;  // collectives and exchanges priced per step (readers share one)
  double memory_per_device_bytes = 0;
  // What the user must know about the result: dynamic_programming that could not reduce the
  // graph says so, and how far its fallback may be from the optimum. Empty: nothing.
  std::string note;
  // Memory (search_memory.cc): the options chosen with the strategies, the estimate of a
  // rank's memory under them, whether it fits memory_budget_bytes (the cheapest fitting
  // strategies and options; none fits: the least memory, and memory_note names the largest
  // consumer), and the estimate of every open option under the chosen strategies.
  int optimizer_sharding = 0;
  std::vector<std::string> recompute;
  double memory_estimate_bytes = 0;
  bool memory_fits = true;
  std::string memory_note;
  std::vector<MemoryOptionEstimate> memory_options;
  // The gradient bucket the objective prices (cost.gradient_bucket_bytes, or the cheapest of
  // gradient_bucket_choices): what `plan` prices and `train` should reduce in.
  double gradient_bucket_bytes = 0;
};

// Searches strategies for the forward operators of `forward` (backward operators, if any,
// are skipped). Errors name the operator and the rule (DP size bound); strategies that fit no
// memory budget are a result (SearchResult::memory_fits), not an error.
Result<SearchResult> SearchStrategies(const Graph& forward, const SearchOptions& options);

// Writes the chosen strategies into the annotations of the operators the user did not
// configure. Fails when a name is missing from `graph`.
Status ApplySearchResult(const SearchResult& result, Graph* graph);

// Strategy files (JSON): {"devices": N, "search": "...", "operators": [{"name", "strategy",
// "provenance", "cost_s", "runners_up": [...]}]}.
std::string SearchResultToJson(const SearchResult& result, int indent = 2);
// Reads a strategy file and writes its strategies into `graph` (every operator it names must
// exist and its strategy must parse); returns how many operators it configured. Also reads
// MindSpore's strategy checkpoint in JSON (parallel_strategy_item: split counts per input, by
// the model's operator names; docs/export.md).
Result<int> LoadStrategyFile(const std::string& path, Graph* graph);

// The search's per-operator cost pieces, for tests and `plan`: the symbolic step time of the
// strategies currently in `forward`'s annotations (unannotated operators data-parallel).
Result<double> PredictStepSeconds(const Graph& forward, const SearchOptions& options);

}  // namespace shardscope
