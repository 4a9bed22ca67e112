// `shardscope clusters [NAME]`: the shipped cluster profiles, one line each, or one in full.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/command.h"
#include "shardscope/base/format.h"
#include "shardscope/cost/cluster.h"

namespace shardscope::cli {
namespace {

// Link rates in decimal GB/s, as datasheets give them.
std::string Rate(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g GB/s", bytes_per_s / 1e9);
  return buf;
}

std::string Links(const ClusterProfile& c) {
  char buf[256];
  if (!c.torus.empty()) {
    std::string dims;
    for (int64_t t : c.torus) dims += (dims.empty() ? "" : "x") + std::to_string(t);
    std::snprintf(buf, sizeof buf, "torus %s, %s %s %.3g us", dims.c_str(),
                  c.torus_link.kind.c_str(), Rate(c.torus_link.bandwidth).c_str(),
                  c.torus_link.latency_s * 1e6);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%s %s %.3g us", c.node.kind.c_str(),
                Rate(c.node.bandwidth).c_str(), c.node.latency_s * 1e6);
  std::string out = buf;
  if (c.network.present()) {
    std::snprintf(buf, sizeof buf, "; %s %s %.3g us", c.network.kind.c_str(),
                  Rate(c.network.bandwidth).c_str(), c.network.latency_s * 1e6);
    out += buf;
  }
  return out;
}

std::string Compute(const ClusterProfile& c) {
  std::string out;
  for (const auto& [dtype, flops] : c.flops) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.4g TF/s", out.empty() ? "" : ", ", dtype.c_str(),
                  flops / 1e12);
    out += buf;
  }
  return out;
}

nlohmann::ordered_json LinkJson(const ClusterLink& l) {
  return {{"kind", l.kind}, {"bandwidth_bytes_per_s", l.bandwidth}, {"latency_s", l.latency_s}};
}

// One profile's figures as `clusters --json` prints them.
nlohmann::ordered_json ProfileJson(const ClusterProfile& c) {
  nlohmann::ordered_json j = {{"name", c.name},
                              {"description", c.description},
                              {"source", c.path},
                              {"devices_per_node", c.devices_per_node},
                              {"nodes", c.nodes},
                              {"devices", c.devices()},
                              {"memory_bytes", c.memory_bytes},
                              {"memory_bandwidth_bytes_per_s", c.memory_bandwidth},
                              {"in_process", c.in_process}};
  if (!c.torus.empty()) {
    j["torus"] = c.torus;
    j["torus_link"] = LinkJson(c.torus_link);
  } else {
    j["node_link"] = LinkJson(c.node);
    if (c.network.present()) j["network_link"] = LinkJson(c.network);
  }
  j["flops_per_s"] = c.flops;
  j["collective_launch_s"] = c.collective_launch_s;
  return j;
}

int RunClusters(const std::string& name, bool json) {
  std::vector<ClusterProfile> rows;
  for (const auto& [shipped, text] : ShippedClusterProfiles()) {
    if (name.empty() || (json && shipped == name)) {
      auto c = ParseClusterProfile(text, "shipped:" + shipped);
      if (!c.ok()) return Fail(kExitRunFailure, c.status().message());
      rows.push_back(*c);
      if (!name.empty()) break;
    } else if (shipped == name) {
      std::fputs(text.c_str(), stdout);  // in full, with the source of every figure
      return kExitOk;
    }
  }
  if (!name.empty() && rows.empty()) {  // a file: check it and show its row
    auto c = LoadClusterProfile(name);
    if (!c.ok()) return Fail(kExitBadInput, c.status().message());
    rows.push_back(*c);
  }
  if (json) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const ClusterProfile& c : rows) all.push_back(ProfileJson(c));
    std::printf("%s\n", (name.empty() ? all : all[0]).dump(2).c_str());
    return kExitOk;
  }
  std::printf("%-16s %8s %6s  %-10s %-52s %s\n", "name", "per node", "nodes", "memory",
              "links (per direction per device, latency per hop)", "compute");
  for (const ClusterProfile& c : rows) {
    std::printf("%-16s %8lld %6lld  %-10s %-52s %s%s\n", c.name.c_str(),
                static_cast<long long>(c.devices_per_node), static_cast<long long>(c.nodes),
                FormatBytes(c.memory_bytes).c_str(), Links(c).c_str(), Compute(c).c_str(),
                c.in_process ? " (in-process)" : "");
  }
  return kExitOk;
}

}  // namespace

void AddClustersCommand(CLI::App& root, Commands& commands) {
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* app = root.add_subcommand(
      "clusters",
      "List the shipped cluster profiles (for plan and train --cluster NAME): devices per\n"
      "node, nodes, memory per device, links, compute per dtype.\n"
      "`shardscope clusters NAME` prints that profile's YAML with the source of every figure\n"
      "(copy it to write your own; `--cluster FILE` reads it; format in docs/cost-model.md).\n"
      "\n"
      "Examples:\n"
      "  shardscope clusters\n"
      "  shardscope clusters dgx-h100 > my-cluster.yaml\n"
      "  shardscope clusters --json          (the figures as JSON, for scripts)\n"
      "  shardscope plan model.onnx --devices 64 --batch 256 --cluster dgx-h100 --dtype bf16");
  app->add_option("name", *name, "A shipped profile to print in full (or a file to check)");
  app->add_flag("--json", *json,
                "Print JSON: an array of every profile's figures, or NAME's figures (an object)");
  commands.push_back({app, [name, json] { return RunClusters(*name, *json); }});
}

}  // namespace shardscope::cli
