// The tensors an export describes and the dispatch to the three writers.
#include "shardscope/plan_export.h"

#include "export/export_writers.h"

namespace shardscope {

Result<ExportFormat> ParseExportFormat(const std::string& name) {
  if (name == "dtensor") return ExportFormat::kDTensor;
  if (name == "jax") return ExportFormat::kJax;
  if (name == "mindspore") return ExportFormat::kMindSpore;
  return Status::Invalid("export format '" + name +
                         "': expected dtensor (PyTorch DTensor), jax (JAX PartitionSpec) or "
                         "mindspore (strategy checkpoint, JSON)");
}

std::vector<ExportedTensor> ExportedTensors(const Graph& graph, const DistProgram& program) {
  std::vector<ExportedTensor> out;
  for (const Value& v : graph.values()) {
    if (v.kind == ValueKind::kConstant) continue;
    if (v.producer != kNoNode && graph.nodes()[v.producer].is_backward) continue;
    int idx = v.id < static_cast<ValueId>(program.home.size()) ? program.home[v.id] : -1;
    if (idx < 0) {  // inputs and labels: the first layout an operator reads them in
      for (int b : program.batch_values) {
        if (program.values[b].global == v.id) {
          idx = b;
          break;
        }
      }
    }
    if (idx < 0) continue;
    out.push_back({v.name, v.kind, program.values[idx].layout});
  }
  return out;
}

Result<PlanExport> ExportPlan(const Graph& graph, const DistProgram& program, ExportFormat format,
                              const std::string& model) {
  const std::vector<ExportedTensor> tensors = ExportedTensors(graph, program);
  switch (format) {
    case ExportFormat::kDTensor:
      return export_detail::WriteDTensor(tensors, program.devices, model);
    case ExportFormat::kJax:
      return export_detail::WriteJax(tensors, program.devices, model);
    case ExportFormat::kMindSpore:
      return export_detail::WriteMindSpore(graph, program, tensors, model);
  }
  return Status::Internal("ExportPlan: unknown format");
}

}  // namespace shardscope
