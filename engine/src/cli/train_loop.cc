#include "cli/train_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/command.h"
#include "cli/progress.h"
#include "cli/stop_signal.h"
#include "cli/train_report.h"

namespace shardscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string RunFilePath(const Recorder& recorder) {
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::absolute(recorder.path(), ec);
  return ec ? recorder.path() : path.string();
}

// " on host NAME" (the host rank 0 runs on: under mpirun, not always the launcher's).
std::string HostNote() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  return std::string(" on host ") + host;
}

}  // namespace

Result<std::unique_ptr<Recorder>> CreateRecorder(const std::string& path,
                                                 const store::RunInfo& info, bool overwrite) {
  auto recorder = Recorder::Create(path, info, overwrite);
  if (!recorder.ok() && !overwrite &&
      recorder.status().message().find("already exists") != std::string::npos) {
    return Status::Invalid(recorder.status().message() + " (--overwrite replaces it)");
  }
  return recorder;
}

std::optional<int> OpenTrainSession(bool mpi, bool no_record, const std::string& path,
                                    const store::RunInfo& info, TrainSession* session,
                                    bool overwrite) {
  if (mpi) {
    auto world = MpiWorld();
    if (!world.ok()) return Fail(kExitRunFailure, world.status().message());
    session->world = std::move(*world);
  }
  const bool lead = session->lead();
  if (lead) ReportRunInfo(info);
  session->recording = !no_record;
  Status created;
  if (lead && !no_record) {
    auto recorder =
        CreateRecorder(path.empty() ? DefaultRunPath(info.name) : path, info, overwrite);
    if (recorder.ok())
      session->recorder = std::move(*recorder);
    else  // e.g. too little free space there (RunWriterOptions::min_free_bytes)
      created = Status::Io(recorder.status().message() +
                           "; --record PATH writes the run file elsewhere, --no-record trains "
                           "without one");
  }
  if (session->world != nullptr) {  // every rank learns whether rank 0 could create the file
    std::vector<float> flag = {created.ok() ? 1.0f : 0.0f};
    if (!session->world->Broadcast(flag, 0).ok() || flag[0] != 1.0f) {
      return lead ? Fail(kExitBadInput, created.message()) : kExitBadInput;
    }
  } else if (!created.ok()) {
    return Fail(kExitBadInput, created.message());
  }
  return std::nullopt;
}

namespace {

// How a run ends: its final status and message for the run file, the exit code, and whether
// every rank ends so (else this rank failed alone).
struct Ending {
  store::RunStatus status = store::RunStatus::kCompleted;
  std::string message;
  int code = kExitOk;
  bool shared = true;
};

// `recorder` is drained: every step it will write is written.
Ending EndingOf(const Status& st, const RunControl& control, const Recorder* recorder,
                OnRecordError policy) {
  Ending e;
  if (st.ok() && control.interrupted_by() != 0) {
    e.status = store::RunStatus::kInterrupted;
    e.message = std::string(StopSignalName(control.interrupted_by())) + " at step " +
                std::to_string(control.stopped_at());
    if (control.recording_stopped_at() >= 0) {
      e.message += " (recording stopped at step " + std::to_string(control.recording_stopped_at()) +
                   ": " + control.recording_failure() + ")";
    }
    e.code = 128 + control.interrupted_by();
    return e;
  }
  if (!st.ok()) {
    e.status = store::RunStatus::kFailed;
    e.shared = control.shared_failure();
    e.message = e.shared ? control.Outcome().message() : st.message();
    e.code = kExitRunFailure;
    return e;
  }
  if (recorder == nullptr || recorder->failure().ok()) return e;
  // Recording failed after the last step (the evaluation, the last commits), or it stopped
  // while training went on.
  const std::string cause = control.recording() ? RecordFailureText(0, recorder->disk_full(),
                                                                    recorder->failure().message())
                                                : control.recording_failure();
  if (control.recording() && policy == OnRecordError::kStop) {
    e.status = store::RunStatus::kFailed;
    e.message = cause;
    e.code = kExitRunFailure;
    return e;
  }
  const int64_t at =
      control.recording() ? recorder->last_recorded_step() : control.recording_stopped_at();
  e.message = "recording stopped at step " + std::to_string(at) + ": " + cause;
  return e;
}

}  // namespace

