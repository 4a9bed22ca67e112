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

}  // namespace
}  // namespace shardscope::viewer
