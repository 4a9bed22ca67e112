// `shardscope train` for placed models: one worker per device, micro-batch pipelining.
#include "cli/train_placed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/pipeline_choice.h"
#include "cli/progress.h"
#include "cli/resource_checks.h"
#include "cli/train_loop.h"
#include "cli/train_report.h"
#include "shardscope/base/format.h"
#include "shardscope/communicator.h"
#include "shardscope/pipeline.h"
#include "shardscope/recorder.h"

namespace shardscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The placed operator with the highest worker (nullptr: none).
const AnnotationEntry* HighestPlaced(const ModelFile& mf) {
  const AnnotationEntry* best = nullptr;
  for (const AnnotationEntry& a : mf.parallel().annotations) {
    if (a.annotations.worker >= 0 &&
        (best == nullptr || a.annotations.worker > best->annotations.worker))
      best = &a;
  }
  return best;
}

struct Setup {
  const PlacedTrainRequest* request;
  PipelineOptions options;
  int64_t micro_batch = 0;
};

// The model at the micro-batch size, with the planner's stages when it chose them.
Result<ModelGraph> BuildPlaced(const PlacedTrainRequest& r, int64_t micro_batch) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, r.model->Build(micro_batch));
  if (r.stages != nullptr) SHARDSCOPE_RETURN_IF_ERROR(ApplyPipelineStages(*r.stages, &model.graph));
  return model;
}

Result<std::unique_ptr<PipelineTrainer>> MakeTrainer(const Setup& s, int rank) {
  const PlacedTrainRequest& r = *s.request;
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, BuildPlaced(r, s.micro_batch));
  return PipelineTrainer::Create(
      std::move(model), TrainConfig{r.training.seed, r.training.optimizer}, s.options, rank);
}

// This step's figures of every worker, and its pipeline timeline, to rank 0's recorder.
// A recording failure goes to `control`; errors returned are the communicator's.
Status RecordStep(Communicator& comm, RunControl& control, const PipelineTrainer& t,
                  WorkerStats* previous, int64_t step, int64_t epoch, float loss, double seconds) {
  const store::RankStepRecord mine = RankStepSince(t.stats(), previous, comm.rank(), seconds);
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ranks, GatherRankStep(comm, mine));
  // Spans: every worker runs 2 * M phases per step, so the blocks have equal sizes. Each
  // block opens with the worker's step origin on the steady clock as a float pair (high part,
  // remainder): floats cannot hold it to the microsecond, the pair can.
  constexpr size_t kFields = 6;
  std::vector<float> spans;
  const double origin = t.last_step_origin();
  const float origin_high = static_cast<float>(origin);
  spans.insert(
      spans.end(),
      {origin_high, static_cast<float>(origin - static_cast<double>(origin_high)), 0, 0, 0, 0});
  for (const PhaseSpan& p : t.last_step_spans()) {
    spans.insert(spans.end(),
                 {static_cast<float>(p.micro_batch), p.backward ? 1.0f : 0.0f,
                  static_cast<float>(p.start), static_cast<float>(p.end),
                  static_cast<float>(p.compute_seconds), static_cast<float>(p.idle_seconds)});
  }
  std::vector<float> all(spans.size() * comm.size());
  SHARDSCOPE_RETURN_IF_ERROR(comm.AllGather(spans, all));
  Recorder* recorder = control.recorder();
  if (recorder == nullptr) return Status::Ok();
  control.Recorded(recorder->RecordStep(step, epoch, loss, ranks));
  // Every worker's times from the earliest step origin. Workers on other hosts have unrelated
  // clocks (boot times seconds or hours apart): origins further apart than the step, or than
  // a second, mean that, and then each worker keeps its own origin.
  std::vector<double> origins(comm.size());
  for (int r = 0; r < comm.size(); ++r)
    origins[r] =
        static_cast<double>(all[r * spans.size()]) + static_cast<double>(all[r * spans.size() + 1]);
  const double earliest = *std::min_element(origins.begin(), origins.end());
  const double latest = *std::max_element(origins.begin(), origins.end());
  const bool one_clock = latest - earliest <= std::max(seconds, 1.0);
  std::vector<store::PipelineSpanRecord> records;
  for (int r = 0; r < comm.size(); ++r) {
    const double shift = one_clock ? origins[r] - earliest : 0.0;
    for (size_t i = (r * spans.size()) + kFields; i < (r + 1) * spans.size(); i += kFields) {
      store::PipelineSpanRecord rec;
      rec.step = step;
      rec.rank = r;
      rec.micro_batch = static_cast<int64_t>(all[i]);
      rec.phase = all[i + 1] != 0.0f ? "backward" : "forward";
      rec.start_seconds = shift + all[i + 2];
      rec.end_seconds = shift + all[i + 3];
      rec.compute_seconds = all[i + 4];
      rec.idle_seconds = all[i + 5];
      records.push_back(rec);
    }
  }
  control.Recorded(recorder->RecordPipelineSpans(records));
  return Status::Ok();
}

