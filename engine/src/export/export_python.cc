// PyTorch DTensor and JAX exports: a Python module holding the meshes and per-tensor
// placements / PartitionSpecs, with functions that apply them (docs/export.md).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "export/export_writers.h"

namespace shardscope::export_detail {
namespace {

std::string Py(const std::string& s) { return nlohmann::json(s).dump(); }

// A Python tuple literal of already-written items ("(a,)" for one item).
std::string PyTuple(const std::vector<std::string>& items) {
  std::string out = "(";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + (items.size() == 1 ? ",)" : ")");
}

// Meshes by (rank order, shape, names), named mesh0, mesh1, ... in order of first use.
class MeshTable {
 public:
  // The name of `m` with its axes in `order` (every axis once): ranks row-major over the
  // reordered axes. The one-device mesh (no axes) becomes ([0], (1,), ("rep",)): both
  // DeviceMesh and jax's Mesh want at least one dimension.
  std::string Name(const DeviceMesh& m, const std::vector<int>& order) {
    std::vector<int> ranks;
    Shape shape;
    std::vector<std::string> names;
    if (order.empty()) {
      ranks = {0};
      shape = {1};
      names = {"rep"};
    }
    for (int a : order) {
      shape.push_back(m.axis_size(a));
      names.push_back(m.axis_name(a));
    }
    if (!order.empty()) {
      std::vector<int64_t> pos(order.size(), 0), coords(m.num_axes(), 0);
      for (int i = 0; i < m.size(); ++i) {
        for (size_t k = 0; k < order.size(); ++k) coords[order[k]] = pos[k];
        ranks.push_back(m.rank_at(coords));
        for (int k = static_cast<int>(order.size()) - 1; k >= 0 && ++pos[k] == shape[k]; --k)
          pos[k] = 0;
      }
    }
    std::ostringstream key;
    key << PyList(ranks) << ", " << PyShape(shape) << ", ";
    std::vector<std::string> quoted;
    for (const std::string& n : names) quoted.push_back(Py(n));
    key << PyTuple(quoted);
    auto [it, added] = names_.try_emplace(key.str(), "mesh" + std::to_string(order_.size()));
    if (added) order_.push_back(key.str());
    return it->second;
  }
  std::string Literal() const {
    std::string out = "{\n";
    for (const std::string& key : order_) out += "    " + Py(names_.at(key)) + ": (" + key + "),\n";
    return out + "}";
  }
  static std::string PyShape(const Shape& shape) {
    std::vector<std::string> items;
    for (int64_t d : shape) items.push_back(std::to_string(d));
    return PyTuple(items);
  }

 private:
  static std::string PyList(const std::vector<int>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + "]";
  }
  std::map<std::string, std::string> names_;
  std::vector<std::string> order_;
};

const char* KindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kParameter:
      return "parameter";
    case ValueKind::kInput:
      return "input";
    case ValueKind::kLabel:
      return "label";
    default:
      return "activation";
  }
}

std::string UnsupportedLiteral(const std::vector<std::string>& lines) {
  std::string out = "[\n";
  for (const std::string& l : lines) out += "    " + Py(l) + ",\n";
  return out + "]";
}

// DTensor shards a dimension over several mesh dimensions major-first in mesh order, so a
// dimension whose axes run against the mesh order gets a mesh with its axes reordered.
std::vector<int> DTensorAxisOrder(const Layout& layout) {
  const int n = layout.mesh().num_axes();
  std::vector<int> order;
  bool ascending = true;
  for (const auto& axes : layout.dims_axes())
    ascending = ascending && std::is_sorted(axes.begin(), axes.end());
  if (ascending) {
    for (int a = 0; a < n; ++a) order.push_back(a);
    return order;
  }
  for (const auto& axes : layout.dims_axes()) order.insert(order.end(), axes.begin(), axes.end());
  for (int a = 0; a < n; ++a)
    if (std::find(order.begin(), order.end(), a) == order.end()) order.push_back(a);
  return order;
}

