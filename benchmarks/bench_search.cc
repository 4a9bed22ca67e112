// Strategy search (issue 7): planning time of each search against graph size and device
// count, and the predicted step time against the measured one on 8 in-process devices.
//
//   build/bin/bench_search --benchmark_filter=Search
//   SHARDSCOPE_PROFILE=profile.json build/bin/bench_search --benchmark_filter=Predicted
//
// Figures and the commands that reproduce them: benchmarks/README.md.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "models.h"
#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

// A stack of residual MLP blocks on [batch, width] — relu(x W1) W2 + x — cut to `ops`
// forward operators (4 per block). Series-parallel, so dynamic_programming reaches it.
Graph ResidualStack(int ops, int64_t batch, int64_t width) {
  Graph g;
  ValueId x = g.AddInput("x", {batch, width});
  auto out = [&](Result<NodeId> n) { return g.node(n.value()).outputs[0]; };
  for (int b = 0; g.num_nodes() + 4 <= ops; ++b) {
    const std::string p = "block" + std::to_string(b) + ".";
    ValueId w1 = g.AddParameter(p + "w1", {width, width}, InitSpec{});
    ValueId w2 = g.AddParameter(p + "w2", {width, width}, InitSpec{});
    ValueId h = out(g.AddNode(OpKind::kMatMul, p + "fc1", {x, w1}));
    h = out(g.AddNode(OpKind::kReLU, p + "relu", {h}));
    h = out(g.AddNode(OpKind::kMatMul, p + "fc2", {h, w2}));
    x = out(g.AddNode(OpKind::kAdd, p + "add", {x, h}));
  }
  return g;
}

void Search(benchmark::State& state, SearchMode mode) {
  const int ops = static_cast<int>(state.range(0));
  const int devices = static_cast<int>(state.range(1));
  const Graph g = ResidualStack(ops, 4096, 1024);
  SearchOptions o;
  o.mode = mode;
  o.devices = devices;
  double step = 0;
  for (auto _ : state) {
    auto r = SearchStrategies(g, o);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    step = r->step_seconds;
  }
  state.counters["operators"] = g.num_nodes();
  state.counters["devices"] = devices;
  state.counters["predicted_step_ms"] = step * 1e3;
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int ops : {1000, 3000, 10000}) {
    for (int devices : {8, 64, 1024, 4096}) b->Args({ops, devices});
  }
  b->Unit(benchmark::kMillisecond);
}

void BM_SearchPropagation(benchmark::State& s) { Search(s, SearchMode::kShardingPropagation); }
void BM_SearchRecursive(benchmark::State& s) { Search(s, SearchMode::kRecursiveProgramming); }
void BM_SearchDynamicProgramming(benchmark::State& s) {
  Search(s, SearchMode::kDynamicProgramming);
}
BENCHMARK(BM_SearchPropagation)->Apply(Sizes);
BENCHMARK(BM_SearchRecursive)->Apply(Sizes);
BENCHMARK(BM_SearchDynamicProgramming)
    ->Args({100, 8})
    ->Args({500, 8})
    ->Args({500, 64})
    ->Args({2000, 8})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope

BENCHMARK_MAIN();
