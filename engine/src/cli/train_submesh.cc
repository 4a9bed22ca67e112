// `shardscope train --pipeline N` with stages of several devices each (pipeline_submesh.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/pipeline_submesh.h"
#include "cli/train_loop.h"
#include "cli/train_report.h"
#include "shardscope/base/format.h"
#include "shardscope/recorder.h"
#include "shardscope/submesh_pipeline.h"

namespace shardscope::cli {
namespace {

store::RunInfo DescribeSubMeshRun(const PlacedTrainRequest& r, const PipelineChoice& c) {
  const TrainingConfig& tc = r.training;
  store::RunInfo info;
  info.name = r.model->name();
  info.mode = "train";
  info.search = "pipeline";
  info.devices = r.devices;
  info.backend = r.mpi ? "mpi" : "in-process";
  info.model_path = r.model->path();
  info.model_text = r.model->text();
  info.config_json = nlohmann::json{{"batch", tc.batch},
                                    {"epochs", tc.epochs},
                                    {"steps", tc.steps},
                                    {"seed", tc.seed},
                                    {"optimizer", OptimizerKindName(tc.optimizer.kind)},
                                    {"lr", tc.optimizer.lr},
                                    {"momentum", tc.optimizer.momentum},
                                    {"mode", "pipeline"},
                                    {"devices", r.devices},
                                    {"stages", c.stages},
                                    {"stage_devices", c.stage_devices},
                                    {"micro_batches", c.micro_batches},
                                    {"schedule", "1f1b"},
                                    {"data", nlohmann::json::parse(r.data_json)}}
                         .dump();
  info.command_line = CommandLine();
  info.shardscope_version = "0.1.0";
  return info;
}

}  // namespace

int RunSubMeshTrain(const PlacedTrainRequest& r, const PipelineChoice& choice) {
  const TrainingConfig& tc = r.training;
  SubMeshOptions options;
  options.stages = choice.stages;
  options.micro_batches = choice.micro_batches;
  options.stage_of = choice.worker_of;
  options.partition.devices = choice.stage_devices;
  const auto build = [&]() -> Result<ModelGraph> {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, r.model->Build(choice.micro_batch));
    SHARDSCOPE_RETURN_IF_ERROR(ApplySubMeshStrategies(choice, &model.graph));
    return model;
  };
  if (r.devices != choice.stages * choice.stage_devices)
    return Fail(kExitBadInput, "pipeline: " + std::to_string(choice.stages) + " stages of " +
                                   std::to_string(choice.stage_devices) + " devices need " +
                                   std::to_string(choice.stages * choice.stage_devices) +
                                   " devices, the run has " + std::to_string(r.devices));
  {  // The plan once, before any device starts: bad input exits with 2.
    auto model = build();
    auto plan = model.ok() ? PlanSubMeshPipeline(&*model, options)
                           : Result<SubMeshPlan>(model.status());
    if (!plan.ok()) return Fail(kExitBadInput, plan.status().message());
  }
  TrainSession session;
  if (auto stop = OpenTrainSession(r.mpi, r.no_record, r.record, DescribeSubMeshRun(r, choice),
                                   &session, r.overwrite))
    return *stop;
  session.on_record_error = r.on_record_error;
  return RunTrainSession(session, r.devices, "rank", [&](Communicator& comm,
                                                          RunControl& control) -> Status {
    const bool lead = comm.rank() == 0;
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, build());
    SHARDSCOPE_ASSIGN_OR_RETURN(
        auto trainer, SubMeshTrainer::Create(std::move(model),
                                             TrainConfig{tc.seed, tc.optimizer}, options,
                                             comm.rank()));
    SHARDSCOPE_ASSIGN_OR_RETURN(const bool stop, control.AfterStep(comm, 0));
    if (stop) return control.Outcome();
    BatchIterator batches(*r.train, tc.batch, tc.seed, /*shuffle=*/true);
    const StepCount count = CountSteps(batches, tc.steps, tc.epochs);
    if (lead) {
      std::printf(
          "training %s: %d stages x %d devices (%s), %zu value(s) crossing stages, batch %lld in "
          "%d micro-batch(es) of %lld (1f1b), %s lr %g, %lld steps (%lld per epoch), seed %llu\n",
          r.model->name().c_str(), choice.stages, choice.stage_devices,
          r.mpi ? "MPI" : "in-process", trainer->plan().cuts.size(),
          static_cast<long long>(tc.batch), choice.micro_batches,
          static_cast<long long>(choice.micro_batch), OptimizerKindName(tc.optimizer.kind),
          tc.optimizer.lr, static_cast<long long>(count.total),
          static_cast<long long>(count.per_epoch), static_cast<unsigned long long>(tc.seed));
      std::fflush(stdout);
    }
    RankStats previous = trainer->stats();
    EpochLoop loop;
    loop.batches = &batches;
    loop.count = count;
    loop.batch = tc.batch;
    loop.log_every = r.log_every;
    loop.lead = lead;
    loop.comm = &comm;
    loop.control = &control;
    loop.step = [&](const Tensor& x, const Tensor& y) { return trainer->Step(comm, x, y); };
    loop.after_step = [&](int64_t step, int64_t epoch, float loss, double secs) -> Status {
      if (!control.recording()) return Status::Ok();  // the same on every rank
      const RankStats& now = trainer->stats();
      store::RankStepRecord mine;
      mine.rank = comm.rank();
      mine.wall_seconds = secs;
      mine.compute_seconds = now.compute_seconds - previous.compute_seconds;
      mine.comm_seconds = now.comm_seconds - previous.comm_seconds;
      mine.bytes_sent = now.bytes_sent - previous.bytes_sent;
      mine.bytes_recv = now.bytes_received - previous.bytes_received;
      mine.optimizer_bytes = now.optimizer_bytes;
      previous = now;
      SHARDSCOPE_ASSIGN_OR_RETURN(auto ranks, GatherRankStep(comm, mine));
      if (Recorder* recorder = control.recorder())
        control.Recorded(recorder->RecordStep(step, epoch, loss, ranks));
      return Status::Ok();
    };
    SHARDSCOPE_ASSIGN_OR_RETURN(EpochLoopResult done, RunEpochLoop(loop));
    if (done.interrupted) return Status::Ok();
    SHARDSCOPE_ASSIGN_OR_RETURN(const double step_secs, MeanStepSeconds(comm, done.step_seconds));
    SHARDSCOPE_ASSIGN_OR_RETURN(const double accuracy, trainer->Evaluate(comm, *r.test));
    if (lead) {
      std::printf("test accuracy: %.4f (%lld examples), %lld steps in %s (%.2f ms/step)\n",
                  accuracy, static_cast<long long>(r.test->size()),
                  static_cast<long long>(done.step_seconds.size()),
                  FormatClock(done.seconds).c_str(), 1e3 * step_secs);
      ReportResult(done.steps, done.seconds, step_secs, accuracy, r.test->size());
    }
    return Status::Ok();
  });
}

}  // namespace shardscope::cli
