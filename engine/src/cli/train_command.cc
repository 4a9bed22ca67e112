// `shardscope train MODEL`: trains a model file and prints test accuracy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/instruction_timing.h"
#include "cli/memory_budget.h"
#include "cli/option_checks.h"
#include "cli/pipeline_choice.h"
#include "cli/pipeline_submesh.h"
#include "cli/progress.h"
#include "cli/replica_warning.h"
#include "cli/resource_checks.h"
#include "cli/search_flags.h"
#include "cli/train_checkpoint.h"
#include "cli/train_data.h"
#include "cli/train_loop.h"
#include "cli/train_placed.h"
#include "cli/train_report.h"
#include "shardscope/base/format.h"
#include "shardscope/base/names.h"
#include "shardscope/communicator.h"
#include "shardscope/data.h"
#include "shardscope/dataset_source.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/model_file.h"
#include "shardscope/recorder.h"
#include "shardscope/trainer.h"

namespace shardscope::cli {
namespace {

struct TrainOptions {
  std::string model;
  int64_t epochs = 0, steps = 0, batch = 0;
  double lr = 0;
  int64_t seed = -1;
  std::string data;
  int devices = 0;  // 0: the model file's, else the MPI world's, else 1
  std::string mode;
  bool ignore_parallel = false;
  std::string dump_ir;
  int64_t limit = 0;
  int64_t log_every = 0;
  std::string record;  // empty: runs/<name>-<time>.db
  bool no_record = false;
  bool overwrite = false;
  bool cpu_time = false;
  bool json = false;  // the summary as JSON on stdout, the console's lines on stderr
  int64_t timing_every = 100;
  int micro_batches = 1;             // placed models (train_placed.h)
  std::string schedule = "gpipe";    // placed models
  std::string unplaced = "worker0";  // placed models
  std::string pipeline;              // auto | N stages; empty: the model file's
  std::string on_record_error = "stop";
  SearchFlags search;
  CheckpointFlags checkpoint;
  bool no_overlap = false;  // TrainConfig::overlap_grad_reduce off
  bool eval_only = false;   // `shardscope eval`: restore --resume's checkpoint, evaluate, stop
};

// Rank 0 of mpirun's world (its launcher's environment), or the only process.
bool IsFirstRank() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank == nullptr) rank = std::getenv("PMI_RANK");
  return rank == nullptr || std::atoi(rank) == 0;
}

// Everything one run needs, decided before any device starts.
struct RunPlan {
  TrainingConfig training;
  PartitionOptions partition;
  std::string mode;
  bool mpi = false;
  std::optional<SearchMode> search;  // mode "auto": the search that sets the strategies
  std::optional<Checkpoint> resume;  // --resume (eval: --checkpoint), read before devices start
};

Result<RunPlan> Decide(const ModelFile& mf, const TrainOptions& o) {
  RunPlan plan;
  const ParallelConfig& parallel = mf.parallel();
  plan.mpi = RunningUnderMpi();
  int devices = o.devices > 0 ? o.devices : 0;
  if (plan.mpi) {
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (size == nullptr) size = std::getenv("PMI_SIZE");
    const int world = size ? std::atoi(size) : 1;
    if (devices > 0 && devices != world) {
      return Status::Invalid("--devices " + std::to_string(devices) + " does not match the " +
                             std::to_string(world) + " MPI ranks; omit --devices under mpirun");
    }
    devices = world;
  }
  if (devices == 0) devices = parallel.devices > 0 && !o.ignore_parallel ? parallel.devices : 1;
  plan.mode = !o.mode.empty() ? o.mode : parallel.mode;
  if (o.ignore_parallel && o.mode.empty())
    plan.mode = devices > 1 ? "data_parallel" : "stand_alone";
  if (plan.mode == "stand_alone" && devices > 1) plan.mode = "data_parallel";
  SHARDSCOPE_ASSIGN_OR_RETURN(plan.search, TrainSearchMode(o.search, plan.mode, parallel.search));
  if (plan.search) plan.mode = "auto";
  if (plan.mode != "stand_alone" && plan.mode != "data_parallel" && plan.mode != "semi_auto" &&
      plan.mode != "auto") {
    return Status::Invalid(
        "unknown mode '" + plan.mode + "'" +
        DidYouMean(plan.mode, {"stand_alone", "data_parallel", "semi_auto", "auto"}) +
        " (stand_alone, data_parallel, semi_auto, auto)");
  }
  // Annotations are honoured or refused, never dropped silently.
  if (!o.ignore_parallel) {
    bool strategies = false;
    for (const AnnotationEntry& a : parallel.annotations) {
      strategies =
          strategies || !a.annotations.in_strategy.empty() || !a.annotations.out_strategy.empty();
    }
    if (strategies && plan.mode != "semi_auto" && plan.mode != "auto") {
      const AnnotationEntry& a = parallel.annotations[0];
      return Status::Invalid(
          a.location.ToString() + ": " + a.op + " has a strategy, which mode " + plan.mode +
          " would ignore; use --mode semi_auto, or --ignore-parallel to drop the strategies");
    }
    for (const auto& [name, text] : parallel.meshes) {
      auto mesh = ParseMeshExpr(text);
      if (!mesh.ok()) return mesh.status().WithContext(mf.path() + ": mesh " + name);
      plan.partition.meshes[name] = *mesh;
    }
  }
  plan.partition.devices = devices;
  ApplyMemoryFlags(o.search, parallel, &plan.partition);
  plan.partition.overlap_gradient_reductions = !o.no_overlap;  // ZeRO 2/3's buckets' memory
  if (!o.search.profile.empty() || !o.search.cluster.empty()) {
    SearchFlags flags = o.search;
    flags.file_dtype = mf.training().dtype;
    SHARDSCOPE_ASSIGN_OR_RETURN(SearchOptions priced,
                                MakeSearchOptions(flags, SearchMode::kSemiAuto, devices, {}));
    plan.partition.cost = priced.cost;  // the planner's prices; the program still runs in f32
  }
  plan.training = mf.training();
  TrainingConfig& tc = plan.training;
  if (o.batch > 0) tc.batch = o.batch;
  if (o.epochs > 0) tc.epochs = o.epochs;
  if (o.steps > 0) tc.steps = o.steps;
  if (o.lr > 0) tc.optimizer.lr = static_cast<float>(o.lr);
  if (o.seed >= 0) tc.seed = static_cast<uint64_t>(o.seed);
  return plan;
}

