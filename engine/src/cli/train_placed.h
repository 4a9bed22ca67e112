// Internal: `shardscope train` for placed models (place(worker, r); placement.h, pipeline.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/run_control.h"
#include "cli/train_checkpoint.h"
#include "shardscope/data.h"
#include "shardscope/model_file.h"

namespace shardscope::cli {

struct PlacedTrainRequest {
  const ModelFile* model = nullptr;
  const Dataset* train = nullptr;
  const Dataset* test = nullptr;
  TrainingConfig training;  // with the command line's overrides
  int devices = 1;          // in-process devices or the MPI world's size
  bool mpi = false;
  int micro_batches = 1;
  std::string schedule = "gpipe";
  std::string unplaced = "worker0";  // UnplacedPolicy
  std::string dump_ir;
  std::string record;  // empty: runs/<name>-<time>.db
  bool no_record = false;
  OnRecordError on_record_error = OnRecordError::kStop;
  int64_t log_every = 0;
  int64_t data_bytes = 0;              // the synthetic data set's (SyntheticDataBytes)
  std::string data_json = "{}";        // where the data came from (DataJson), for the run file
  bool overwrite = false;              // replace an existing run file
  CheckpointFlags checkpoint;          // --save-checkpoint, --every, --resume (train_checkpoint.h)
  const Checkpoint* resume = nullptr;  // read and checked from checkpoint.resume
  int64_t steps_flag = 0;              // --steps as given (a resumed run: that many more)
  bool eval_only = false;              // `shardscope eval`: evaluate `resume`, train nothing
  // The planner's pipeline stages (train --pipeline): forward operator -> worker, applied to
  // every build of the model; nullptr: the model file's place entries.
  const std::map<std::string, int>* stages = nullptr;
  // Place with strategies: the ZeRO stage and recomputed scopes inside each worker's stage.
  int optimizer_sharding = 0;
  std::vector<std::string> recompute = {};
};

// The run file's description of a placed or pipelined run: the training settings and `mode`
// in its config, with `extra` (stages, micro-batches, schedule) added.
store::RunInfo DescribePlacedRun(const PlacedTrainRequest& r, const std::string& mode,
                                 const nlohmann::json& extra);

// True when the model file places some operator on a worker.
bool ModelIsPlaced(const ModelFile& model);

// Trains a placed model: one worker per device (thread or MPI rank), pipelined over
// micro-batches; prints progress and test accuracy like `train`; records the per-worker
// programs, send/recv edges, per-worker step figures and the pipeline timeline. Returns the
// exit code.
int RunPlacedTrain(const PlacedTrainRequest& request);

}  // namespace shardscope::cli
