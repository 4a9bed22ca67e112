// Bandwidth and latency per mesh axis: with the devices arranged as two hosts of four
// (node=2,local=4) and a slow link between the hosts, the searches keep the heavy
// collectives inside a host.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "models.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

SearchOptions TwoHostsOfFour(SearchMode mode, double node_bandwidth) {
  SearchOptions o;
  o.mode = mode;
  o.devices = 8;
  o.device_mesh = DeviceMesh::Create({2, 4}, {"node", "local"}).value();
  o.cost.default_bandwidth = 10e9;
  if (node_bandwidth > 0) o.cost.axis_bandwidth["node"] = node_bandwidth;
  return o;
}

// The MatMuls whose contraction split (a partial sum, reduced over the k group: the heaviest
// collective of a batch-256 FFN) has a group reaching across hosts. A strategy "((a,b),(b,c))"
// puts k on a mesh axis whose ranks are c x replicas apart (row-major, replicas last); the
// group of b ranks stays inside a host of 4 when that stride times b is at most 4.
std::vector<std::string> ContractionsAcrossHosts(const SearchResult& r) {
  std::vector<std::string> across;
  for (const OperatorChoice& c : r.operators) {
    int a = 0, b = 0, b2 = 0, n = 0;
    if (std::sscanf(c.strategy.c_str(), "((%d,%d),(%d,%d))", &a, &b, &b2, &n) != 4) continue;
    if (b <= 1) continue;
    const int replicas = 8 / (a * b * n);
    if (n * replicas * b > 4) across.push_back(c.name + " " + c.strategy);
  }
  return across;
}

// Of those, dense1's: the widest contraction (784 input features).
std::vector<std::string> HeavyContractionsAcrossHosts(const SearchResult& r) {
  std::vector<std::string> heavy;
  for (const std::string& c : ContractionsAcrossHosts(r))
    if (c.rfind("dense1.", 0) == 0) heavy.push_back(c);
  return heavy;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "; ";
  return s;
}

TEST(AxisBandwidth, ASlowOuterAxisMovesTheContractionsInsideAHost) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 256).value();
  for (SearchMode mode : {SearchMode::kDynamicProgramming, SearchMode::kRecursiveProgramming}) {
    SCOPED_TRACE(SearchModeName(mode));
    // One bandwidth everywhere: some contraction's reduction crosses the hosts.
    auto uniform = SearchStrategies(m.graph, TwoHostsOfFour(mode, 0));
    ASSERT_TRUE(uniform.ok()) << uniform.status().message();
    // The link between the hosts 100 x slower: none does any more.
    auto slow = SearchStrategies(m.graph, TwoHostsOfFour(mode, 1e8));
    ASSERT_TRUE(slow.ok()) << slow.status().message();
    EXPECT_FALSE(ContractionsAcrossHosts(*uniform).empty());
    // dynamic_programming keeps the heaviest inside (dense1's, over 784 features; a lighter
    // one may cross where that prices no higher than keeping it inside); recursive_programming's
    // greedy choices may leave one across (its neighbours' layouts decided first), at a price far
    // below (next).
    if (mode == SearchMode::kDynamicProgramming) {
      EXPECT_TRUE(HeavyContractionsAcrossHosts(*slow).empty())
          << Join(ContractionsAcrossHosts(*slow));
    }
    // And the slow-link plan is far cheaper on that cluster than the uniform one would be.
    SearchOptions semi = TwoHostsOfFour(SearchMode::kSemiAuto, 1e8);
    Graph g = m.graph;
    ASSERT_TRUE(ApplySearchResult(*uniform, &g).ok());
    const double uniform_on_slow = PredictStepSeconds(g, semi).value();
    EXPECT_LT(slow->step_seconds, 0.8 * uniform_on_slow);
  }
}

TEST(AxisBandwidth, ALatencyPerAxisIsPaidOnlyByGroupsThatSpanIt) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 256).value();
  SearchOptions o = TwoHostsOfFour(SearchMode::kDynamicProgramming, 0);
  const SearchResult base = SearchStrategies(m.graph, o).value();
  // The inner axis at the default latency: nothing changes.
  o.cost.axis_latency["local"] = o.cost.latency_s;
  EXPECT_DOUBLE_EQ(SearchStrategies(m.graph, o).value().step_seconds, base.step_seconds);
  // 1 ms per message between hosts: the optimum gets dearer and keeps every contraction's
  // reduction inside a host, as with a slow bandwidth.
  o.cost.axis_latency["node"] = 1e-3;
  const SearchResult slow = SearchStrategies(m.graph, o).value();
  EXPECT_GT(slow.step_seconds, base.step_seconds);
  EXPECT_FALSE(ContractionsAcrossHosts(base).empty());
  EXPECT_TRUE(HeavyContractionsAcrossHosts(slow).empty()) << Join(ContractionsAcrossHosts(slow));
}

TEST(AxisBandwidth, HierarchicalCollectivesCrossTheOuterAxisOnEveryLinkOfTheGroup) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 256).value();
  // Data parallel over both hosts: 4 ranks of each host's ring or tree reach the other host,
  // each on its own link, so the gradients' all-reduce crosses at 4 x the node link.
  SearchOptions flat = TwoHostsOfFour(SearchMode::kSemiAuto, 1e9);
  SearchOptions rails = flat;
  rails.cost.hierarchical_collectives = true;
  SearchOptions wide = TwoHostsOfFour(SearchMode::kSemiAuto, 4e9);
  const double on_rails = SearchStrategies(m.graph, rails).value().step_seconds;
  EXPECT_LT(on_rails, SearchStrategies(m.graph, flat).value().step_seconds);
  EXPECT_DOUBLE_EQ(on_rails, SearchStrategies(m.graph, wide).value().step_seconds);
  // Still bounded by the inner links: a node link faster than the host's own is no faster.
  rails.cost.axis_bandwidth["node"] = 1e12;
  wide.cost.axis_bandwidth["node"] = 1e12;
  EXPECT_DOUBLE_EQ(SearchStrategies(m.graph, rails).value().step_seconds,
                   SearchStrategies(m.graph, wide).value().step_seconds);
}

TEST(AxisBandwidth, WithoutADeviceMeshEveryCollectiveRunsAtTheDefault) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 256).value();
  SearchOptions plain;
  plain.mode = SearchMode::kDynamicProgramming;
  plain.devices = 8;
  plain.cost.axis_bandwidth["node"] = 1e8;  // names no axis of any device mesh
  SearchOptions one_axis = plain;
  one_axis.cost.axis_bandwidth.clear();
  EXPECT_EQ(SearchStrategies(m.graph, plain).value().step_seconds,
            SearchStrategies(m.graph, one_axis).value().step_seconds);
  // A uniform device mesh prices as no mesh.
  SearchOptions meshed = TwoHostsOfFour(SearchMode::kDynamicProgramming, 0);
  EXPECT_DOUBLE_EQ(SearchStrategies(m.graph, meshed).value().step_seconds,
                   SearchStrategies(m.graph, one_axis).value().step_seconds);
  // A slower link anywhere can only make the optimum dearer.
  EXPECT_GT(SearchStrategies(m.graph, TwoHostsOfFour(SearchMode::kDynamicProgramming, 1e9))
                .value()
                .step_seconds,
            SearchStrategies(m.graph, meshed).value().step_seconds);
  // The mesh must have the plan's devices.
  SearchOptions wrong = meshed;
  wrong.devices = 16;
  auto r = SearchStrategies(m.graph, wrong);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("has 8 devices but the plan is for 16"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace shardscope
