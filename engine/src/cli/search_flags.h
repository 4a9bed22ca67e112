// Internal: the search flags `plan` and `train` share (--search, --save-strategy,
// --load-strategy, --profile, --cluster, --dtype, --memory-budget) and how they are applied to a
// forward graph.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "shardscope/graph.h"
#include "shardscope/model_file.h"
#include "shardscope/partition.h"
#include "shardscope/search.h"

namespace shardscope::cli {

struct SearchFlags {
  std::string search;  // a SearchMode name; empty: no search
  std::string save_strategy, load_strategy, profile;
  double memory_budget_mb = 0;
  int top_k = 3;
  std::string device_mesh;                   // "node=2,local=4": how the devices are arranged
  std::vector<std::string> axis_bandwidth;   // "node=12.5e9" or "0=12.5e9", per axis
  std::vector<std::string> axis_latency;     // "node=20e-6", per axis
  std::string cluster;                       // a shipped cluster profile's name, or a file
  std::string dtype;                         // f32 | bf16 | fp16; empty: the model file's
  std::vector<ShardBlockSpec> shard_blocks;  // not a flag: the model file's shard blocks
  Precision file_dtype = Precision::kF32;    // not a flag: the model file's training.dtype
  int optimizer_states = 1;                  // not a flag: the model file's optimizer
  std::string optimizer_sharding;            // "0".."3" | "auto"; empty: the model file's
  std::vector<std::string> recompute;        // {} given alone: every layer; {"auto"}
  CLI::Option* recompute_option = nullptr;   // given at all (the flag may take no value)
  double bucket_mb = -1;     // gradient buckets, MiB (--bucket-mb); < 0: BucketMb's default
  bool bucket_auto = false;  // --bucket-mb auto: the plan chooses (kBucketChoicesMb)
  bool no_overlap = false;   // plan --no-overlap: gradient reductions priced after the backward
  // Not flags: the memory options the search may weigh (SetSearchMemoryChoices): ZeRO stages,
  // recomputed scopes, and whether recomputing every layer (LayerScopes) is open too.
  std::vector<int> zero_options = {0};
  std::vector<std::vector<std::string>> recompute_options = {{}};
  bool recompute_layers_open = false;
  // The gradient bucket `train` uses: --bucket-mb, else kDefaultBucketMb.
  double BucketMb() const { return bucket_mb >= 0 ? bucket_mb : kDefaultBucketMb; }
  static constexpr double kDefaultBucketMb = 25;  // PyTorch DDP's bucket_cap_mb
  // What --bucket-mb auto (the default on cluster profiles) chooses from: DDP's 25 MiB up to
  // 16x; Megatron-LM grows its buckets with the data-parallel size for the same reason.
  static constexpr double kBucketChoicesMb[] = {25, 50, 100, 200, 400};
};

// Whether --optimizer-sharding / --recompute leave the choice to the planner (memory_fit.h):
// "auto", or neither the flag nor the model file fixes it.
bool OptimizerShardingAuto(const SearchFlags& flags, const ParallelConfig& parallel);
bool RecomputeAuto(const SearchFlags& flags, const ParallelConfig& parallel);

// --optimizer-sharding and --recompute, else the model file's parallel section, and
// --bucket-mb into `partition` (what train runs and plan prices).
void ApplyMemoryFlags(const SearchFlags& flags, const ParallelConfig& parallel,
                      PartitionOptions* partition);

// The memory options the flags and `parallel` leave to the planner, as the search's choices
// (SearchOptions::optimizer_sharding_options, recompute_options): every ZeRO stage where
// open, else the one fixed; no recomputation or every layer where open, else the scopes fixed.
void SetSearchMemoryChoices(const ParallelConfig& parallel, SearchFlags* flags);

// After a search with those choices: the options it chose, where the planner chooses, into
// `partition`.
void TakeSearchMemoryChoices(const SearchResult& result, const SearchFlags& flags,
                             const ParallelConfig& parallel, PartitionOptions* partition);

// The model file's shard blocks as the search takes them.
std::vector<ShardBlockSpec> ShardBlockSpecs(const ParallelConfig& parallel);

// Registers the flags on `app`.
void AddSearchFlags(CLI::App* app, SearchFlags& flags);

// The search options the flags describe (the cluster's or the profile's cost model, or the
// defaults; the dtype of --dtype, else the model file's; the memory budget of --memory-budget
// and the cluster's device memory, the smaller).
Result<SearchOptions> MakeSearchOptions(const SearchFlags& flags, SearchMode mode, int devices,
                                        const std::map<std::string, DeviceMesh>& meshes);

// A searched plan's real per-device peak (`forward` annotated by the result, partitioned).
using SearchedPeakFn = std::function<Result<int64_t>(const SearchResult&)>;

// Applies --load-strategy, then the search `mode` (when set) to `forward`'s annotations;
// writes --save-strategy when `save` (rank 0 only). Returns the search's result, if any.
// With `peak`: a plan recomputing scopes that the search estimated to fit the memory budget
// but whose real peak exceeds it is searched once more, aiming as far under the budget as the
// estimate fell short.
Result<std::optional<SearchResult>> ApplySearchFlags(
    const SearchFlags& flags, std::optional<SearchMode> mode, Graph* forward, int devices,
    const std::map<std::string, DeviceMesh>& meshes, bool save, const SearchedPeakFn& peak = {});

// The gradient bucket `train` runs: --bucket-mb MiB, else --load-strategy's (the bucket a
// `plan --bucket-mb auto` chose and saved), else kDefaultBucketMb, into flags->bucket_mb.
// --bucket-mb auto is refused (train reduces in one size; plan chooses it).
Status TakeTrainBucket(SearchFlags* flags);

// The search `train` runs: --search, else the model file's `mode: auto` with its `search`
// (default sharding_propagation), else semi_auto when --load-strategy is given, else none.
Result<std::optional<SearchMode>> TrainSearchMode(const SearchFlags& flags,
                                                  const std::string& file_mode,
                                                  const std::string& file_search);

}  // namespace shardscope::cli
