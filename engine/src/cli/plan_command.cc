// `shardscope plan MODEL --devices N --search MODE`: strategies, redistributions, predicted
// step time and memory per device, without running anything (a dry run for any cluster).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "cli/limits.h"
#include "cli/memory_budget.h"
#include "cli/option_checks.h"
#include "cli/pipeline_choice.h"
#include "cli/pipeline_submesh.h"
#include "cli/progress.h"
#include "cli/replica_warning.h"
#include "cli/resource_checks.h"
#include "cli/search_flags.h"
#include "cli/train_loop.h"
#include "shardscope/base/format.h"
#include "shardscope/base/names.h"
#include "shardscope/checked_math.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/model_file.h"
#include "shardscope/partition.h"
#include "shardscope/plan_export.h"
#include "shardscope/program_price.h"
#include "shardscope/recorder.h"

namespace shardscope::cli {
namespace {

constexpr int kMaxPlanDevices = 1 << 20;  // per-rank figures are kept for every device

struct PlanOptions {
  std::string model;
  int devices = 0;
  int64_t batch = 0;
  std::string global_batch;  // "N" samples or "N tokens" (K/M suffixes)
  bool json = false;
  std::string explain;
  std::string record;
  bool overwrite = false;
  std::vector<std::string> export_to;  // FORMAT FILE
  int show = 20;
  std::string pipeline;   // auto | N; empty: the model file's parallel.pipeline
  int micro_batches = 0;  // place with strategies: 0 = the cheapest count
  std::string unplaced = "worker0";
  SearchFlags search;
};

// The per-rank entries RecordPlan writes for the program's redistributions (bytes sent and
// received, group members, transfers, zeroed ranks per step): what the run file grows with.
int64_t RecordEntries(const DistProgram& program) {
  int64_t entries = 0;
  for (const DistInstr& in : program.instrs) {
    if (in.kind != DistInstr::Kind::kRedistribute) continue;
    for (const RedistStep& s : in.plan->steps) {
      const int64_t step = 3 * int64_t{program.devices} + s.transfers.size() + s.zero_ranks.size();
      entries = CheckedAdd(entries, step).value_or(std::numeric_limits<int64_t>::max());
    }
  }
  return entries;
}

void PrintExplain(const OperatorChoice& c) {
  std::printf(
      "%s\n  strategy   %s\n  why        %s\n  cost       %.3f us (own %.3f us + "
      "redistribution to its neighbours)\n  memory     %s per device\n",
      c.name.c_str(), c.strategy.c_str(), c.provenance.c_str(), c.local_cost_s * 1e6,
      c.compute_s * 1e6, FormatBytes(c.memory_bytes).c_str());
  if (c.runners_up.empty()) {
    std::printf("  runners-up none (fixed by the user, or no other candidate)\n");
    return;
  }
  std::printf("  runners-up (their cost with the neighbours as chosen)\n");
  for (const ScoredCandidate& s : c.runners_up)
    std::printf("    %-28s %.3f us\n", s.strategy.c_str(), s.cost_s * 1e6);
}

// The same as JSON (plan --explain NAME --json).
nlohmann::ordered_json ExplainJson(const OperatorChoice& c) {
  nlohmann::ordered_json j = {{"operator", c.name},
                              {"strategy", c.strategy},
                              {"why", c.provenance},
                              {"cost_seconds", c.local_cost_s},
                              {"compute_seconds", c.compute_s},
                              {"memory_per_device_bytes", c.memory_bytes}};
  j["runners_up"] = nlohmann::ordered_json::array();
  for (const ScoredCandidate& s : c.runners_up)
    j["runners_up"].push_back({{"strategy", s.strategy}, {"cost_seconds", s.cost_s}});
  return j;
}

// --export FORMAT FILE: the plan in a framework's terms; what it cannot express is printed.
Status ExportTo(const std::vector<std::string>& args, const Graph& graph,
                const DistProgram& program, const std::string& model) {
  auto format = ParseExportFormat(args[0]);
  if (!format.ok()) return Status::Invalid("--export: " + format.status().message());
  auto out = ExportPlan(graph, program, *format, model);
  if (!out.ok()) return Status::Invalid("--export " + args[0] + ": " + out.status().message());
  std::ofstream file(args[1]);
  file << out->text;
  file.close();
  if (!file) return Status::Io("--export " + args[0] + ": cannot write " + args[1]);
  std::fprintf(
      stderr, "exported the plan for %s to %s (%s)\n", args[0].c_str(), args[1].c_str(),
      out->unsupported.empty() ? "everything expressed" : "not expressible, listed in the file:");
  for (const std::string& line : out->unsupported) std::fprintf(stderr, "  %s\n", line.c_str());
  return Status::Ok();
}

// --global-batch: "512", "1M tokens", "4K tok" -> examples per step. Tokens are divided by the
// positions of one example (a token model's input.shape[0]) and must divide evenly.
Result<int64_t> GlobalBatchExamples(const std::string& text, const ModelFile& mf) {
  const auto bad = [&](const std::string& why) {
    return Status::Invalid("--global-batch '" + text + "': " + why +
                           " (e.g. --global-batch 512, or --global-batch \"4M tokens\")");
  };
  size_t used = 0;
  double n = 0;
  try {
    n = std::stod(text, &used);
  } catch (...) {
    return bad("not a number");
  }
  std::string rest = text.substr(used);
  std::erase(rest, ' ');
  double scale = 1;
  if (!rest.empty() && (rest[0] == 'K' || rest[0] == 'k' || rest[0] == 'M' || rest[0] == 'G')) {
    scale = rest[0] == 'M' ? 1 << 20 : rest[0] == 'G' ? 1 << 30 : 1 << 10;
    rest.erase(0, 1);
  }
  const bool tokens = rest == "tokens" || rest == "token" || rest == "tok";
  if (!tokens && !rest.empty()) return bad("after the number: samples, or 'tokens'");
  const double count = n * scale;
  if (!(count >= 1) || count != std::floor(count) || count > 1e15) return bad("not a whole count");
  if (!tokens) return static_cast<int64_t>(count);
  if (mf.input_dtype() != DType::kI32 || mf.example_shape().empty())
    return bad(mf.path() + " does not take token ids (input.dtype i32), so tokens have no length");
  const auto positions = static_cast<double>(mf.example_shape()[0]);
  if (std::fmod(count, positions) != 0)
    return bad("not a whole number of sequences of " + std::to_string(mf.example_shape()[0]) +
               " positions");
  return static_cast<int64_t>(count / positions);
}

int RunPlan(const PlanOptions& original) {
  PlanOptions o = original;
  auto mf = LoadModelFile(o.model, ModelLoadOptions{.weights = false});  // shapes only
  if (!mf.ok()) return Fail(kExitBadInput, mf.status().message());
  if (!o.global_batch.empty()) {
    auto examples = GlobalBatchExamples(o.global_batch, *mf);
    if (!examples.ok()) return Fail(kExitBadInput, examples.status().message());
    o.batch = *examples;
  }
  if (PlacedWithStrategies(*mf)) {
    return RunPlanPlacedSharded(PlacedPlanRequest{&*mf, o.devices, o.batch, o.micro_batches,
                                                  o.unplaced, o.json, o.record, o.overwrite,
                                                  o.search});
  }
  const ParallelConfig& parallel = mf->parallel();
  const int devices = o.devices > 0 ? o.devices : std::max(1, parallel.devices);
  if (devices > kMaxPlanDevices) {  // only the file's count can be larger (--devices is checked)
    return Fail(kExitBadInput, parallel.devices_location.ToString() + ": parallel.devices " +
                                   std::to_string(devices) + ": plan handles at most " +
                                   std::to_string(kMaxPlanDevices) + " devices (--devices N)");
  }
  std::string mode_name = o.search.search;
  if (mode_name.empty()) {
    mode_name = !parallel.search.empty() ? parallel.search
                : parallel.mode == "auto" || parallel.mode == "auto_parallel"
                    ? "sharding_propagation"
                    : "semi_auto";
  }
  auto mode = ParseSearchMode(mode_name);
  if (!mode.ok()) return Fail(kExitBadInput, mode.status().message());
  PartitionOptions partition;
  partition.devices = devices;
  ApplyMemoryFlags(o.search, parallel, &partition);
  for (const auto& [name, text] : parallel.meshes) {
    auto mesh = ParseMeshExpr(text);
    if (!mesh.ok())
      return Fail(kExitBadInput, mf->path() + ": mesh " + name + ": " + mesh.status().message());
    partition.meshes[name] = *mesh;
  }
  auto model = mf->Build(o.batch > 0 ? o.batch : mf->training().batch);
  if (!model.ok()) return Fail(kExitBadInput, model.status().message());
  SearchFlags flags = o.search;
  flags.shard_blocks = ShardBlockSpecs(parallel);
  flags.optimizer_states = OptimizerStateTensors(mf->training().optimizer.kind);
  flags.file_dtype = mf->training().dtype;
  SetSearchMemoryChoices(parallel, &flags);
  auto options = MakeSearchOptions(flags, *mode, devices, partition.meshes);
  if (!options.ok()) return Fail(kExitBadInput, options.status().message());
  partition.cost = options->cost;
  partition.gradient_bucket_bytes = static_cast<int64_t>(options->cost.gradient_bucket_bytes);
  partition.element_bytes = PrecisionBytes(options->dtype);  // the program is priced, not run
  const SearchedPeakFn peak = [&](const SearchResult& result) {
    return SearchedPlanPeak(*mf, *model, result, flags, partition);
  };
  auto searched = ApplySearchFlags(flags, *mode, &model->graph, devices, partition.meshes,
                                   /*save=*/true, peak);
  if (!searched.ok()) return Fail(kExitBadInput, searched.status().message());
  const SearchResult& r = **searched;
  TakeSearchMemoryChoices(r, flags, parallel, &partition);
  // The gradient bucket the search priced (--bucket-mb auto: the cheapest it tried).
  options->cost.gradient_bucket_bytes = r.gradient_bucket_bytes;
  partition.cost.gradient_bucket_bytes = r.gradient_bucket_bytes;
  partition.gradient_bucket_bytes = static_cast<int64_t>(r.gradient_bucket_bytes);

  if (!o.explain.empty()) {
    std::vector<std::string> names;
    for (const OperatorChoice& c : r.operators) {
      names.push_back(c.name);
      if (c.name != o.explain) continue;
      if (o.json) {
        std::printf("%s\n", ExplainJson(c).dump(2).c_str());
      } else {
        PrintExplain(c);
      }
      return kExitOk;
    }
    return Fail(kExitBadInput, "--explain: the model has no forward operator '" + o.explain + "'" +
                                   DidYouMean(o.explain, names));
  }
  auto program = PlanTrainingProgram(&*model, partition);  // what `train` would run
  if (!program.ok()) return Fail(kExitBadInput, program.status().message());
  // Memory per device at its peak at the planning dtype, fitted to the device memory (the
  // memory options the user left open may change the program; at f32: what `train` checks).
  // The reported prediction prices the program train runs, not the search's objective.
  // A plan that fits no option stops here unless --pipeline auto's stages fit (below).
  auto fitted = FitPlanMemory(*mf, model->graph, *program, partition, *options, o.search, &r);
  if (!fitted.ok()) return Fail(kExitBadInput, fitted.status().message());
  *program = std::move(fitted->fit.program);
  const ProgramPrice* price = &fitted->fit.price;
  const int64_t memory = fitted->fit.chosen.memory.total;
  int64_t max_recv = 0;
  for (int rank = 0; rank < devices && rank < 64; ++rank)
    max_recv = std::max(max_recv, program->PlannedRecvBytes(rank));

  // One figure, one name: predicted_* is the priced program, search_objective_* the search's.
  nlohmann::ordered_json summary = nlohmann::ordered_json::parse(SearchResultToJson(r, -1));
  summary["predicted_step_seconds"] = price->step_seconds;
  summary["predicted_compute_seconds"] = price->operator_seconds;
  summary["predicted_communication_seconds"] = price->communication_seconds;
  summary["predicted_communication_steps"] = price->communication_steps;
  summary["max_recv_bytes_per_step"] = max_recv;
  summary["gradient_bucket_chosen"] = !options->gradient_bucket_choices.empty();
  summary["dtype"] = PrecisionName(options->dtype);
  if (!o.search.cluster.empty()) summary["cluster"] = o.search.cluster;
  summary["device_mesh"] = options->device_mesh.ToString();
  summary["search_memory_per_device_bytes"] = r.memory_per_device_bytes;
  summary["memory_per_device_bytes"] = memory;
  summary["memory"] = PlanMemoryJson(*fitted);
  // Pipeline stages (--pipeline, parallel.pipeline): priced beside the operator-level plan.
  std::optional<PipelineChoice> pipe;
  bool pipelined = false;
  const std::string pipeline = !o.pipeline.empty() ? o.pipeline : parallel.pipeline;
  if (!pipeline.empty()) {
    const std::string where = !o.pipeline.empty()
                                  ? std::string("--pipeline")
                                  : parallel.pipeline_location.ToString() + ": parallel.pipeline";
    auto stages = ParsePipelineStages(pipeline, devices, where);
    if (!stages.ok()) return Fail(kExitBadInput, stages.status().message());
    auto capacity = PipelineCapacity(*options, o.search.cluster);
    if (!capacity.ok()) return Fail(kExitBadInput, capacity.status().message());
    const int64_t batch = o.batch > 0 ? o.batch : mf->training().batch;
    auto chosen = ChooseAnyPipeline([&](int64_t b) { return mf->Build(b); }, batch, devices,
                                    *stages, *options, *capacity);
    if (!chosen.ok() && *stages > 0) return Fail(kExitBadInput, chosen.status().message());
    if (chosen.ok()) {
      pipe = std::move(*chosen);
      pipelined = *stages > 0 || PreferPipeline(*pipe, price->step_seconds, memory, *capacity);
      summary["pipeline"] = PipelineJson(*pipe);
    } else {
      summary["pipeline"] = {{"not_possible", chosen.status().message()}};
    }
    summary["parallelism"] = pipelined ? "pipeline" : "operator";
    summary["operator_level_step_seconds"] = price->step_seconds;
    summary["operator_level_memory_per_device_bytes"] = memory;
    if (pipelined) {
      summary["predicted_step_seconds"] = pipe->price.step_seconds;
      summary["memory_per_device_bytes"] = pipe->max_memory_bytes;
    }
  }
  if (!fitted->fit.fits && !pipelined) {
    std::string why = NothingFitsMessage(*mf, *fitted);
    if (pipe) why += "; nor do the pipeline stages (" + FormatBytes(pipe->max_memory_bytes) + ")";
    return Fail(kExitBadInput, why);
  }
  const std::string replicas = ReplicaWarning(model->graph, *program);
  if (!replicas.empty()) {
    summary["warnings"] = nlohmann::ordered_json::array();
    for (size_t at = 0, end; (end = replicas.find('\n', at)) != std::string::npos; at = end + 1)
      summary["warnings"].push_back(replicas.substr(at, end - at));
    std::fprintf(stderr, "%s", replicas.c_str());
  }

  if (!o.export_to.empty()) {
    Status st = ExportTo(o.export_to, model->graph, *program, mf->name());
    if (!st.ok())
      return Fail(st.code() == StatusCode::kIoError ? kExitRunFailure : kExitBadInput,
                  st.message());
  }
  if (!o.record.empty() && RecordEntries(*program) > GetLimits().record_entries) {
    return Fail(
        kExitBadInput,
        "--record " + o.record + ": the plan for " + std::to_string(devices) + " devices has " +
            std::to_string(RecordEntries(*program)) +
            " per-rank entries (bytes, groups, transfers of every redistribution step), "
            "more than " +
            std::to_string(GetLimits().record_entries) +
            " (--resource-limit record_entries=N); plan without --record, or for fewer devices");
  }
  if (!o.record.empty()) {
    store::RunInfo info;
    info.name = mf->name();
    info.mode = "plan";
    info.search = SearchModeName(*mode);
    info.devices = devices;
    info.backend = "none (plan)";
    info.model_path = o.model;
    info.model_text = mf->text();
    info.config_json = summary.dump();
    info.command_line = CommandLine();
    info.shardscope_version = "0.1.0";
    auto rec = CreateRecorder(o.record, info, o.overwrite);
    if (!rec.ok()) return Fail(kExitBadInput, rec.status().message());
    // A pipeline taken over the operator-level plan: its stages are what the run file shows.
    Status st = pipelined ? RecordPipelineChoice(
                                **rec, [&](int64_t b) { return mf->Build(b); }, *pipe, *options)
                          : (*rec)->RecordPlan(model->graph, *program, &r);
    Status fin = (*rec)->Finish(st.ok() ? store::RunStatus::kCompleted : store::RunStatus::kFailed,
                                st.message());
    if (!st.ok() || !fin.ok()) return Fail(kExitRunFailure, st.ok() ? fin.message() : st.message());
  }

  if (o.json) {
    nlohmann::ordered_json j = summary;
    j["redistributions"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < program->instrs.size(); ++i) {
      const DistInstr& in = program->instrs[i];
      if (in.kind != DistInstr::Kind::kRedistribute) continue;
      j["redistributions"].push_back({{"value", program->values[in.inputs[0]].name},
                                      {"from", in.plan->from.ToString()},
                                      {"to", in.plan->to.ToString()},
                                      {"bytes", in.plan->planned_bytes},
                                      {"seconds", price->instr_seconds[i]},
                                      {"reason", in.reason}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }

  std::printf("plan %s (%s): %d devices, %s, batch %lld, %s\ncost model: %s\n", mf->name().c_str(),
              o.model.c_str(), devices, SearchModeName(*mode),
              static_cast<long long>(o.batch > 0 ? o.batch : mf->training().batch),
              PrecisionName(options->dtype), partition.cost.ToString().c_str());
  if (!o.search.cluster.empty()) {
    std::printf("cluster %s, devices as %s\n", o.search.cluster.c_str(),
                options->device_mesh.ToString().c_str());
  }
  std::printf("\n");
  static const char* const kLevels[] = {"most computation per byte communicated",
                                        "least memory per device", "least step time"};
  for (const ShardBlockSpec& b : flags.shard_blocks) {
    std::printf("shard block %s: boundary in %s out %s fixed, inside level %d (%s)\n",
                b.scope.c_str(), b.in_strategy.c_str(),
                b.out_strategy.empty() ? "(not fixed)" : b.out_strategy.c_str(), b.level,
                kLevels[std::clamp(b.level, 0, 2)]);
  }
  if (!flags.shard_blocks.empty()) std::printf("operators outside shard blocks: data-parallel\n\n");
  std::printf("%-32s %-24s %11s %10s  %s\n", "operator", "strategy", "cost us", "op memory", "why");
  for (const OperatorChoice& c : r.operators) {
    std::printf("%-32s %-24s %11.2f %10s  %s\n", c.name.c_str(), c.strategy.c_str(),
                c.local_cost_s * 1e6, FormatBytes(c.memory_bytes).c_str(), c.provenance.c_str());
  }
  std::printf(
      "op memory: the search's estimate per operator (its parameters with gradients and "
      "optimizer states, its outputs), each held all step: %s in all, not the peak "
      "below\n",
      FormatBytes(r.memory_per_device_bytes).c_str());
  const int count = program->NumRedistributions();
  std::printf("\nredistributions per training step (forward and backward): %d\n", count);
  int shown = 0;
  for (const DistInstr& in : program->instrs) {
    if (in.kind != DistInstr::Kind::kRedistribute) continue;
    if (shown++ >= o.show) {
      std::printf("  ... %d more (--show N, or --json for all)\n", count - o.show);
      break;
    }
    std::printf("  %-40s %10s  %s\n", program->values[in.inputs[0]].name.c_str(),
                FormatBytes(static_cast<double>(in.plan->planned_bytes)).c_str(),
                in.reason.c_str());
  }
  std::printf(
      "\npredicted step time: %.3f ms (operators %.3f ms, communication %.3f ms in %d steps of "
      "%d redistributions; the search's objective: %.3f ms)\n"
      "received per step:   %s by the busiest rank (planned)\n",
      price->step_seconds * 1e3, price->operator_seconds * 1e3, price->communication_seconds * 1e3,
      price->communication_steps, price->redistributions, r.step_seconds * 1e3,
      FormatBytes(static_cast<double>(max_recv)).c_str());
  std::printf("gradient buckets:    %s%s\n", FormatBytes(r.gradient_bucket_bytes).c_str(),
              options->gradient_bucket_choices.empty()
                  ? ""
                  : " (--bucket-mb auto: the cheapest of those tried; --save-strategy keeps it)");
  PrintPlanMemory(*fitted);
  if (!r.note.empty()) std::printf("note: %s\n", r.note.c_str());
  if (summary.contains("pipeline")) {
    std::printf("\n");
    if (pipe) std::printf("%s", PipelineText(*pipe).c_str());
    if (!pipe) {
      std::printf("pipeline: none (%s)\n",
                  summary["pipeline"]["not_possible"].get<std::string>().c_str());
    }
    if (!pipe) {
      std::printf("chosen: the operator-level strategies above (%.3f ms)\n",
                  price->step_seconds * 1e3);
    } else {
      std::printf("chosen: %s (pipeline %.3f ms, operator-level %.3f ms)%s\n",
                  pipelined ? "the pipeline stages" : "the operator-level strategies above",
                  pipe ? pipe->price.step_seconds * 1e3 : 0.0, price->step_seconds * 1e3,
                  pipeline == "auto" ? "" : ", as asked");
    }
  }
  if (!o.search.save_strategy.empty())
    std::printf("strategies written to %s\n", o.search.save_strategy.c_str());
  if (!o.record.empty()) std::printf("recorded %s\n", o.record.c_str());
  return kExitOk;
}

}  // namespace

void AddPlanCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* app = root.add_subcommand(
      "plan",
      "Choose strategies and plan a training step without running it: per-operator\n"
      "strategies and why, redistributions with bytes, predicted step time and memory per\n"
      "device. Nothing is executed, so --devices may be far larger than this machine.\n"
      "\n"
      "Examples:\n"
      "  shardscope plan samples/models/ffn.yaml --devices 8   (seed 003)\n"
      "  shardscope plan samples/models/network3.yaml --devices 1024 --batch 1024 \\\n"
      "      --search recursive_programming\n"
      "  shardscope plan samples/models/ffn.yaml --devices 8 --search dynamic_programming \\\n"
      "      --explain dense2.matmul\n"
      "  shardscope plan samples/models/ffn.yaml --devices 8 --search sharding_propagation \\\n"
      "      --save-strategy ffn8.json    (then: shardscope train ... --load-strategy ffn8.json)\n"
      "  shardscope plan samples/models/ffn.yaml --devices 8 --export dtensor ffn_plan.py\n"
      "      (also: jax FILE.py, mindspore FILE.json; docs/export.md)\n"
      "  shardscope plan samples/models/basic_blocks.yaml   (seed 000: shard(block1, ...);\n"
      "      the block's boundary fixed, its inside searched, the rest data-parallel)\n"
      "  shardscope plan samples/models/ffn.yaml --devices 8 --batch 256 \\\n"
      "      --search dynamic_programming --device-mesh node=2,local=4 \\\n"
      "      --axis-bandwidth node=1.25e9 --axis-latency node=20e-6   (two hosts of four\n"
      "      with a slow link between them: the heavy collectives stay inside a host)\n"
      "  shardscope plan model.onnx --devices 64 --batch 256 --search dynamic_programming\n"
      "      (an ONNX file, or a model file with import: model.onnx; plan reads shapes only,\n"
      "      never the weights; --batch fixes a symbolic batch dimension)\n"
      "Search modes: semi_auto (the model's strategies, the rest data-parallel),\n"
      "sharding_propagation (from the configured operators outward), recursive_programming\n"
      "(fully automatic, one round per prime factor of N), dynamic_programming (the exact\n"
      "optimum of a pairwise objective, each reader paying its share of a value's moves:\n"
      "exact where a value's readers agree on its layout; then a descent on the search's\n"
      "whole objective, and the two other modes' plans kept when their objective is lower,\n"
      "so its objective is never above theirs; where the graph does not reduce or outgrows\n"
      "its effort budget, recursive_programming's strategies with a note naming why and the\n"
      "gap to a lower bound). Where the objective is not the price: docs/cost-model.md.\n"
      "Default: the model file's parallel.search, else semi_auto. Costs come from the\n"
      "built-in figures or --profile (shardscope calibrate). The predicted step time prices\n"
      "the partitioned program itself (every kernel, every step of every redistribution,\n"
      "forward and backward); the search's own objective, priced by split counts, is\n"
      "printed beside it.");
  app->add_option("model", o->model,
                  "Model file (YAML, see docs/model-format.md) or ONNX file (.onnx)")
      ->required();
  app->add_option("--devices", o->devices, "Devices to plan for (default: the model file's)")
      ->check(CLI::Range(1, kMaxPlanDevices));
  auto* batch =
      app->add_option("--batch", o->batch, "Global batch size (default: the model file's)")
          ->check(AtLeast(1));
  app->add_option(
         "--global-batch", o->global_batch,
         "The global batch in samples (\"512\") or tokens (\"4M tokens\": divided by the "
         "positions of one sequence of a token model); K and M multiply by 1024 and 1024^2")
      ->excludes(batch);
  app->add_flag("--json", o->json, "Print the plan (or --explain's operator) as JSON");
  app->add_option("--explain", o->explain,
                  "Print one operator's strategy, why it was chosen and the runners-up");
  app->add_option(
      "--record", o->record,
      "Write the plan (operators, provenance, candidates, redistributions) to a "
      "run file for the GUI (at most record_entries per-rank entries: --resource-limit)");
  app->add_flag("--overwrite", o->overwrite,
                "Replace the --record file if it exists (default: refuse, keeping it)");
  app->add_option("--export", o->export_to,
                  "FORMAT FILE: write the plan's layouts for another framework: dtensor (a\n"
                  "PyTorch module of DeviceMesh + placements and apply()), jax (Mesh +\n"
                  "PartitionSpecs and apply()), mindspore (a JSON strategy checkpoint). What\n"
                  "the format cannot express is listed in the file and printed (docs/export.md)")
      ->expected(2)
      ->type_name("FORMAT FILE");
  app->add_option("--show", o->show, "Redistributions to list (default 20)")->check(AtLeast(0));
  app->add_option("--top-k", o->search.top_k, "Runners-up kept per operator (default 3)")
      ->check(AtLeast(0));
  app->add_option("--pipeline", o->pipeline,
                  "auto | N: also cut the model into N contiguous pipeline stages of\n"
                  "devices / N devices each (N divides --devices; a stage of several devices\n"
                  "is sharded over them), pick the micro-batches and price the 1f1b schedule\n"
                  "with its bubble and boundary transfers; auto tries every N dividing the\n"
                  "devices and keeps whichever of pipeline and operator-level plan fits\n"
                  "memory, else is cheaper (default: parallel.pipeline; docs/pipeline.md).\n"
                  "Stages of several devices take --optimizer-sharding 1|2|3 and --recompute\n"
                  "inside each stage: ZeRO 2/3 sum the micro-batches' gradients, then\n"
                  "reduce-scatter them once a step; ZeRO 3 also gathers each parameter per\n"
                  "micro-batch in forward and in backward (priced so; update us per stage)");
  app->add_option("--micro-batches", o->micro_batches,
                  "A model file with place entries and strategies: price M micro-batches under\n"
                  "1f1b (default: every M dividing the batch up to 4 x workers, the cheapest\n"
                  "that fits), as `train --micro-batches M --schedule 1f1b` runs them")
      ->check(AtLeast(1));
  app->add_option("--unplaced", o->unplaced,
                  "A model file with place entries and strategies: where unplaced operators\n"
                  "run, worker0 | producer (as for train)");
  AddSearchFlags(app, o->search);
  app->add_flag("--no-overlap", o->search.no_overlap,
                "Price gradient reductions after the backward, not beside it (a --cluster "
                "profile overlaps them as DDP does; docs/cost-model.md)");
  commands.push_back({app, [o] { return RunPlan(*o); }});
}

}  // namespace shardscope::cli
