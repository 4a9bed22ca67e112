// A partitioned program's layouts in the forms other frameworks read (docs/export.md):
// PyTorch DTensor (DeviceMesh + Shard/Replicate/Partial placements, as a Python module),
// JAX (Mesh + PartitionSpec, as a Python module) and MindSpore's strategy checkpoint (JSON).
// What a format cannot express is listed in the output and in PlanExport::unsupported.
#pragma once

#include <string>
#include <vector>

#include "shardscope/graph.h"
#include "shardscope/layout/layout.h"
#include "shardscope/partition.h"
#include "shardscope/status.h"

namespace shardscope {

enum class ExportFormat { kDTensor, kJax, kMindSpore };
// "dtensor", "jax", "mindspore"; anything else is an error listing them.
Result<ExportFormat> ParseExportFormat(const std::string& name);

// One forward tensor and the layout it lives in: parameters as stored, inputs as first read,
// activations as their operator produces them (a consumer wanting another layout gets a
// redistribution, which the exports do not describe).
struct ExportedTensor {
  std::string name;
  ValueKind kind = ValueKind::kActivation;
  Layout layout;
};
std::vector<ExportedTensor> ExportedTensors(const Graph& graph, const DistProgram& program);

struct PlanExport {
  std::string text;                      // the file's contents
  std::vector<std::string> unsupported;  // one line per thing the format cannot express
};

// `graph` is the program's graph (forward and backward); `model` names the model in headers.
Result<PlanExport> ExportPlan(const Graph& graph, const DistProgram& program, ExportFormat format,
                              const std::string& model);

}  // namespace shardscope
