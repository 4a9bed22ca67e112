#include "cli/resource_checks.h"

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

Status CheckTrainMemory(const ModelFile& mf, const Graph& graph, const DistProgram& program,
                        int devices_here, int64_t data_bytes) {
  const int states = OptimizerStateTensors(mf.training().optimizer.kind);
  SHARDSCOPE_ASSIGN_OR_RETURN(int64_t per_rank, RankMemoryBytes(graph, program, states));
  auto ranks = CheckedMul(per_rank, devices_here);
  auto total = ranks ? CheckedAdd(*ranks, data_bytes) : std::nullopt;
  const Budget budget = MemoryBudget();
  if (total && (budget.bytes == 0 || *total <= budget.bytes)) return Status::Ok();
  // The largest value names where the memory goes: the layer of its producer or reader.
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
      where + ": training needs " + FormatBytes(static_cast<double>(per_rank)) + " per device x " +
      std::to_string(devices_here) + " device(s) on this machine" +
      (data_bytes > 0 ? " + " + FormatBytes(static_cast<double>(data_bytes)) + " of data" : "") +
      ", more than the " + budget.text + "; the largest tensor is " +
      std::string(ValueKindName(v.kind)) + " '" + v.name + "' " + ShapeToString(v.shape) + " (" +
      FormatBytes(static_cast<double>(NumElements(v.shape)) * DTypeBytes(v.dtype)) +
      "). `shardscope plan` prices it without running it");
}

}  // namespace shardscope::cli
