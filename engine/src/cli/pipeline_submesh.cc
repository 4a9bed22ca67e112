// Pipeline stages of k devices each: the price and the stage count (pipeline_submesh.h).
#include "cli/pipeline_submesh.h"

#include <algorithm>
#include <optional>

#include "shardscope/cost/dtype.h"
#include "shardscope/program_price.h"
#include "shardscope/submesh_pipeline.h"

namespace shardscope::cli {
namespace {

// The trailing axes of `mesh` holding `k` devices (a stage's ranks are contiguous); the plain
// mesh when they do not (collectives then run at the default bandwidth).
DeviceMesh SubMeshOf(const DeviceMesh& mesh, int k) {
  if (mesh.num_axes() == 0 || mesh.has_explicit_ranks()) return DeviceMesh();
  int64_t devices = 1;
  int axis = mesh.num_axes();
  while (axis > 0 && devices < k) devices *= mesh.axis_size(--axis);
  if (devices != k) return DeviceMesh();
  const Shape shape(mesh.shape().begin() + axis, mesh.shape().end());
  const std::vector<std::string> names(mesh.names().begin() + axis, mesh.names().end());
  auto sub = DeviceMesh::Create(shape, names);
  return sub.ok() ? *sub : DeviceMesh();
}

// The sub-mesh options cutting `c`'s program priced with `options`' meshes, cost and dtype.
SubMeshOptions CutOptions(const PipelineChoice& c, const SearchOptions& options) {
  SubMeshOptions so = StageCutOptions(c);
  so.partition.meshes = options.meshes;
  so.partition.cost = options.cost;
  so.partition.element_bytes = PrecisionBytes(options.dtype);
  return so;
}

// What runs once a step (StageReport::update_seconds) and ZeRO 3's gathers per micro-batch,
// as SubMeshTrainer runs them: the update of each owned parameter's slice (its whole shard
// without ZeRO; OpCompute priced the whole shard per micro-batch), ZeRO 1/2's all-gather of
// the updated slices, ZeRO 2/3's reduce-scatter of each of the stage's buckets of gradients
// summed over the micro-batches, ZeRO 3's all-gather in every phase reading a parameter.
void ZeroSeconds(const SubMeshPlan& plan, const ProgramPrice& price, const SearchOptions& options,
                 std::vector<StageReport>* stage) {
  const DistProgram& p = plan.program;
  const CostModel& cost = options.cost;
  const double element = PrecisionBytes(options.dtype);
  const auto gather = [&](size_t i) {
    const ParamSharding& s = p.param_sharding[i];
    return ShardCollectiveSeconds(cost, CollectiveKind::kAllGather,
                                  element * static_cast<double>(s.chunk * s.group_size),
                                  price.shard_links[i]);
  };
  for (size_t i = 0; i < p.param_grads.size(); ++i) {
    StageReport& r = (*stage)[plan.param_stage[i]];
    const ParamSharding* zero = p.param_sharding.empty() ? nullptr : &p.param_sharding[i];
    const bool sliced = zero != nullptr && zero->group_size > 1;
    const double shard =
        static_cast<double>(NumElements(p.values[p.param_grads[i].first].layout.ShardShape()));
    const double per_element = element * (3 + 2 * options.optimizer_states);
    r.compute_seconds -= cost.MemorySeconds(shard * per_element);
    r.update_seconds +=
        cost.MemorySeconds((sliced ? static_cast<double>(zero->chunk) : shard) * per_element);
    if (sliced && !zero->gathered) r.update_seconds += gather(i);
  }
  for (size_t s = 0; s < stage->size(); ++s) {
    for (const ScatterBucket& b : StageScatterBuckets(plan, static_cast<int>(s))) {
      (*stage)[s].update_seconds += ShardCollectiveSeconds(
          cost, CollectiveKind::kReduceScatter,
          element * static_cast<double>(b.slice * b.group_size), price.shard_links[b.params[0]]);
    }
    for (const auto* phase : {&plan.forward[s], &plan.backward[s]}) {
      for (const std::vector<int>& freed : PhaseReleases(p, *phase))
        for (int v : freed) (*stage)[s].compute_seconds += gather(p.gathered_param[v]);
    }
  }
}

// `c`'s figures from its cut program and the program's price: each stage's report, the 1F1B
// price and memory (see PriceSubMeshCandidate).
PipelineChoice Figures(const Graph& g, const SubMeshPlan& plan, const ProgramPrice& price,
                       PipelineChoice c, const SearchOptions& options, double capacity_bytes) {
  const int stages = c.stages, k = c.stage_devices;
  const std::map<std::string, int>& stage_of = c.worker_of;
  c.stage.assign(stages, StageReport{});
  c.max_memory_bytes = 0;
  for (int s = 0; s < stages; ++s) {
    c.stage[s].device = s * k;
    c.stage[s].devices = k;
  }
  // PriceProgram slows computation for k device threads sharing the cores; in-process all
  // stages' threads share them, as PriceCandidate's stages do.
  const InProcessOverhead& in_process = options.cost.in_process;
  const double slowdown = in_process.ComputeSlowdown(stages * k) / in_process.ComputeSlowdown(k);
  for (const Node& n : g.nodes()) {  // each stage's first and last forward operator
    const auto it = stage_of.find(n.name);
    if (n.is_backward || it == stage_of.end()) continue;
    StageReport& r = c.stage[it->second];
    if (r.first_op.empty()) r.first_op = n.name;
    r.last_op = n.name;
    r.compute_seconds += (price.node_seconds[n.id] + price.replay_seconds[n.id]) * slowdown;
  }
  for (size_t i = 0; i < plan.program.instrs.size(); ++i)
    c.stage[plan.instr_stage[i]].compute_seconds += price.instr_seconds[i];
  ZeroSeconds(plan, price, options, &c.stage);
  std::vector<double> updates(stages, 0.0);
  for (int s = 0; s < stages; ++s) updates[s] = c.stage[s].update_seconds;
  // Matching ranks of two stages exchange one shard each, paid by sender and receiver.
  const DeviceMesh& world =
      options.device_mesh.size() == stages * k ? options.device_mesh : DeviceMesh();
  for (const StageCut& cut : plan.cuts) {
    const double t =
        BoundarySeconds(options.cost, world, cut.src_stage * k, cut.dst_stage * k,
                        static_cast<double>(cut.bytes) * PrecisionBytes(options.dtype) / 4.0);
    c.stage[cut.src_stage].transfer_seconds += t;
    c.stage[cut.dst_stage].transfer_seconds += t;
  }
  std::vector<double> seconds(stages, 0.0);
  for (int s = 0; s < stages; ++s) {
    StageReport& r = c.stage[s];
    r.compute_seconds = std::max(0.0, r.compute_seconds);
    seconds[s] = r.compute_seconds + r.transfer_seconds;
    r.memory_bytes = SubMeshStageBytes(g, plan, s, options.optimizer_states);
    c.max_memory_bytes = std::max(c.max_memory_bytes, r.memory_bytes);
  }
  c.price = PriceOneFOneB(seconds, updates, c.micro_batches);
  c.fits = capacity_bytes <= 0 || static_cast<double>(c.max_memory_bytes) <= capacity_bytes;
  return c;
}

// The units' split `first` (with the end appended) as forward operator -> stage.
std::map<std::string, int> StagesOfSplit(const Graph& g, const std::vector<StageUnit>& units,
                                         const std::vector<int>& first) {
  std::map<std::string, int> stage_of;
  for (size_t s = 0; s + 1 < first.size(); ++s) {
    for (int u = first[s]; u < first[s + 1]; ++u) {
      for (NodeId n : units[u].nodes) stage_of[g.node(n).name] = static_cast<int>(s);
    }
  }
  return stage_of;
}

}  // namespace

SubMeshOptions StageCutOptions(const PipelineChoice& c) {
  SubMeshOptions so;
  so.stages = c.stages;
  so.micro_batches = c.micro_batches;
  so.stage_of = c.worker_of;
  so.partition.devices = c.stage_devices;
  so.partition.optimizer_sharding = c.optimizer_sharding;
  so.partition.recompute = c.recompute;
  return so;
}

Result<PipelineChoice> PriceSubMeshCandidate(const BuildAtFn& build, int64_t batch, int stages,
                                             int stage_devices, int micro_batches,
                                             const SearchOptions& options, double capacity_bytes) {
  const int k = stage_devices;
  PipelineChoice c;
  c.stages = stages;
  c.stage_devices = k;
  c.micro_batches = micro_batches;
  c.micro_batch = batch / micro_batches;
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, build(c.micro_batch));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<StageUnit> units, LayerUnits(model.graph, options));
  // The split balanced as one device each starts the walk below; memory is checked on shards.
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<int> first, SplitStages(units, stages, micro_batches, 0,
                                                                  options.cost, DeviceMesh()));
  first.push_back(static_cast<int>(units.size()));
  Graph& g = model.graph;
  c.worker_of = StagesOfSplit(g, units, first);
  // One search for k devices serves every split: it weighs all operators and the cuts' layouts.
  if (options.mode != SearchMode::kSemiAuto) {
    SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult searched,
                                SearchStrategies(g, StageOptions(options, k)));
    SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(searched, &g));
  }
  for (const Node& n : g.nodes()) c.strategies[n.name] = n.annotations;
  // A ZeRO stage or recomputed scopes fixed by the flags or the model file apply inside stages.
  if (options.optimizer_sharding_options.size() == 1)
    c.optimizer_sharding = options.optimizer_sharding_options[0];
  if (options.recompute_options.size() == 1) c.recompute = options.recompute_options[0];
  SubMeshOptions so = CutOptions(c, options);
  SHARDSCOPE_ASSIGN_OR_RETURN(SubMeshPlan plan, PlanSubMeshPipeline(&model, so));
  SHARDSCOPE_ASSIGN_OR_RETURN(ProgramPrice price,
                              PriceProgram(g, plan.program, StageOptions(options, k)));
  std::optional<PipelineChoice> best = Figures(g, plan, price, c, options, capacity_bytes);
  // Balanced on the sharded figures: move one stage boundary by one layer at a time while the
  // best such move prices lower (the program and its price stay; only the cut changes).
  for (size_t round = 0; round < units.size(); ++round) {
    std::optional<PipelineChoice> next;
    std::vector<int> next_first;
    for (int s = 1; s < stages; ++s) {
      for (int move : {-1, 1}) {
        std::vector<int> trial = first;
        trial[s] += move;
        if (trial[s] <= trial[s - 1] || trial[s] >= trial[s + 1]) continue;
        c.worker_of = so.stage_of = StagesOfSplit(g, units, trial);
        if (!CutSubMeshProgram(g, so, &plan).ok()) continue;
        PipelineChoice t = Figures(g, plan, price, c, options, capacity_bytes);
        if (BetterPipeline(t, next ? next : best)) {
          next = std::move(t);
          next_first = trial;
        }
      }
    }
    if (!next) break;
    best = std::move(next);
    first = next_first;
  }
  return *best;
}