int RunTrainSession(TrainSession& session, int devices, const std::string& rank_word,
                    const std::function<Status(Communicator&, RunControl&)>& train) {
  const StopSignals signals;  // for the run's duration
  Recorder* recorder = session.recorder.get();
  const auto control_of = [&](int rank) {
    return std::make_unique<RunControl>(rank, rank == 0 ? recorder : nullptr, session.recording,
                                        session.on_record_error);
  };
  std::vector<std::unique_ptr<RunControl>> controls;  // one per rank of this process
  Status st;
  if (session.world != nullptr) {
    controls.push_back(control_of(session.world->rank()));
    st = train(*session.world, *controls[0]);
    if (!st.ok() && !controls[0]->shared_failure())
      st = st.WithContext(rank_word + " " + std::to_string(session.world->rank()));
  } else {
    for (int r = 0; r < devices; ++r) controls.push_back(control_of(r));
    st = RunOnDevices(devices,
                      [&](Communicator& comm) { return train(comm, *controls[comm.rank()]); });
  }
  const RunControl& control = *controls[0];          // every rank ended the same way
  if (recorder != nullptr) (void)recorder->Drain();  // its failure is recorder->failure()
  const Ending end = EndingOf(st, control, recorder, session.on_record_error);
  Status finished;
  if (recorder != nullptr) finished = recorder->Finish(end.status, end.message);
  if (!end.shared) {  // the other ranks may be waiting for this one: end them too
    Fail(end.code, end.message);
    if (session.world != nullptr) AbortMpiJob(end.code);
    return end.code;
  }
  // Rank 0 has closed the run file: mpirun may now end the job as soon as a rank exits.
  if (session.world != nullptr) (void)session.world->Barrier();
  if (!session.lead()) return end.code;
  // Under MPI rank 0 writes the run file on its own host: say where, absolutely.
  const std::string run_file = recorder != nullptr && finished.ok() ? RunFilePath(*recorder) : "";
  ReportEnding(store::RunStatusName(end.status), end.message, run_file);
  switch (end.status) {
    case store::RunStatus::kInterrupted:
      std::printf("\ninterrupted: %s (training stopped after that step)\n", end.message.c_str());
      break;
    case store::RunStatus::kFailed:
      return Fail(end.code, end.message);
    default:
      if (!end.message.empty()) {
        std::fprintf(stderr, "warning: %s\n", end.message.c_str());
        return end.code;
      }
      if (!finished.ok()) return Fail(kExitRunFailure, finished.message());
  }
  if (!run_file.empty()) {
    std::printf("\nrecorded %s%s\n  inspect: shardscope inspect %s\n  open:    shardscope-gui %s\n",
                run_file.c_str(), session.world != nullptr ? HostNote().c_str() : "",
                run_file.c_str(), run_file.c_str());
  }
  std::fflush(stdout);
  return end.code;
}

StepCount CountSteps(const BatchIterator& batches, int64_t steps, int64_t epochs) {
  StepCount c;
  c.per_epoch = batches.batches_per_epoch();
  c.total = steps > 0 ? steps : c.per_epoch * epochs;
  c.epochs = (c.total + c.per_epoch - 1) / std::max<int64_t>(1, c.per_epoch);
  return c;
}

