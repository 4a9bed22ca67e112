// Gradient reductions on one stream beside the backward (ScheduleGradientReductions), and what
// it does to the predicted step of a decoder as data parallelism grows on a cluster profile.
#include <gtest/gtest.h>

#include <string>

#include "shardscope/cost/cluster.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/gradient_overlap.h"
#include "shardscope/model_file.h"
#include "shardscope/program_price.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

constexpr double kBucket = 100;  // bytes

// Ten segments of 1 s backward, each completing one gradient of `bytes` costing `seconds`.
std::vector<BackwardSegment> Layers(double bytes, double seconds) {
  std::vector<BackwardSegment> b;
  for (int i = 0; i < 10; ++i) b.push_back({1.0, {{bytes, seconds, true}}});
  return b;
}

TEST(GradientOverlap, BucketsHiddenBehindTheBackwardCostNothing) {
  // Buckets of two gradients, 0.5 s each, launched at 2, 4, ... 10 s: the last ends at 10.5 s.
  GradientOverlap o = ScheduleGradientReductions(Layers(50, 0.25), kBucket);
  EXPECT_EQ(o.launches, 5);
  EXPECT_DOUBLE_EQ(o.backward_seconds, 10.0);
  EXPECT_DOUBLE_EQ(o.reduction_seconds, 2.5);
  EXPECT_DOUBLE_EQ(o.exposed_seconds(), 0.5);  // only the last bucket, ready at the end
  // With the last gradient completed earlier (nothing in the final segment), all is hidden.
  std::vector<BackwardSegment> early = Layers(50, 0.25);
  early.push_back({1.0, {}});
  o = ScheduleGradientReductions(early, kBucket);
  EXPECT_DOUBLE_EQ(o.backward_seconds, 11.0);
  EXPECT_DOUBLE_EQ(o.exposed_seconds(), 0.0);
  EXPECT_DOUBLE_EQ(o.hidden_seconds(), o.reduction_seconds);
}

TEST(GradientOverlap, AStreamSlowerThanTheBackwardIsExposed) {
  // Buckets of 3 s each launched every 2 s: the stream falls behind, one after another.
  const GradientOverlap o = ScheduleGradientReductions(Layers(50, 1.5), kBucket);
  EXPECT_DOUBLE_EQ(o.done_seconds, 2 + 5 * 3.0);
  EXPECT_DOUBLE_EQ(o.exposed_seconds(), 7.0);
  EXPECT_DOUBLE_EQ(o.hidden_seconds(), 15.0 - 7.0);
}

TEST(GradientOverlap, LoneReductionsAndAPartialLastBucket) {
  // A gradient outside the buckets is launched when ready; what is left in an unfilled bucket
  // is launched at the backward's end.
  std::vector<BackwardSegment> b = {
      {1.0, {{500, 0.5, false}}}, {1.0, {{10, 0.25, true}}}, {1.0, {}}};
  const GradientOverlap o = ScheduleGradientReductions(b, kBucket);
  EXPECT_EQ(o.launches, 2);
  EXPECT_DOUBLE_EQ(o.done_seconds, 3.25);
  EXPECT_DOUBLE_EQ(o.exposed_seconds(), 0.25);
  // Without buckets every reduction is alone.
  EXPECT_EQ(ScheduleGradientReductions(Layers(50, 0.25), 0).launches, 10);
}

constexpr double kMiB = 1 << 20;

// GPT-2 planned as `shardscope plan --cluster dgx-h100 --dtype bf16 --search
// recursive_programming --batch N --devices N` does, priced with PriceProgram; with
// `bucket_choices` as --bucket-mb auto (one size: that bucket alone; the program priced at the
// bucket the search chose, into `*searched`, with the loss all-reduce's price into
// `*loss_seconds`).
ProgramPrice PlanGpt2(int devices, SearchMode mode, std::vector<double> bucket_choices = {},
                      SearchResult* searched = nullptr, double* loss_seconds = nullptr) {
  ModelLoadOptions load;
  load.weights = false;
  auto mf = LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/onnx/gpt2.onnx", load);
  EXPECT_TRUE(mf.ok()) << mf.status().message();
  if (!mf.ok()) return {};
  auto built = mf->Build(devices);  // one sample per device
  EXPECT_TRUE(built.ok()) << built.status().message();
  if (!built.ok()) return {};
  ModelGraph graph = std::move(*built);
  auto profile = LoadClusterProfile("dgx-h100");
  EXPECT_TRUE(profile.ok()) << profile.status().message();
  if (!profile.ok()) return {};
  auto mesh = ClusterDeviceMesh(*profile, devices);
  EXPECT_TRUE(mesh.ok()) << mesh.status().message();
  if (!mesh.ok()) return {};
  SearchOptions search;
  search.mode = mode;
  search.devices = devices;
  search.dtype = Precision::kBF16;
  search.device_mesh = *mesh;
  auto cost = ClusterCostModel(*profile, *mesh, search.dtype);
  EXPECT_TRUE(cost.ok()) << cost.status().message();
  if (!cost.ok()) return {};
  search.cost = *cost;
  if (bucket_choices.size() == 1) search.cost.gradient_bucket_bytes = bucket_choices[0];
  if (bucket_choices.size() > 1) search.gradient_bucket_choices = std::move(bucket_choices);
  auto result = SearchStrategies(graph.graph, search);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return {};
  EXPECT_TRUE(ApplySearchResult(*result, &graph.graph).ok());
  PartitionOptions partition;
  partition.devices = devices;
  search.cost.gradient_bucket_bytes = result->gradient_bucket_bytes;
  partition.cost = search.cost;
  partition.element_bytes = PrecisionBytes(search.dtype);
  auto program = PlanTrainingProgram(&graph, partition);
  EXPECT_TRUE(program.ok()) << program.status().message();
  if (!program.ok()) return {};
  auto price = PriceProgram(graph.graph, *program, search);
  EXPECT_TRUE(price.ok()) << price.status().message();
  if (searched != nullptr) *searched = *result;
  for (size_t i = 0; loss_seconds != nullptr && price.ok() && i < program->instrs.size(); ++i) {
    const DistInstr& in = program->instrs[i];
    if (in.kind == DistInstr::Kind::kRedistribute && program->values[in.inputs[0]].name == "loss")
      *loss_seconds = price->instr_seconds[i];
  }
  return price.ok() ? *price : ProgramPrice{};
}

