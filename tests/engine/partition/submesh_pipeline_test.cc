// Pipeline stages sharded over sub-meshes (submesh_pipeline.h): the plan's cut and the
// correctness law on in-process devices.
#include <gtest/gtest.h>

#include <algorithm>

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

// basic_blocks.yaml: block1 (dense1, gelu, dense2) on stage 0, the rest on stage 1, each stage
// data-parallel over 2 devices; recomputing a block drops dense1's output, which gelu's
// gradient reads, so the block's forward replays in its stage's backward phase.
Result<ModelGraph> Blocks(std::map<std::string, int>* stage_of) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ModelFile mf, LoadModelFile(SHARDSCOPE_SOURCE_DIR "/samples/models/basic_blocks.yaml"));
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, mf.Build(8));
  for (const Node& n : m.graph.nodes()) {
    m.graph.mutable_node(n.id).annotations = {};
    (*stage_of)[n.name] = n.name.rfind("block1.", 0) == 0 ? 0 : 1;
  }
  return m;
}

TEST(SubMeshPipeline, RecomputeReplaysInTheBackwardAndKeepsOneBufferForAllMicroBatches) {
  SubMeshOptions o;
  o.stages = 2;
  o.micro_batches = 2;
  o.partition.devices = 2;
  auto m = Blocks(&o.stage_of);
  auto r = Blocks(&o.stage_of);
  ASSERT_TRUE(m.ok() && r.ok()) << m.status().message();
  auto plain = PlanSubMeshPipeline(&*m, o);
  o.partition.recompute = {"block1", "block2"};
  auto replayed = PlanSubMeshPipeline(&*r, o);
  ASSERT_TRUE(plain.ok() && replayed.ok()) << replayed.status().message();
  ASSERT_EQ(replayed->program.recompute.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const auto runs = [](const std::vector<StageItem>& items) {
      return std::count_if(items.begin(), items.end(),
                           [](const StageItem& i) { return i.kind == StageItem::Kind::kRun; });
    };
    EXPECT_GT(runs(replayed->backward[s]), runs(plain->backward[s])) << "stage " << s;
    EXPECT_EQ(runs(replayed->forward[s]), runs(plain->forward[s])) << "stage " << s;
  }
  // Stage 0 holds 2 micro-batches in flight; the dropped values take one buffer, not two.
  EXPECT_LT(SubMeshStageBytes(r->graph, *replayed, 0, 1),
            SubMeshStageBytes(m->graph, *plain, 0, 1));
  // A block split across stages is refused, naming it.
  auto split = Blocks(&o.stage_of);
  ASSERT_TRUE(split.ok());
  o.stage_of["block1.dense2.matmul"] = 1;
  o.stage_of["block1.dense2.bias_add"] = 1;
  auto refused = PlanSubMeshPipeline(&*split, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("recompute block1"), std::string::npos)
      << refused.status().message();
}

// Data-parallel stages of 4: ZeRO 1 slices the optimizer states, ZeRO 2 also drops the
// reduced gradient for a slice of it, ZeRO 3 also keeps only a slice of each parameter (at 2
// devices fc1, half of stage 0's weights, gathered whole outweighs the halves kept); each
// stage reduce-scatters exactly its own gradients.
TEST(SubMeshPipeline, OptimizerShardingStagesShrinkTheStageAndScatterItsOwnGradients) {
  std::vector<int64_t> bytes;
  for (int stage : {0, 1, 2, 3}) {
    auto m = submesh_law::Build(8, 4, false, nullptr);
    ASSERT_TRUE(m.ok());
    SubMeshOptions o = submesh_law::Options(4, 2, false);
    o.partition.optimizer_sharding = stage;
    o.partition.gradient_bucket_bytes = 1 << 20;  // buckets of several parameters
    auto plan = PlanSubMeshPipeline(&*m, o);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    bytes.push_back(SubMeshStageBytes(m->graph, *plan, 0, 1));
    if (stage < 2) continue;
    size_t scattered = 0, several = 0;
    for (int s = 0; s < 2; ++s) {
      for (const ScatterBucket& b : StageScatterBuckets(*plan, s)) {
        scattered += b.params.size();
        several += b.params.size() > 1 ? 1 : 0;
        int64_t slice = 0;
        for (int i : b.params) {
          EXPECT_EQ(plan->param_stage[i], s);
          EXPECT_TRUE(plan->program.param_sharding[i].reduce_scatter);
          slice += plan->program.param_sharding[i].chunk;
        }
        EXPECT_EQ(b.slice, slice);
      }
    }
    size_t expected = 0;
    for (const ParamSharding& s : plan->program.param_sharding) expected += s.reduce_scatter;
    EXPECT_EQ(scattered, expected);
    EXPECT_EQ(expected, plan->params.size());  // every parameter is replicated over the stage
    EXPECT_GT(several, 0u);
    // A rank's view: its stage's buckets, other stages' parameters left whole.
    DistProgram view = plan->program;
    KeepStageSharding(*plan, 1, &view);
    for (size_t i = 0; i < view.param_sharding.size(); ++i) {
      const ParamSharding& s = view.param_sharding[i];
      EXPECT_EQ(s.group_size > 1, plan->param_stage[i] == 1);
      if (plan->param_stage[i] != 1) continue;
      const ScatterBucket& b = view.scatter_buckets.at(s.bucket);
      EXPECT_LE(s.bucket_offset + s.chunk, b.slice);
    }
  }
  EXPECT_LT(bytes[1], bytes[0]);
  EXPECT_LT(bytes[2], bytes[1]);
  EXPECT_LT(bytes[3], bytes[2]);
}

