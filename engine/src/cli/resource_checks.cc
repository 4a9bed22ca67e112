#include "cli/resource_checks.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "cli/limits.h"
#include "cli/progress.h"
#include "shardscope/base/format.h"
#include "shardscope/checked_math.h"
#include "shardscope/optimizer.h"

namespace shardscope::cli {
namespace {

// The memory a run may take, and how the figure came about (for messages).
struct Budget {
  int64_t bytes = 0;  // 0: unknown (no /proc/meminfo): not checked
  std::string text;
};

Budget MemoryBudget() {
  const int64_t available = AvailableMemoryBytes();
  const int64_t percent = GetLimits().memory_percent;
  Budget b;
  b.bytes = static_cast<int64_t>(static_cast<double>(available) * percent / 100.0);
  b.text = FormatBytes(static_cast<double>(b.bytes)) + " (" + std::to_string(percent) +
           "% of the " + FormatBytes(static_cast<double>(available)) +
           " available; --resource-limit memory_percent=N changes the share)";
  return b;
}

std::string At(const SourceLocation& loc, const std::string& fallback) {
  return loc.line > 0 ? loc.ToString() : fallback;
}

}  // namespace

Status CheckInProcessDevices(const ModelFile& mf, int devices, bool from_flag) {
  const int64_t limit = GetLimits().in_process_devices;
  if (devices <= limit) return Status::Ok();
  const std::string where = from_flag ? "--devices " + std::to_string(devices)
                                      : At(mf.parallel().devices_location, mf.path()) +
                                            ": parallel.devices " + std::to_string(devices);
  return Status::Invalid(where + ": an in-process run starts one thread per device, at most " +
                         std::to_string(limit) +
                         " (--resource-limit in_process_devices=N); run more under mpirun, or "
                         "`shardscope plan` for a dry run");
}

Result<int64_t> SyntheticDataBytes(const ModelFile& mf) {
  const DataConfig& d = mf.data();
  if (d.dataset != "synthetic") return int64_t{0};
  const int64_t n = d.synthetic_size > 0 ? d.synthetic_size : 4096;
  // Made whole (train + a quarter for test), then copied into the two splits.
  Shape all = {n + n / 4};
  all.insert(all.end(), mf.example_shape().begin(), mf.example_shape().end());
  auto images = CheckedBytes(all, sizeof(float));
  auto labels = CheckedBytes({n + n / 4}, sizeof(int32_t));
  auto once = images && labels ? CheckedAdd(*images, *labels) : std::nullopt;
  auto bytes = once ? CheckedMul(*once, 2) : std::nullopt;
  const Budget budget = MemoryBudget();
  if (!bytes || (budget.bytes > 0 && *bytes > budget.bytes)) {
    return Status::Invalid(
        At(d.synthetic_size_location, mf.path()) + ": data.synthetic_size " + std::to_string(n) +
        " examples of " + ShapeToString(mf.example_shape()) + " need " +
        (bytes ? FormatBytes(static_cast<double>(*bytes)) : std::string("more than 2^63 bytes")) +
        " while the data set is made, more than the " + budget.text);
  }
  return *bytes;
}

Result<RankMemory> PlannedRankMemory(const ModelFile& mf, const Graph& graph,
                                     const DistProgram& program, Precision dtype) {
  return PlanRankMemory(graph, program, OptimizerStateTensors(mf.training().optimizer.kind),
                        PrecisionBytes(dtype));
}

Result<int64_t> PlannedMemoryPerDevice(const ModelFile& mf, const Graph& graph,
                                       const DistProgram& program, Precision dtype) {
  SHARDSCOPE_ASSIGN_OR_RETURN(RankMemory m, PlannedRankMemory(mf, graph, program, dtype));
  return m.total;
}

int DevicesOnThisHost(bool mpi, int devices) {
  if (!mpi) return devices;
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  return std::max(1, local ? std::atoi(local) : 1);
}

namespace {

// Refuses `need` (what the devices on this machine take, as text) against `budget`; the
// largest value names where the memory goes: the layer of its producer or reader.
Status RefuseMemory(const ModelFile& mf, const Graph& graph, const std::string& need,
                    const Budget& budget, const std::string& tail) {
  ValueId largest = 0;
  for (const Value& v : graph.values()) {
    if (NumElements(v.shape) > NumElements(graph.value(largest).shape)) largest = v.id;
  }
  const Value& v = graph.value(largest);
  NodeId node = v.producer;
  if (node == kNoNode) {
    const auto consumers = graph.Consumers();
    if (!consumers[largest].empty()) node = consumers[largest][0];
  }
  const std::string where =
      node != kNoNode && !graph.node(node).source.empty() ? graph.node(node).source : mf.path();
  return Status::Invalid(
      where + ": training needs " + need + ", more than the " + budget.text +
      "; the largest tensor is " + std::string(ValueKindName(v.kind)) + " '" + v.name + "' " +
      ShapeToString(v.shape) + " (" +
      FormatBytes(static_cast<double>(NumElements(v.shape)) * DTypeBytes(v.dtype)) + ")" + tail);
}

std::string DataText(int64_t data_bytes) {
  return data_bytes > 0 ? " + " + FormatBytes(static_cast<double>(data_bytes)) + " of data" : "";
}

}  // namespace

Status CheckTrainMemory(const ModelFile& mf, const Graph& graph, const DistProgram& program,
                        int devices_here, int64_t data_bytes) {
  SHARDSCOPE_ASSIGN_OR_RETURN(int64_t per_rank, PlannedMemoryPerDevice(mf, graph, program));
  auto ranks = CheckedMul(per_rank, devices_here);
  auto total = ranks ? CheckedAdd(*ranks, data_bytes) : std::nullopt;
  const Budget budget = MemoryBudget();
  if (total && (budget.bytes == 0 || *total <= budget.bytes)) return Status::Ok();
  return RefuseMemory(mf, graph,
                      FormatBytes(static_cast<double>(per_rank)) + " per device x " +
                          std::to_string(devices_here) + " device(s) on this machine" +
                          DataText(data_bytes),
                      budget, ". `shardscope plan` prices it without running it");
}

Status CheckPlacedMemory(const ModelFile& mf, const Graph& graph, const PipelinePlan& plan,
                         int micro_batches, int devices_here, int64_t data_bytes) {
  const int states = OptimizerStateTensors(mf.training().optimizer.kind);
  std::vector<std::pair<int64_t, int>> workers;  // (bytes, worker), largest first
  for (int w = 0; w < plan.train.workers; ++w) {
    SHARDSCOPE_ASSIGN_OR_RETURN(int64_t bytes,
                                WorkerMemoryBytes(graph, plan, micro_batches, states, w));
    workers.emplace_back(bytes, w);
  }
  std::sort(workers.begin(), workers.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  // Which workers share this machine is not known before they start: the largest ones.
  const int here = std::min<int>(devices_here, static_cast<int>(workers.size()));
  std::optional<int64_t> total = data_bytes;
  for (int i = 0; i < here && total; ++i) total = CheckedAdd(*total, workers[i].first);
  const Budget budget = MemoryBudget();
  if (total && (budget.bytes == 0 || *total <= budget.bytes)) return Status::Ok();
  const std::string sum =
      total ? FormatBytes(static_cast<double>(*total - data_bytes)) : "more than 2^63 bytes";
  return RefuseMemory(mf, graph,
                      sum + " for " + std::to_string(here) + " worker(s) on this machine (worker " +
                          std::to_string(workers[0].second) + " alone " +
                          FormatBytes(static_cast<double>(workers[0].first)) + ")" +
                          DataText(data_bytes),
                      budget, "");
}

}  // namespace shardscope::cli
