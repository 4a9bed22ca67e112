// The searches of search.h on the seeds' networks and on hand-built graphs.
#include "shardscope/search.h"

#include <gtest/gtest.h>

#include "gpt.h"
#include "models.h"
#include "search/search_graph.h"
#include "shardscope/partition.h"

namespace shardscope {
namespace {

using search_internal::CandidateSplits;
using search_internal::PrimeFactorsDescending;

const OperatorChoice& Op(const SearchResult& r, const std::string& name) {
  for (const OperatorChoice& c : r.operators) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no operator " << name;
  return r.operators.front();
}

SearchOptions Options(SearchMode mode, int devices) {
  SearchOptions o;
  o.mode = mode;
  o.devices = devices;
  return o;
}

TEST(Candidates, EverySplitForAnyDeviceCount) {
  // Letters of sizes 12 and 10 on 6 devices: every split whose product is 6 and whose
  // counts divide their sizes (10 splits in 1 or 2 only).
  EXPECT_EQ(CandidateSplits({12, 10}, 6), (std::vector<std::vector<int64_t>>{{3, 2}, {6, 1}}));
  EXPECT_EQ(CandidateSplits({12, 10}, 12), (std::vector<std::vector<int64_t>>{{6, 2}, {12, 1}}));
  // Nothing divides 7 devices over sizes 4 and 6: the candidates use the most devices they can.
  for (const auto& p : CandidateSplits({4, 6}, 7)) EXPECT_EQ(p[0] * p[1], 1);
  EXPECT_EQ(PrimeFactorsDescending(12), (std::vector<int>{3, 2, 2}));
  EXPECT_EQ(PrimeFactorsDescending(4096).size(), 12u);
  EXPECT_EQ(PrimeFactorsDescending(7), (std::vector<int>{7}));
}

ModelGraph Ffn(bool configure) {
  samples::FFN net;
  if (configure) {
    net.dense1.matmul.shard("((2,4),(4,1))");
    net.dense3.matmul.shard("((1,8),(8,1))");
  }
  return nn::BuildClassifier(net, {1, 28, 28}, 32).value();
}

TEST(ShardingPropagation, Seed003FfnKeepsUserStrategiesAndPropagatesTheRest) {
  ModelGraph m = Ffn(true);
  auto r = SearchStrategies(m.graph, Options(SearchMode::kShardingPropagation, 8));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Op(*r, "dense1.matmul").strategy, "((2,4),(4,1))");
  EXPECT_EQ(Op(*r, "dense1.matmul").provenance, "user: ((2,4),(4,1))");
  EXPECT_EQ(Op(*r, "dense3.matmul").strategy, "((1,8),(8,1))");
  for (const OperatorChoice& c : r->operators) {
    if (c.name == "dense1.matmul" || c.name == "dense3.matmul") continue;
    EXPECT_NE(c.provenance.find("propagated from operator"), std::string::npos)
        << c.name << ": " << c.provenance;
    EXPECT_LE(c.runners_up.size(), 3u);
    for (const ScoredCandidate& s : c.runners_up) EXPECT_GE(s.cost_s, 0);
  }
  // dense3's input comes split over k in 8: relu_2 (its producer) should deliver that.
  EXPECT_EQ(Op(*r, "relu_1").strategy, "((1,8),)") << Op(*r, "relu_1").provenance;
  ASSERT_TRUE(ApplySearchResult(*r, &m.graph).ok());
  EXPECT_EQ(m.graph.node(m.graph.FindNode("dense1.matmul")).annotations.in_strategy,
            "((2,4),(4,1))");
  EXPECT_FALSE(m.graph.node(m.graph.FindNode("dense2.matmul")).annotations.in_strategy.empty());
}

TEST(Search, AllModesExplainEveryOperator) {
  for (SearchMode mode : {SearchMode::kShardingPropagation, SearchMode::kRecursiveProgramming,
                          SearchMode::kDynamicProgramming}) {
    ModelGraph m = Ffn(false);
    auto r = SearchStrategies(m.graph, Options(mode, 8));
    ASSERT_TRUE(r.ok()) << r.status().message();
    for (const OperatorChoice& c : r->operators) {
      EXPECT_EQ(c.provenance.rfind(SearchModeName(mode), 0), 0u) << c.name << ": " << c.provenance;
      EXPECT_FALSE(c.strategy.empty());
    }
    EXPECT_GT(r->step_seconds, 0);
    EXPECT_GT(r->memory_per_device_bytes, 0);
  }
}

TEST(DynamicProgramming, IsNeverWorseThanTheHeuristics) {
  for (int devices : {2, 6, 8}) {
    ModelGraph m = Ffn(false);
    auto dp = SearchStrategies(m.graph, Options(SearchMode::kDynamicProgramming, devices));
    ASSERT_TRUE(dp.ok()) << dp.status().message();
    for (SearchMode mode : {SearchMode::kSemiAuto, SearchMode::kShardingPropagation,
                            SearchMode::kRecursiveProgramming}) {
      auto r = SearchStrategies(m.graph, Options(mode, devices));
      ASSERT_TRUE(r.ok());
      EXPECT_LE(dp->step_seconds, r->step_seconds * (1 + 1e-12)) << SearchModeName(mode);
    }
  }
}

// K4 (every operator with three neighbours) cannot be reduced by leaf/series/parallel steps:
// dynamic_programming returns recursive_programming's strategies and says so, with a gap to
// a lower bound that holds (the objective is at least the bound).
TEST(DynamicProgramming, FallsBackOnIrreducibleGraphsAndRefusesLargeOnes) {
  Graph g;
  const ValueId x = g.AddInput("x", {8, 16});
  const ValueId a = g.node(g.AddNode(OpKind::kReLU, "a", {x}).value()).outputs[0];
  const ValueId b = g.node(g.AddNode(OpKind::kReLU, "b", {a}).value()).outputs[0];
  const ValueId c = g.node(g.AddNode(OpKind::kAdd, "c", {a, b}).value()).outputs[0];
  const ValueId d1 = g.node(g.AddNode(OpKind::kAdd, "d1", {a, b}).value()).outputs[0];
  ASSERT_TRUE(g.AddNode(OpKind::kAdd, "d", {d1, c}).ok());
  auto r = SearchStrategies(g, Options(SearchMode::kDynamicProgramming, 4));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->note.find("does not reduce"), std::string::npos) << r->note;
  EXPECT_NE(r->note.find("recursive_programming"), std::string::npos) << r->note;
  auto rec = SearchStrategies(g, Options(SearchMode::kRecursiveProgramming, 4));
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(rec->note.empty());
  EXPECT_DOUBLE_EQ(r->step_seconds, rec->step_seconds);
  const size_t at = r->note.find("lower bound ");
  ASSERT_NE(at, std::string::npos) << r->note;
  const double bound = std::stod(r->note.substr(at + 12));
  EXPECT_GT(bound, 0);
  EXPECT_LE(bound, r->step_seconds * (1 + 1e-6));
  SearchOptions small = Options(SearchMode::kDynamicProgramming, 4);
  small.max_dp_operators = 3;
  auto refused = SearchStrategies(g, small);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("beyond its bound of 3"), std::string::npos);
}

