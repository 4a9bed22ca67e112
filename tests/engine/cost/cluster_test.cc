// Cluster profiles: parsing and validation, the shipped profiles, mesh axes on the topology,
// ring and tree formulas, a published all-reduce figure; the cost profile's field table.
#include "shardscope/cost/cluster.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "shardscope/cost/profile_fields.h"

namespace shardscope {
namespace {

const char* const kSmall = R"(name: small
devices_per_node: 4
nodes: 2
links:
  node: {kind: nvlink, bandwidth: 100e9, latency: 2e-6}
  network: {kind: roce, bandwidth: 10e9, latency: 10e-6}
device:
  memory: 16e9
  memory_bandwidth: 1e12
  flops: {f32: 10e12, bf16: 100e12}
)";

DeviceMesh Mesh(const std::string& spec) { return *ParseMeshSpec(spec); }

TEST(ClusterProfile, ParsesEveryLevel) {
  auto c = ParseClusterProfile(kSmall, "small.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->devices(), 8);
  EXPECT_EQ(c->node.bandwidth, 100e9);
  EXPECT_EQ(c->network.latency_s, 10e-6);
  EXPECT_EQ(c->flops.at("bf16"), 100e12);
  EXPECT_FALSE(c->in_process);
}

// Gradient buckets: DDP's 25 MiB unless the file says otherwise, none in-process; a gradient
// below the bucket pays its share of one bucket's collective.
TEST(ClusterProfile, GradientBucketsDefaultToDdpsAndShareTheLatency) {
  auto c = ParseClusterProfile(kSmall, "small.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gradient_bucket_bytes, 25.0 * (1 << 20));
  auto own = ParseClusterProfile(std::string(kSmall) + "gradient_bucket: 1e6\n", "own.yaml");
  ASSERT_TRUE(own.ok()) << own.status().message();
  auto cost = ClusterCostModel(*own, Mesh("mesh(node=2,local=4)"), Precision::kBF16);
  ASSERT_TRUE(cost.ok()) << cost.status().message();
  EXPECT_EQ(cost->gradient_bucket_bytes, 1e6);
  EXPECT_DOUBLE_EQ(cost->GradientBucketShare(250e3), 0.25);
  EXPECT_EQ(cost->GradientBucketShare(2e6), 1.0);
  EXPECT_EQ(LoadClusterProfile("this-machine")->gradient_bucket_bytes, 0);
}

// "file:line:column: field: message", with a suggestion for a misspelt field.
TEST(ClusterProfile, BadFilesNameFileLineAndField) {
  std::string text = kSmall;
  text.replace(text.find("latency: 2e-6"), 7, "latncy");
  auto typo = ParseClusterProfile(text, "typo.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("typo.yaml:5:"), std::string::npos)
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("links.node.latncy"), std::string::npos);
  EXPECT_NE(typo.status().message().find("did you mean 'latency'"), std::string::npos);

  std::string negative = kSmall;
  negative.replace(negative.find("10e9"), 4, "-1");
  auto neg = ParseClusterProfile(negative, "neg.yaml");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("neg.yaml:6:"), std::string::npos)
      << neg.status().message();
  EXPECT_NE(neg.status().message().find("links.network.bandwidth: must be a positive number"),
            std::string::npos);

  std::string no_network = kSmall;
  no_network.erase(no_network.find("  network:"),
                   no_network.find("device:") - no_network.find("  network:"));
  auto missing = ParseClusterProfile(no_network, "two-nodes.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("links.network"), std::string::npos);

  auto dtype = ParseClusterProfile(std::string(kSmall) + "  bogus: 1\n", "d.yaml");
  ASSERT_FALSE(dtype.ok());  // an unknown device field
  auto syntax = ParseClusterProfile("name: [unclosed\n", "s.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("s.yaml:"), std::string::npos);
}

TEST(ClusterProfile, EveryShippedProfileLoadsAndPrices) {
  ASSERT_GE(ShippedClusterProfiles().size(), 4u);
  for (const auto& [name, text] : ShippedClusterProfiles()) {
    auto c = LoadClusterProfile(name);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status().message();
    EXPECT_EQ(c->name, name);
    EXPECT_GT(c->memory_bytes, 0) << name;
    EXPECT_NE(text.find("#"), std::string::npos) << name << ": figures need their sources";
    auto mesh = ClusterDeviceMesh(*c, c->devices());
    ASSERT_TRUE(mesh.ok()) << name << ": " << mesh.status().message();
    const Precision dtype = c->flops.count("bf16") ? Precision::kBF16 : Precision::kF32;
    auto cost = ClusterCostModel(*c, *mesh, dtype);
    ASSERT_TRUE(cost.ok()) << name << ": " << cost.status().message();
    EXPECT_EQ(cost->in_process.empty(), !c->in_process) << name;
  }
  auto unknown = LoadClusterProfile("dgx-h10");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("did you mean 'dgx-h100'"), std::string::npos);
}

TEST(ClusterProfile, AxesInsideANodeUseItsLinkAndAcrossNodesTheNetwork) {
  auto c = *LoadClusterProfile("dgx-h100");
  auto mesh = ClusterDeviceMesh(c, 64);
  ASSERT_TRUE(mesh.ok());
  EXPECT_EQ(mesh->ToString(), Mesh("node=8,local=8").ToString());
  auto axes = *PlaceAxes(c, Mesh("dp=16,tp=4"));
  EXPECT_EQ(axes[1].level, "node");  // tp: groups of 4 neighbours, inside a node of 8
  EXPECT_EQ(axes[1].bandwidth, c.node.bandwidth);
  EXPECT_EQ(axes[0].level, "network");  // dp: strides of 4 over 64 devices
  EXPECT_EQ(axes[0].bandwidth, c.network.bandwidth);
  // A group of 16 neighbours spans two nodes: the slowest link bounds its ring.
  auto wide = *PlaceAxes(c, Mesh("dp=4,tp=16"));
  EXPECT_EQ(wide[1].level, "network");
  auto cost = *ClusterCostModel(c, Mesh("dp=16,tp=4"), Precision::kBF16);
  EXPECT_EQ(cost.AxisBandwidth("tp"), c.node.bandwidth);
  EXPECT_EQ(cost.AxisLatency("dp"), c.network.latency_s);
  EXPECT_EQ(cost.flops, c.flops.at("bf16"));
  EXPECT_TRUE(cost.tree_all_reduce);
  EXPECT_FALSE(ClusterDeviceMesh(c, 12).ok());       // not whole nodes
  EXPECT_FALSE(ClusterDeviceMesh(c, 8 * 513).ok());  // more than the cluster has
}

TEST(ClusterProfile, TorusRingsOverWholeDimensionsUseBothDirections) {
  auto c = *LoadClusterProfile("tpu-v4-4x4x4");
  auto mesh = *ClusterDeviceMesh(c, 64);
  EXPECT_EQ(mesh.ToString(), Mesh("x=4,y=4,z=4").ToString());
  const std::vector<AxisPlacement> axes = *PlaceAxes(c, mesh);
  for (const AxisPlacement& p : axes) {
    EXPECT_EQ(p.level, "torus");
    EXPECT_EQ(p.bandwidth, 2 * c.torus_link.bandwidth) << p.axis;
  }
  // 16 = y and z together: a ring over two whole dimensions; 2 of the 4 of x: a line.
  auto two = *PlaceAxes(c, Mesh("a=2,b=2,yz=16"));
  EXPECT_EQ(two[2].bandwidth, 2 * c.torus_link.bandwidth);
  EXPECT_EQ(two[1].bandwidth, c.torus_link.bandwidth);
  auto slice = ClusterDeviceMesh(c, 16);
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(slice->ToString(), Mesh("y=4,z=4").ToString());
  auto f32 = ClusterCostModel(c, mesh, Precision::kF32);
  ASSERT_FALSE(f32.ok());  // no f32 rate in the profile: says so and how to choose
  EXPECT_NE(f32.status().message().find("--dtype"), std::string::npos);
}

// The formulas against hand-computed values (docs/cost-model.md).
TEST(ClusterCollectives, RingAndTreeAllReduce) {
  CostModel m;
  m.latency_s = 3.4e-6;
  // Ring, p = 8, 1 GB at 240 GB/s: 2*7*3.4 us + 2*7/8 * 1e9 / 240e9 s.
  EXPECT_NEAR(m.CollectiveSeconds(CollectiveKind::kAllReduce, 1e9, 8, 240e9), 7.339267e-3, 1e-9);
  // All-gather, p = 4, 400 MB gathered at 100 GB/s: 3*3.4 us + 3/4 * 4e8 / 1e11 s.
  EXPECT_NEAR(m.CollectiveSeconds(CollectiveKind::kAllGather, 4e8, 4, 100e9), 3.0102e-3, 1e-9);
  m.latency_s = 14e-6;
  // p = 1024, 1 MB at 25 GB/s: the ring pays 2046 latencies (28.72 ms), the tree
  // 2 log2(1024) = 20 of them plus 2 n / B: 280 us + 80 us.
  EXPECT_NEAR(m.CollectiveSeconds(CollectiveKind::kAllReduce, 1e6, 1024, 25e9), 28.72392e-3, 1e-8);
  EXPECT_NEAR(m.TreeAllReduceSeconds(1e6, 1024, 25e9), 360e-6, 1e-12);
  m.tree_all_reduce = true;
  EXPECT_NEAR(m.CollectiveSeconds(CollectiveKind::kAllReduce, 1e6, 1024, 25e9), 360e-6, 1e-12);
  // Large buffers on few ranks stay on the ring (2 (p-1)/p n / B < 2 n / B).
  EXPECT_NEAR(m.CollectiveSeconds(CollectiveKind::kAllReduce, 1e9, 8, 240e9),
              2 * 7 * 14e-6 + 2 * 7.0 / 8 * 1e9 / 240e9, 1e-12);
  // The searches' price follows the same choice.
  m.collective_overhead_s = 0;
  EXPECT_NEAR(m.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 1e6, 1024, 25e9), 360e-6,
              1e-12);
}

// NCCL's tuner (src/graph/tuning.cc, ncclTopoTuneModel) prices a tree all-reduce's latency as
// 2 ((nRanks/nNodes - 1) intraLat + log2(nNodes) interLat) and a ring all-reduce's as
// (nsteps - nInterSteps) intraLat + nInterSteps interLat, nsteps 2 (nRanks - 1), nInterSteps
// 2 nNodes. By hand for 4096 ranks, 8 per node (512 nodes), NVLink hops 3.4 us, network 14 us:
//   tree  2 (7 x 3.4 + 9 x 14)                = 299.6 us
//   ring  (8190 - 1024) x 3.4 + 1024 x 14    = 38700.4 us
TEST(ClusterCollectives, HopsInsideANodeAtTheNodesLatencyAsNcclsTuner) {
  CostModel m;
  m.latency_s = 14e-6;
  const HopLatency dgx(14e-6, 3.4e-6, 8);
  using K = CollectiveKind;
  EXPECT_NEAR(m.LatencySeconds(K::kAllReduce, 4096, dgx, true), 299.6e-6, 1e-12);
  EXPECT_NEAR(m.LatencySeconds(K::kAllReduce, 4096, dgx, false), 38700.4e-6, 1e-9);
  // One rank per node: every hop crosses the network (2 log2 512 tree hops, 2 x 511 ring).
  const HopLatency rail(14e-6, 3.4e-6, 1);
  EXPECT_NEAR(m.LatencySeconds(K::kAllReduce, 512, rail, true), 18 * 14e-6, 1e-12);
  EXPECT_NEAR(m.LatencySeconds(K::kAllReduce, 512, rail, false), 1022 * 14e-6, 1e-12);
  // Inside one node the tree is NCCL's chain: 2 x 7 NVLink hops, the ring's latency.
  const HopLatency node(14e-6, 3.4e-6, 8);
  EXPECT_NEAR(m.LatencySeconds(K::kAllReduce, 8, node, true), 14 * 3.4e-6, 1e-12);
  // Other collectives keep the slowest link (the searches price them by the edges' formula).
  EXPECT_NEAR(m.LatencySeconds(K::kAllGather, 4096, dgx, false), 4095 * 14e-6, 1e-12);
  // The searches' price takes the tree and adds its transfer: 1 MB at 400 GB/s, 2 n / B.
  m.tree_all_reduce = true;
  m.collective_overhead_s = 0;
  EXPECT_NEAR(m.SearchCollectiveSeconds(K::kAllReduce, 1e6, 4096, 400e9, dgx),
              299.6e-6 + 2 * 1e6 / 400e9, 1e-12);
}

// nccl-tests all_reduce_perf on 8 A100-SXM4-80GB over NVSwitch reports a bus bandwidth of
// about 200 GB/s for large buffers (https://github.com/NVIDIA/nccl-tests/issues/149); the
// profile's prediction, busbw = S / t * 2 (n-1) / n, must be within 30 % of it.
TEST(ClusterCollectives, DgxA100AllReduceBusBandwidthNearNcclTests) {
  auto c = *LoadClusterProfile("dgx-a100-80gb");
  const DeviceMesh mesh = *ClusterDeviceMesh(c, 8);
  auto cost = *ClusterCostModel(c, mesh, Precision::kBF16);
  const double bytes = 1 << 30;
  const double t = cost.CollectiveSeconds(CollectiveKind::kAllReduce, bytes, mesh, {0});
  const double busbw = bytes / t * 2 * 7 / 8;
  EXPECT_NEAR(busbw / 200e9, 1.0, 0.3) << busbw / 1e9 << " GB/s";
}

TEST(Precision, MixedPrecisionBytesPerParameter) {
  EXPECT_EQ(PrecisionBytes(*ParsePrecision("bf16")), 2);
  EXPECT_EQ(PrecisionBytes(*ParsePrecision("float32")), 4);
  EXPECT_FALSE(ParsePrecision("bf17").ok());
  // f32: weight + gradient + states, 4 bytes each; bf16: 2 + 2, fp32 master 4, fp32 states.
  EXPECT_EQ(TrainingBytesPerParameter(Precision::kF32, 1), 12);
  EXPECT_EQ(TrainingBytesPerParameter(Precision::kBF16, 2), 2 + 2 + 4 + 8);
}

TEST(CostProfileFields, RoundTripSeparatesCoreAndInProcessTerm) {
  CostModel m;
  m.latency_s = 3e-6;
  m.axis_bandwidth["node"] = 5e9;
  m.tree_all_reduce = true;
  m.in_process.compute_slots = 1.5;
  m.in_process.pair_sync_s = 40e-6;
  auto back = CostModelFromJson(CostModelToJson(m), "round trip");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->latency_s, 3e-6);
  EXPECT_EQ(back->axis_bandwidth.at("node"), 5e9);
  EXPECT_TRUE(back->tree_all_reduce);
  EXPECT_EQ(back->in_process.compute_slots, 1.5);
  EXPECT_EQ(back->in_process.pair_sync_s, 40e-6);
  CostModel core;  // a portable model writes no in-process field
  const std::string text = CostModelToJson(core);
  for (const ProfileField& f : CostProfileFields()) {
    if (f.in_process) {
      EXPECT_EQ(text.find(f.name), std::string::npos) << f.name;
    }
  }
  auto typo = CostModelFromJson(R"({"group_synk_s": 1e-4})", "p.json");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'group_sync_s'"), std::string::npos)
      << typo.status().message();
}

// Named once: every field of the table is documented in docs/cost-model.md.
TEST(CostProfileFields, EveryFieldIsDocumented) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/docs/cost-model.md");
  std::stringstream doc;
  doc << in.rdbuf();
  for (const ProfileField& f : CostProfileFields())
    EXPECT_NE(doc.str().find(std::string("`") + f.name + "`"), std::string::npos) << f.name;
}

}  // namespace
}  // namespace shardscope
