// The planner's pipeline: stages, micro-batches, price and memory (pipeline_choice.h).
#include "cli/pipeline_choice.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "cli/pipeline_submesh.h"
#include "cli/resource_checks.h"
#include "shardscope/base/format.h"
#include "shardscope/cost/cluster.h"
#include "shardscope/pipeline.h"
#include "shardscope/program_price.h"

namespace shardscope::cli {
namespace {

// One candidate: `micro_batches` micro-batches of batch / micro_batches examples.
Result<PipelineChoice> PriceCandidate(const BuildAtFn& build, int64_t batch, int stages,
                                      int micro_batches, const SearchOptions& options,
                                      double capacity_bytes) {
  PipelineChoice c;
  c.stages = stages;
  c.micro_batches = micro_batches;
  c.micro_batch = batch / micro_batches;
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, build(c.micro_batch));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<StageUnit> units, LayerUnits(model.graph, options));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      std::vector<int> first,
      SplitStages(units, stages, micro_batches, capacity_bytes, options.cost, options.device_mesh));
  first.push_back(static_cast<int>(units.size()));
  const Graph& g = model.graph;
  const double slowdown = options.cost.in_process.ComputeSlowdown(stages);
  std::vector<double> seconds(stages, 0.0), updates(stages, 0.0);
  c.stage.resize(stages);
  for (int s = 0; s < stages; ++s) {
    StageReport& r = c.stage[s];
    r.device = s;
    r.first_op = g.node(units[first[s]].nodes.front()).name;
    r.last_op = g.node(units[first[s + 1] - 1].nodes.back()).name;
    for (int u = first[s]; u < first[s + 1]; ++u) {
      r.compute_seconds += units[u].compute_seconds * slowdown;
      r.update_seconds += units[u].update_seconds * slowdown;
      for (NodeId n : units[u].nodes) c.worker_of[g.node(n).name] = s;
    }
  }
  SHARDSCOPE_RETURN_IF_ERROR(ApplyPipelineStages(c.worker_of, &model.graph));
  const PipelineOptions run{stages, micro_batches, PipelineSchedule::kOneFOneB,
                            UnplacedPolicy::kWorkerZero};
  SHARDSCOPE_ASSIGN_OR_RETURN(PipelinePlan plan, PlanPipeline(&model, run));
  // Each boundary message is paid by its sender and its receiver, once per micro-batch.
  const double element_scale = PrecisionBytes(options.dtype) / 4.0;
  for (const CutEdge& e : plan.train.edges) {
    const double t = BoundarySeconds(options.cost, options.device_mesh, e.src_worker, e.dst_worker,
                                     static_cast<double>(e.bytes) * element_scale);
    c.stage[e.src_worker].transfer_seconds += t;
    c.stage[e.dst_worker].transfer_seconds += t;
  }
  for (int s = 0; s < stages; ++s) {
    seconds[s] = c.stage[s].compute_seconds + c.stage[s].transfer_seconds;
    updates[s] = c.stage[s].update_seconds;
    SHARDSCOPE_ASSIGN_OR_RETURN(
        c.stage[s].memory_bytes,
        WorkerMemoryBytes(model.graph, plan, micro_batches, options.optimizer_states, s));
    c.max_memory_bytes = std::max(c.max_memory_bytes, c.stage[s].memory_bytes);
  }
  c.price = PriceOneFOneB(seconds, updates, micro_batches);
  c.fits = capacity_bytes <= 0 || static_cast<double>(c.max_memory_bytes) <= capacity_bytes;
  return c;
}

}  // namespace

Result<PipelineChoice> ChoosePipeline(const BuildAtFn& build, int64_t batch, int stages,
                                      const SearchOptions& options, double capacity_bytes,
                                      int stage_devices) {
  if (stages < 2) return Status::Invalid("a pipeline needs at least 2 stages (devices)");
  std::optional<PipelineChoice> best;
  Status last;
  for (int m = 1; m <= 4 * stages && m <= batch; ++m) {
    if (batch % m != 0) continue;
    auto c = stage_devices > 1 ? PriceSubMeshCandidate(build, batch, stages, stage_devices, m,
                                                       options, capacity_bytes)
                               : PriceCandidate(build, batch, stages, m, options, capacity_bytes);
    if (!c.ok()) {
      // Memory caps only some splits; with no split at all (too few layers) stop early.
      if (c.status().message().find("layers (name scopes)") != std::string::npos) return c.status();
      last = c.status();
      continue;
    }
    if (BetterPipeline(*c, best)) best = std::move(*c);
  }
  if (!best) return last.ok() ? Status::Invalid("pipeline: no micro-batch count fits") : last;
  return *best;
}

