#include "shardscope/viewer/redistribution_scene.h"

#include <gtest/gtest.h>

#include "synthetic_run.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

bool HasText(const Scene& scene, const QString& text) {
  for (const SceneItem& item : scene.items) {
    if (item.text.contains(text)) return true;
  }
  return false;
}

class RedistributionSceneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::WriteSyntheticRun(file_.path()).ok());
    auto doc = RunDocument::Open(file_.path());
    ASSERT_TRUE(doc.ok());
    doc_ = std::move(doc).value();
    ASSERT_FALSE(doc_->data().redistributions.empty());
  }
  testing::TempPath file_{"run.db"};
  std::unique_ptr<RunDocument> doc_;
};

TEST_F(RedistributionSceneTest, EachStepShowsMapsExchangesAndRunningTotal) {
  const auto& r = doc_->data().redistributions.front();
  ASSERT_EQ(FrameCount(r), 2);
  auto first = BuildRedistributionFrame(doc_->data(), r, 0);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(HasText(*first, "step 1 of 2"));
  EXPECT_TRUE(HasText(*first, "all-to-all along mp"));
  EXPECT_TRUE(HasText(*first, "r0 → r1  [0:2, 8:16]"));  // the irregular step's transfers
  EXPECT_TRUE(HasText(*first, "more than the lower bound"));
  // Before and after maps: the source layout, then the first step's result.
  EXPECT_TRUE(HasText(*first, "before  [dp | mp]"));
  EXPECT_TRUE(HasText(*first, "after  [dp.mp | -]"));
  auto second = BuildRedistributionFrame(doc_->data(), r, 1);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(HasText(*second, "group {0,1}"));
  EXPECT_TRUE(HasText(*second, "before  [dp.mp | -]"));
  // Running total: 128 B after step 1, 256 B after step 2 (bars grow).
  const auto bar1 = first->Find("bar");
  const auto bar2 = second->Find("bar");
  ASSERT_EQ(bar1.size(), 3u);
  EXPECT_LT(bar1[0]->rect.width(), bar2[0]->rect.width());
  EXPECT_DOUBLE_EQ(bar2[0]->rect.width(), bar2[1]->rect.width());  // = the whole plan
  EXPECT_GT(bar2[0]->rect.width(), bar2[2]->rect.width());         // above the lower bound
}

TEST_F(RedistributionSceneTest, StepOutOfRangeIsAnError) {
  const auto& r = doc_->data().redistributions.front();
  auto bad = BuildRedistributionFrame(doc_->data(), r, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos);
  EXPECT_FALSE(BuildRedistributionFrame(doc_->data(), r, -1).ok());
}

TEST_F(RedistributionSceneTest, APlanWithoutStepsSaysTheBufferIsShared) {
  store::RedistributionRecord r = doc_->data().redistributions.front();
  r.steps.clear();
  r.to_layout = r.from_layout;
  ASSERT_EQ(FrameCount(r), 1);
  auto frame = BuildRedistributionFrame(doc_->data(), r, 0);
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_TRUE(HasText(*frame, "no communication"));
}

// Two meshes of a run share axis b: mesh(a=2,b=4) is the plan mesh, the step's result is on
// mesh(b=8). "[b | -]" parses on both; the step's recorded mesh decides (the issue: the after
// map was drawn on the plan mesh with 4 blocks, the step's text saying 8).
TEST(RedistributionScene, EachStepIsDrawnOnItsOwnMesh) {
  RunData run;
  run.run.name = "two meshes";
  run.meshes = {{0, "mesh(a=2,b=4)", {2, 4}, {"a", "b"}, {}}, {1, "mesh(b=8)", {8}, {"b"}, {}}};
  store::TensorRecord t;
  t.id = 0;
  t.name = "relu:0";
  t.shape = {16, 8};
  run.tensors = {t};
  store::RedistributionRecord r;
  r.tensor_id = 0;
  r.from_layout = "[a | b]";
  r.from_mesh_id = 0;
  r.to_layout = "[b | -]";
  r.to_mesh_id = 1;
  r.plan_mesh_id = 0;
  store::RedistStepRecord step;
  step.kind = "all-to-all-v";
  step.layout_after = "[b | -]";
  step.mesh_id = 1;
  r.steps = {step};
  run.redistributions = {r};
  auto frame = BuildRedistributionFrame(run, r, 0);
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_TRUE(HasText(*frame, "8 block(s) on mesh(b=8)"));
  EXPECT_FALSE(HasText(*frame, "4 block(s) on mesh(a=2,b=4)"));
  // An older file recorded no mesh with the step: the plan mesh first, as before.
  r.steps[0].mesh_id = store::kNone;
  auto old = BuildRedistributionFrame(run, r, 0);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(HasText(*old, "4 block(s) on mesh(a=2,b=4)"));
}

}  // namespace
}  // namespace shardscope::viewer
