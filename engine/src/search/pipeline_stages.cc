// Pipeline stages: layer units, their balanced contiguous split and the 1F1B price
// (pipeline_stages.h).
#include "shardscope/pipeline_stages.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/search_graph.h"
#include "shardscope/memory_fit.h"

namespace shardscope {
namespace {

using search_internal::Parts;
using search_internal::SearchGraph;

// What a stage of units [first, end) costs: per micro-batch computation and its memory.
struct StageLoad {
  double compute = 0;
  double memory = 0;
};

// Stage `stage` (on device `stage`) holding units [first, end) of `units`.
StageLoad Load(const std::vector<StageUnit>& units, int first, int end, int stage, int in_flight,
               const CostModel& cost, const DeviceMesh& mesh) {
  StageLoad load;
  // The activations it receives and sends, and their gradients back, per micro-batch.
  if (first > 0)
    load.compute +=
        2 * BoundarySeconds(cost, mesh, stage - 1, stage, units[first - 1].boundary_bytes);
  if (end < static_cast<int>(units.size()))
    load.compute +=
        2 * BoundarySeconds(cost, mesh, stage, stage + 1, units[end - 1].boundary_bytes);
  double activations = 0;
  for (int u = first; u < end; ++u) {
    load.compute += units[u].compute_seconds;
    load.memory += units[u].weight_bytes;
    activations += units[u].activation_bytes;
  }
  load.memory += activations * in_flight;
  return load;
}

// Lexicographic: the slowest stage first, then the largest memory.
struct Score {
  double slowest = std::numeric_limits<double>::infinity();
  double largest = std::numeric_limits<double>::infinity();
  bool operator<(const Score& o) const {
    return slowest != o.slowest ? slowest < o.slowest : largest < o.largest;
  }
};

}  // namespace

Result<std::vector<StageUnit>> LayerUnits(const Graph& forward, const SearchOptions& options) {
  // One device per stage, whatever strategies the model file holds (a stage runs whole).
  Graph plain = forward;
  for (const Node& n : forward.nodes()) {
    OpAnnotations& a = plain.mutable_node(n.id).annotations;
    a.in_strategy.clear();
    a.out_strategy.clear();
  }
  SearchOptions one = options;
  one.devices = 1;
  one.device_mesh = DeviceMesh();
  one.shard_blocks.clear();
  one.memory_budget_bytes = 0;
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchGraph g, SearchGraph::Build(plain, one));
  const CostModel& cm = one.cost;
  std::vector<StageUnit> units;
  std::vector<int> unit_of_op(g.ops().size(), -1);
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const search_internal::SearchOp& op = g.ops()[i];
    const std::string scope = LayerScopeOf(op.name);
    if (units.empty() || units.back().scope != scope) units.push_back({scope, {}, 0, 0, 0, 0, 0});
    StageUnit& u = units.back();
    unit_of_op[i] = static_cast<int>(units.size()) - 1;
    u.nodes.push_back(op.node);
    const Parts whole(op.letters.size(), 1);
    double params = 0, saved = 0;
    for (const search_internal::SearchOperand& in : op.inputs)
      params += in.kind == ValueKind::kParameter ? in.bytes : 0.0;
    for (const search_internal::SearchOperand& out : op.outputs) saved += out.bytes;
    // OpCompute adds the optimizer's update, which runs once per step, not per micro-batch.
    const double update = cm.MemorySeconds(params * (3 + 2 * one.optimizer_states));
    u.update_seconds += update;
    u.compute_seconds += std::max(0.0, g.OpCompute(static_cast<int>(i), whole) - update);
    u.activation_bytes += saved;
    u.weight_bytes += g.OpMemory(static_cast<int>(i), whole) - saved;
  }
  // A unit without parameters (an activation, a pooling, the loss) stays with the layer before
  // it (the first ones with the layer after them); a parameter read in several units joins them
  // and every unit between (a parameter lives on one worker).
  const int n = static_cast<int>(units.size());
  std::vector<bool> join_previous(n, false);
  int first_layer = 0;
  while (first_layer < n && units[first_layer].weight_bytes <= 0) ++first_layer;
  for (int u = 1; u < n; ++u) join_previous[u] = u <= first_layer || units[u].weight_bytes <= 0;
  std::vector<int> first_reader(forward.num_values(), -1);
  for (size_t i = 0; i < g.ops().size(); ++i) {
    for (ValueId v : forward.node(g.ops()[i].node).inputs) {
      if (forward.value(v).kind != ValueKind::kParameter) continue;
      if (first_reader[v] < 0) first_reader[v] = unit_of_op[i];
      for (int u = first_reader[v] + 1; u <= unit_of_op[i]; ++u) join_previous[u] = true;
    }
  }
  std::vector<StageUnit> merged;
  std::vector<int> merged_of(n, 0);
  for (int u = 0; u < n; ++u) {
    merged_of[u] = static_cast<int>(merged.size()) - (u > 0 && join_previous[u] ? 1 : 0);
    if (u > 0 && join_previous[u]) {
      StageUnit& m = merged.back();
      m.scope += "+" + units[u].scope;
      m.nodes.insert(m.nodes.end(), units[u].nodes.begin(), units[u].nodes.end());
      m.compute_seconds += units[u].compute_seconds;
      m.update_seconds += units[u].update_seconds;
      m.weight_bytes += units[u].weight_bytes;
      m.activation_bytes += units[u].activation_bytes;
      continue;
    }
    merged.push_back(std::move(units[u]));
  }
  // Activations crossing each cut (forward; their gradients cross back), at the planning dtype.
  std::vector<int> last_reader(forward.num_values(), -1);
  for (size_t i = 0; i < g.ops().size(); ++i) {
    for (ValueId v : forward.node(g.ops()[i].node).inputs)
      last_reader[v] = std::max(last_reader[v], merged_of[unit_of_op[i]]);
  }
  for (size_t i = 0; i < g.ops().size(); ++i) {
    for (ValueId v : forward.node(g.ops()[i].node).outputs) {
      const double bytes =
          static_cast<double>(NumElements(forward.value(v).shape)) * PrecisionBytes(one.dtype);
      for (int u = merged_of[unit_of_op[i]]; u < last_reader[v]; ++u)
        merged[u].boundary_bytes += bytes;
    }
  }
  return merged;
}