std::vector<double> BucketChoices() { return {25 * kMiB, 50 * kMiB, 100 * kMiB, 400 * kMiB}; }

// The loss's all-reduce over 4096 H100s (512 DGX nodes), a few bytes: NCCL's tree latency,
// 2 ((8 - 1) x 3.4 us + log2(512) x 14 us) = 299.6 us, plus the launch (8.4 us) — not
// 2 log2(4096) x 14 us = 336 us as if every hop crossed the network.
TEST(GradientOverlap, TheLossAllReduceHopsInsideNodesOverNvlink) {
  double loss = 0;
  PlanGpt2(4096, SearchMode::kSemiAuto, {}, nullptr, &loss);
  EXPECT_NEAR(loss, 299.6e-6 + 8.4e-6, 0.05e-6);
}

// --bucket-mb auto: at 4096 devices a bucket's tree pays 2 x 9 network hops, so larger
// buckets (fewer of them) price lower; inside one node (8 devices, NVLink, little latency)
// DDP's 25 MiB starts sooner in the backward and wins. Either way the objective is the price
// of the program reduced in the chosen buckets, and no size tried prices lower.
TEST(GradientOverlap, PlanChoosesTheCheapestGradientBucketAndPricesIt) {
  for (int devices : {8, 4096}) {
    SearchResult chosen;
    const ProgramPrice price = PlanGpt2(devices, SearchMode::kSemiAuto, BucketChoices(), &chosen);
    ASSERT_GT(price.step_seconds, 0);
    EXPECT_NEAR(chosen.step_seconds / price.step_seconds, 1.0, 1e-3) << devices << " devices";
    if (devices == 8) {
      EXPECT_EQ(chosen.gradient_bucket_bytes, 25 * kMiB);
    } else {
      EXPECT_GT(chosen.gradient_bucket_bytes, 25 * kMiB);
    }
    for (double bucket : BucketChoices()) {
      if (bucket == chosen.gradient_bucket_bytes) continue;
      SearchResult fixed;
      PlanGpt2(devices, SearchMode::kSemiAuto, {bucket}, &fixed);
      EXPECT_EQ(fixed.gradient_bucket_bytes, bucket);
      EXPECT_GT(fixed.step_seconds, chosen.step_seconds) << devices << " devices, " << bucket;
    }
  }
}

// Weak scaling: at one sample per device the work per device is fixed, and data parallelism's
// gradient all-reduces run beside the backward, so its step hardly grows from 64 to 4096 H100s
// (buckets as plan chooses them). What grows is latency: a tree's 2 log2(nodes) network hops
// (NCCL's tuner; the hops inside a node stay on NVLink) on what cannot hide — the loss's
// all-reduce, an activation gradient's reduction, the bucket completed last: 12 more hops of
// 14 us each, 0.17 ms per collective, about 8 % of the step; larger buckets save some of it.
TEST(GradientOverlap, DataParallelGpt2StepDoesNotGrowFrom64To4096Devices) {
  const ProgramPrice at64 = PlanGpt2(64, SearchMode::kSemiAuto, BucketChoices());
  const ProgramPrice at4096 = PlanGpt2(4096, SearchMode::kSemiAuto, BucketChoices());
  ASSERT_GT(at64.step_seconds, 0);
  ASSERT_GT(at4096.step_seconds, 0);
  EXPECT_GT(at4096.hidden_seconds, 0);
  EXPECT_LE(at4096.step_seconds, at64.step_seconds * 1.05)
      << "64 devices: " << at64.step_seconds << " s, 4096: " << at4096.step_seconds << " s";
}

// The searches keep data parallelism when, with the reductions overlapped, nothing their local
// choices find prices lower (the last check of search.cc's overlapped search).
TEST(GradientOverlap, SearchedGpt2NeverPricesAboveDataParallel) {
  const ProgramPrice searched = PlanGpt2(4096, SearchMode::kRecursiveProgramming);
  const ProgramPrice data_parallel = PlanGpt2(4096, SearchMode::kSemiAuto);
  ASSERT_GT(searched.step_seconds, 0);
  EXPECT_LE(searched.step_seconds, data_parallel.step_seconds * (1 + 1e-3));
}

}  // namespace
}  // namespace shardscope