Status RecordPipelineChoice(Recorder& recorder, const BuildAtFn& build,
                            const PipelineChoice& choice, const SearchOptions& options) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, build(choice.micro_batch));
  SHARDSCOPE_RETURN_IF_ERROR(ApplySubMeshStrategies(choice, &model.graph));
  SHARDSCOPE_ASSIGN_OR_RETURN(SubMeshPlan plan,
                              PlanSubMeshPipeline(&model, CutOptions(choice, options)));
  return recorder.RecordSubMeshPlan(model.graph, plan);
}

SearchOptions StageOptions(const SearchOptions& options, int stage_devices) {
  SearchOptions within = options;
  within.devices = stage_devices;
  within.device_mesh = SubMeshOf(options.device_mesh, stage_devices);
  within.memory_budget_bytes = 0;
  within.gradient_bucket_choices.clear();  // stages are priced in the plan's bucket
  return within;
}

Result<PipelineChoice> PriceSubMeshStages(ModelGraph model, PipelineChoice c,
                                          const SearchOptions& options, double capacity_bytes) {
  SHARDSCOPE_ASSIGN_OR_RETURN(SubMeshPlan plan,
                              PlanSubMeshPipeline(&model, CutOptions(c, options)));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ProgramPrice price,
      PriceProgram(model.graph, plan.program, StageOptions(options, c.stage_devices)));
  return Figures(model.graph, plan, price, std::move(c), options, capacity_bytes);
}

