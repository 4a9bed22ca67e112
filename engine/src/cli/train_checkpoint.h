// Internal: checkpoints in `train` and `eval` (checkpoint.h, docs/checkpoints.md): the flags,
// the checkpoint a run resumes from (read and checked before any device starts), and saving
// during a run, which every rank joins.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "cli/run_control.h"
#include "cli/train_loop.h"
#include "shardscope/checkpoint.h"
#include "shardscope/dist_trainer.h"

namespace shardscope::cli {

struct CheckpointFlags {
  std::string save;    // --save-checkpoint DIR
  int64_t every = 0;   // --every N: also after every N-th step (0: at the end only)
  std::string resume;  // --resume DIR
};

void AddCheckpointFlags(CLI::App* app, CheckpointFlags& flags);

// Checks that checkpoint `c` (read from `dir`) fits a run of global batch `batch`: the same
// batch (the data position counts batches), and the same seed (the data order and dropout
// depend on it): without --seed (`seed_given` false) the checkpoint's is taken into *seed.
Status CheckResumable(const Checkpoint& c, const std::string& dir, int64_t batch, uint64_t* seed,
                      bool seed_given);

// The steps a run resumed at `first` takes to: `steps` more when positive, else to the end
// of the run as configured (`configured_total`). kInvalidInput when nothing is left.
Result<int64_t> ResumedTotal(int64_t first, int64_t steps, int64_t configured_total);

// A run resumed at step `first` from `dir`: the loop's step count (to `steps_flag` more
// steps, else to the configured end: `steps`, `epochs`), and the resume in the run file.
Status ResumeCount(const BatchIterator& batches, int64_t first, int64_t steps_flag, int64_t steps,
                   int64_t epochs, const std::string& dir, RunControl& control, StepCount* count);

// Collective: `gathered` is the trainer's state (GatherCheckpoint, called by every rank);
// rank 0 writes it to `dir` and records it in the run file (`control`'s recorder); every
// rank returns the same status, a failure shared through `control` so that the ranks stop
// together.
Status SaveCheckpointTogether(Communicator& comm, Result<Checkpoint> gathered,
                              const std::string& dir, const std::string& model,
                              const std::string& saved_under, RunControl& control);

}  // namespace shardscope::cli
