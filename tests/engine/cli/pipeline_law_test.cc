// The correctness law for the planner's pipeline stages, in-process (pipeline_law_cases.h),
// and what the stages hold: contiguous, one per device, buffers only for the micro-batches
// in flight.
#include <gtest/gtest.h>

#include "pipeline_law_cases.h"

namespace shardscope {
namespace {

using pipeline_law::Staged;

void ExpectLaw(const std::string& sample, int devices, int64_t batch, Shape example) {
  auto s = Staged(sample, devices, batch);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->choice.stages, devices);
  EXPECT_EQ(batch % s->choice.micro_batches, 0);
  const Dataset data = MakeSyntheticDataset(batch * 4, example, 10, 5);
  Status st = testing_law::CheckPlacedLaw(pipeline_law::StagedBuild(*s), data, batch, devices,
                                          pipeline_law::OptionsOf(*s), 4);
  EXPECT_TRUE(st.ok()) << sample << ": " << st.message();
}

TEST(PipelineLawTest, FfnStagesEqualOneDevice) { ExpectLaw("ffn.yaml", 4, 32, {1, 28, 28}); }

TEST(PipelineLawTest, EightLayerMlpStagesEqualOneDevice) {
  ExpectLaw("mlp_pipeline.yaml", 4, 64, {1, 28, 28});
}

TEST(PipelineLawTest, LeNetStagesEqualOneDevice) { ExpectLaw("lenet5.yaml", 3, 24, {1, 32, 32}); }

TEST(PipelineLawTest, StagesAreContiguousAndHoldOnlyMicroBatchesInFlight) {
  auto s = Staged("mlp_pipeline.yaml", 4, 64);
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto model = pipeline_law::StagedBuild(*s)(64 / s->choice.micro_batches);
  ASSERT_TRUE(model.ok()) << model.status().message();
  int previous = 0;
  for (const Node& n : model->graph.nodes()) {  // forward operators in graph order
    EXPECT_GE(n.annotations.worker, previous) << n.name;
    EXPECT_LE(n.annotations.worker, previous + 1) << n.name;
    previous = n.annotations.worker;
  }
  EXPECT_EQ(previous, 3);
  const int m = s->choice.micro_batches;
  ModelGraph gpipe_model = *model;
  auto one = PlanPipeline(&*model, pipeline_law::OptionsOf(*s));
  ASSERT_TRUE(one.ok()) << one.status().message();
  PipelineOptions gpipe = pipeline_law::OptionsOf(*s);
  gpipe.schedule = PipelineSchedule::kGPipe;
  auto all = PlanPipeline(&gpipe_model, gpipe);
  ASSERT_TRUE(all.ok()) << all.status().message();
  for (int w = 0; w < 4; ++w) {
    EXPECT_EQ(one->slots[w], std::min(m, 4 - w)) << "worker " << w;
    EXPECT_EQ(all->slots[w], m) << "worker " << w;
    auto lean = WorkerMemoryBytes(model->graph, *one, m, 1, w);
    auto full = WorkerMemoryBytes(gpipe_model.graph, *all, m, 1, w);
    ASSERT_TRUE(lean.ok() && full.ok());
    if (m > 4 - w) {
      EXPECT_LT(*lean, *full) << "worker " << w;
    } else {
      EXPECT_EQ(*lean, *full) << "worker " << w;
    }
  }
}

}  // namespace
}  // namespace shardscope
