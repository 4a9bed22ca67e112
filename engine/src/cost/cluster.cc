// Cluster profiles: reading the YAML (located errors), laying mesh axes onto the topology,
// and the portable cost model they give.
#include "shardscope/cost/cluster.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

#include "shardscope/cost/profile_fields.h"

#include "shardscope/base/names.h"

namespace shardscope {
namespace {

// A failure inside the reader; caught at ParseClusterProfile (no exception leaves it).
struct ProfileError {
  std::string message;
};

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void Fail(const YAML::Node& node, const std::string& field,
                         const std::string& message) const {
    const YAML::Mark m = node.Mark();
    std::string at = path_;
    if (m.line >= 0) at += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    throw ProfileError{at + ": " + field + ": " + message};
  }

  // The keys of mapping `node` (named `field`), each checked against `allowed`.
  void CheckKeys(const YAML::Node& node, const std::string& field,
                 const std::vector<std::string>& allowed) const {
    if (!node.IsMap()) Fail(node, field, "must be a mapping (key: value lines)");
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string known;
      for (const std::string& a : allowed) known += (known.empty() ? "" : ", ") + a;
      Fail(it->first, field.empty() ? key : field + "." + key,
           "unknown field" + DidYouMean(key, allowed) + " (known: " + known + ")");
    }
  }

  double Number(const YAML::Node& node, const std::string& field, bool positive) const {
    double v = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !std::isfinite(v) || v < 0 ||
        (positive && v == 0))
      Fail(node, field,
           std::string("must be a ") + (positive ? "positive" : "non-negative") +
               " number, found '" + (node.IsScalar() ? node.Scalar() : "?") + "'");
    return v;
  }
  int64_t Count(const YAML::Node& node, const std::string& field) const {
    const double v = Number(node, field, true);
    if (v != std::floor(v) || v > 1e9) Fail(node, field, "must be a whole number");
    return static_cast<int64_t>(v);
  }
  std::string Text(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar()) Fail(node, field, "must be text");
    return node.Scalar();
  }

 private:
  std::string path_;
};

ClusterLink ReadLink(const Reader& r, const YAML::Node& node, const std::string& field) {
  r.CheckKeys(node, field, {"kind", "bandwidth", "latency"});
  ClusterLink l;
  if (node["kind"]) l.kind = r.Text(node["kind"], field + ".kind");
  if (!node["bandwidth"]) r.Fail(node, field, "missing bandwidth (bytes/s per direction)");
  l.bandwidth = r.Number(node["bandwidth"], field + ".bandwidth", true);
  if (node["latency"]) l.latency_s = r.Number(node["latency"], field + ".latency", false);
  return l;
}

