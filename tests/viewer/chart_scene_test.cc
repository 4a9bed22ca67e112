// render --view loss|steptime|memory on a synthetic run: a point per step at the figures the
// run holds, stacked memory bars per rank that add up to each rank's kinds, and a clear note
// for a run without steps.
#include "shardscope/viewer/chart_scene.h"

#include <gtest/gtest.h>

#include "shardscope/viewer/painter.h"
#include "shardscope/viewer/render.h"
#include "synthetic_run.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

std::unique_ptr<RunDocument> Open(const std::string& path) {
  auto doc = RunDocument::Open(path);
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  return doc.ok() ? std::move(doc).value() : nullptr;
}

TEST(ChartSceneTest, LossAndStepTimeDrawAPointPerStepInDataOrder) {
  testing::TempPath file("run.db");
  ASSERT_TRUE(testing::WriteSyntheticRun(file.path(), {.steps = 9}).ok());
  auto doc = Open(file.path());
  ASSERT_NE(doc, nullptr);
  const RunData& run = doc->data();
  const Scene loss = BuildLossChart(run);
  const auto lines = loss.Find("series");
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0]->points.size(), static_cast<int>(run.steps.size()));
  // The loss falls step by step: each point lower on the page than... higher y = lower value.
  for (int i = 1; i < lines[0]->points.size(); ++i) {
    EXPECT_GT(lines[0]->points[i].x(), lines[0]->points[i - 1].x());
    EXPECT_GT(lines[0]->points[i].y(), lines[0]->points[i - 1].y());
  }
  const Scene time = BuildStepTimeChart(run);
  EXPECT_EQ(time.Find("series").size(), 3u);  // step, compute, communication
  EXPECT_GE(time.Find("legend").size(), 3u);
  for (const std::string view : {"loss", "steptime", "memory"}) {
    RenderRequest request;
    request.view = view;
    auto scene = RenderView(run, request);
    ASSERT_TRUE(scene.ok()) << view;
    ASSERT_TRUE(SaveScene(*scene, file.Sibling(view + ".png")).ok()) << view;
  }
}

TEST(ChartSceneTest, MemoryStacksEachRanksKindsToItsTotal) {
  testing::TempPath file("run.db");
  ASSERT_TRUE(testing::WriteSyntheticRun(file.path()).ok());
  auto doc = Open(file.path());
  ASSERT_NE(doc, nullptr);
  const Scene scene = BuildMemoryChart(doc->data());
  for (const auto& t : doc->data().rank_totals) {
    const auto bars = scene.Find("rank", t.rank);
    ASSERT_EQ(bars.size(), 4u) << "rank " << t.rank;
    // Stacked: each kind starts where the one below it ends.
    for (size_t k = 1; k < bars.size(); ++k)
      EXPECT_NEAR(bars[k]->rect.bottom(), bars[k - 1]->rect.top(), 1e-6);
    EXPECT_EQ(bars[0]->key, "parameters");
    EXPECT_GT(bars[0]->rect.height(), 0);
  }
}

TEST(ChartSceneTest, ARunWithoutStepsSaysSo) {
  testing::TempPath file("run.db");
  ASSERT_TRUE(testing::WriteSyntheticRun(file.path(), {.steps = 0}).ok());
  auto doc = Open(file.path());
  ASSERT_NE(doc, nullptr);
  for (const Scene& s : {BuildLossChart(doc->data()), BuildMemoryChart(doc->data())}) {
    ASSERT_EQ(s.Find("label").size(), 1u);
    EXPECT_TRUE(s.Find("label")[0]->text.contains("no training steps"));
  }
}

}  // namespace
}  // namespace shardscope::viewer