const char kDTensorHelpers[] = R"(
_meshes = {}


def device_mesh(name, device_type="cpu"):
    """The DeviceMesh called `name` in MESHES (built once per device type)."""
    key = (name, device_type)
    if key not in _meshes:
        ranks, shape, names = MESHES[name]
        _meshes[key] = DeviceMesh(device_type, torch.tensor(ranks).reshape(shape),
                                  mesh_dim_names=names)
    return _meshes[key]


def placement(name, device_type="cpu"):
    """(DeviceMesh, placements) of the plan's tensor `name`."""
    _, mesh_name, placements, _ = PLAN[name]
    return device_mesh(mesh_name, device_type), placements


def apply(module, names=None, device_type="cpu"):
    """Replaces the parameters of `module` by DTensors laid out as planned. `names` maps the
    plan's parameter names to the module's where they differ. Returns the plan names applied."""
    names = names or {}
    applied = []
    for plan_name, (kind, _, _, shape) in PLAN.items():
        if kind != "parameter":
            continue
        path = names.get(plan_name, plan_name).split(".")
        owner = module
        for part in path[:-1]:
            owner = getattr(owner, part, None)
        param = getattr(owner, path[-1], None) if owner is not None else None
        if not isinstance(param, torch.nn.Parameter):
            continue
        if tuple(param.shape) != shape:
            raise ValueError(f"{plan_name}: plan shape {shape}, module shape {tuple(param.shape)}")
        mesh, placements = placement(plan_name, device_type)
        dt = distribute_tensor(param.data, mesh, placements)
        setattr(owner, path[-1], torch.nn.Parameter(dt, requires_grad=param.requires_grad))
        applied.append(plan_name)
    return applied


def redistribute(name, tensor, device_type="cpu"):
    """`tensor` (a DTensor) moved to the layout the plan gives `name`."""
    mesh, placements = placement(name, device_type)
    return tensor.redistribute(mesh, placements)
)";

const char kJaxHelpers[] = R"(

def mesh(name, devices=None):
    """The jax.sharding.Mesh called `name` in MESHES over `devices` (default jax.devices())."""
    ranks, shape, names = MESHES[name]
    devices = np.asarray(jax.devices() if devices is None else devices, dtype=object)
    return Mesh(devices[np.asarray(ranks)].reshape(shape), names)


def sharding(name, devices=None):
    """NamedSharding of the plan's tensor `name`."""
    _, mesh_name, spec, _ = PLAN[name]
    return NamedSharding(mesh(mesh_name, devices), spec)


def apply(params, names=None, devices=None):
    """A copy of the dict `params` with each planned parameter placed by jax.device_put.
    `names` maps the plan's parameter names to the dict's keys where they differ."""
    names = names or {}
    out = dict(params)
    for plan_name, (kind, _, _, shape) in PLAN.items():
        key = names.get(plan_name, plan_name)
        if kind != "parameter" or key not in out:
            continue
        if tuple(out[key].shape) != shape:
            raise ValueError(f"{plan_name}: plan shape {shape}, array shape {out[key].shape}")
        out[key] = jax.device_put(out[key], sharding(plan_name, devices))
    return out
)";

// One PLAN entry: name: (kind, mesh, layout, global shape).
std::string PlanRow(const ExportedTensor& t, const std::string& mesh, const std::string& layout) {
  return "    " + Py(t.name) + ": (" + Py(KindName(t.kind)) + ", " + Py(mesh) + ", " + layout +
         ", " + MeshTable::PyShape(t.layout.shape()) + "),\n";
}

