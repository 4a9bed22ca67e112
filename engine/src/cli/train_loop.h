// Internal: what `train` does the same for every kind of trainer (SPMD and placed): the MPI
// world and the run file around a run (TrainSession), and the epoch and step loop (batches in
// the seeded order, progress, the stop on a non-finite loss, each epoch's mean loss, and the
// ranks' agreement after every step on stopping: run_control.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cli/run_control.h"
#include "shardscope/communicator.h"
#include "shardscope/data.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/pipeline.h"
#include "shardscope/recorder.h"
#include "shardscope/status.h"

namespace shardscope::cli {

// The ranks of one training run and its run file.
struct TrainSession {
  std::unique_ptr<Communicator> world;  // under mpirun; null: in-process devices
  std::unique_ptr<Recorder> recorder;   // rank 0, when recording
  bool recording = false;               // every rank: the run is recorded
  OnRecordError on_record_error = OnRecordError::kStop;
  bool lead() const { return world == nullptr || world->rank() == 0; }
};

// Joins the MPI world when `mpi`, and on rank 0 creates the run file (`path`, or the default
// path for `info.name`) unless `no_record`, before any step, so that an unwritable place fails
// now; every rank learns whether that worked. Returns the exit code to stop with, or nothing
// to go on.
std::optional<int> OpenTrainSession(bool mpi, bool no_record, const std::string& path,
                                    const store::RunInfo& info, TrainSession* session,
                                    bool overwrite = false);

// Recorder::Create for the command line: an existing file's refusal names --overwrite.
Result<std::unique_ptr<Recorder>> CreateRecorder(const std::string& path,
                                                 const store::RunInfo& info, bool overwrite);

// Runs `train` on this rank (under MPI; errors get "<rank_word> <rank>" as context) or on
// `devices` in-process devices, each with its RunControl, while catching SIGINT and SIGTERM
// (stop_signal.h); records the run's final status and says where the run file is. A failure
// of one MPI rank that the others did not share ends the job (MPI_Abort). Returns the process
// exit code: 0, 1 (failed), 128 + the signal (interrupted).
int RunTrainSession(TrainSession& session, int devices, const std::string& rank_word,
                    const std::function<Status(Communicator&, RunControl&)>& train);

// How many steps a run takes: `steps` if positive, else `epochs` whole epochs.
struct StepCount {
  int64_t per_epoch = 0;
  int64_t total = 0;
  int64_t epochs = 0;  // epochs started, the last one possibly partial
};
StepCount CountSteps(const BatchIterator& batches, int64_t steps, int64_t epochs);

struct EpochLoop {
  BatchIterator* batches = nullptr;
  StepCount count;
  int64_t batch = 0;       // examples per step, for the progress rate
  int64_t log_every = 0;   // > 0: a plain line every N steps; 0: about ten per epoch
  int64_t first_step = 0;  // steps already taken (a resumed run): the loop starts after them
  bool lead = false;       // this rank prints
  // After every step every rank shares its news through `control` over `comm`, and the
  // loop stops where the ranks agree to (both may be null: no agreement).
  Communicator* comm = nullptr;
  RunControl* control = nullptr;
  // Trains one batch; returns its loss.
  std::function<Result<float>(const Tensor& x, const Tensor& y)> step;
  // Runs after every step on every rank (1-based step and epoch, the step's wall seconds),
  // e.g. to gather and record figures; may be empty.
  std::function<Status(int64_t step, int64_t epoch, float loss, double seconds)> after_step;
};

struct EpochLoopResult {
  int64_t steps = 0;                 // the last step's number (first_step + steps taken)
  double seconds = 0;                // wall time of the loop
  bool interrupted = false;          // the ranks stopped early on a stop signal
  std::vector<double> step_seconds;  // this rank's wall time of each step
};

// Runs the loop. Fails with the first error of `step` or `after_step`, when a loss is not
// finite (naming the step), or when the ranks agreed to stop on a recording failure.
Result<EpochLoopResult> RunEpochLoop(const EpochLoop& loop);

// This rank's figures of the step just run: its counters since `*previous` (then set to
// `now`) and its memory now.
store::RankStepRecord RankStepSince(const RankStats& now, RankStats* previous, int rank,
                                    double wall_seconds);
// The same for a placed worker (pipeline.h), whose buffers all live for the whole run: its
// peak is their sum.
store::RankStepRecord RankStepSince(const WorkerStats& now, WorkerStats* previous, int rank,
                                    double wall_seconds);

// The mean step time over `mine` (this rank's step wall times) as docs/run-format.md defines
// it: per step the wall time of the slowest rank. A collective: every rank calls it.
Result<double> MeanStepSeconds(Communicator& comm, const std::vector<double>& mine);

}  // namespace shardscope::cli
