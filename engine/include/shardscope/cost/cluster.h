// Cluster profiles: the hardware a plan is priced for (`--cluster NAME|FILE` on plan and
// train, `shardscope clusters`). A profile (YAML, format in docs/cost-model.md) gives nodes,
// links per level, device memory and compute per dtype; ClusterCostModel turns it into the
// portable CostModel for a device mesh laid onto that topology.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shardscope/cost/cost_model.h"
#include "shardscope/cost/dtype.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/status.h"

namespace shardscope {

struct ClusterLink {
  std::string kind;      // "nvlink", "infiniband", "roce", "ici", "shared-memory"
  double bandwidth = 0;  // bytes/s per direction per device
  double latency_s = 0;  // per message (one hop)
  bool present() const { return bandwidth > 0; }
};

struct ClusterProfile {
  std::string name, description;
  std::string path;  // the file read ("shipped:NAME" for a shipped profile)
  int64_t devices_per_node = 1;
  int64_t nodes = 1;
  // A torus (TPU-like): devices per dimension, outer first; every device links to its two
  // neighbours per dimension over `torus_link`. Empty: nodes joined by `network`.
  std::vector<int64_t> torus;
  ClusterLink node;     // inside a node (NVLink through NVSwitch)
  ClusterLink network;  // between nodes (InfiniBand, RoCE), one NIC per device
  ClusterLink torus_link;
  double memory_bytes = 0;              // per device
  double memory_bandwidth = 0;          // per device, bytes/s
  std::map<std::string, double> flops;  // dtype name ("f32", "bf16", "fp16") -> flop/s
  double collective_launch_s = 0;       // fixed cost of issuing one collective
  // Gradients all-reduced in buckets of this many bytes; `gradient_bucket:` in the file, else
  // PyTorch DDP's default bucket_cap_mb = 25 MiB (0 in-process: one collective each).
  double gradient_bucket_bytes = 25.0 * (1 << 20);
  bool gradient_bucket_given = false;  // the file says (else `plan` may choose: --bucket-mb auto)
  // In-process (this machine): devices are threads; `overhead` prices their sharing.
  bool in_process = false;
  InProcessOverhead overhead;

  int64_t devices() const;
};

// How one axis of a device mesh lies on the topology.
struct AxisPlacement {
  std::string axis;
  int64_t size = 1;
  std::string level;  // "node" (inside a node), "network" (across nodes), "torus"
  double bandwidth = 0;
  double latency_s = 0;
};

// Parses a profile; errors read "FILE:LINE:COLUMN: FIELD: message" (did-you-mean on names).
Result<ClusterProfile> ParseClusterProfile(const std::string& text, const std::string& path);
// A shipped profile by name, else a file.
Result<ClusterProfile> LoadClusterProfile(const std::string& name_or_path);
// The shipped profiles: (name, YAML text), by name.
const std::vector<std::pair<std::string, std::string>>& ShippedClusterProfiles();

// The device mesh `devices` devices form on the cluster: local=N inside one node,
// node=N/D,local=D across nodes of D, the torus dimensions (innermost filled first) on a torus.
Result<DeviceMesh> ClusterDeviceMesh(const ClusterProfile& cluster, int64_t devices);
// Where each axis of `mesh` (row-major ranks, outer axis first) runs: inside a node when its
// groups fit one, across nodes otherwise (the slowest link bounds a ring); on a torus, a ring
// over whole dimensions uses both directions (2x the link), a part of one dimension one.
Result<std::vector<AxisPlacement>> PlaceAxes(const ClusterProfile& cluster, const DeviceMesh& mesh);
// The portable cost model for the cluster with devices arranged as `mesh`, computing at
// `dtype` (its flops must be in the profile); the in-process term only for in-process profiles.
Result<CostModel> ClusterCostModel(const ClusterProfile& cluster, const DeviceMesh& mesh,
                                   Precision dtype);

}  // namespace shardscope