// The whole module: header, `preamble` (docstring and imports), WORLD_SIZE, MESHES, PLAN
// (`plan` rows, described by `plan_comment`), UNSUPPORTED, then the format's helpers.
std::string Module(const char* format, const std::string& model, int devices, const char* preamble,
                   const MeshTable& meshes, const char* plan_comment, const std::string& plan,
                   const std::vector<std::string>& unsupported, const char* helpers) {
  return "# Generated by `shardscope plan --export " + std::string(format) + "`: model " + model +
         " on " + std::to_string(devices) +
         " devices.\n# Layouts as docs/export.md describes them; UNSUPPORTED lists what " +
         std::string(format) + " cannot express.\n" + preamble +
         "WORLD_SIZE = " + std::to_string(devices) +
         "\n# name: (ranks in row-major order, shape, axis names)\n"
         "MESHES = " +
         meshes.Literal() + "\n# tensor: " + plan_comment + "\nPLAN = {\n" + plan +
         "}\nUNSUPPORTED = " + UnsupportedLiteral(unsupported) + "\n" + helpers;
}

}  // namespace

Result<PlanExport> WriteDTensor(const std::vector<ExportedTensor>& tensors, int devices,
                                const std::string& model) {
  PlanExport out;
  MeshTable meshes;
  std::string plan;
  for (const ExportedTensor& t : tensors) {
    const Layout& l = t.layout;
    const std::vector<int> order = DTensorAxisOrder(l);
    std::vector<std::string> placements;
    if (order.empty()) placements = {"Replicate()"};  // the one-device mesh
    for (int a : order) {
      const int d = l.DimOfAxis(a);
      placements.push_back(d >= 0               ? "Shard(" + std::to_string(d) + ")"
                           : l.IsPartialOver(a) ? "Partial()"
                                                : "Replicate()");
    }
    plan += PlanRow(t, meshes.Name(l.mesh(), order), PyTuple(placements));
  }
  out.text =
      Module("dtensor", model, devices,
             "\"\"\"Shardscope plan for PyTorch DTensor: meshes, placements, apply().\"\"\"\n"
             "import torch\n"
             "from torch.distributed.device_mesh import DeviceMesh\n"
             "from torch.distributed.tensor import Partial, Replicate, Shard, "
             "distribute_tensor\n\n",
             meshes, "(kind, mesh, placements (one per mesh dimension), global shape)", plan,
             out.unsupported, kDTensorHelpers);
  return out;
}

Result<PlanExport> WriteJax(const std::vector<ExportedTensor>& tensors, int devices,
                            const std::string& model) {
  PlanExport out;
  MeshTable meshes;
  std::string plan;
  for (const ExportedTensor& t : tensors) {
    const Layout& l = t.layout;
    const DeviceMesh& m = l.mesh();
    std::vector<std::string> spec;
    for (const std::vector<int>& axes : l.dims_axes()) {
      std::vector<std::string> quoted;
      for (int a : axes) quoted.push_back(Py(m.axis_name(a)));
      spec.push_back(quoted.empty() ? "None" : quoted.size() == 1 ? quoted[0] : PyTuple(quoted));
    }
    std::string p = "P(";
    for (size_t i = 0; i < spec.size(); ++i) p += (i ? ", " : "") + spec[i];
    p += ")";
    if (l.is_partial()) {
      std::string axes;
      for (int a : l.partial_axes()) axes += (axes.empty() ? "" : ",") + m.axis_name(a);
      out.unsupported.push_back(t.name + ": a partial sum over " + axes + " (" + l.ToString() +
                                "); a PartitionSpec has no partial sums, so its spec is the "
                                "summed tensor's");
    }
    std::vector<int> order(m.num_axes());  // the mesh's own order
    for (int a = 0; a < m.num_axes(); ++a) order[a] = a;
    plan += PlanRow(t, meshes.Name(m, order), p);
  }
  out.text = Module("jax", model, devices,
                    "\"\"\"Shardscope plan for JAX: meshes, PartitionSpecs, apply().\"\"\"\n"
                    "import numpy as np\n"
                    "import jax\n"
                    "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n\n",
                    meshes, "(kind, mesh, PartitionSpec, global shape)", plan, out.unsupported,
                    kJaxHelpers);
  return out;
}

}  // namespace shardscope::export_detail