// The banner's "auto: dynamic_programming": the mode, and the search that ran in it.
std::string ModeText(const RunPlan& plan) {
  return plan.search ? plan.mode + ": " + SearchModeName(*plan.search) : plan.mode;
}

// Removes the user's annotations from a graph (stand_alone / data_parallel runs).
void StripAnnotations(ModelGraph& m) {
  for (const Node& n : m.graph.nodes()) m.graph.mutable_node(n.id).annotations = {};
}

// The search flags plus the model file's shard blocks (unless --ignore-parallel).
SearchFlags SearchFlagsFor(const TrainOptions& o, const ModelFile& mf) {
  SearchFlags flags = o.search;
  if (!o.ignore_parallel) flags.shard_blocks = ShardBlockSpecs(mf.parallel());
  flags.optimizer_states = OptimizerStateTensors(mf.training().optimizer.kind);
  flags.file_dtype = mf.training().dtype;
  SetSearchMemoryChoices(mf.parallel(), &flags);
  return flags;
}

// `shardscope eval`: the restored checkpoint's loss and accuracy on the test set.
Status EvaluateOnRank(Communicator& comm, DistTrainer& trainer, const std::string& dir,
                      const Dataset& test) {
  SHARDSCOPE_ASSIGN_OR_RETURN(DistTrainer::Evaluation e, trainer.EvaluateWithLoss(comm, test));
  if (comm.rank() == 0) {
    std::printf("checkpoint %s (step %lld): test loss %.4f, accuracy %.4f (%lld examples)\n",
                dir.c_str(), static_cast<long long>(trainer.step()), e.loss, e.accuracy,
                static_cast<long long>(test.size()));
  }
  return Status::Ok();
}