Result<EpochLoopResult> RunEpochLoop(const EpochLoop& loop) {
  const StepCount& c = loop.count;
  Progress progress(stdout, c.total,
                    loop.log_every > 0 ? loop.log_every : std::max<int64_t>(1, c.per_epoch / 10),
                    loop.log_every > 0);
  Tensor x, y;
  int64_t step = loop.first_step;
  std::vector<double> walls;
  walls.reserve(static_cast<size_t>(std::max<int64_t>(0, c.total - step)));
  const auto start = Clock::now();
  const int64_t first_epoch = step / std::max<int64_t>(1, c.per_epoch);
  for (int64_t epoch = first_epoch; epoch < c.epochs && step < c.total; ++epoch) {
    loop.batches->Reset(static_cast<int>(epoch));
    if (epoch == first_epoch) loop.batches->Skip(step - epoch * c.per_epoch);  // data position
    double epoch_loss = 0;
    int64_t epoch_steps = 0;
    while (step < c.total && loop.batches->Next(&x, &y)) {
      const auto step_start = Clock::now();
      SHARDSCOPE_ASSIGN_OR_RETURN(float loss, loop.step(x, y));
      const double wall = Since(step_start);
      walls.push_back(wall);
      if (loop.after_step) {
        SHARDSCOPE_RETURN_IF_ERROR(loop.after_step(step + 1, epoch + 1, loss, wall));
      }
      if (!std::isfinite(loss)) {  // the loss is whole on every rank: all stop here
        if (loop.lead) progress.Finish();
        Status failure = Status::Internal("loss became " + std::to_string(loss) + " at step " +
                                          std::to_string(step + 1) + " (try a smaller --lr)");
        return loop.control != nullptr ? loop.control->FailTogether(failure) : failure;
      }
      if (loop.control != nullptr) {
        SHARDSCOPE_ASSIGN_OR_RETURN(bool stop, loop.control->AfterStep(*loop.comm, step + 1));
        if (stop) {
          if (loop.lead) progress.Finish();
          SHARDSCOPE_RETURN_IF_ERROR(loop.control->Outcome());
          return EpochLoopResult{step + 1, Since(start), true, std::move(walls)};
        }
      }
      epoch_loss += loss;
      ++epoch_steps;
      ++step;
      if (loop.lead) {
        progress.Update(step, "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(c.epochs),
                        loss, loop.batch);
      }
    }
    if (loop.lead) {
      progress.Finish();
      std::printf("epoch %lld: mean loss %.4f\n", static_cast<long long>(epoch + 1),
                  epoch_loss / std::max<int64_t>(1, epoch_steps));
      ReportEpoch(epoch + 1, epoch_loss / std::max<int64_t>(1, epoch_steps));
    }
  }
  return EpochLoopResult{step, Since(start), false, std::move(walls)};
}

Result<double> MeanStepSeconds(Communicator& comm, const std::vector<double>& mine) {
  if (mine.empty()) return 0.0;
  std::vector<float> local(mine.begin(), mine.end());
  std::vector<float> all(local.size() * static_cast<size_t>(comm.size()));
  SHARDSCOPE_RETURN_IF_ERROR(comm.AllGather(local, all));
  double total = 0;
  for (size_t s = 0; s < local.size(); ++s) {
    float slowest = 0;
    for (int r = 0; r < comm.size(); ++r) slowest = std::max(slowest, all[r * local.size() + s]);
    total += slowest;
  }
  return total / static_cast<double>(local.size());
}

namespace {

// The counters since `*previous` (then set to `now`) and the memory now; the peak is left.
template <typename Stats>
store::RankStepRecord StepSince(const Stats& now, Stats* previous, int rank, double wall_seconds) {
  store::RankStepRecord mine;
  mine.rank = rank;
  mine.wall_seconds = wall_seconds;
  mine.compute_seconds = now.compute_seconds - previous->compute_seconds;
  mine.comm_seconds = now.comm_seconds - previous->comm_seconds;
  mine.bytes_sent = now.bytes_sent - previous->bytes_sent;
  mine.bytes_recv = now.bytes_received - previous->bytes_received;
  mine.param_bytes = now.parameter_bytes;
  mine.grad_bytes = now.gradient_bytes;
  mine.optimizer_bytes = now.optimizer_bytes;
  mine.activation_bytes = now.activation_bytes;
  *previous = now;
  return mine;
}

}  // namespace

store::RankStepRecord RankStepSince(const RankStats& now, RankStats* previous, int rank,
                                    double wall_seconds) {
  store::RankStepRecord mine = StepSince(now, previous, rank, wall_seconds);
  mine.peak_bytes = now.peak_bytes;
  return mine;
}

store::RankStepRecord RankStepSince(const WorkerStats& now, WorkerStats* previous, int rank,
                                    double wall_seconds) {
  store::RankStepRecord mine = StepSince(now, previous, rank, wall_seconds);
  mine.peak_bytes =
      now.parameter_bytes + now.gradient_bytes + now.optimizer_bytes + now.activation_bytes;
  return mine;
}

}  // namespace shardscope::cli
