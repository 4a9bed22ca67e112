// The planner's pipeline stages under the correctness law: the stages ChoosePipeline picks
// for a sample, applied to every build, trained 1F1B with its micro-batches, equal the
// single-device run. Shared by pipeline_law_test.cc (in-process) and
// pipeline_law_mpi_main.cc (mpirun -np 4).
#pragma once

#include <string>

#include "cli/pipeline_choice.h"
#include "placement_law.h"
#include "shardscope/model_file.h"

namespace shardscope::pipeline_law {

struct StagedModel {
  std::optional<ModelFile> file;
  cli::PipelineChoice choice;
  testing_law::BuildAtFn build;  // the sample with the chosen stages
};

// The sample `name` (samples/models) with the stages the planner picks for `devices` stages
// and a global batch of `batch`, priced with the default cost model.
inline Result<StagedModel> Staged(const std::string& name, int devices, int64_t batch) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ModelFile mf, LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + name));
  StagedModel s;
  s.file = std::move(mf);
  const ModelFile* file = &*s.file;
  SHARDSCOPE_ASSIGN_OR_RETURN(
      s.choice, cli::ChoosePipeline([file](int64_t b) { return file->Build(b); }, batch, devices,
                                    SearchOptions{}, 0));
  return s;
}

// The build of `s` with its stages (valid while `s` lives).
inline testing_law::BuildAtFn StagedBuild(const StagedModel& s) {
  return [&s](int64_t b) -> Result<ModelGraph> {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, s.file->Build(b));
    SHARDSCOPE_RETURN_IF_ERROR(cli::ApplyPipelineStages(s.choice.worker_of, &m.graph));
    return m;
  };
}

inline PipelineOptions OptionsOf(const StagedModel& s) {
  return PipelineOptions{s.choice.stages, s.choice.micro_batches, PipelineSchedule::kOneFOneB};
}

}  // namespace shardscope::pipeline_law
