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

// Fits first; among fitting ones the least step, otherwise the least memory.
bool Better(const PipelineChoice& c, const std::optional<PipelineChoice>& best) {
  if (!best) return true;
  if (c.fits != best->fits) return c.fits;
  return c.fits ? c.price.step_seconds < best->price.step_seconds
                : c.max_memory_bytes < best->max_memory_bytes;
}

}  // namespace

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
  // The split balances the stages as one device each; memory is checked on the shards below.
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<int> first, SplitStages(units, stages, micro_batches, 0,
                                                                  options.cost, DeviceMesh()));
  first.push_back(static_cast<int>(units.size()));
  Graph& g = model.graph;
  SubMeshOptions so;
  so.stages = stages;
  so.micro_batches = micro_batches;
  c.stage.resize(stages);
  for (int s = 0; s < stages; ++s) {
    StageReport& r = c.stage[s];
    r.device = s * k;
    r.devices = k;
    r.first_op = g.node(units[first[s]].nodes.front()).name;
    r.last_op = g.node(units[first[s + 1] - 1].nodes.back()).name;
    for (int u = first[s]; u < first[s + 1]; ++u) {
      for (NodeId n : units[u].nodes) so.stage_of[g.node(n).name] = c.worker_of[g.node(n).name] = s;
    }
  }
  SearchOptions within = options;
  within.devices = k;
  within.device_mesh = SubMeshOf(options.device_mesh, k);
  within.memory_budget_bytes = 0;
  if (options.mode != SearchMode::kSemiAuto) {
    SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult searched, SearchStrategies(g, within));
    SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(searched, &g));
  }
  for (const Node& n : g.nodes()) c.strategies[n.name] = n.annotations;
  so.partition.devices = k;
  so.partition.meshes = options.meshes;
  so.partition.cost = options.cost;
  so.partition.element_bytes = PrecisionBytes(options.dtype);
  SHARDSCOPE_ASSIGN_OR_RETURN(SubMeshPlan plan, PlanSubMeshPipeline(&model, so));
  SHARDSCOPE_ASSIGN_OR_RETURN(ProgramPrice price, PriceProgram(g, plan.program, within));
  std::vector<double> updates(stages, 0.0);
  for (const Node& n : g.nodes()) {
    if (!n.is_backward && so.stage_of.count(n.name) > 0)
      c.stage[so.stage_of.at(n.name)].compute_seconds += price.node_seconds[n.id];
  }
  for (size_t i = 0; i < plan.program.instrs.size(); ++i)
    c.stage[plan.instr_stage[i]].compute_seconds += price.instr_seconds[i];
  // OpCompute holds the optimizer's update of the shards, which runs once per step.
  const double element = PrecisionBytes(options.dtype);
  for (size_t i = 0; i < plan.program.param_grads.size(); ++i) {
    const int home = plan.program.param_grads[i].first;
    const double bytes =
        element * static_cast<double>(NumElements(plan.program.values[home].layout.ShardShape()));
    const double update = options.cost.MemorySeconds(bytes * (3 + 2 * options.optimizer_states));
    updates[plan.param_stage[i]] += update;
    c.stage[plan.param_stage[i]].compute_seconds -= update;
  }
  // Matching ranks of two stages exchange one shard each, paid by sender and receiver.
  const DeviceMesh& world =
      options.device_mesh.size() == stages * k ? options.device_mesh : DeviceMesh();
  for (const StageCut& cut : plan.cuts) {
    const double t = BoundarySeconds(options.cost, world, cut.src_stage * k, cut.dst_stage * k,
                                     static_cast<double>(cut.bytes) * element / 4.0);
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
  c.price = PriceOneFOneB(seconds, updates, micro_batches);
  c.fits = capacity_bytes <= 0 || static_cast<double>(c.max_memory_bytes) <= capacity_bytes;
  return c;
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
    if (Better(*c, best)) best = std::move(*c);
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
