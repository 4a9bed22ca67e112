// Internal: what `train` checks against the limits (limits.h) before any device starts.
//
// Each check returns kInvalidInput naming the model file's line (or the option) and the
// figure that does not fit, so that a run that cannot fit exits 2 instead of aborting.
#pragma once

#include <cstdint>

#include "shardscope/cost/dtype.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/memory_liveness.h"
#include "shardscope/model_file.h"
#include "shardscope/pipeline.h"

namespace shardscope::cli {

// The device threads of an in-process run (`from_flag`: the count came from --devices).
Status CheckInProcessDevices(const ModelFile& mf, int devices, bool from_flag);

// The bytes the synthetic data set takes while it is made (0 for other data sets), or
// kInvalidInput at data.synthetic_size when it cannot fit in memory at all.
Result<int64_t> SyntheticDataBytes(const ModelFile& mf);

// One device's memory at its peak, by kind (PlanRankMemory with the model file's optimizer)
// at `dtype`: what `plan` prints, `train` checks and the run file keeps.
Result<RankMemory> PlannedRankMemory(const ModelFile& mf, const Graph& graph,
                                     const DistProgram& program, Precision dtype);

// The bytes one device of `program` holds (RankMemoryBytes with the model file's optimizer)
// at `dtype`: the figure `plan` prints as memory per device and `train` (always f32) checks.
Result<int64_t> PlannedMemoryPerDevice(const ModelFile& mf, const Graph& graph,
                                       const DistProgram& program,
                                       Precision dtype = Precision::kF32);

// The devices of a run that share this machine's memory: all of an in-process run, this
// host's ranks under mpirun.
int DevicesOnThisHost(bool mpi, int devices);

// `devices_here` ranks of `program` (PlannedMemoryPerDevice each) plus `data_bytes` against
// the memory available now; the message names the largest tensor and the line that made it.
Status CheckTrainMemory(const ModelFile& mf, const Graph& graph, const DistProgram& program,
                        int devices_here, int64_t data_bytes);

// The same for a placed run: the `devices_here` largest workers (WorkerMemoryBytes each).
Status CheckPlacedMemory(const ModelFile& mf, const Graph& graph, const PipelinePlan& plan,
                         int micro_batches, int devices_here, int64_t data_bytes);

}  // namespace shardscope::cli
