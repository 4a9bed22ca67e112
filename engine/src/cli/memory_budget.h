// Internal: memory as a budget for `plan` and `train` (memory_fit.h): the device memory the
// flags name, the fit of a partitioned program against it, and how both commands report it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cli/search_flags.h"
#include "shardscope/memory_fit.h"
#include "shardscope/model_file.h"

namespace shardscope::cli {

struct PlanMemory {
  MemoryFit fit;
  double capacity_bytes = 0;  // 0: no device memory known
  std::string capacity_from;  // "cluster dgx-h100", "--memory-budget 80000 MB"
};

// `program` (partitioned with `partition`, priced with `options`) fitted to the device memory
// of --cluster and --memory-budget (the smaller), varying the memory options the flags and
// the model file leave to the planner. Memory at `options.dtype`. `searched` (may be null):
// the search's estimates, which spare partitioning options that cannot fit.
Result<PlanMemory> FitPlanMemory(const ModelFile& mf, const Graph& graph,
                                 const DistProgram& program, const PartitionOptions& partition,
                                 const SearchOptions& options, const SearchFlags& flags,
                                 const SearchResult* searched = nullptr);

// The real per-device peak of `model` with its forward annotated by `searched`: partitioned
// with `partition` and the search's memory choices, at the flags' dtype (ApplySearchFlags).
Result<int64_t> SearchedPlanPeak(const ModelFile& mf, const ModelGraph& model,
                                 const SearchResult& searched, const SearchFlags& flags,
                                 PartitionOptions partition);

// Why nothing fits: the capacity, the least figure and its options, the largest consumer and
// the operator at the peak (for exit 2).
std::string NothingFitsMessage(const ModelFile& mf, const PlanMemory& m);

// The breakdown and the choice: plan --json's "memory" and the run file's config.
nlohmann::ordered_json PlanMemoryJson(const PlanMemory& m);

// plan's text lines: "memory per device: ..." with the breakdown, then the choice.
void PrintPlanMemory(const PlanMemory& m);

// train's check before devices start: `probe` (partitioned with `*partition`) fitted as plan
// fits it; the chosen options are written to `*partition` and the program to `*probe`, and
// (`print`) the figure printed as plan prints it. kInvalidInput when nothing fits. Returns
// the run file's "memory" entry.
Result<nlohmann::ordered_json> FitTrainMemory(const ModelFile& mf, const Graph& graph,
                                              const SearchFlags& flags, bool print,
                                              PartitionOptions* partition, DistProgram* probe,
                                              const SearchResult* searched = nullptr);

}  // namespace shardscope::cli