ClusterProfile Read(const Reader& r, const YAML::Node& root, const std::string& path) {
  r.CheckKeys(root, "",
              {"name", "description", "nodes", "devices_per_node", "torus", "links", "device",
               "collective_launch", "gradient_bucket", "in_process"});
  ClusterProfile c;
  c.path = path;
  if (!root["name"]) r.Fail(root, "name", "missing (the name `--cluster` takes)");
  c.name = r.Text(root["name"], "name");
  if (root["description"]) c.description = r.Text(root["description"], "description");
  if (root["nodes"]) c.nodes = r.Count(root["nodes"], "nodes");
  if (root["devices_per_node"])
    c.devices_per_node = r.Count(root["devices_per_node"], "devices_per_node");
  if (const YAML::Node t = root["torus"]) {
    if (!t.IsSequence() || t.size() == 0 || t.size() > 3)
      r.Fail(t, "torus", "must be a list of 1 to 3 dimensions, e.g. [4, 4, 4]");
    for (size_t i = 0; i < t.size(); ++i)
      c.torus.push_back(r.Count(t[i], "torus[" + std::to_string(i) + "]"));
  }
  if (!root["links"]) r.Fail(root, "links", "missing (node, network or torus links)");
  const YAML::Node links = root["links"];
  r.CheckKeys(links, "links", {"node", "network", "torus"});
  if (links["node"]) c.node = ReadLink(r, links["node"], "links.node");
  if (links["network"]) c.network = ReadLink(r, links["network"], "links.network");
  if (links["torus"]) c.torus_link = ReadLink(r, links["torus"], "links.torus");
  if (!c.torus.empty() && !c.torus_link.present())
    r.Fail(links, "links.torus", "a torus needs its link (bandwidth, latency)");
  if (c.torus.empty() && !c.node.present())
    r.Fail(links, "links.node", "missing: the link between devices of a node");
  if (c.torus.empty() && c.nodes > 1 && !c.network.present())
    r.Fail(links, "links.network", "missing: more than one node needs the link between nodes");
  if (!root["device"]) r.Fail(root, "device", "missing (memory, memory_bandwidth, flops)");
  const YAML::Node dev = root["device"];
  r.CheckKeys(dev, "device", {"memory", "memory_bandwidth", "flops"});
  if (!dev["memory"]) r.Fail(dev, "device.memory", "missing (bytes per device)");
  c.memory_bytes = r.Number(dev["memory"], "device.memory", true);
  if (!dev["memory_bandwidth"]) r.Fail(dev, "device.memory_bandwidth", "missing (bytes/s)");
  c.memory_bandwidth = r.Number(dev["memory_bandwidth"], "device.memory_bandwidth", true);
  if (!dev["flops"]) r.Fail(dev, "device.flops", "missing (flop/s per dtype: f32, bf16, fp16)");
  const YAML::Node flops = dev["flops"];
  r.CheckKeys(flops, "device.flops", {"f32", "bf16", "fp16"});
  for (auto it = flops.begin(); it != flops.end(); ++it) {
    const std::string dtype = it->first.as<std::string>();
    c.flops[dtype] = r.Number(it->second, "device.flops." + dtype, true);
  }
  if (root["collective_launch"])
    c.collective_launch_s = r.Number(root["collective_launch"], "collective_launch", false);
  c.gradient_bucket_given = static_cast<bool>(root["gradient_bucket"]);
  if (root["gradient_bucket"])
    c.gradient_bucket_bytes = r.Number(root["gradient_bucket"], "gradient_bucket", false);
  else if (root["in_process"])
    c.gradient_bucket_bytes = 0;
  if (const YAML::Node ip = root["in_process"]) {
    c.in_process = true;
    std::vector<std::string> names;
    for (const ProfileField& f : CostProfileFields())
      if (f.in_process) names.push_back(f.name);
    r.CheckKeys(ip, "in_process", names);
    CostModel m;
    for (const ProfileField& f : CostProfileFields()) {
      if (f.in_process && ip[f.name])
        *f.number(m) = r.Number(ip[f.name], std::string("in_process.") + f.name, false);
    }
    c.overhead = m.in_process;
  }
  return c;
}

std::string LevelOf(const ClusterProfile& c, int64_t stride, int64_t size) {
  if (size <= 1) return "node";
  const int64_t span = stride * size;  // the ranks one group spreads over
  if (span <= c.devices_per_node && c.devices_per_node % span == 0) return "node";
  return c.nodes > 1 || c.devices_per_node < span ? "network" : "node";
}

}  // namespace

int64_t ClusterProfile::devices() const {
  if (!torus.empty()) {
    int64_t n = 1;
    for (int64_t t : torus) n *= t;
    return n;
  }
  return devices_per_node * nodes;
}

