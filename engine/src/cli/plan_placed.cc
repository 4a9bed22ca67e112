// `shardscope plan` of a model file with place entries and strategies: each worker a stage
// sharded over its own devices (pipeline_submesh.h), priced as `--pipeline N` prices stages.
#include <cstdio>

#include "cli/command.h"
#include "cli/pipeline_submesh.h"
#include "cli/train_loop.h"
#include "shardscope/recorder.h"

namespace shardscope::cli {

int RunPlanPlacedSharded(const PlacedPlanRequest& r) {
  const ModelFile& mf = *r.model;
  const ParallelConfig& parallel = mf.parallel();
  const int devices = r.devices > 0 ? r.devices : std::max(1, parallel.devices);
  const int64_t batch = r.batch > 0 ? r.batch : mf.training().batch;
  SearchFlags flags = r.search;
  flags.optimizer_states = OptimizerStateTensors(mf.training().optimizer.kind);
  flags.file_dtype = mf.training().dtype;
  std::map<std::string, DeviceMesh> meshes;
  for (const auto& [name, text] : parallel.meshes) {
    auto mesh = ParseMeshExpr(text);
    if (!mesh.ok())
      return Fail(kExitBadInput, mf.path() + ": mesh " + name + ": " + mesh.status().message());
    meshes[name] = *mesh;
  }
  auto options = MakeSearchOptions(flags, SearchMode::kSemiAuto, devices, meshes);
  if (!options.ok()) return Fail(kExitBadInput, options.status().message());
  auto capacity = PipelineCapacity(*options, flags.cluster);
  if (!capacity.ok()) return Fail(kExitBadInput, capacity.status().message());
  PartitionOptions memory;
  ApplyMemoryFlags(flags, parallel, &memory);
  auto choice = PricePlacedSharded(mf, batch, r.micro_batches, r.unplaced, devices, memory,
                                   *options, *capacity);
  if (!choice.ok()) return Fail(kExitBadInput, choice.status().message());
  nlohmann::ordered_json summary = {{"model", mf.name()},
                                    {"devices", devices},
                                    {"batch", batch},
                                    {"search", "semi_auto"},
                                    {"parallelism", "pipeline"},
                                    {"placed", true},
                                    {"predicted_step_seconds", choice->price.step_seconds},
                                    {"memory_per_device_bytes", choice->max_memory_bytes},
                                    {"dtype", PrecisionName(options->dtype)},
                                    {"device_mesh", options->device_mesh.ToString()}};
  if (!flags.cluster.empty()) summary["cluster"] = flags.cluster;
  summary["pipeline"] = PipelineJson(*choice);
  if (!r.record.empty()) {
    store::RunInfo info;
    info.name = mf.name();
    info.mode = "plan";
    info.search = "pipeline";
    info.devices = devices;
    info.backend = "none (plan)";
    info.model_path = mf.path();
    info.model_text = mf.text();
    info.config_json = summary.dump();
    info.command_line = CommandLine();
    info.shardscope_version = "0.1.0";
    auto rec = CreateRecorder(r.record, info, r.overwrite);
    if (!rec.ok()) return Fail(kExitBadInput, rec.status().message());
    const Status st = RecordPipelineChoice(
        **rec, [&](int64_t b) { return mf.Build(b); }, *choice, *options);
    Status fin = (*rec)->Finish(st.ok() ? store::RunStatus::kCompleted : store::RunStatus::kFailed,
                                st.message());
    if (!st.ok() || !fin.ok()) return Fail(kExitRunFailure, st.ok() ? fin.message() : st.message());
  }
  if (r.json) {
    std::printf("%s\n", summary.dump(2).c_str());
    return kExitOk;
  }
  std::printf(
      "plan %s (%s): %d devices, place with strategies (each worker a stage of %d devices "
      "sharded by its strategies), batch %lld, %s\ncost model: %s\n\n%s",
      mf.name().c_str(), mf.path().c_str(), devices, choice->stage_devices,
      static_cast<long long>(batch), PrecisionName(options->dtype),
      options->cost.ToString().c_str(), PipelineText(*choice).c_str());
  if (r.micro_batches <= 0)
    std::printf("train with --micro-batches %d --schedule 1f1b for this step\n",
                choice->micro_batches);
  if (!r.record.empty()) std::printf("recorded %s\n", r.record.c_str());
  return kExitOk;
}

}  // namespace shardscope::cli