Status TrainWorker(Communicator& comm, const Setup& s, RunControl& control) {
  const PlacedTrainRequest& r = *s.request;
  const TrainingConfig& tc = r.training;
  const bool lead = comm.rank() == 0;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto trainer, MakeTrainer(s, comm.rank()));
  if (r.resume != nullptr) SHARDSCOPE_RETURN_IF_ERROR(RestoreCheckpoint(*r.resume, *trainer));
  if (r.eval_only) {
    SHARDSCOPE_ASSIGN_OR_RETURN(double accuracy, trainer->Evaluate(comm, *r.test));
    if (lead) {
      std::printf(
          "checkpoint %s (step %lld): test accuracy %.4f (%lld examples; placed runs "
          "report no test loss yet)\n",
          r.checkpoint.resume.c_str(), static_cast<long long>(trainer->step()), accuracy,
          static_cast<long long>(r.test->size()));
    }
    return Status::Ok();
  }
  if (Recorder* recorder = control.recorder()) {
    control.Recorded(
        recorder->RecordPlacement(trainer->graph(), trainer->program(), s.options.micro_batches));
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(const bool stop, control.AfterStep(comm, 0));
  if (stop) return control.Outcome();
  BatchIterator batches(*r.train, tc.batch, tc.seed, /*shuffle=*/true);
  StepCount count = CountSteps(batches, tc.steps, tc.epochs);
  const int64_t first = trainer->step();  // a resumed run's steps so far
  if (r.resume != nullptr) {
    SHARDSCOPE_RETURN_IF_ERROR(ResumeCount(batches, first, r.steps_flag, tc.steps, tc.epochs,
                                           r.checkpoint.resume, control, &count));
  }
  const int64_t total = count.total, per_epoch = count.per_epoch, epochs = count.epochs;
  const PlacedProgram& program = trainer->program();
  if (lead) {
    std::printf(
        "training %s: %d worker(s) (%s, placed), %zu cut edge(s), batch %lld in %d "
        "micro-batch(es) of %lld (%s), %s lr %g, %lld steps (%lld per epoch), seed %llu\n",
        r.model->name().c_str(), comm.size(), r.mpi ? "MPI" : "in-process", program.edges.size(),
        static_cast<long long>(tc.batch), s.options.micro_batches,
        static_cast<long long>(s.micro_batch), PipelineScheduleName(s.options.schedule),
        OptimizerKindName(tc.optimizer.kind), tc.optimizer.lr, static_cast<long long>(total),
        static_cast<long long>(per_epoch), static_cast<unsigned long long>(tc.seed));
    if (r.resume != nullptr) {
      std::printf("resumed from %s at step %lld (saved under %s)\n", r.checkpoint.resume.c_str(),
                  static_cast<long long>(first), r.resume->saved_under.c_str());
    }
    std::fflush(stdout);
  }
  WorkerStats previous = trainer->stats();
  EpochLoop loop;
  loop.batches = &batches;
  loop.count = count;
  loop.batch = tc.batch;
  loop.log_every = r.log_every;
  loop.first_step = first;
  loop.lead = lead;
  loop.comm = &comm;
  loop.control = &control;
  loop.step = [&](const Tensor& x, const Tensor& y) { return trainer->Step(comm, x, y); };
  const CheckpointFlags& ck = r.checkpoint;
  const std::string saved_under =
      std::to_string(comm.size()) + " worker(s), " + (r.mpi ? "MPI" : "in-process") + ", placed";
  const auto save = [&] {
    return SaveCheckpointTogether(comm, GatherCheckpoint(comm, *trainer), ck.save, r.model->name(),
                                  saved_under, control);
  };
  int64_t saved_at = -1;
  loop.after_step = [&](int64_t step, int64_t epoch, float loss, double secs) -> Status {
    if (control.recording())  // the same on every worker
      SHARDSCOPE_RETURN_IF_ERROR(
          RecordStep(comm, control, *trainer, &previous, step, epoch, loss, secs));
    if (ck.save.empty() || ck.every <= 0 || step % ck.every != 0) return Status::Ok();
    saved_at = step;
    return save();
  };
  SHARDSCOPE_ASSIGN_OR_RETURN(EpochLoopResult done, RunEpochLoop(loop));
  if (!ck.save.empty() && saved_at != done.steps) {  // also when interrupted
    SHARDSCOPE_RETURN_IF_ERROR(save());
    if (lead)
      std::printf("checkpoint: %s (step %lld)\n", ck.save.c_str(),
                  static_cast<long long>(done.steps));
  }
  if (done.interrupted) return Status::Ok();  // every worker stopped after the same step
  const int64_t step = done.steps;
  const double secs = done.seconds;
  SHARDSCOPE_ASSIGN_OR_RETURN(const double step_secs, MeanStepSeconds(comm, done.step_seconds));
  const auto eval_start = Clock::now();
  SHARDSCOPE_ASSIGN_OR_RETURN(double accuracy, trainer->Evaluate(comm, *r.test));
  if (Recorder* recorder = control.recorder()) {
    control.Recorded(recorder->RecordEvaluation(step, epochs, "test", accuracy, r.test->size(),
                                                Since(eval_start)));
  }
  const WorkerStats& ws = trainer->stats();
  std::vector<float> mine = {static_cast<float>(ws.compute_seconds),
                             static_cast<float>(ws.comm_seconds),
                             static_cast<float>(program.SentBytes(comm.rank())),
                             static_cast<float>(program.ReceivedBytes(comm.rank())),
                             static_cast<float>(ws.parameter_bytes)};
  std::vector<float> all(mine.size() * comm.size());
  SHARDSCOPE_RETURN_IF_ERROR(comm.AllGather(mine, all));
  if (lead) {
    std::printf("test accuracy: %.4f (%lld examples), %lld steps in %s (%.2f ms/step)\n", accuracy,
                static_cast<long long>(r.test->size()),
                static_cast<long long>(done.step_seconds.size()),  // this run's, if resumed
                FormatClock(secs).c_str(), 1e3 * step_secs);
    ReportResult(step, secs, step_secs, accuracy, r.test->size());
    std::vector<float> per_step = all;  // sent and received: per micro-batch in the program
    for (size_t i = 0; i < per_step.size(); ++i) {
      if (i % mine.size() == 2 || i % mine.size() == 3) per_step[i] *= s.options.micro_batches;
    }
    ReportRanks("worker",
                {"compute_seconds_per_step", "comm_seconds_per_step", "bytes_sent_each_step",
                 "bytes_received_each_step", "parameter_bytes"},
                per_step, static_cast<double>(std::max<int64_t>(1, step)));
    std::printf("\nper worker (per step)  compute ms  comm ms  sent B  received B  parameters\n");
    const double n = std::max<int64_t>(1, step);
    const int m = s.options.micro_batches;
    for (int w = 0; w < comm.size(); ++w) {
      const float* f = &all[w * mine.size()];
      std::printf("  worker %-3d            %9.3f %8.3f %7.0f %11.0f  %.0f B\n", w, 1e3 * f[0] / n,
                  1e3 * f[1] / n, f[2] * m, f[3] * m, f[4]);
    }
  }
  return Status::Ok();
}

}  // namespace