// The training loop of one rank. Rank 0 prints.
Status TrainOnRank(Communicator& comm, const ModelFile& mf, const RunPlan& plan,
                   const TrainOptions& o, const Dataset& train, const Dataset& test,
                   RunControl& control) {
  const bool lead = comm.rank() == 0;
  const TrainingConfig& tc = plan.training;
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, mf.Build(tc.batch));
  if ((plan.mode != "semi_auto" && plan.mode != "auto") || o.ignore_parallel)
    StripAnnotations(model);
  const SearchFlags flags = SearchFlagsFor(o, mf);
  const SearchedPeakFn peak = [&](const SearchResult& result) {
    return SearchedPlanPeak(mf, model, result, flags, plan.partition);
  };
  SHARDSCOPE_ASSIGN_OR_RETURN(
      auto searched, ApplySearchFlags(flags, plan.search, &model.graph, plan.partition.devices,
                                      plan.partition.meshes, lead, peak));
  PartitionOptions options = plan.partition;
  std::string ir;
  if (!o.dump_ir.empty() && lead) {
    options.dump = [&ir](const std::string& pass, const std::string& text) {
      ir += "// ---- after " + pass + "\n" + text;
    };
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(
      auto trainer,
      DistTrainer::Create(
          std::move(model),
          TrainConfig{tc.seed, tc.optimizer, static_cast<int64_t>(o.search.BucketMb() * (1 << 20)),
                      !o.no_overlap},
          options, comm.rank()));
  trainer->set_cpu_timing(o.cpu_time);
  if (plan.resume) SHARDSCOPE_RETURN_IF_ERROR(RestoreCheckpoint(*plan.resume, *trainer));
  if (o.eval_only) return EvaluateOnRank(comm, *trainer, o.checkpoint.resume, test);
  if (!o.dump_ir.empty() && lead) {
    std::ofstream out(o.dump_ir);
    out << "// ---- graph after autodiff\n" << trainer->graph().ToText() << ir;
    if (!out) return Status::Invalid("cannot write --dump-ir file " + o.dump_ir);
  }
  if (Recorder* recorder = control.recorder())
    control.Recorded(recorder->RecordPlan(trainer->graph(), trainer->program(),
                                          searched ? &*searched : nullptr));
  SHARDSCOPE_ASSIGN_OR_RETURN(const bool stop, control.AfterStep(comm, 0));
  if (stop) return control.Outcome();
  BatchIterator batches(train, tc.batch, tc.seed, /*shuffle=*/true);
  StepCount count = CountSteps(batches, tc.steps, tc.epochs);
  const int64_t first = trainer->step();  // a resumed run's steps so far
  if (plan.resume) {
    SHARDSCOPE_RETURN_IF_ERROR(ResumeCount(batches, first, o.steps, tc.steps, tc.epochs,
                                           o.checkpoint.resume, control, &count));
  }
  const int64_t total = count.total, per_epoch = count.per_epoch, epochs = count.epochs;
  const DistProgram& program = trainer->program();
  if (lead) {
    int64_t params = 0;
    for (ValueId p : trainer->parameters()) params += NumElements(trainer->graph().value(p).shape);
    std::printf(
        "training %s: %lld parameters, %d device(s) (%s, %s), batch %lld, %s lr %g, %lld steps "
        "(%lld per epoch), seed %llu\n",
        mf.name().c_str(), static_cast<long long>(params), comm.size(),
        plan.mpi ? "MPI" : "in-process", ModeText(plan).c_str(), static_cast<long long>(tc.batch),
        OptimizerKindName(tc.optimizer.kind), tc.optimizer.lr, static_cast<long long>(total),
        static_cast<long long>(per_epoch), static_cast<unsigned long long>(tc.seed));
    if (plan.resume) {
      std::printf("resumed from %s at step %lld (saved under %s)\n", o.checkpoint.resume.c_str(),
                  static_cast<long long>(first), plan.resume->saved_under.c_str());
    }
    if (comm.size() > 1) {
      std::printf("plan: %d redistribution(s), %lld bytes received per step by rank 0\n",
                  program.NumRedistributions(),
                  static_cast<long long>(program.PlannedRecvBytes(0)));
    }
    std::fflush(stdout);
  }
  RankStats previous;
  EpochLoop loop;
  loop.batches = &batches;
  loop.count = count;
  loop.batch = tc.batch;
  loop.log_every = o.log_every;
  loop.first_step = first;
  loop.lead = lead;
  loop.comm = &comm;
  loop.control = &control;
  loop.step = [&](const Tensor& x, const Tensor& y) { return trainer->Step(comm, x, y); };
  const std::string saved_under = std::to_string(comm.size()) + " device(s), " +
                                  (plan.mpi ? "MPI" : "in-process") + ", " + plan.mode;
  const auto save = [&] {
    return SaveCheckpointTogether(comm, GatherCheckpoint(comm, *trainer), o.checkpoint.save,
                                  mf.name(), saved_under, control);
  };
  const auto record_step = [&](int64_t step, int64_t epoch, float loss, double secs) -> Status {
    if (!control.recording()) return Status::Ok();  // the same on every rank
    // This step's figures of every rank, to rank 0 (which writes them).
    const store::RankStepRecord mine =
        RankStepSince(trainer->stats(), &previous, comm.rank(), secs);
    SHARDSCOPE_ASSIGN_OR_RETURN(auto ranks, GatherRankStep(comm, mine));
    if (Recorder* recorder = control.recorder())
      control.Recorded(recorder->RecordStep(step, epoch, loss, ranks));
    if (TimedStep(step, o.timing_every)) {
      Status recorded;
      SHARDSCOPE_RETURN_IF_ERROR(GatherInstructionSpans(
          comm, program, step, trainer->executor().last_spans(), control.recorder(), &recorded));
      if (control.recorder() != nullptr) control.Recorded(recorded);
    }
    return Status::Ok();
  };
  int64_t saved_at = -1;
  loop.after_step = [&](int64_t step, int64_t epoch, float loss, double secs) -> Status {
    SHARDSCOPE_RETURN_IF_ERROR(record_step(step, epoch, loss, secs));
    if (o.checkpoint.save.empty() || o.checkpoint.every <= 0 || step % o.checkpoint.every != 0)
      return Status::Ok();
    saved_at = step;
    return save();
  };
  SHARDSCOPE_ASSIGN_OR_RETURN(EpochLoopResult done, RunEpochLoop(loop));
  if (!o.checkpoint.save.empty() && saved_at != done.steps) {  // also when interrupted
    SHARDSCOPE_RETURN_IF_ERROR(save());
    if (lead)
      std::printf("checkpoint: %s (step %lld)\n", o.checkpoint.save.c_str(),
                  static_cast<long long>(done.steps));
  }
  if (done.interrupted) return Status::Ok();  // every rank stopped after the same step
  const int64_t step = done.steps;
  const double secs = done.seconds;
  SHARDSCOPE_ASSIGN_OR_RETURN(const double step_secs, MeanStepSeconds(comm, done.step_seconds));
  const auto eval_start = std::chrono::steady_clock::now();
  SHARDSCOPE_ASSIGN_OR_RETURN(double accuracy, trainer->Evaluate(comm, test));
  if (Recorder* recorder = control.recorder()) {
    const double eval_secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - eval_start).count();
    control.Recorded(
        recorder->RecordEvaluation(step, epochs, "test", accuracy, test.size(), eval_secs));
  }
  // Per-rank figures, gathered to every rank (rank 0 prints them).
  const RankStats& s = trainer->stats();
  std::vector<float> mine = {
      static_cast<float>(s.compute_seconds), static_cast<float>(s.comm_seconds),
      static_cast<float>(s.bytes_sent),      static_cast<float>(s.bytes_received),
      static_cast<float>(s.parameter_bytes), static_cast<float>(s.gradient_bytes),
      static_cast<float>(s.optimizer_bytes), static_cast<float>(s.activation_bytes),
      static_cast<float>(s.peak_bytes),      static_cast<float>(s.compute_cpu_seconds),
      static_cast<float>(s.comm_cpu_seconds)};
  std::vector<float> all(mine.size() * comm.size());
  SHARDSCOPE_RETURN_IF_ERROR(comm.AllGather(mine, all));
  if (lead) {
    // ms/step: the mean of each step's slowest rank, as the run file's step.seconds.
    std::printf("test accuracy: %.4f (%lld examples), %lld steps in %s (%.2f ms/step)\n", accuracy,
                static_cast<long long>(test.size()),
                static_cast<long long>(done.step_seconds.size()),  // this run's, if resumed
                FormatClock(secs).c_str(), 1e3 * step_secs);
    ReportResult(step, secs, step_secs, accuracy, test.size());
    ReportRanks("rank",
                {"compute_seconds_per_step", "comm_seconds_per_step", "bytes_sent_per_step",
                 "bytes_received_per_step", "parameter_bytes", "gradient_bytes", "optimizer_bytes",
                 "activation_bytes", "peak_bytes", "compute_cpu_seconds_per_step",
                 "comm_cpu_seconds_per_step"},
                all, static_cast<double>(std::max<int64_t>(1, step)));
    if (comm.size() > 1) {
      std::printf(
          "\nper rank (per step)  compute ms  comm ms  sent B  received B  params      grads       "
          "optimizer   activations peak%s\n",
          o.cpu_time ? "        cpu: compute ms  comm ms" : "");
      for (int r = 0; r < comm.size(); ++r) {
        const float* f = &all[r * mine.size()];
        const double n = std::max<int64_t>(1, step);
        std::printf(
            "  rank %-3d            %9.3f %8.3f %7.0f %11.0f  %-11s %-11s %-11s %-11s %-11s", r,
            1e3 * f[0] / n, 1e3 * f[1] / n, f[2] / n, f[3] / n, FormatBytes(f[4]).c_str(),
            FormatBytes(f[5]).c_str(), FormatBytes(f[6]).c_str(), FormatBytes(f[7]).c_str(),
            FormatBytes(f[8]).c_str());
        if (o.cpu_time) std::printf(" %15.3f %8.3f", 1e3 * f[9] / n, 1e3 * f[10] / n);
        std::printf("\n");
      }
    }
  }
  return Status::Ok();
}

