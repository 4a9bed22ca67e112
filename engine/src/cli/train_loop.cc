#include "cli/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "cli/progress.h"

namespace shardscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::optional<int> OpenTrainSession(bool mpi, bool no_record, const std::string& path,
                                    const store::RunInfo& info, TrainSession* session) {
  if (mpi) {
    auto world = MpiWorld();
    if (!world.ok()) return Fail(kExitRunFailure, world.status().message());
    session->world = std::move(*world);
  }
  const bool lead = session->lead();
  Status created;
  if (lead && !no_record) {
    auto recorder = Recorder::Create(path.empty() ? DefaultRunPath(info.name) : path, info);
    if (recorder.ok())
      session->recorder = std::move(*recorder);
    else
      created = recorder.status();
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

int RunTrainSession(TrainSession& session, int devices, const std::string& rank_word,
                    const std::function<Status(Communicator&)>& train) {
  Status st;
  if (session.world != nullptr) {
    st = train(*session.world);
    if (!st.ok()) st = st.WithContext(rank_word + " " + std::to_string(session.world->rank()));
  } else {
    st = RunOnDevices(devices, train);
  }
  if (Recorder* recorder = session.recorder.get(); recorder != nullptr) {
    Status fin = recorder->Finish(st.ok(), st.ok() ? "" : st.message());
    if (st.ok() && !fin.ok()) st = fin;
    if (st.ok()) {
      std::printf("\nrecorded %s\n  inspect: shardscope inspect %s\n  open:    shardscope-gui %s\n",
                  recorder->path().c_str(), recorder->path().c_str(), recorder->path().c_str());
    }
  }
  if (!st.ok()) return Fail(kExitRunFailure, st.message());
  return kExitOk;
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
  int64_t step = 0;
  std::vector<double> walls;
  walls.reserve(static_cast<size_t>(std::max<int64_t>(0, c.total)));
  const auto start = Clock::now();
  for (int64_t epoch = 0; epoch < c.epochs && step < c.total; ++epoch) {
    loop.batches->Reset(static_cast<int>(epoch));
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
      if (!std::isfinite(loss)) {
        if (loop.lead) progress.Finish();
        return Status::Internal("loss became " + std::to_string(loss) + " at step " +
                                std::to_string(step + 1) + " (try a smaller --lr)");
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
    }
  }
  return EpochLoopResult{step, Since(start), std::move(walls)};
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

}  // namespace shardscope::cli