Status ApplyPipelineStages(const std::map<std::string, int>& worker_of, Graph* forward) {
  for (const Node& n : forward->nodes()) {
    if (n.is_backward) continue;
    const auto it = worker_of.find(n.name);
    if (it == worker_of.end())
      return Status::Internal("pipeline stages: no stage for operator '" + n.name + "'");
    OpAnnotations& a = forward->mutable_node(n.id).annotations;
    a.in_strategy.clear();
    a.out_strategy.clear();
    a.worker = it->second;
  }
  return Status::Ok();
}

bool BetterPipeline(const PipelineChoice& c, const std::optional<PipelineChoice>& best) {
  if (!best) return true;
  if (c.fits != best->fits) return c.fits;
  return c.fits ? c.price.step_seconds < best->price.step_seconds
                : c.max_memory_bytes < best->max_memory_bytes;
}

bool PreferPipeline(const PipelineChoice& pipe, double flat_seconds, int64_t flat_memory,
                    double capacity_bytes) {
  const bool flat_fits = capacity_bytes <= 0 || static_cast<double>(flat_memory) <= capacity_bytes;
  if (pipe.fits != flat_fits) return pipe.fits;
  return pipe.price.step_seconds < flat_seconds;
}

Result<int> ParsePipelineStages(const std::string& text, int devices, const std::string& where) {
  if (text == "auto") return 0;
  int n = 0;
  try {
    size_t used = 0;
    n = std::stoi(text, &used);
    if (used != text.size()) n = 0;
  } catch (...) {
    n = 0;
  }
  if (n < 2) {
    return Status::Invalid(where + " '" + text +
                           "': auto, or a number of stages of at least 2 dividing the devices");
  }
  if (n > devices || devices % n != 0) {
    return Status::Invalid(where + " " + std::to_string(n) + " on " + std::to_string(devices) +
                           " devices: every stage gets devices / stages devices, so the stages "
                           "must divide the devices");
  }
  return n;
}

Result<double> PipelineCapacity(const SearchOptions& options, const std::string& cluster) {
  if (options.memory_budget_bytes > 0) return options.memory_budget_bytes;
  if (cluster.empty()) return 0.0;
  SHARDSCOPE_ASSIGN_OR_RETURN(ClusterProfile profile, LoadClusterProfile(cluster));
  return profile.memory_bytes;
}

Result<OperatorLevelPrice> PriceOperatorLevel(const ModelFile& mf, int64_t batch,
                                              bool keep_strategies, const SearchFlags& flags,
                                              std::optional<SearchMode> search,
                                              const PartitionOptions& partition) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, mf.Build(batch));
  if (!keep_strategies) {
    for (const Node& n : model.graph.nodes()) model.graph.mutable_node(n.id).annotations = {};
  }
  const int devices = partition.devices;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto searched, ApplySearchFlags(flags, search, &model.graph, devices,
                                                              partition.meshes, false));
  (void)searched;
  SHARDSCOPE_ASSIGN_OR_RETURN(DistProgram program, PlanTrainingProgram(&model, partition));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      SearchOptions options,
      MakeSearchOptions(flags, search.value_or(SearchMode::kSemiAuto), devices, partition.meshes));
  SHARDSCOPE_ASSIGN_OR_RETURN(ProgramPrice price, PriceProgram(model.graph, program, options));
  SHARDSCOPE_ASSIGN_OR_RETURN(int64_t memory, PlannedMemoryPerDevice(mf, model.graph, program));
  return OperatorLevelPrice{price.step_seconds, memory};
}

Result<std::optional<PipelineChoice>> DecideTrainPipeline(
    const ModelFile& mf, const std::string& pipeline_text, bool from_flag, bool other_options,
    int64_t batch, int devices, const SearchFlags& flags, const PriceOperatorLevelFn& flat,
    bool print, std::optional<SearchMode> search) {
  const std::string where =
      from_flag ? std::string("--pipeline")
                : mf.parallel().pipeline_location.ToString() + ": parallel.pipeline";
  if (other_options) {
    return Status::Invalid(where + ": the planner chooses the micro-batches (drop " +
                           "--micro-batches), and checkpoints of pipelined runs are not built yet");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(const int stages, ParsePipelineStages(pipeline_text, devices, where));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      SearchOptions options,
      MakeSearchOptions(flags, search.value_or(SearchMode::kSemiAuto), devices, {}));
  options.dtype = Precision::kF32;  // train runs in f32
  SHARDSCOPE_ASSIGN_OR_RETURN(const double capacity, PipelineCapacity(options, flags.cluster));
  auto pipe = ChooseAnyPipeline([&](int64_t b) { return mf.Build(b); }, batch, devices, stages,
                                options, capacity);
  if (stages > 0 && !pipe.ok()) return pipe.status().WithContext(where + " " + pipeline_text);
  std::string why;
  bool take = stages > 0;
  if (stages == 0 && !pipe.ok()) why = pipe.status().message();
  if (stages == 0 && pipe.ok()) {
    auto level = flat();
    take = !level.ok() || PreferPipeline(*pipe, level->step_seconds, level->memory_bytes, capacity);
    char text[160];
    std::snprintf(
        text, sizeof text, "pipeline %.3f ms, operator-level %s", pipe->price.step_seconds * 1e3,
        level.ok() ? (std::to_string(level->step_seconds * 1e3) + " ms").c_str() : "not possible");
    why = text;
  }
  if (print) {
    std::printf("pipeline %s: %s%s%s\n", pipeline_text.c_str(),
                take ? "stages chosen" : "operator-level plan kept", why.empty() ? "" : " (",
                why.empty() ? "" : (why + ")").c_str());
    if (take) std::printf("%s", PipelineText(*pipe).c_str());
    std::fflush(stdout);
  }
  if (!take) return std::optional<PipelineChoice>();
  return std::optional<PipelineChoice>(std::move(*pipe));
}

