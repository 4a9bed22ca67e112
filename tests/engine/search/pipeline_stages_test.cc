// Pipeline stages (pipeline_stages.h): the split is the optimum over every contiguous split,
// memory caps it, the 1F1B price matches a simulation of the schedule's dependencies, and
// the units of a model file are its layers.
#include "shardscope/pipeline_stages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "shardscope/layout/mesh.h"
#include "shardscope/model_file.h"
#include "shardscope/pipeline.h"
#include "shardscope/rng.h"

namespace shardscope {
namespace {

std::vector<StageUnit> RandomUnits(Rng& rng, int n) {
  std::vector<StageUnit> units(n);
  for (int u = 0; u < n; ++u) {
    units[u].scope = "l" + std::to_string(u);
    units[u].compute_seconds = 1e-4 * (1 + rng.NextU64() % 50);
    units[u].weight_bytes = 1000.0 * (1 + rng.NextU64() % 20);
    units[u].activation_bytes = 100.0 * (1 + rng.NextU64() % 20);
    units[u].boundary_bytes = 64.0 * (1 + rng.NextU64() % 100);
  }
  return units;
}

// The slowest stage of a split as SplitStages defines it, computed here from the header's words.
double Slowest(const std::vector<StageUnit>& units, const std::vector<int>& first,
               const CostModel& cost, int m, double capacity, bool* fits) {
  const int p = static_cast<int>(first.size());
  double slowest = 0;
  *fits = true;
  for (int s = 0; s < p; ++s) {
    const int end = s + 1 < p ? first[s + 1] : static_cast<int>(units.size());
    double t = 0, weights = 0, acts = 0;
    for (int u = first[s]; u < end; ++u) {
      t += units[u].compute_seconds;
      weights += units[u].weight_bytes;
      acts += units[u].activation_bytes;
    }
    const DeviceMesh none;
    if (s > 0) t += 2 * BoundarySeconds(cost, none, s - 1, s, units[first[s] - 1].boundary_bytes);
    if (s + 1 < p) t += 2 * BoundarySeconds(cost, none, s, s + 1, units[end - 1].boundary_bytes);
    if (capacity > 0 && weights + acts * std::min(m, p - s) > capacity) *fits = false;
    slowest = std::max(slowest, t);
  }
  return slowest;
}

// Every contiguous split of n units into p stages (first units, ascending, [0] = 0).
void EverySplit(int n, int p, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> first = {0};
  std::function<void()> grow = [&] {
    if (static_cast<int>(first.size()) == p) {
      visit(first);
      return;
    }
    const int remaining = p - static_cast<int>(first.size());
    for (int f = first.back() + 1; f <= n - remaining; ++f) {
      first.push_back(f);
      grow();
      first.pop_back();
    }
  };
  grow();
}

TEST(PipelineStagesTest, SplitIsTheBestContiguousSplit) {
  Rng rng(7);
  CostModel cost;
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 3 + trial % 7, p = 2 + trial % std::min(4, n - 1), m = 1 + trial % 5;
    const std::vector<StageUnit> units = RandomUnits(rng, n);
    double best = std::numeric_limits<double>::infinity();
    EverySplit(n, p, [&](const std::vector<int>& first) {
      bool fits = true;
      best = std::min(best, Slowest(units, first, cost, m, 0, &fits));
    });
    auto split = SplitStages(units, p, m, 0, cost, DeviceMesh());
    ASSERT_TRUE(split.ok()) << split.status().message();
    ASSERT_EQ(static_cast<int>(split->size()), p);
    EXPECT_EQ((*split)[0], 0);
    EXPECT_TRUE(std::is_sorted(split->begin(), split->end()));
    EXPECT_EQ(std::adjacent_find(split->begin(), split->end()), split->end());  // none empty
    bool fits = true;
    EXPECT_NEAR(Slowest(units, *split, cost, m, 0, &fits), best, 1e-12) << "trial " << trial;
  }
}

TEST(PipelineStagesTest, CapacityIsRespectedOrNamesTheLargestLayer) {
  Rng rng(11);
  CostModel cost;
  std::vector<StageUnit> units = RandomUnits(rng, 8);
  // A capacity between the least and the most memory any 3-stage split needs.
  double least = std::numeric_limits<double>::infinity();
  EverySplit(8, 3, [&](const std::vector<int>& first) {
    double largest = 0;
    for (int s = 0; s < 3; ++s) {
      const int end = s < 2 ? first[s + 1] : 8;
      double bytes = 0, acts = 0;
      for (int u = first[s]; u < end; ++u) {
        bytes += units[u].weight_bytes;
        acts += units[u].activation_bytes;
      }
      largest = std::max(largest, bytes + acts * std::min(4, 3 - s));
    }
    least = std::min(least, largest);
  });
  auto split = SplitStages(units, 3, 4, least, cost, DeviceMesh());
  ASSERT_TRUE(split.ok()) << split.status().message();
  bool fits = true;
  Slowest(units, *split, cost, 4, least, &fits);
  EXPECT_TRUE(fits);
  auto none = SplitStages(units, 3, 4, least - 1, cost, DeviceMesh());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("largest layer"), std::string::npos);
  auto few = SplitStages(units, 9, 1, 0, cost, DeviceMesh());
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("the model has 8"), std::string::npos);
}

