#include "cli/train_checkpoint.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/option_checks.h"

namespace shardscope::cli {

void AddCheckpointFlags(CLI::App* app, CheckpointFlags& flags) {
  auto* save =
      app->add_option("--save-checkpoint", flags.save,
                      "Save the global parameters, optimizer state and data position to DIR at the "
                      "end (and with --every N, after every N-th step); DIR is replaced atomically "
                      "(docs/checkpoints.md)");
  app->add_option("--every", flags.every, "With --save-checkpoint: also save after every N-th step")
      ->check(AtLeast(1))
      ->needs(save);
  app->add_option("--resume", flags.resume,
                  "Start from the checkpoint in DIR (saved under any strategy or device count): "
                  "its parameters, optimizer state, step and data position; --steps M then "
                  "trains M more steps, else the run goes on to its configured end");
}

Status CheckResumable(const Checkpoint& c, const std::string& dir, int64_t batch, uint64_t* seed,
                      bool seed_given) {
  if (c.batch != batch) {
    return Status::Invalid(dir + ": the checkpoint was saved by a run of global batch " +
                           std::to_string(c.batch) + ", this run has batch " +
                           std::to_string(batch) + " (pass --batch " + std::to_string(c.batch) +
                           ": the data position counts batches)");
  }
  if (seed_given && c.seed != *seed) {
    return Status::Invalid(dir + ": the checkpoint was saved by a run of seed " +
                           std::to_string(c.seed) + ", not --seed " + std::to_string(*seed) +
                           " (the data order and dropout follow the seed; omit --seed)");
  }
  *seed = c.seed;
  return Status::Ok();
}

Result<int64_t> ResumedTotal(int64_t first, int64_t steps, int64_t configured_total) {
  const int64_t total = steps > 0 ? first + steps : configured_total;
  if (total <= first) {
    return Status::Invalid("the checkpoint is at step " + std::to_string(first) +
                           ", the end of this run (step " + std::to_string(configured_total) +
                           "): pass --steps M to train M more steps, or more --epochs");
  }
  return total;
}

Status ResumeCount(const BatchIterator& batches, int64_t first, int64_t steps_flag, int64_t steps,
                   int64_t epochs, const std::string& dir, RunControl& control, StepCount* count) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      count->total, ResumedTotal(first, steps_flag,
                                 CountSteps(batches, steps_flag > 0 ? 0 : steps, epochs).total));
  count->epochs = (count->total + count->per_epoch - 1) / std::max<int64_t>(1, count->per_epoch);
  if (Recorder* recorder = control.recorder()) {
    const nlohmann::json event = {{"action", "resumed"}, {"dir", dir}, {"step", first}};
    control.Recorded(recorder->RecordCheckpoint(first, event.dump()));
  }
  return Status::Ok();
}

Status SaveCheckpointTogether(Communicator& comm, Result<Checkpoint> gathered,
                              const std::string& dir, const std::string& model,
                              const std::string& saved_under, RunControl& control) {
  const auto start = std::chrono::steady_clock::now();
  SHARDSCOPE_ASSIGN_OR_RETURN(Checkpoint c, std::move(gathered));
  Status written;
  std::string sha;
  int64_t bytes = 0;
  if (comm.rank() == 0) {
    c.model = model;
    c.saved_under = saved_under;
    written = WriteCheckpoint(dir, c, &sha, &bytes);
  }
  std::vector<float> ok = {written.ok() ? 1.0f : 0.0f};
  SHARDSCOPE_RETURN_IF_ERROR(comm.Broadcast(ok, 0));
  if (ok[0] != 1.0f) {
    return control.FailTogether(
        comm.rank() == 0 ? written : Status::Io("rank 0 could not save checkpoint " + dir));
  }
  if (Recorder* recorder = control.recorder()) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const nlohmann::json event = {{"action", "saved"},      {"dir", dir},
                                  {"step", c.step},         {"bytes", bytes},
                                  {"manifest_sha256", sha}, {"seconds", seconds}};
    control.Recorded(recorder->RecordCheckpoint(c.step, event.dump()));
  }
  return Status::Ok();
}

}  // namespace shardscope::cli