// Past its effort budget (candidate pairs and triples visited), dynamic_programming stops
// and returns recursive_programming's strategies with the note and gap of an irreducible graph.
TEST(DynamicProgramming, FallsBackToRecursiveProgrammingPastItsEffortBudget) {
  ModelGraph m = Ffn(false);
  SearchOptions o = Options(SearchMode::kDynamicProgramming, 8);
  auto exact = SearchStrategies(m.graph, o);
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_TRUE(exact->note.empty()) << exact->note;
  o.max_dp_work = 10;
  auto r = SearchStrategies(m.graph, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->note.find("effort budget"), std::string::npos) << r->note;
  EXPECT_NE(r->note.find("lower bound"), std::string::npos) << r->note;
  auto rec = SearchStrategies(m.graph, Options(SearchMode::kRecursiveProgramming, 8));
  ASSERT_TRUE(rec.ok());
  EXPECT_DOUBLE_EQ(r->step_seconds, rec->step_seconds);
  EXPECT_LE(exact->step_seconds, r->step_seconds * (1 + 1e-12));
}

TEST(Search, MemoryBudgetIsRespectedOrTheLargestConsumerNamed) {
  ModelGraph m = Ffn(false);
  auto unlimited = SearchStrategies(m.graph, Options(SearchMode::kShardingPropagation, 8));
  ASSERT_TRUE(unlimited.ok());
  // Tight: less than data-parallel needs, more than the least-memory assignment.
  SearchOptions o = Options(SearchMode::kShardingPropagation, 8);
  auto dp = SearchStrategies(m.graph, Options(SearchMode::kSemiAuto, 8));
  o.memory_budget_bytes = dp->memory_per_device_bytes * 0.5;
  for (SearchMode mode : {SearchMode::kShardingPropagation, SearchMode::kRecursiveProgramming,
                          SearchMode::kDynamicProgramming}) {
    o.mode = mode;
    auto r = SearchStrategies(m.graph, o);
    ASSERT_TRUE(r.ok()) << SearchModeName(mode) << ": " << r.status().message();
    EXPECT_TRUE(r->memory_fits) << SearchModeName(mode) << ": " << r->memory_note;
    EXPECT_LE(r->memory_per_device_bytes, o.memory_budget_bytes) << SearchModeName(mode);
    EXPECT_LE(r->memory_estimate_bytes, o.memory_budget_bytes * o.memory_target)
        << SearchModeName(mode);
  }
  // Nothing fits: the least memory, and the note names the largest consumer.
  o.memory_budget_bytes = 1000;
  auto r = SearchStrategies(m.graph, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->memory_fits);
  EXPECT_NE(r->memory_note.find("largest consumer: operator 'dense1.matmul'"), std::string::npos)
      << r->memory_note;
}

