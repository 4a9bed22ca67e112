// Internal: pipeline stages of k devices each for `plan`/`train --pipeline` (issue 20):
// the stages' sub-mesh plan priced as 1F1B, the stage count `auto` picks among the divisors
// of the devices, and `train` running it (SubMeshTrainer, submesh_pipeline.h).
#pragma once

#include <vector>

#include "cli/pipeline_choice.h"
#include "shardscope/recorder.h"
#include "shardscope/submesh_pipeline.h"

namespace shardscope::cli {

// One candidate of `stages` stages of `stage_devices` devices and `micro_batches`: the layers
// split as for one device per stage (SplitStages), then every operator's strategy over its
// stage's k devices (the search of options.mode on k devices; semi_auto: the model's own),
// partitioned and cut (PlanSubMeshPipeline). A stage's time per micro-batch is its operators'
// computation under their strategies and its redistributions (PriceProgram on k devices,
// gradient reductions and replays included, less the optimizer update paid once per step;
// ZeRO 3's gathers) plus the shards it sends and receives, each over the link between
// matching ranks of the two stages; once a step its update (StageReport::update_seconds).
Result<PipelineChoice> PriceSubMeshCandidate(const BuildAtFn& build, int64_t batch, int stages,
                                             int stage_devices, int micro_batches,
                                             const SearchOptions& options, double capacity_bytes);

// Prices `choice` (its stages, stage_devices, micro_batches, worker_of and strategies set;
// `model` built at its micro-batch with those strategies): PlanSubMeshPipeline, then the
// figures PriceSubMeshCandidate describes, each stage's report, the 1F1B price and memory.
Result<PipelineChoice> PriceSubMeshStages(ModelGraph model, PipelineChoice choice,
                                          const SearchOptions& options, double capacity_bytes);

// `options` for one stage of `stage_devices` devices: its sub-mesh of the device mesh (the
// trailing axes holding that many), no memory budget (stages are checked as a whole).
SearchOptions StageOptions(const SearchOptions& options, int stage_devices);

// `stages` > 0: ChoosePipeline with devices / stages devices per stage; 0 (auto): every stage
// count >= 2 dividing `devices`, the fitting one with the least step (none fits: least memory).
Result<PipelineChoice> ChooseAnyPipeline(const BuildAtFn& build, int64_t batch, int devices,
                                         int stages, const SearchOptions& options,
                                         double capacity_bytes);

// The devices of a stage, for `plan --json`.
std::vector<int> StageDevices(const StageReport& stage);

// The sub-mesh options cutting `c`'s program: its stages, micro-batches, operators' stages,
// ZeRO stage and recomputed scopes, for its stage_devices devices.
SubMeshOptions StageCutOptions(const PipelineChoice& c);

// Gives `forward`'s operators the annotations of `choice.strategies` (none: nothing to do).
Status ApplySubMeshStrategies(const PipelineChoice& choice, Graph* forward);

// Records `choice`'s stages (the model built by `build` at its micro-batch, its strategies,
// cut as `options` price it) with Recorder::RecordSubMeshPlan: what the GUI shows of them.
Status RecordPipelineChoice(Recorder& recorder, const BuildAtFn& build,
                            const PipelineChoice& choice, const SearchOptions& options);

// `train` on `choice`'s stages of k devices (in-process devices or MPI ranks): progress,
// losses and test accuracy like `train`; refusals start with `where` (the flag or the model
// file's line). Returns the exit code.
int RunSubMeshTrain(const PlacedTrainRequest& request, const PipelineChoice& choice,
                    const std::string& where);

// A model file with place entries and strategies: `place()` combined with operator-level
// strategies. Each worker becomes a stage of devices / workers devices, its operators sharded
// by their strategies over the stage's sub-mesh (unplaced ones go by --unplaced); trained like
// RunSubMeshTrain with --micro-batches under 1F1B. Returns the exit code.
bool PlacedWithStrategies(const ModelFile& model);
// Such a model's stages: workers from its place entries (unplaced operators by `unplaced`,
// an UnplacedPolicy name), devices / workers devices each, the model's strategies, batch /
// micro_batches examples per micro-batch. Errors name the first place entry's line.
Result<PipelineChoice> PlacedShardedChoice(const ModelFile& model, int64_t batch, int micro_batches,
                                           const std::string& unplaced, int devices);
// `plan` of such a model: every micro-batch count M dividing the batch up to 4 x workers
// (`micro_batches` > 0: that one) priced by PriceSubMeshStages, the least step that fits.
// `memory`: the ZeRO stage and recomputed scopes inside the stages.
Result<PipelineChoice> PricePlacedSharded(const ModelFile& model, int64_t batch, int micro_batches,
                                          const std::string& unplaced, int devices,
                                          const PartitionOptions& memory,
                                          const SearchOptions& options, double capacity_bytes);

// `plan` for such a model (plan_placed.cc): the stages' table, --json and --record carry the
// same figures (`pipeline`, `predicted_step_seconds`, `memory_per_device_bytes`).
struct PlacedPlanRequest {
  const ModelFile* model = nullptr;
  int devices = 0;        // 0: the model file's
  int64_t batch = 0;      // 0: the model file's
  int micro_batches = 0;  // 0: the cheapest count that fits
  std::string unplaced = "worker0";
  bool json = false;
  std::string record;
  bool overwrite = false;
  SearchFlags search;
};
int RunPlanPlacedSharded(const PlacedPlanRequest& request);
int RunPlacedShardedTrain(const PlacedTrainRequest& request);

}  // namespace shardscope::cli