int MicroBatchesInFlight(int stage, int stages, int micro_batches) {
  return std::max(1, std::min(micro_batches, stages - stage));
}

Result<std::vector<int>> SplitStages(const std::vector<StageUnit>& units, int stages,
                                     int micro_batches, double capacity_bytes,
                                     const CostModel& cost, const DeviceMesh& mesh) {
  const int n = static_cast<int>(units.size());
  if (stages < 1) return Status::Invalid("pipeline: at least one stage");
  if (n < stages) {
    return Status::Invalid("pipeline: " + std::to_string(stages) + " stages need at least " +
                           std::to_string(stages) + " layers (name scopes), the model has " +
                           std::to_string(n) + " (a layer: the operators of one name scope " +
                           "with parameters, and the parameter-free ones after it)");
  }
  // best[k][j]: units [0, j) in k stages; cut[k][j]: where the k-th stage begins.
  std::vector<std::vector<Score>> best(stages + 1, std::vector<Score>(n + 1));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, -1));
  best[0][0] = {0, 0};
  for (int k = 1; k <= stages; ++k) {
    const int in_flight = MicroBatchesInFlight(k - 1, stages, micro_batches);
    for (int j = k; j <= n - (stages - k); ++j) {
      for (int i = k - 1; i < j; ++i) {
        if (std::isinf(best[k - 1][i].slowest)) continue;
        const StageLoad load = Load(units, i, j, k - 1, in_flight, cost, mesh);
        if (capacity_bytes > 0 && load.memory > capacity_bytes) continue;
        const Score s{std::max(best[k - 1][i].slowest, load.compute),
                      std::max(best[k - 1][i].largest, load.memory)};
        if (s < best[k][j]) {
          best[k][j] = s;
          cut[k][j] = i;
        }
      }
    }
  }
  if (cut[stages][n] < 0) {
    int largest = 0;
    for (int u = 1; u < n; ++u) {
      const double m = units[u].weight_bytes + units[u].activation_bytes;
      if (m > units[largest].weight_bytes + units[largest].activation_bytes) largest = u;
    }
    return Status::Invalid(
        "pipeline: no split into " + std::to_string(stages) + " stages fits " +
        std::to_string(static_cast<int64_t>(capacity_bytes)) + " bytes per device; the largest " +
        "layer is '" + units[largest].scope + "' (" +
        std::to_string(static_cast<int64_t>(units[largest].weight_bytes)) + " bytes of weights, " +
        std::to_string(static_cast<int64_t>(units[largest].activation_bytes)) +
        " of activations per micro-batch)");
  }
  std::vector<int> first(stages);
  for (int k = stages, j = n; k > 0; j = cut[k][j], --k) first[k - 1] = cut[k][j];
  return first;
}

OneFOneBPrice PriceOneFOneB(const std::vector<double>& stage_seconds,
                            const std::vector<double>& update_seconds, int micro_batches) {
  OneFOneBPrice price;
  const int p = static_cast<int>(stage_seconds.size());
  const int m = std::max(1, micro_batches);
  for (double s : stage_seconds)
    price.slowest_stage_seconds = std::max(price.slowest_stage_seconds, s);
  double update = 0;
  for (double u : update_seconds) update = std::max(update, u);
  price.bubble_fraction = p > 0 ? static_cast<double>(p - 1) / (m + p - 1) : 0.0;
  price.step_seconds = (m + std::max(p, 1) - 1) * price.slowest_stage_seconds + update;
  return price;
}

double BoundarySeconds(const CostModel& cost, const DeviceMesh& mesh, int src, int dst,
                       double bytes) {
  if (bytes <= 0 || src == dst) return 0.0;
  double bandwidth = cost.default_bandwidth, latency = cost.latency_s;
  if (mesh.num_axes() > 0) {
    bandwidth = std::numeric_limits<double>::infinity();
    latency = 0;
    // Ranks are row-major on the mesh: the last axis varies fastest.
    int64_t a = src, b = dst;
    for (int axis = mesh.num_axes() - 1; axis >= 0; --axis) {
      const int64_t size = mesh.axis_size(axis);
      if (a % size != b % size) {
        bandwidth = std::min(bandwidth, cost.AxisBandwidth(mesh.axis_name(axis)));
        latency = std::max(latency, cost.AxisLatency(mesh.axis_name(axis)));
      }
      a /= size;
      b /= size;
    }
    if (std::isinf(bandwidth)) bandwidth = cost.default_bandwidth;
  }
  return latency + bytes / bandwidth;
}

}  // namespace shardscope
