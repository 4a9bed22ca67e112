// MindSpore's strategy checkpoint in its JSON form (a strategy file ending in .json):
// per operator the split counts of its inputs (parallel_strategy_item), per parameter the
// device matrix and tensor map (parallel_layout_item). docs/export.md gives the fields.
#include <nlohmann/json.hpp>

#include "export/export_writers.h"

namespace shardscope::export_detail {
namespace {

using Json = nlohmann::ordered_json;

// A layout's device matrix and MindSpore tensor map (device-matrix dimensions counted from the
// right, -1 unsplit). A dimension over several mesh axes needs them adjacent and in mesh order
// (merged into one device-matrix dimension); anything else is returned as the reason.
Result<Json> MindSporeLayout(const Layout& l) {
  const DeviceMesh& m = l.mesh();
  if (m.has_explicit_ranks())
    return Status::Invalid("its mesh " + m.ToString() +
                           " orders ranks explicitly; a device matrix is row-major over ranks");
  if (l.is_partial()) return Status::Invalid("it is a partial sum " + l.ToString());
  std::vector<int> group_of(m.num_axes(), -1);
  std::vector<int64_t> dev_matrix;
  for (int a = 0; a < m.num_axes(); ++a) {
    if (group_of[a] >= 0) continue;
    const int d = l.DimOfAxis(a);
    const std::vector<int>& axes = d >= 0 ? l.dim_axes(d) : std::vector<int>{a};
    int64_t size = 1;
    for (size_t k = 0; k < axes.size(); ++k) {
      if (axes[k] != axes[0] + static_cast<int>(k) || (k == 0 && axes[0] != a)) {
        return Status::Invalid("dimension " + std::to_string(d) + " runs over mesh axes " +
                               l.ToString() +
                               " not adjacent in mesh order; a tensor map gives each dimension "
                               "one device-matrix dimension");
      }
      group_of[axes[k]] = static_cast<int>(dev_matrix.size());
      size *= m.axis_size(axes[k]);
    }
    dev_matrix.push_back(size);
  }
  if (dev_matrix.empty()) dev_matrix.push_back(1);
  std::vector<int64_t> tensor_map;
  for (const std::vector<int>& axes : l.dims_axes()) {
    tensor_map.push_back(
        axes.empty() ? -1 : static_cast<int64_t>(dev_matrix.size()) - 1 - group_of[axes[0]]);
  }
  Json j;
  j["dev_matrix"] = dev_matrix;
  j["tensor_map"] = tensor_map;
  j["tensor_shape"] = l.shape();
  j["field"] = 0;
  j["opt_weight_shard_step"] = 0;
  j["opt_weight_shard_size"] = 0;
  return j;
}

}  // namespace

Result<PlanExport> WriteMindSpore(const Graph& graph, const DistProgram& program,
                                  const std::vector<ExportedTensor>& tensors,
                                  const std::string& model) {
  PlanExport out;
  Json strategies = Json::object();
  for (const DistInstr& in : program.instrs) {
    if (in.kind != DistInstr::Kind::kCompute) continue;
    const Node& n = graph.nodes()[in.node];
    if (n.is_backward || strategies.contains(n.name)) continue;
    Json inputs = Json::array();
    for (int v : in.inputs) {
      const Layout& l = program.values[v].layout;
      inputs.push_back(l.BlocksPerDim());
      bool ordered = !l.mesh().has_explicit_ranks();
      for (const auto& axes : l.dims_axes())
        for (size_t k = 1; k < axes.size(); ++k) ordered = ordered && axes[k] == axes[k - 1] + 1;
      if (!ordered) {
        out.unsupported.push_back(n.name + ": input " + program.values[v].name + " " +
                                  l.ToString() + " on " + l.mesh().ToString() +
                                  ": split counts exported; which ranks hold which block is not "
                                  "(MindSpore derives it from the counts)");
      }
    }
    strategies[n.name] = Json{{"stage", 0}, {"parallel_strategy", inputs}};
  }
  Json layouts = Json::object();
  std::string others;
  for (const ExportedTensor& t : tensors) {
    if (t.kind != ValueKind::kParameter) {
      others += (others.empty() ? "" : ", ") + t.name;
      continue;
    }
    auto j = MindSporeLayout(t.layout);
    if (!j.ok()) {
      out.unsupported.push_back("parameter " + t.name +
                                ": no strategy-checkpoint layout: " + j.status().message());
      continue;
    }
    layouts[t.name] = *j;
  }
  if (!others.empty()) {
    out.unsupported.push_back(
        "inputs and activations (a strategy checkpoint holds parameter layouts only; their "
        "operators' split counts are in parallel_strategy_item): " +
        others);
  }
  Json file;
  file["current_stage"] = 0;
  file["parallel_strategy_item"] = strategies;
  file["parallel_layout_item"] = layouts;
  file["shardscope"] = Json{{"model", model},
                            {"devices", program.devices},
                            {"generated_by", "shardscope plan --export mindspore"},
                            {"unsupported", out.unsupported}};
  out.text = file.dump(2) + "\n";
  return out;
}

}  // namespace shardscope::export_detail