int RunTrainReported(const TrainOptions& o);

// `--json`: the console's lines go to stderr, the summary (train_report.h) to stdout.
int RunTrain(const TrainOptions& options) {
  BeginTrainReport(options.json);
  TrainOptions o = options;
  const Status bucket = TakeTrainBucket(&o.search);
  if (!bucket.ok()) return EndTrainReport(Fail(kExitBadInput, bucket.message()));
  return EndTrainReport(RunTrainReported(o));
}

int RunTrainReported(const TrainOptions& o) {
  // A .onnx file on text data is a next-token model: its loss is per position.
  const bool text = o.data.rfind("text:", 0) == 0;
  auto mf = LoadModelFile(o.model, ModelLoadOptions{.sequence_loss = text});
  if (!mf.ok() && text && std::filesystem::path(o.model).extension() == ".onnx") {
    return Fail(kExitBadInput, o.model + ": --data " + o.data +
                                   " trains next-token models (ids [batch, positions] -> logits "
                                   "[batch, positions, vocab]): " +
                                   mf.status().message());
  }
  if (!mf.ok()) return Fail(kExitBadInput, mf.status().message());
  auto plan = Decide(*mf, o);
  if (!plan.ok()) return Fail(kExitBadInput, plan.status().message());
  if (!o.checkpoint.resume.empty()) {
    auto c = ReadCheckpoint(o.checkpoint.resume);
    if (!c.ok()) return Fail(kExitBadInput, c.status().message());
    if (o.eval_only && o.batch <= 0) plan->training.batch = c->batch;
    // Evaluation takes any batch; training goes on with the saved one.
    Status fits =
        CheckResumable(*c, o.checkpoint.resume, o.eval_only ? c->batch : plan->training.batch,
                       &plan->training.seed, o.seed >= 0);
    if (!fits.ok()) return Fail(kExitBadInput, fits.message());
    plan->resume = std::move(*c);
  }
  const TrainingConfig& tc = plan->training;
  // Resources first (limits.h): threads, the synthetic data, then (below) the plan's memory.
  if (!plan->mpi) {
    Status threads = CheckInProcessDevices(*mf, plan->partition.devices, o.devices > 0);
    if (!threads.ok()) return Fail(kExitBadInput, threads.message());
  }
  auto data_bytes = SyntheticDataBytes(*mf);
  if (!data_bytes.ok()) return Fail(kExitBadInput, data_bytes.status().message());

  auto source = FindData(*mf, o.data);
  if (!source.ok()) {
    const SourceLocation& at = mf->data().dataset_location;
    return Fail(kExitBadInput, (at.line > 0 ? at.ToString() + ": data.dataset" : o.model) + ": " +
                                   source.status().message());
  }
  if (IsFirstRank()) {  // the console's first line: what this run trains on
    const std::string what = source->dataset == "synthetic" ? "synthetic, " + source->found_by
                             : source->dataset == "text"
                                 ? "text " + source->dir + " (" + source->found_by + ")"
                                 : source->Describe();
    std::printf("data: %s\n", what.c_str());
    std::fflush(stdout);
  }
  auto train = LoadData(*mf, o.data, *source, Split::kTrain, o.limit);
  if (!train.ok()) return Fail(kExitBadInput, train.status().message());
  auto test = LoadData(*mf, o.data, *source, Split::kTest, o.limit);
  if (!test.ok()) return Fail(kExitBadInput, test.status().message());
  if (train->images.size() / std::max<int64_t>(1, train->size()) !=
      NumElements(mf->example_shape())) {
    return Fail(
        kExitBadInput,
        o.model + ": the data's examples have shape " +
            ShapeToString(Shape(train->images.shape().begin() + 1, train->images.shape().end())) +
            " but the model's input is " + ShapeToString(mf->example_shape()) +
            " (set data.pad_to or input.shape)");
  }
  if (train->size() < tc.batch) {
    const SourceLocation& size_at = mf->data().synthetic_size_location;
    const SourceLocation& batch_at = mf->training().batch_location;
    const std::string batch = o.batch > 0 ? "--batch " + std::to_string(tc.batch)
                                          : (batch_at.line > 0 ? batch_at.ToString() : o.model) +
                                                ": training.batch " + std::to_string(tc.batch);
    const std::string set = o.limit > 0 ? " (--limit " + std::to_string(o.limit) + ")"
                            : size_at.line > 0
                                ? " (data.synthetic_size at " + size_at.ToString() + ")"
                                : "";
    return Fail(kExitBadInput, batch + " is larger than the training set: " +
                                   std::to_string(train->size()) + " examples" + set);
  }
  const std::string pipeline =
      !o.pipeline.empty() || o.ignore_parallel ? o.pipeline : mf->parallel().pipeline;
  if (!pipeline.empty() && !o.ignore_parallel && ModelIsPlaced(*mf))
    return Fail(kExitBadInput,
                "pipeline " + pipeline +
                    ": the model places its operators by "
                    "hand (place: in the file); drop the place entries or the pipeline");
  const PlacedTrainRequest placed{&*mf,
                                  &*train,
                                  &*test,
                                  tc,
                                  plan->partition.devices,
                                  plan->mpi,
                                  o.micro_batches,
                                  o.schedule,
                                  o.unplaced,
                                  o.dump_ir,
                                  o.record,
                                  o.no_record,
                                  ParseOnRecordError(o.on_record_error),
                                  o.log_every,
                                  *data_bytes,
                                  DataJson(*source).dump(),
                                  o.overwrite,
                                  o.checkpoint,
                                  plan->resume ? &*plan->resume : nullptr,
                                  o.steps,
                                  o.eval_only};
  if (!o.ignore_parallel && ModelIsPlaced(*mf)) {  // place(worker, r): train_placed.cc
    if (plan->search) {
      return Fail(kExitBadInput,
                  "a placed model (place: in the file) is not searched: operators pinned to "
                  "workers take no strategies; drop --search / mode auto, or the place entries");
    }
    if (!PlacedWithStrategies(*mf)) return RunPlacedTrain(placed);
    PlacedTrainRequest sharded = placed;  // ZeRO and recomputation inside the workers' stages
    sharded.optimizer_sharding = plan->partition.optimizer_sharding;
    sharded.recompute = plan->partition.recompute;
    return RunPlacedShardedTrain(sharded);
  }
  if (!pipeline.empty()) {  // stages chosen by the planner, run as a placed model
    const bool keep = plan->mode == "semi_auto" || plan->mode == "auto";
    auto chosen = DecideTrainPipeline(
        *mf, pipeline, !o.pipeline.empty(),
        o.micro_batches > 1 || !o.checkpoint.save.empty() || !o.checkpoint.resume.empty(), tc.batch,
        plan->partition.devices, SearchFlagsFor(o, *mf),
        [&] {
          return PriceOperatorLevel(*mf, tc.batch, keep, SearchFlagsFor(o, *mf), plan->search,
                                    plan->partition);
        },
        IsFirstRank(), plan->search);
    if (!chosen.ok()) return Fail(kExitBadInput, chosen.status().message());
    if (*chosen && (*chosen)->stage_devices > 1) {
      return RunSubMeshTrain(placed, **chosen,
                             !o.pipeline.empty() ? std::string("--pipeline")
                                                 : mf->parallel().pipeline_location.ToString() +
                                                       ": parallel.pipeline");
    }
    if (*chosen) return RunPlacedTrain(PipelineRequest(placed, **chosen));
  }
  if (o.micro_batches > 1) return Fail(kExitBadInput, "--micro-batches needs a placed model");
  // Check the model and the plan once, before starting devices, so bad input exits with 2.
  nlohmann::ordered_json memory_json;
  {
    auto model = mf->Build(tc.batch);
    if (!model.ok()) return Fail(kExitBadInput, model.status().message());
    if ((plan->mode != "semi_auto" && plan->mode != "auto") || o.ignore_parallel)
      StripAnnotations(*model);
    const SearchFlags flags = SearchFlagsFor(o, *mf);
    const SearchedPeakFn peak = [&](const SearchResult& result) {
      return SearchedPlanPeak(*mf, *model, result, flags, plan->partition);
    };
    auto searched = ApplySearchFlags(flags, plan->search, &model->graph, plan->partition.devices,
                                     plan->partition.meshes, false, peak);
    if (!searched.ok()) return Fail(kExitBadInput, searched.status().message());
    if (*searched)
      TakeSearchMemoryChoices(**searched, SearchFlagsFor(o, *mf), mf->parallel(), &plan->partition);
    auto probe = PlanTrainingProgram(&*model, plan->partition);
    if (!probe.ok()) {
      const bool bad_input = probe.status().code() == StatusCode::kInvalidInput ||
                             probe.status().code() == StatusCode::kNotImplemented;
      return Fail(bad_input ? kExitBadInput : kExitRunFailure, probe.status().message());
    }
    if (IsFirstRank()) std::fprintf(stderr, "%s", ReplicaWarning(model->graph, *probe).c_str());
    const SearchResult* result = *searched ? &**searched : nullptr;
    auto fitted = FitTrainMemory(*mf, model->graph, SearchFlagsFor(o, *mf), IsFirstRank(),
                                 &plan->partition, &*probe, result);
    if (!fitted.ok()) return Fail(kExitBadInput, fitted.status().message());
    memory_json = *fitted;
    const int here = DevicesOnThisHost(plan->mpi, plan->partition.devices);
    Status memory = CheckTrainMemory(*mf, model->graph, *probe, here, *data_bytes);
    if (!memory.ok()) return Fail(kExitBadInput, memory.message());
  }
  // The run file, created by rank 0 before any step so that an unwritable place fails now.
  store::RunInfo info;
  info.name = mf->name();
  info.mode = "train";
  // The search that chose the strategies ("auto" is only how it was asked for).
  info.search = plan->search ? SearchModeName(*plan->search) : plan->mode;
  info.devices = plan->partition.devices;
  info.backend = plan->mpi ? "mpi" : "in-process";
  info.model_path = o.model;
  info.model_text = mf->text();
  nlohmann::json config = {{"batch", tc.batch},
                           {"epochs", tc.epochs},
                           {"steps", tc.steps},
                           {"seed", tc.seed},
                           {"optimizer", OptimizerKindName(tc.optimizer.kind)},
                           {"lr", tc.optimizer.lr},
                           {"momentum", tc.optimizer.momentum},
                           {"mode", plan->mode},
                           {"devices", plan->partition.devices},
                           {"ignore_parallel", o.ignore_parallel},
                           {"data", DataJson(*source)}};
  config["memory"] = nlohmann::json::parse(memory_json.dump());
  info.config_json = config.dump();
  info.command_line = CommandLine();
  info.shardscope_version = "0.1.0";
  TrainSession session;
  if (auto stop = OpenTrainSession(plan->mpi, o.no_record, o.record, info, &session, o.overwrite))
    return *stop;
  session.on_record_error = ParseOnRecordError(o.on_record_error);
  return RunTrainSession(session, plan->partition.devices, "rank",
                         [&](Communicator& comm, RunControl& control) {
                           return TrainOnRank(comm, *mf, *plan, o, *train, *test, control);
                         });
}

}  // namespace

void AddTrainCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* app = root.add_subcommand(
      "train",
      "Train a model file and print test accuracy.\n"
      "\n"
      "Examples:\n"
      "  shardscope train samples/models/lenet5.yaml --epochs 3\n"
      "  shardscope train samples/models/matmul_relu.yaml --devices 8      (seed 002, semi_auto)\n"
      "  mpirun -np 4 shardscope train samples/models/ffn.yaml --mode data_parallel\n"
      "  shardscope train samples/models/ffn.yaml --devices 8 --search dynamic_programming\n"
      "      --save-strategy ffn8.json          (auto: a search picks the strategies)\n"
      "Devices: --devices N runs N in-process devices (threads); under mpirun each rank is a\n"
      "device and --devices must agree or be omitted. Modes: stand_alone (1 device),\n"
      "data_parallel (batch split, strategies ignored), semi_auto (the model file's\n"
      "strategies and layouts; other operators data-parallel), auto (a search chooses the\n"
      "strategies the file does not give: --search MODE or the file's parallel.search;\n"
      "see `shardscope plan --help`); a file's shard: blocks (seed 000) keep their boundary\n"
      "layouts and are searched inside. --ignore-parallel trains the model on one device\n"
      "without its parallel section.\n"
      "Placed models (place: in the file, seed 001) run one worker per device, joined by\n"
      "send/receive; --micro-batches M pipelines each batch (gpipe or 1f1b schedule):\n"
      "  shardscope train samples/models/lenet5_place.yaml --devices 5 --micro-batches 4\n"
      "  shardscope train samples/models/lenet5_place.yaml --micro-batches 4 --schedule 1f1b \\\n"
      "      --unplaced producer\n"
      "  shardscope launch -n 5 -- train samples/models/lenet5_place.yaml   (MPI)\n"
      "ONNX models: a .onnx file (its weights, else seeded initialisers; --batch fixes a\n"
      "symbolic batch dimension), or a model file with import: model.onnx and the parallel\n"
      "section naming its operators or name scopes (docs/model-format.md):\n"
      "  shardscope train mlp.onnx --data ../shared/datasets/mnist --devices 8\n"
      "Data: the model file's data.dataset (mnist, fashion-mnist) is what trains: --data DIR,\n"
      "else data.dir, else $SHARDSCOPE_DATA, else the first NAME/ directory of the search\n"
      "path ($SHARDSCOPE_DATASETS alone when set; else ../shared/datasets, the build's\n"
      "datasets directory, /usr/share/datasets). Files that are another data set by their\n"
      "published checksums are refused. The first line printed names the data set, its\n"
      "directory and a content hash (also in the run file's config, key data).\n"
      "Text: --data text:FILE (or data: {dataset: text, file: FILE}) trains a next-token model\n"
      "(input ids i32 [positions], loss: sequence_cross_entropy) on any text file: the\n"
      "vocabulary is the file's distinct bytes, windows of input.shape[0] bytes, the last tenth\n"
      "for test (accuracy per position), e.g.\n"
      "  shardscope train samples/models/gpt.yaml --data text:/usr/share/common-licenses/GPL-3\n"
      "Memory: --optimizer-sharding 1|2|3 shards optimizer states, then gradients, then\n"
      "parameters over each parameter's data-parallel replicas (ZeRO); --recompute frees every\n"
      "layer's activations after forward and recomputes them in backward (docs/memory.md):\n"
      "  shardscope train samples/models/ffn.yaml --devices 8 --optimizer-sharding 2 --recompute\n"
      "A .onnx decoder (ids [batch, positions] -> logits [batch, positions, vocab]) trains on\n"
      "text as it is; in a model file with import: write loss: sequence_cross_entropy.\n"
      "Flags override the model file's training section. Before any device starts, the run\n"
      "is checked against the limits (`shardscope --help`): device threads, the synthetic\n"
      "data set and the planned memory of every device against the memory available.\n"
      "Checkpoints: --save-checkpoint DIR [--every N] saves the whole parameters, optimizer\n"
      "state and data position; --resume DIR goes on from one under any strategy or device\n"
      "count; `shardscope eval MODEL --checkpoint DIR` evaluates one (docs/checkpoints.md):\n"
      "  shardscope train samples/models/ffn.yaml --steps 100 --save-checkpoint ckpt/ffn\n"
      "  shardscope train samples/models/ffn.yaml --resume ckpt/ffn --steps 100 --devices 4\n"
      "Stopping: Ctrl-C (SIGINT) or SIGTERM stops every rank after the step in flight; the run\n"
      "file is closed with status 'interrupted: SIGINT at step N' and the exit code is 128 +\n"
      "the signal (130, 143). A second Ctrl-C exits at once. mpirun passes Ctrl-C on to the\n"
      "ranks as SIGTERM and kills them a second later (--mca odls_base_sigkill_timeout S).");
  app->add_option("model", o->model,
                  "Model file (YAML, see docs/model-format.md) or ONNX file (.onnx)")
      ->required();
  auto* epochs = app->add_option("--epochs", o->epochs, "Epochs to train")->check(AtLeast(1));
  app->add_option("--steps", o->steps, "Stop after this many steps")
      ->check(AtLeast(1))
      ->excludes(epochs);
  app->add_option("--batch", o->batch, "Global batch size")->check(AtLeast(1));
  app->add_option("--lr", o->lr, "Learning rate")->check(GreaterThan(0));
  app->add_option("--seed", o->seed, "Seed of parameters, shuffling and dropout")
      ->check(AtLeast(0));
  app->add_option("--data", o->data,
                  "Directory with the four MNIST-format IDX files, or text:FILE (a character-level "
                  "next-token data set from any text file)");
  app->add_option("--limit", o->limit, "Use only the first N examples of each split (quick runs)")
      ->check(AtLeast(1));
  app->add_option("--devices", o->devices, "In-process devices (default: the model file's, or 1)")
      ->check(AtLeast(1));
  app->add_option("--mode", o->mode,
                  "stand_alone | data_parallel | semi_auto | auto (default: the model file's)");
  AddSearchFlags(app, o->search);
  AddCheckpointFlags(app, o->checkpoint);
  app->add_flag("--no-overlap", o->no_overlap,
                "Wait for each gradient bucket's all-reduce (ZeRO 2/3: reduce-scatter) when it is "
                "full instead of running it beside the backward (the default overlaps, as PyTorch "
                "DDP and DeepSpeed's overlap_comm do; ZeRO then holds up to two buckets); same "
                "sums");
  app->add_flag(
      "--ignore-parallel", o->ignore_parallel,
      "Ignore the model file's strategies, layouts, place and shard (data-parallel on N devices)");
  app->add_option("--record", o->record, "Run file to write (default: runs/<model>-<time>.db)");
  app->add_flag("--no-record", o->no_record, "Do not write a run file");
  app->add_flag("--overwrite", o->overwrite,
                "Replace the --record file if it exists (default: refuse, keeping it)");
  app->add_option("--on-record-error", o->on_record_error,
                  "When recording fails (e.g. disk full, on rank 0): stop (default; every rank "
                  "stops after the same step, exit 1, the run file says 'failed: rank N: disk "
                  "full ...') or continue (train on without recording; the run file keeps the "
                  "steps up to the failure and says 'recording stopped at step N')")
      ->check(CLI::IsMember({"stop", "continue"}));
  app->add_flag("--json", o->json,
                "Print a summary as JSON on stdout when the run ends (settings, data, each "
                "epoch's mean loss, accuracy, step time, per-rank figures, run file, exit code); "
                "the usual lines go to stderr");
  app->add_flag("--cpu-time", o->cpu_time,
                "Also print each rank's thread CPU time in kernels and in communication (two "
                "clock system calls per instruction, ~1 us: off by default)");
  app->add_option("--timing-every", o->timing_every,
                  "Record when each instruction of each rank ran (run file: instruction_span;\n"
                  "`shardscope trace` draws it) at steps 1, 2 and every N-th, at most 10 steps;\n"
                  "0: never. SPMD runs only (placed runs record their pipeline timeline)")
      ->check(AtLeast(0));
  app->add_option("--log-every", o->log_every,
                  "Print a line every N steps (plain lines, as the seeds do)")
      ->check(AtLeast(1));
  app->add_option("--pipeline", o->pipeline,
                  "auto | N: run the planner's N stages of devices / N devices each (a stage\n"
                  "of several devices sharded over them), 1f1b (auto: any N dividing the\n"
                  "devices, when predicted faster or only it fits; docs/pipeline.md).\n"
                  "--optimizer-sharding 1|2|3 and --recompute work inside such stages: ZeRO\n"
                  "2/3 reduce-scatter the gradients summed over the micro-batches once a step,\n"
                  "ZeRO 3 gathers each parameter per micro-batch in forward and backward");
  app->add_option("--micro-batches", o->micro_batches,
                  "Placed models: split each batch into M micro-batches, pipelined over the "
                  "workers (gradients accumulated: same result)")
      ->check(AtLeast(1));
  app->add_option("--schedule", o->schedule,
                  "Placed models: gpipe (all forwards, then all backwards) or 1f1b")
      ->check(CLI::IsMember({"gpipe", "1f1b"}));
  app->add_option("--unplaced", o->unplaced,
                  "Placed models: where operators without place run: worker0 (default) or "
                  "producer (with the operator feeding them; keeps placed layers contiguous "
                  "stages, which 1f1b needs)")
      ->check(CLI::IsMember({"worker0", "producer"}));
  app->add_option(
      "--dump-ir", o->dump_ir,
      "Write the graph after autodiff and the program after each partitioning pass to FILE");
  commands.push_back({app, [o] { return RunTrain(*o); }});
}

void AddEvalCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<TrainOptions>();
  o->eval_only = true;
  o->no_record = true;
  CLI::App* app = root.add_subcommand(
      "eval",
      "Evaluate a checkpoint: the test set's loss and accuracy with the saved parameters.\n"
      "\n"
      "Examples:\n"
      "  shardscope train samples/models/lenet5.yaml --epochs 1 --save-checkpoint ckpt/lenet\n"
      "  shardscope eval samples/models/lenet5.yaml --checkpoint ckpt/lenet\n"
      "  shardscope eval samples/models/ffn.yaml --checkpoint ckpt/ffn --devices 4\n"
      "The model file must be the one that trained (parameters are matched by name and\n"
      "shape); the checkpoint may come from any strategy or device count, and is evaluated\n"
      "on --devices (default 1) under the model file's parallel section, or mpirun's ranks.\n"
      "The data set is found as `train` finds it (see `shardscope train --help`).");
  app->add_option("model", o->model, "Model file (YAML) or ONNX file that trained the checkpoint")
      ->required();
  app->add_option("--checkpoint", o->checkpoint.resume, "Checkpoint directory (--save-checkpoint)")
      ->required();
  app->add_option("--data", o->data, "Directory with the MNIST-format IDX files, or text:FILE");
  app->add_option("--limit", o->limit, "Use only the first N test examples")->check(AtLeast(1));
  app->add_option("--batch", o->batch, "Examples per evaluation batch (default: the saved batch)")
      ->check(AtLeast(1));
  app->add_option("--devices", o->devices, "In-process devices (default: the model file's, or 1)")
      ->check(AtLeast(1));
  app->add_option("--mode", o->mode, "stand_alone | data_parallel | semi_auto | auto");
  app->add_flag("--ignore-parallel", o->ignore_parallel,
                "Ignore the model file's parallel section (data-parallel on N devices)");
  commands.push_back({app, [o] { return RunTrain(*o); }});
}

}  // namespace shardscope::cli