Result<PipelineChoice> ChooseAnyPipeline(const BuildAtFn& build, int64_t batch, int devices,
                                         int stages, const SearchOptions& options,
                                         double capacity_bytes) {
  if (stages > 0)
    return ChoosePipeline(build, batch, stages, options, capacity_bytes, devices / stages);
  std::optional<PipelineChoice> best;
  Status last;
  for (int p = 2; p <= devices; ++p) {
    if (devices % p != 0) continue;
    auto c = ChoosePipeline(build, batch, p, options, capacity_bytes, devices / p);
    if (!c.ok()) {
      last = c.status();
      continue;
    }
    if (BetterPipeline(*c, best)) best = std::move(*c);
  }
  if (!best) return last.ok() ? Status::Invalid("pipeline: fewer than 2 devices") : last;
  return *best;
}

std::vector<int> StageDevices(const StageReport& stage) {
  std::vector<int> devices;
  for (int d = 0; d < stage.devices; ++d) devices.push_back(stage.device + d);
  return devices;
}

Status ApplySubMeshStrategies(const PipelineChoice& choice, Graph* forward) {
  if (choice.strategies.empty()) return Status::Ok();
  for (const Node& n : forward->nodes()) {
    const auto it = choice.strategies.find(n.name);
    if (it == choice.strategies.end())
      return Status::Internal("pipeline stages: no strategy for operator '" + n.name + "'");
    forward->mutable_node(n.id).annotations = it->second;
  }
  return Status::Ok();
}

}  // namespace shardscope::cli