store::RunInfo DescribePlacedRun(const PlacedTrainRequest& r, const std::string& mode,
                                 const nlohmann::json& extra) {
  const TrainingConfig& tc = r.training;
  store::RunInfo info;
  info.name = r.model->name();
  info.mode = "train";
  info.search = mode;
  info.devices = r.devices;
  info.backend = r.mpi ? "mpi" : "in-process";
  info.model_path = r.model->path();
  info.model_text = r.model->text();
  nlohmann::json config{{"batch", tc.batch},
                        {"epochs", tc.epochs},
                        {"steps", tc.steps},
                        {"seed", tc.seed},
                        {"optimizer", OptimizerKindName(tc.optimizer.kind)},
                        {"lr", tc.optimizer.lr},
                        {"momentum", tc.optimizer.momentum},
                        {"mode", mode},
                        {"devices", r.devices}};
  config.update(extra);
  config["data"] = nlohmann::json::parse(r.data_json);
  info.config_json = config.dump();
  info.command_line = CommandLine();
  info.shardscope_version = "0.1.0";
  return info;
}

bool ModelIsPlaced(const ModelFile& model) { return HighestPlaced(model) != nullptr; }

int RunPlacedTrain(const PlacedTrainRequest& r) {
  Setup s;
  s.request = &r;
  auto schedule = ParsePipelineSchedule(r.schedule);
  if (!schedule.ok()) return Fail(kExitBadInput, schedule.status().message());
  auto unplaced = ParseUnplacedPolicy(r.unplaced);
  if (!unplaced.ok()) return Fail(kExitBadInput, unplaced.status().message());
  s.options = {r.devices, r.micro_batches, *schedule, *unplaced};
  const int64_t batch = r.training.batch;
  if (r.micro_batches < 1 || batch % r.micro_batches != 0) {
    return Fail(kExitBadInput, "--micro-batches " + std::to_string(r.micro_batches) +
                                   " must divide the batch of " + std::to_string(batch));
  }
  s.micro_batch = batch / r.micro_batches;
  const AnnotationEntry* highest = HighestPlaced(*r.model);
  if (highest != nullptr && r.stages == nullptr && highest->annotations.worker >= r.devices) {
    const std::string need = std::to_string(highest->annotations.worker + 1);
    return Fail(kExitBadInput,
                highest->place_location.ToString() + ": " + highest->op + " is placed on worker " +
                    std::to_string(highest->annotations.worker) + " but the run has " +
                    std::to_string(r.devices) + " device(s); use --devices " + need +
                    (r.mpi ? " (mpirun -np " + need + ")" : std::string()));
  }
  {  // Check the placement, the schedule and the memory once, before any device starts.
    auto model = BuildPlaced(r, s.micro_batch);
    auto plan =
        model.ok() ? PlanPipeline(&*model, s.options) : Result<PipelinePlan>(model.status());
    if (!plan.ok()) {
      const StatusCode code = plan.status().code();
      const bool bad = code == StatusCode::kInvalidInput || code == StatusCode::kNotImplemented;
      return Fail(bad ? kExitBadInput : kExitRunFailure, plan.status().message());
    }
    Status memory = CheckPlacedMemory(*r.model, model->graph, *plan, r.micro_batches,
                                      DevicesOnThisHost(r.mpi, r.devices), r.data_bytes);
    if (!memory.ok()) return Fail(kExitBadInput, memory.message());
    if (!r.dump_ir.empty()) {
      std::ofstream out(r.dump_ir);
      out << "// ---- graph after autodiff\n"
          << model->graph.ToText() << "// ---- after placement\n"
          << plan->train.ToText(model->graph);
      if (!out) return Fail(kExitBadInput, "cannot write --dump-ir file " + r.dump_ir);
    }
  }
  TrainSession session;
  if (auto stop = OpenTrainSession(
          r.mpi, r.no_record, r.record,
          DescribePlacedRun(r, r.stages != nullptr ? "pipeline" : "place",
                            {{"micro_batches", s.options.micro_batches},
                             {"schedule", PipelineScheduleName(s.options.schedule)},
                             {"unplaced", UnplacedPolicyName(s.options.unplaced)}}),
          &session, r.overwrite))
    return *stop;
  session.on_record_error = r.on_record_error;
  return RunTrainSession(
      session, r.devices, "worker",
      [&](Communicator& comm, RunControl& control) { return TrainWorker(comm, s, control); });
}

}  // namespace shardscope::cli
