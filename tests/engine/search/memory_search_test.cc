// The searches within a memory budget (search_memory.cc): strategies that fit are preferred
// to cheaper ones that do not, memory options are chosen only when needed, and a budget
// nothing fits names the largest consumer.
#include <gtest/gtest.h>

#include "gpt.h"
#include "models.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

constexpr SearchMode kModes[] = {SearchMode::kShardingPropagation,
                                 SearchMode::kRecursiveProgramming,
                                 SearchMode::kDynamicProgramming};

SearchOptions Options(SearchMode mode, int devices, double budget) {
  SearchOptions o;
  o.mode = mode;
  o.devices = devices;
  o.optimizer_states = 2;  // Adam
  o.memory_budget_bytes = budget;
  return o;
}

// A 4-layer GPT on 8 devices with a large batch: the cheapest strategies split the batch and
// replicate the weights, which with Adam's states need more memory than splitting them.
ModelGraph Gpt() {
  samples::Gpt net(4, 64, 16, 256, 8, 8);
  return nn::BuildClassifier(net, {16}, 64, DType::kI32).value();
}

TEST(MemorySearch, PrefersStrategiesThatFitOverCheaperOnesThatDoNot) {
  ModelGraph m = Gpt();
  for (SearchMode mode : kModes) {
    auto free = SearchStrategies(m.graph, Options(mode, 8, 0));
    ASSERT_TRUE(free.ok()) << free.status().message();
    EXPECT_TRUE(free->memory_fits);
    // The least any strategies reach (a budget nothing fits reports it).
    auto least = SearchStrategies(m.graph, Options(mode, 8, 1));
    ASSERT_TRUE(least.ok()) << least.status().message();
    EXPECT_FALSE(least->memory_fits);
    ASSERT_LT(least->memory_estimate_bytes, free->memory_estimate_bytes * 0.97)
        << SearchModeName(mode) << ": the model must leave room between the two";
    // Between them (the search aims at memory_target of the budget): the unconstrained
    // strategies do not fit, others do, at a price.
    const double target = (least->memory_estimate_bytes + free->memory_estimate_bytes) / 2;
    SearchOptions o = Options(mode, 8, target / Options(mode, 8, 0).memory_target);
    auto fit = SearchStrategies(m.graph, o);
    ASSERT_TRUE(fit.ok()) << fit.status().message();
    EXPECT_TRUE(fit->memory_fits) << SearchModeName(mode) << ": " << fit->memory_note;
    EXPECT_LE(fit->memory_estimate_bytes, target * (1 + 1e-9)) << SearchModeName(mode);
    if (mode == SearchMode::kDynamicProgramming) {  // the exact optimum pays for fitting
      EXPECT_GE(fit->step_seconds, free->step_seconds * (1 - 1e-9));
    }
    EXPECT_EQ(fit->optimizer_sharding, 0);  // no option was open
    bool changed = false;
    for (size_t i = 0; i < fit->operators.size(); ++i)
      changed = changed || fit->operators[i].strategy != free->operators[i].strategy;
    EXPECT_TRUE(changed) << SearchModeName(mode);
  }
}

TEST(MemorySearch, OptionsOnlyWhenStrategiesAloneDoNotFit) {
  ModelGraph m = Gpt();
  for (SearchMode mode : kModes) {
    SearchOptions o = Options(mode, 8, 0);
    o.optimizer_sharding_options = {0, 1, 2, 3};
    // A budget the unconstrained strategies fit: no option.
    auto free = SearchStrategies(m.graph, o);
    ASSERT_TRUE(free.ok()) << free.status().message();
    o.memory_budget_bytes = free->memory_estimate_bytes * 1.01 / o.memory_target;
    auto roomy = SearchStrategies(m.graph, o);
    ASSERT_TRUE(roomy.ok());
    EXPECT_TRUE(roomy->memory_fits);
    EXPECT_EQ(roomy->optimizer_sharding, 0) << SearchModeName(mode);
    // Below the least that ZeRO 0 reaches, above the least of all: a stage is needed.
    auto least0 = SearchStrategies(m.graph, Options(mode, 8, 1));
    o.memory_budget_bytes = 1;
    auto least = SearchStrategies(m.graph, o);
    ASSERT_TRUE(least0.ok() && least.ok());
    ASSERT_LT(least->memory_estimate_bytes, least0->memory_estimate_bytes);
    o.memory_budget_bytes =
        (least0->memory_estimate_bytes + least->memory_estimate_bytes) / 2 / o.memory_target;
    auto tight = SearchStrategies(m.graph, o);
    ASSERT_TRUE(tight.ok());
    EXPECT_TRUE(tight->memory_fits) << SearchModeName(mode) << ": " << tight->memory_note;
    EXPECT_GT(tight->optimizer_sharding, 0) << SearchModeName(mode);
    EXPECT_LE(tight->memory_estimate_bytes, o.memory_budget_bytes * o.memory_target);
    // Every open option is estimated under the chosen strategies.
    EXPECT_EQ(tight->memory_options.size(), 4u);
    for (const MemoryOptionEstimate& e : tight->memory_options) {
      if (e.optimizer_sharding == tight->optimizer_sharding) {
        EXPECT_DOUBLE_EQ(e.memory_bytes, tight->memory_estimate_bytes);
      }
    }
  }
}

TEST(MemorySearch, NothingFitsNamesTheLargestConsumer) {
  ModelGraph m = Gpt();
  SearchOptions o = Options(SearchMode::kDynamicProgramming, 8, 1e5);
  o.optimizer_sharding_options = {0, 3};
  o.recompute_options = {{}, {"*"}};
  auto r = SearchStrategies(m.graph, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->memory_fits);
  EXPECT_GT(r->memory_estimate_bytes, 1e5);
  // The least memory is found with every option on.
  EXPECT_EQ(r->optimizer_sharding, 3);
  EXPECT_EQ(r->recompute, std::vector<std::string>{"*"});
  EXPECT_NE(r->memory_note.find("no strategies fit"), std::string::npos) << r->memory_note;
  EXPECT_NE(r->memory_note.find("largest consumer: operator '"), std::string::npos)
      << r->memory_note;
}

}  // namespace
}  // namespace shardscope