Result<ClusterProfile> ParseClusterProfile(const std::string& text, const std::string& path) {
  try {
    const YAML::Node root = YAML::Load(text);
    return Read(Reader(path), root, path);
  } catch (const ProfileError& e) {
    return Status::Invalid(e.message);
  } catch (const YAML::Exception& e) {
    return Status::Invalid(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

Result<ClusterProfile> LoadClusterProfile(const std::string& name_or_path) {
  for (const auto& [name, text] : ShippedClusterProfiles()) {
    if (name == name_or_path) return ParseClusterProfile(text, "shipped:" + name);
  }
  std::ifstream in(name_or_path);
  if (!in) {
    std::vector<std::string> names;
    std::string list;
    for (const auto& [name, text] : ShippedClusterProfiles()) {
      names.push_back(name);
      list += (list.empty() ? "" : ", ") + name;
    }
    return Status::Invalid("--cluster " + name_or_path + ": neither a shipped cluster" +
                           DidYouMean(name_or_path, names) + " nor a readable file (shipped: " +
                           list + "; `shardscope clusters` lists them)");
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseClusterProfile(text.str(), name_or_path);
}

Result<DeviceMesh> ClusterDeviceMesh(const ClusterProfile& c, int64_t devices) {
  const std::string who = "cluster " + c.name;
  if (devices < 1 || devices > c.devices())
    return Status::Invalid(who + " has " + std::to_string(c.devices()) + " devices, not " +
                           std::to_string(devices));
  if (!c.torus.empty()) {
    // Fill the innermost dimensions first: a slice of the torus.
    std::vector<int64_t> sizes(c.torus.size(), 1);
    int64_t left = devices;
    for (size_t i = c.torus.size(); i-- > 0 && left > 1;) {
      const int64_t take = std::min(left, c.torus[i]);
      if (left % take != 0)
        return Status::Invalid(who + ": " + std::to_string(devices) +
                               " devices do not form a slice of the torus (a product of its "
                               "dimensions' sizes, innermost first)");
      sizes[i] = take;
      left /= take;
    }
    static const char* const kNames[] = {"x", "y", "z"};
    Shape shape;
    std::vector<std::string> names;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == 1) continue;
      shape.push_back(sizes[i]);
      names.push_back(kNames[i]);
    }
    if (shape.empty()) return DeviceMesh::Create({1}, {"x"});
    return DeviceMesh::Create(shape, names);
  }
  if (devices <= c.devices_per_node) return DeviceMesh::Create({devices}, {"local"});
  if (devices % c.devices_per_node != 0)
    return Status::Invalid(who + ": " + std::to_string(devices) +
                           " devices are not whole nodes of " + std::to_string(c.devices_per_node));
  return DeviceMesh::Create({devices / c.devices_per_node, c.devices_per_node}, {"node", "local"});
}

Result<std::vector<AxisPlacement>> PlaceAxes(const ClusterProfile& c, const DeviceMesh& mesh) {
  if (mesh.size() > c.devices())
    return Status::Invalid("device mesh " + mesh.ToString() + " has more devices than cluster " +
                           c.name + " (" + std::to_string(c.devices()) + ")");
  std::vector<AxisPlacement> out(mesh.num_axes());
  int64_t stride = 1;
  for (int a = mesh.num_axes() - 1; a >= 0; --a) {
    AxisPlacement& p = out[a];
    p.axis = mesh.axis_name(a);
    p.size = mesh.axis_size(a);
    if (!c.torus.empty()) {
      // Whole dimensions (the group's stride and span on dimension boundaries) form rings
      // with wrap-around links, used in both directions; a part of a dimension is a line.
      std::vector<int64_t> inner(c.torus.size(), 1);
      for (size_t i = c.torus.size() - 1; i-- > 0;) inner[i] = inner[i + 1] * c.torus[i + 1];
      bool whole = false;
      for (size_t i = 0; i < c.torus.size(); ++i) {
        if (inner[i] != stride) continue;
        int64_t span = 1;
        for (size_t j = i + 1; j-- > 0 && span < p.size;) {
          span *= c.torus[j];
          whole |= span == p.size;
        }
      }
      p.level = "torus";
      p.bandwidth = c.torus_link.bandwidth * (whole ? 2 : 1);
      p.latency_s = c.torus_link.latency_s;
    } else {
      p.level = LevelOf(c, stride, p.size);
      const ClusterLink& link = p.level == "node" ? c.node : c.network;
      p.bandwidth = link.bandwidth;
      p.latency_s = link.latency_s;
    }
    stride *= p.size;
  }
  return out;
}

Result<CostModel> ClusterCostModel(const ClusterProfile& c, const DeviceMesh& mesh,
                                   Precision dtype) {
  const auto rate = c.flops.find(PrecisionName(dtype));
  if (rate == c.flops.end()) {
    std::string have;
    for (const auto& [name, f] : c.flops) have += (have.empty() ? "" : ", ") + name;
    return Status::Invalid("cluster " + c.name + " (" + c.path + ") has no compute rate for " +
                           PrecisionName(dtype) + " (it has: " + have + "; --dtype chooses)");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<AxisPlacement> axes, PlaceAxes(c, mesh));
  CostModel m;
  m.flops = rate->second;
  m.memory_bandwidth = c.memory_bandwidth;
  m.collective_overhead_s = c.collective_launch_s;
  m.tree_all_reduce = !c.in_process;
  m.hierarchical_collectives = !c.in_process;
  m.overlap_gradients = !c.in_process;
  m.gradient_bucket_bytes = c.gradient_bucket_bytes;
  if (c.in_process) m.in_process = c.overhead;
  // An axis the planner does not know travels the slowest link the mesh uses.
  const ClusterLink& base = !c.torus.empty() ? c.torus_link : c.node;
  m.default_bandwidth = base.bandwidth;
  m.latency_s = base.latency_s;
  for (const AxisPlacement& p : axes) {
    m.axis_bandwidth[p.axis] = p.bandwidth;
    m.axis_latency[p.axis] = p.latency_s;
    if (p.size > 1 && p.bandwidth < m.default_bandwidth) m.default_bandwidth = p.bandwidth;
    if (p.size > 1) m.latency_s = std::max(m.latency_s, p.latency_s);
  }
  return m;
}

}  // namespace shardscope