PlacedTrainRequest PipelineRequest(const PlacedTrainRequest& placed, const PipelineChoice& choice) {
  PlacedTrainRequest r = placed;
  r.micro_batches = choice.micro_batches;
  r.schedule = "1f1b";
  r.unplaced = "worker0";
  r.stages = &choice.worker_of;
  return r;
}

nlohmann::ordered_json PipelineJson(const PipelineChoice& c) {
  nlohmann::ordered_json j = {{"stages", c.stages},
                              {"stage_devices", c.stage_devices},
                              {"micro_batches", c.micro_batches},
                              {"micro_batch", c.micro_batch},
                              {"schedule", "1f1b"},
                              {"step_seconds", c.price.step_seconds},
                              {"bubble_fraction", c.price.bubble_fraction},
                              {"slowest_stage_seconds", c.price.slowest_stage_seconds},
                              {"max_memory_bytes", c.max_memory_bytes},
                              {"fits", c.fits}};
  if (c.stage_devices > 1) {
    j["optimizer_sharding"] = c.optimizer_sharding;
    j["recompute"] = c.recompute;
  }
  j["stage"] = nlohmann::ordered_json::array();
  for (const StageReport& s : c.stage) {
    j["stage"].push_back({{"first", s.first_op},
                          {"last", s.last_op},
                          {"devices", StageDevices(s)},
                          {"compute_seconds", s.compute_seconds},
                          {"transfer_seconds", s.transfer_seconds},
                          {"update_seconds", s.update_seconds},
                          {"memory_bytes", s.memory_bytes}});
  }
  return j;
}

std::string PipelineText(const PipelineChoice& c) {
  std::ostringstream out;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "pipeline: %d stages (%s each), %d micro-batches of %lld, 1f1b; bubble "
      "%.1f %% of the step\n",
      c.stages,
      c.stage_devices > 1 ? (std::to_string(c.stage_devices) + " devices").c_str() : "one device",
      c.micro_batches, static_cast<long long>(c.micro_batch), 100 * c.price.bubble_fraction);
  out << line;
  if (c.optimizer_sharding > 0 || !c.recompute.empty()) {
    std::string scopes;
    for (const std::string& r : c.recompute) scopes += (scopes.empty() ? "" : ", ") + r;
    out << "  inside each stage: ZeRO " << c.optimizer_sharding
        << (scopes.empty() ? std::string() : ", recompute " + scopes) << "\n";
  }
  std::snprintf(line, sizeof line, "  %-6s %-7s %-24s %-24s %11s %11s %10s %10s\n", "stage",
                c.stage_devices > 1 ? "devices" : "device", "first operator", "last operator",
                "compute us", "transfer us", "update us", "memory");
  out << line;
  for (size_t s = 0; s < c.stage.size(); ++s) {
    const StageReport& r = c.stage[s];
    const std::string devices =
        r.devices > 1 ? std::to_string(r.device) + "-" + std::to_string(r.device + r.devices - 1)
                      : std::to_string(r.device);
    std::snprintf(line, sizeof line, "  %-6zu %-7s %-24s %-24s %11.2f %11.2f %10.2f %10s\n", s,
                  devices.c_str(), r.first_op.c_str(), r.last_op.c_str(), r.compute_seconds * 1e6,
                  r.transfer_seconds * 1e6, r.update_seconds * 1e6,
                  FormatBytes(static_cast<double>(r.memory_bytes)).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line,
                "  predicted step: %.3f ms = (%d + %d - 1) x %.3f ms (slowest stage per "
                "micro-batch, transfers included) + the slowest update\n",
                c.price.step_seconds * 1e3, c.micro_batches, c.stages,
                c.price.slowest_stage_seconds * 1e3);
  out << line;
  return out.str();
}

}  // namespace shardscope::cli