// A GPT-style model, 12 layers on 8 devices: the search must find the Megatron split —
// fc1 by columns, fc2 by rows — and attention split by heads. (The model's dimensions put
// weights ahead of activations, as in real transformers; with dim 256 and 8 x 16 tokens a
// batch-by-head split of attention costs within 0.1 % of the head split.)
TEST(DynamicProgramming, GptFindsColumnRowMlpAndHeadSplitAttention) {
  samples::Gpt net(12, 64, 16, 512, 8, 8);
  auto m = nn::BuildClassifier(net, {16}, 8, DType::kI32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (SearchMode mode : {SearchMode::kDynamicProgramming}) {
    auto r = SearchStrategies(m->graph, Options(mode, 8));
    ASSERT_TRUE(r.ok()) << r.status().message();
    for (int layer : {0, 5, 11}) {
      const std::string p = "layer" + std::to_string(layer) + ".";
      EXPECT_EQ(Op(*r, p + "fc1.matmul").strategy, "((1,1),(1,8))") << SearchModeName(mode);
      EXPECT_EQ(Op(*r, p + "fc2.matmul").strategy, "((1,8),(8,1))") << SearchModeName(mode);
      // scores = q k^T over [batch, heads, tokens, dh]: heads split in 8.
      EXPECT_EQ(Op(*r, p + "scores").strategy, "((1,8,1,1),(1,8,1,1))") << SearchModeName(mode);
      EXPECT_EQ(Op(*r, p + "context").strategy, "((1,8,1,1),(1,8,1,1))") << SearchModeName(mode);
    }
  }
}

}  // namespace
}  // namespace shardscope
