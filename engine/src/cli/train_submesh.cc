// `shardscope train --pipeline N` with stages of several devices each (pipeline_submesh.h).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "cli/pipeline_submesh.h"
#include "cli/train_loop.h"
#include "cli/train_report.h"
#include "shardscope/base/format.h"
#include "shardscope/recorder.h"
#include "shardscope/submesh_pipeline.h"

namespace shardscope::cli {
namespace {

// Per forward operator its worker: placed, or by `policy` (placement.h's UnplacedPolicy).
std::map<std::string, int> WorkersOf(const Graph& g, UnplacedPolicy policy) {
  std::map<std::string, int> worker_of;
  std::vector<int> value_worker(g.num_values(), 0);
  for (const Node& n : g.nodes()) {
    if (n.is_backward) continue;
    int w = n.annotations.worker;
    if (w < 0) {
      w = 0;
      if (policy == UnplacedPolicy::kWithProducer) {
        for (ValueId v : n.inputs) {
          const Value& value = g.value(v);
          if (value.kind == ValueKind::kParameter || value.kind == ValueKind::kConstant) continue;
          w = value_worker[v];
          break;
        }
      }
    }
    worker_of[n.name] = w;
    for (ValueId v : n.outputs) value_worker[v] = w;
  }
  return worker_of;
}

}  // namespace

bool PlacedWithStrategies(const ModelFile& model) {
  bool placed = false, sharded = false;
  for (const AnnotationEntry& a : model.parallel().annotations) {
    placed = placed || a.annotations.worker >= 0;
    sharded = sharded || !a.annotations.in_strategy.empty() || !a.annotations.out_strategy.empty();
  }
  return placed && sharded;
}

namespace {

// The first place entry's line: errors about place with strategies name it.
std::string FirstPlaceLine(const ModelFile& model) {
  for (const AnnotationEntry& a : model.parallel().annotations) {
    if (a.annotations.worker >= 0) return a.place_location.ToString();
  }
  return model.path();
}

}  // namespace

Result<PipelineChoice> PlacedShardedChoice(const ModelFile& mf, int64_t batch, int micro_batches,
                                           const std::string& unplaced_name, int devices) {
  const std::string where = FirstPlaceLine(mf);
  const auto fail = [&](const std::string& message) {
    return Status::Invalid(where + ": " + message);
  };
  if (micro_batches < 1 || batch % micro_batches != 0)
    return fail("--micro-batches " + std::to_string(micro_batches) + " must divide the batch of " +
                std::to_string(batch));
  auto unplaced = ParseUnplacedPolicy(unplaced_name);
  if (!unplaced.ok()) return fail(unplaced.status().message());
  PipelineChoice choice;
  choice.micro_batches = micro_batches;
  choice.micro_batch = batch / micro_batches;
  auto model = mf.Build(choice.micro_batch);
  if (!model.ok()) return fail(model.status().message());
  choice.worker_of = WorkersOf(model->graph, *unplaced);
  for (const auto& [op, worker] : choice.worker_of)
    choice.stages = std::max(choice.stages, worker + 1);
  if (devices % choice.stages != 0)
    return fail("the model places operators on " + std::to_string(choice.stages) +
                " workers and shards them: each worker becomes a stage of devices / workers "
                "devices, so the workers must divide the " +
                std::to_string(devices) + " devices");
  choice.stage_devices = devices / choice.stages;
  for (const Node& n : model->graph.nodes()) {
    OpAnnotations a = n.annotations;
    a.worker = -1;
    choice.strategies[n.name] = a;
  }
  if (choice.stage_devices == 1)
    return fail("the model places operators on " + std::to_string(choice.stages) +
                " workers and gives operators strategies: each worker needs several devices "
                "(--devices " +
                std::to_string(2 * choice.stages) + " gives 2 per worker)");
  return choice;
}

Result<PipelineChoice> PricePlacedSharded(const ModelFile& mf, int64_t batch, int micro_batches,
                                          const std::string& unplaced, int devices,
                                          const PartitionOptions& memory,
                                          const SearchOptions& options, double capacity_bytes) {
  std::optional<PipelineChoice> best;
  Status last;
  for (int m = 1; m <= batch; ++m) {
    if (micro_batches > 0 ? m != micro_batches : batch % m != 0) continue;
    SHARDSCOPE_ASSIGN_OR_RETURN(PipelineChoice c,
                                PlacedShardedChoice(mf, batch, m, unplaced, devices));
    if (micro_batches <= 0 && m > 4 * c.stages) break;
    c.optimizer_sharding = memory.optimizer_sharding;
    c.recompute = memory.recompute;
    auto model = mf.Build(c.micro_batch);
    if (!model.ok()) return model.status();
    SHARDSCOPE_RETURN_IF_ERROR(ApplySubMeshStrategies(c, &model->graph));
    auto priced = PriceSubMeshStages(std::move(*model), std::move(c), options, capacity_bytes);
    if (!priced.ok()) {
      last = Status::Invalid(FirstPlaceLine(mf) + ": " + priced.status().message());
      continue;
    }
    if (BetterPipeline(*priced, best)) best = std::move(*priced);
  }
  if (!best)
    return last.ok() ? Status::Invalid("place: no micro-batch count divides the batch") : last;
  return *best;
}

int RunPlacedShardedTrain(const PlacedTrainRequest& r) {
  const std::string where = FirstPlaceLine(*r.model);
  const auto fail = [&](const std::string& message) {
    return Fail(kExitBadInput, where + ": " + message);
  };
  if (!r.checkpoint.save.empty() || !r.checkpoint.resume.empty() || r.eval_only)
    return fail(
        "a model with place and strategies runs its workers sharded over sub-meshes; "
        "checkpoints of such runs are not built yet");
  auto choice =
      PlacedShardedChoice(*r.model, r.training.batch, r.micro_batches, r.unplaced, r.devices);
  if (!choice.ok()) return Fail(kExitBadInput, choice.status().message());
  choice->optimizer_sharding = r.optimizer_sharding;
  choice->recompute = r.recompute;
  return RunSubMeshTrain(r, *choice, where);
}

int RunSubMeshTrain(const PlacedTrainRequest& r, const PipelineChoice& choice,
                    const std::string& where) {
  const auto fail = [&](const std::string& message) {
    return Fail(kExitBadInput, where.empty() ? message : where + ": " + message);
  };
  const TrainingConfig& tc = r.training;
  const SubMeshOptions options = StageCutOptions(choice);
  const auto build = [&]() -> Result<ModelGraph> {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, r.model->Build(choice.micro_batch));
    SHARDSCOPE_RETURN_IF_ERROR(ApplySubMeshStrategies(choice, &model.graph));
    return model;
  };
  if (choice.stages < 2)
    return fail("a pipeline needs at least 2 stages; the model has " +
                std::to_string(choice.stages));
  if (r.devices != choice.stages * choice.stage_devices)
    return fail("pipeline: " + std::to_string(choice.stages) + " stages of " +
                std::to_string(choice.stage_devices) + " devices need " +
                std::to_string(choice.stages * choice.stage_devices) + " devices, the run has " +
                std::to_string(r.devices));
  {  // The plan once, before any device starts: bad input exits with 2.
    auto model = build();
    auto plan =
        model.ok() ? PlanSubMeshPipeline(&*model, options) : Result<SubMeshPlan>(model.status());
    if (!plan.ok()) return fail(plan.status().message());
  }
  TrainSession session;
  if (auto stop = OpenTrainSession(r.mpi, r.no_record, r.record,
                                   DescribePlacedRun(r, "pipeline",
                                                     {{"stages", choice.stages},
                                                      {"stage_devices", choice.stage_devices},
                                                      {"micro_batches", choice.micro_batches},
                                                      {"schedule", "1f1b"}}),
                                   &session, r.overwrite))
    return *stop;
  session.on_record_error = r.on_record_error;
  return RunTrainSession(
      session, r.devices, "rank", [&](Communicator& comm, RunControl& control) -> Status {
        const bool lead = comm.rank() == 0;
        SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, build());
        SHARDSCOPE_ASSIGN_OR_RETURN(
            auto trainer,
            SubMeshTrainer::Create(std::move(model), TrainConfig{tc.seed, tc.optimizer}, options,
                                   comm.rank()));
        if (Recorder* recorder = control.recorder())
          control.Recorded(recorder->RecordSubMeshPlan(trainer->graph(), trainer->plan()));
        SHARDSCOPE_ASSIGN_OR_RETURN(const bool stop, control.AfterStep(comm, 0));
        if (stop) return control.Outcome();
        BatchIterator batches(*r.train, tc.batch, tc.seed, /*shuffle=*/true);
        const StepCount count = CountSteps(batches, tc.steps, tc.epochs);
        if (lead) {
          std::printf(
              "training %s: %d stages x %d devices (%s), %zu value(s) crossing stages, batch %lld "
              "in "
              "%d micro-batch(es) of %lld (1f1b), %s lr %g, %lld steps (%lld per epoch), seed "
              "%llu\n",
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
          const store::RankStepRecord mine =
              RankStepSince(trainer->stats(), &previous, comm.rank(), secs);
          SHARDSCOPE_ASSIGN_OR_RETURN(auto ranks, GatherRankStep(comm, mine));
          if (Recorder* recorder = control.recorder())
            control.Recorded(recorder->RecordStep(step, epoch, loss, ranks));
          return Status::Ok();
        };
        SHARDSCOPE_ASSIGN_OR_RETURN(EpochLoopResult done, RunEpochLoop(loop));
        if (done.interrupted) return Status::Ok();
        SHARDSCOPE_ASSIGN_OR_RETURN(const double step_secs,
                                    MeanStepSeconds(comm, done.step_seconds));
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