// ZeRO 3: a parameter is gathered before its first read in each phase and freed after its
// last, so both phases of fc1's stage gather it and nothing stays gathered between them.
TEST(SubMeshPipeline, ZeroThreeFreesGatheredParametersAfterEachPhase) {
  auto m = submesh_law::Build(8, 2, false, nullptr);
  ASSERT_TRUE(m.ok());
  SubMeshOptions o = submesh_law::Options(2, 2, false);
  o.partition.optimizer_sharding = 3;
  auto plan = PlanSubMeshPipeline(&*m, o);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const DistProgram& p = plan->program;
  for (int s = 0; s < 2; ++s) {
    for (const auto* items : {&plan->forward[s], &plan->backward[s]}) {
      const auto release = PhaseReleases(p, *items);
      std::vector<int> read(p.values.size(), 0), freed(p.values.size(), 0);
      for (size_t k = 0; k < items->size(); ++k) {
        if ((*items)[k].kind == StageItem::Kind::kRun)
          for (int v : p.instrs[(*items)[k].index].inputs) read[v] += p.gathered_param[v] >= 0;
        for (int v : release[k]) {
          ++freed[v];
          EXPECT_GE(p.gathered_param[v], 0);
        }
      }
      for (size_t v = 0; v < p.values.size(); ++v) EXPECT_EQ(freed[v], read[v] > 0 ? 1 : 0);
      EXPECT_GT(PhaseGatheredBytes(p, *items), 0) << "stage " << s;
    }
  }
}

struct LawCase {
  int k;
  int micro_batches;
  bool strategies;
  int zero = 0;
  std::vector<std::string> recompute = {};
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
                                  single, accuracy, c.zero, c.recompute);
  });
  EXPECT_TRUE(st.ok()) << st.message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SubMeshLaw,
    testing::Values(LawCase{2, 1, true}, LawCase{2, 4, true}, LawCase{2, 2, false},
                    LawCase{1, 2, false}, LawCase{4, 2, true}, LawCase{2, 2, false, 1},
                    LawCase{2, 2, true, 1}, LawCase{2, 4, true, 0, {"*"}},
                    LawCase{2, 2, false, 1, {"fc2", "fc6"}}, LawCase{2, 2, false, 2},
                    LawCase{2, 4, false, 3}, LawCase{4, 2, false, 2}, LawCase{4, 2, false, 3},
                    LawCase{2, 2, true, 2}, LawCase{2, 2, true, 3}, LawCase{2, 2, false, 2, {"*"}},
                    LawCase{4, 4, false, 3, {"fc2", "fc6"}}, LawCase{2, 2, true, 3, {"*"}}),
    [](const testing::TestParamInfo<LawCase>& info) {
      const LawCase& c = info.param;
      return "k" + std::to_string(c.k) + "_m" + std::to_string(c.micro_batches) +
             (c.strategies ? "_sharded" : "_data") + "_zero" + std::to_string(c.zero) +
             "_recompute" + std::to_string(c.recompute.size());
    });

}  // namespace
}  // namespace shardscope
