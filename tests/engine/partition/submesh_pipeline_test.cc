// Pipeline stages sharded over sub-meshes (submesh_pipeline.h): the plan's cut and the
// correctness law on in-process devices.
#include <gtest/gtest.h>

#include "submesh_law.h"

namespace shardscope {
namespace {

TEST(SubMeshPipeline, CutSendsShardsBetweenMatchingRanksAndReshardsOnTheReceiver) {
  auto m = submesh_law::Build(8, 2, true, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto plan = PlanSubMeshPipeline(&*m, submesh_law::Options(2, 2, true));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->stage_devices, 2);
  EXPECT_EQ(plan->loss_stage, 1);
  // fc4's ReLU output (batch-split on stage 0) goes forward, its gradient comes back.
  int forward = 0, backward = 0;
  for (const StageCut& c : plan->cuts) {
    EXPECT_NE(c.src_stage, c.dst_stage);
    if (!c.send_backward) {
      ++forward;
      EXPECT_LT(c.src_stage, c.dst_stage);
    } else {
      ++backward;
      EXPECT_GT(c.src_stage, c.dst_stage);
    }
  }
  EXPECT_GE(forward, 1);
  EXPECT_GE(backward, 1);
  // Stage 1 splits the contraction: a redistribution on stage 1 turns the received
  // batch-split activation into its own layout.
  bool reshard_on_receiver = false;
  for (size_t i = 0; i < plan->program.instrs.size(); ++i) {
    const DistInstr& in = plan->program.instrs[i];
    if (in.kind != DistInstr::Kind::kRedistribute || plan->instr_stage[i] != 1) continue;
    for (const StageCut& c : plan->cuts)
      reshard_on_receiver = reshard_on_receiver || (c.value == in.inputs[0] && c.dst_stage == 1);
  }
  EXPECT_TRUE(reshard_on_receiver);
  // 1F1B: stage 0 keeps both micro-batches in flight, stage 1 one.
  EXPECT_EQ(plan->slots, (std::vector<int>{2, 1}));
  EXPECT_GT(SubMeshStageBytes(m->graph, *plan, 0, 1), 0);
}

TEST(SubMeshPipeline, RefusesAnActivationFlowingBackToAnEarlierStage) {
  auto m = submesh_law::Build(8, 2, false, nullptr);
  ASSERT_TRUE(m.ok());
  SubMeshOptions o = submesh_law::Options(2, 1, false);
  o.stage_of["fc8.matmul"] = 0;  // reads fc7's output, made on stage 1
  auto plan = PlanSubMeshPipeline(&*m, o);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("flows from stage 1 back to stage 0"), std::string::npos)
      << plan.status().message();
}

struct LawCase {
  int k;
  int micro_batches;
  bool strategies;
};

class SubMeshLaw : public testing::TestWithParam<LawCase> {};

TEST_P(SubMeshLaw, EqualsTheSingleDeviceRun) {
  const LawCase c = GetParam();
  constexpr int64_t kBatch = 16;
  constexpr int kSteps = 4;
  const Dataset data = MakeSyntheticDataset(kBatch * kSteps, {1, 28, 28}, 10, 5);
  double accuracy = 0;
  const testing_law::SingleRun single = submesh_law::Single(kBatch, kSteps, data, &accuracy);
  const Status st = RunOnDevices(2 * c.k, [&](Communicator& world) {
    return submesh_law::TrainRank(world, kBatch, c.micro_batches, kSteps, c.strategies, data,
                                  single, accuracy);
  });
  EXPECT_TRUE(st.ok()) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Cases, SubMeshLaw,
                         testing::Values(LawCase{2, 1, true}, LawCase{2, 4, true},
                                         LawCase{2, 2, false}, LawCase{1, 2, false},
                                         LawCase{4, 2, true}));

}  // namespace
}  // namespace shardscope
