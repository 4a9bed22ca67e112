// Internal: the pipeline `plan --pipeline` and `train --pipeline` choose (pipeline_stages.h):
// one stage per device, the micro-batch count, the priced 1F1B step and each stage's memory,
// and whether it beats the operator-level plan on the same devices.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/search_flags.h"
#include "cli/train_placed.h"
#include "shardscope/model_file.h"
#include "shardscope/pipeline_stages.h"
#include "shardscope/search.h"
#include "shardscope/trainer.h"

namespace shardscope::cli {

struct StageReport {
  std::string first_op, last_op;  // forward operators, graph order
  int device = 0;                 // its first device
  int devices = 1;                // devices device .. device + devices - 1 (its sub-mesh)
  double compute_seconds = 0;     // per micro-batch, forward + backward
  double transfer_seconds = 0;    // per micro-batch, boundary activations and gradients
  double update_seconds = 0;      // per step: optimizer update (ZeRO: its slice and collectives)
  int64_t memory_bytes = 0;       // WorkerMemoryBytes / SubMeshStageBytes (what `train` allocates)
};

struct PipelineChoice {
  int stages = 0;
  int stage_devices = 1;  // k: each stage sharded over its own k devices (submesh_pipeline.h)
  int micro_batches = 1;
  int64_t micro_batch = 0;  // examples per micro-batch
  OneFOneBPrice price;
  std::vector<StageReport> stage;
  std::map<std::string, int> worker_of;  // forward operator -> its stage (= device when k = 1)
  // k > 1: every forward operator's strategy inside its stage (searched, or the model's own).
  std::map<std::string, OpAnnotations> strategies;
  // k > 1: optimizer sharding (ZeRO stage) and recomputed scopes inside every stage.
  int optimizer_sharding = 0;
  std::vector<std::string> recompute;
  int64_t max_memory_bytes = 0;
  bool fits = true;  // every stage within the capacity (or no capacity)
};

using BuildAtFn = std::function<Result<ModelGraph>(int64_t batch)>;

// Stages over `stages` devices for a global batch of `batch` (built by `build` at each
// micro-batch size): micro-batch counts M dividing the batch up to 4 x stages are tried, the
// fitting one with the least step wins (none fits: the least memory, fits = false).
// `capacity_bytes` <= 0: no limit. Errors name why no pipeline exists (too few layers).
Result<PipelineChoice> ChoosePipeline(const BuildAtFn& build, int64_t batch, int stages,
                                      const SearchOptions& options, double capacity_bytes,
                                      int stage_devices = 1);

// Whether `c` beats `best` (none: it does): fitting first; among fitting ones the least step,
// otherwise the least memory.
bool BetterPipeline(const PipelineChoice& c, const std::optional<PipelineChoice>& best);

// Places every forward operator of `forward` on its stage's worker (strategies cleared: a
// stage runs whole on its device). Errors name an operator the choice does not know.
Status ApplyPipelineStages(const std::map<std::string, int>& worker_of, Graph* forward);

// Whether `--pipeline auto` takes the pipeline over the operator-level plan: the one that fits
// memory, else the cheaper.
bool PreferPipeline(const PipelineChoice& pipe, double flat_seconds, int64_t flat_memory,
                    double capacity_bytes);

// "auto" -> 0, "N" -> N (N >= 2 dividing the devices: stages of devices / N each); errors name
// the flag or the model file key.
Result<int> ParsePipelineStages(const std::string& text, int devices, const std::string& where);

// The device memory a pipeline must fit: --memory-budget, else the cluster's device memory,
// else 0 (no limit).
Result<double> PipelineCapacity(const SearchOptions& options, const std::string& cluster);

// The operator-level plan's predicted step and memory per device (train prices its probe).
struct OperatorLevelPrice {
  double step_seconds = 0;
  int64_t memory_bytes = 0;
};
using PriceOperatorLevelFn = std::function<Result<OperatorLevelPrice>()>;

// The operator-level plan `train` would run for a batch of `batch`: the model file's
// strategies (without `keep_strategies`: none), `search` applied, partitioned with
// `partition`, priced (PriceProgram) and its memory per device (PlannedMemoryPerDevice).
Result<OperatorLevelPrice> PriceOperatorLevel(const ModelFile& mf, int64_t batch,
                                              bool keep_strategies, const SearchFlags& flags,
                                              std::optional<SearchMode> search,
                                              const PartitionOptions& partition);

// What `train` runs for `pipeline_text` ("auto" | "N", from --pipeline when `from_flag`, else
// the model file): the pipeline, or nullopt when auto keeps the operator-level plan (`flat`
// prices it only for auto; a plan that cannot be made loses; `search`: the strategies inside
// stages of several devices, else the model's own). Refused with `other_options`
// (--micro-batches, checkpoints). Prints the choice when `print` (the first rank).
Result<std::optional<PipelineChoice>> DecideTrainPipeline(
    const ModelFile& mf, const std::string& pipeline_text, bool from_flag, bool other_options,
    int64_t batch, int devices, const SearchFlags& flags, const PriceOperatorLevelFn& flat,
    bool print, std::optional<SearchMode> search = std::nullopt);

// `placed` set to run `choice`: its micro-batches, 1f1b, its stages (valid while it lives).
PlacedTrainRequest PipelineRequest(const PlacedTrainRequest& placed, const PipelineChoice& choice);

// The choice as `plan --json` prints it.
nlohmann::ordered_json PipelineJson(const PipelineChoice& c);
// The choice as `plan` prints it (a block of lines).
std::string PipelineText(const PipelineChoice& c);

}  // namespace shardscope::cli
