// Memory as a budget: after the search, a plan that does not fit the device's memory tries
// the memory options the engine executes (ZeRO stages 1-3 over the data-parallel axes,
// recomputation of every layer, LayerScopes) and keeps the one PriceProgram prices cheapest among
// those that fit. Options the user fixed are not varied. docs/memory.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/memory_liveness.h"
#include "shardscope/partition.h"
#include "shardscope/program_price.h"
#include "shardscope/search.h"

namespace shardscope {

// One combination of memory options, priced.
struct MemoryCandidate {
  int optimizer_sharding = 0;
  std::vector<std::string> recompute;  // name scopes; {"*"}: every layer
  RankMemory memory;
  double step_seconds = 0;  // PriceProgram
  bool fits = false;
  std::string Label() const;  // "ZeRO 2, recompute every layer"; "no memory option"
};

struct MemoryFitRequest {
  double capacity_bytes = 0;              // per device; <= 0: no limit known
  std::optional<int> optimizer_sharding;  // fixed by the user; nullopt: the planner chooses
  std::optional<std::vector<std::string>> recompute;  // likewise
  // Where the planner chooses: the options `asked` was partitioned with (the search's choice).
  int first_optimizer_sharding = 0;
  std::vector<std::string> first_recompute;
  // The search's estimate of each option (SearchResult::memory_options; empty: none), which
  // runs below the measured peak: an option whose estimate exceeds the capacity by
  // kEstimateSlack is not partitioned; when every option is so, only the least is.
  std::vector<MemoryOptionEstimate> estimates;
  static constexpr double kEstimateSlack = 1.1;
};

struct MemoryFit {
  DistProgram program;  // of `chosen`
  ProgramPrice price;
  MemoryCandidate chosen;
  std::vector<MemoryCandidate> tried;  // in the order tried; the first is the plan as asked
  int skipped = 0;                     // options not partitioned: their estimate cannot fit
  bool fits = true;
  std::string why;  // one sentence: why `chosen`
};

// Partitions the differentiated graph with these memory options.
using PartitionWith = std::function<Result<DistProgram>(int optimizer_sharding,
                                                        const std::vector<std::string>& recompute)>;
// One rank's memory of a program (PlanRankMemory with the run's optimizer and dtype).
using MemoryOf = std::function<Result<RankMemory>(const DistProgram&)>;

// `asked` is the program with the options as asked (the request's, 0 and none where the
// planner chooses); `graph` is the training graph `partition` partitions; `options` price it.
// Errors: those of partitioning, pricing or counting; a plan that fits nothing is not an
// error (fits = false, chosen = the least memory).
Result<MemoryFit> FitMemory(const Graph& graph, const SearchOptions& options,
                            const MemoryFitRequest& request, DistProgram asked,
                            const PartitionWith& partition, const MemoryOf& memory);

// The layers recomputation replays one at a time: per forward operator, its name up to the
// first numbered part ("layers.3" of "layers.3.mlp.fc1"), else its top-level scope ("block1"),
// in graph order. A stack of numbered layers under one scope is thus split by layer.
std::vector<std::string> LayerScopes(const Graph& graph);
// One operator's layer by that rule (a name without a dot is its own top level).
std::string LayerScopeOf(const std::string& name);

// A PartitionWith for `program`'s graph and values: `base` with the options replaced.
PartitionWith RepartitionWith(const Graph& graph, const DistProgram& program,
                              const PartitionOptions& base);

}  // namespace shardscope