// The 1F1B step of equal stages, forward and backward half each, simulated over the orders
// PipelineOrder gives: each phase starts when its worker is free and its input has arrived.
double SimulateOneFOneB(int p, int m, double stage_seconds) {
  PlacedProgram program;
  program.workers = p;
  program.num_stages = p;
  for (int s = 0; s < p; ++s) program.stage.push_back(s);
  PipelineOptions options{p, m, PipelineSchedule::kOneFOneB};
  const auto order = PipelineOrder(program, options);
  std::vector<std::vector<double>> fwd(p, std::vector<double>(m, -1)), bwd = fwd;
  std::vector<size_t> next(p, 0);
  std::vector<double> free(p, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < order[s].size()) {
        const auto [backward, i] = order[s][next[s]];
        const double ready =
            backward ? (s + 1 < p ? bwd[s + 1][i] : fwd[s][i]) : (s > 0 ? fwd[s - 1][i] : 0.0);
        if (ready < 0) break;
        const double end = std::max(free[s], ready) + stage_seconds / 2;
        (backward ? bwd : fwd)[s][i] = end;
        free[s] = end;
        ++next[s];
        progress = true;
      }
    }
  }
  return *std::max_element(free.begin(), free.end());
}

TEST(PipelineStagesTest, OneFOneBPriceIsTheScheduleWithItsBubble) {
  for (int p = 2; p <= 5; ++p) {
    for (int m = 1; m <= 9; ++m) {
      const std::vector<double> stages(p, 2e-3), updates(p, 0.0);
      const OneFOneBPrice price = PriceOneFOneB(stages, updates, m);
      EXPECT_NEAR(price.step_seconds, SimulateOneFOneB(p, m, 2e-3), 1e-12) << p << " " << m;
      // The bubble is the idle share of every stage: 1 - busy / step.
      EXPECT_NEAR(price.bubble_fraction, 1 - m * 2e-3 / price.step_seconds, 1e-12);
    }
  }
  // The slowest stage sets the pace; the slowest update is paid once.
  const OneFOneBPrice uneven = PriceOneFOneB({1e-3, 3e-3, 2e-3}, {1e-4, 5e-4, 0}, 4);
  EXPECT_DOUBLE_EQ(uneven.slowest_stage_seconds, 3e-3);
  EXPECT_NEAR(uneven.step_seconds, 6 * 3e-3 + 5e-4, 1e-15);
}

TEST(PipelineStagesTest, BoundaryUsesTheLinkBetweenTheTwoRanks) {
  CostModel cost;
  cost.axis_bandwidth = {{"node", 1e9}, {"local", 100e9}};
  cost.axis_latency = {{"node", 1e-5}, {"local", 1e-6}};
  auto mesh = ParseMeshSpec("node=2,local=4");
  ASSERT_TRUE(mesh.ok());
  EXPECT_NEAR(BoundarySeconds(cost, *mesh, 1, 2, 1e6), 1e-6 + 1e6 / 100e9, 1e-15);
  EXPECT_NEAR(BoundarySeconds(cost, *mesh, 3, 4, 1e6), 1e-5 + 1e6 / 1e9, 1e-15);
  EXPECT_EQ(BoundarySeconds(cost, *mesh, 3, 4, 0), 0);
}

TEST(PipelineStagesTest, UnitsOfAModelFileAreItsLayers) {
  auto mf = LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/ffn.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto model = mf->Build(8);
  ASSERT_TRUE(model.ok());
  SearchOptions options;
  auto units = LayerUnits(model->graph, options);
  ASSERT_TRUE(units.ok()) << units.status().message();
  // flatten joins dense1; every ReLU joins the layer before it; the loss joins dense5.
  ASSERT_EQ(units->size(), 5u);
  EXPECT_EQ(model->graph.node((*units)[0].nodes.front()).name, "flatten");
  EXPECT_EQ(model->graph.node((*units)[1].nodes.front()).name, "dense2.matmul");
  EXPECT_EQ(model->graph.node((*units)[1].nodes.back()).name, "relu_1");
  EXPECT_EQ(model->graph.node((*units)[4].nodes.back()).name, "loss");
  size_t operators = 0;
  for (const StageUnit& u : *units) {
    operators += u.nodes.size();
    EXPECT_GT(u.compute_seconds, 0);
    EXPECT_GT(u.weight_bytes, 0);
  }
  size_t forward = 0;
  for (const Node& n : model->graph.nodes()) forward += n.is_backward ? 0 : 1;
  EXPECT_EQ(operators, forward);
  // dense1's output after its ReLU crosses the first cut: 8 x 512 f32.
  EXPECT_DOUBLE_EQ((*units)[0].boundary_bytes, 8 * 512 * 4);
  // Larger layers cost more.
  EXPECT_GT((*units)[0].compute_seconds, (*units)[4].compute_seconds);
}

}  // namespace
}  // namespace shardscope
