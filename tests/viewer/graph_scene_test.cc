#include "shardscope/viewer/graph_scene.h"

#include <gtest/gtest.h>

#include <set>

#include "synthetic_run.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

class GraphSceneTest : public ::testing::Test {
 protected:
  void Open(const testing::SyntheticRunOptions& options) {
    ASSERT_TRUE(testing::WriteSyntheticRun(file_.path(), options).ok());
    auto doc = RunDocument::Open(file_.path());
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    doc_ = std::move(doc).value();
  }
  const RunData& run() const { return doc_->data(); }
  testing::TempPath file_{"run.db"};
  std::unique_ptr<RunDocument> doc_;
};

TEST_F(GraphSceneTest, DrawsEveryOperatorInsideItsScopeCluster) {
  Open({});
  auto scene = BuildGraphScene(run());
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  const auto ops = scene->Find("operator");
  ASSERT_EQ(ops.size(), run().operators.size());
  std::map<QString, QRectF> clusters;
  for (const SceneItem* c : scene->Find("cluster")) clusters[c->key] = c->rect;
  ASSERT_EQ(clusters.size(), 4u);  // 24 operators in scopes of 6
  for (const SceneItem* op : ops) {
    const store::OperatorRecord* record = run().Operator(op->id);
    ASSERT_NE(record, nullptr);
    EXPECT_TRUE(op->text.contains(QString::fromStdString(record->strategy)));
    EXPECT_TRUE(clusters[QString::fromStdString(record->scope)].contains(op->rect)) << record->name;
  }
}

TEST_F(GraphSceneTest, SameStrategySameColour) {
  Open({});
  auto scene = BuildGraphScene(run());
  ASSERT_TRUE(scene.ok());
  std::map<std::string, std::set<QRgb>> colours;
  for (const SceneItem* op : scene->Find("operator")) {
    colours[run().Operator(op->id)->strategy].insert(op->fill.rgb());
  }
  ASSERT_EQ(colours.size(), 3u);
  std::set<QRgb> all;
  for (const auto& [strategy, set] : colours) {
    EXPECT_EQ(set.size(), 1u) << strategy;
    all.insert(*set.begin());
  }
  EXPECT_EQ(all.size(), 3u);
}

TEST_F(GraphSceneTest, ColourByWorkerAndByMemory) {
  Open({});
  GraphOptions options;
  options.color_by = ColorBy::kWorker;
  auto by_worker = BuildGraphScene(run(), options);
  ASSERT_TRUE(by_worker.ok());
  std::map<int64_t, std::set<QRgb>> worker_colours;
  for (const SceneItem* op : by_worker->Find("operator")) {
    worker_colours[run().Operator(op->id)->worker].insert(op->fill.rgb());
  }
  ASSERT_EQ(worker_colours.size(), 4u);
  for (const auto& [worker, set] : worker_colours) EXPECT_EQ(set.size(), 1u) << worker;
  // By memory: the chosen candidate's bytes (4096 for every operator here): one shade.
  options.color_by = ColorBy::kMemory;
  auto by_memory = BuildGraphScene(run(), options);
  ASSERT_TRUE(by_memory.ok());
  std::set<QRgb> shades;
  for (const SceneItem* op : by_memory->Find("operator")) shades.insert(op->fill.rgb());
  EXPECT_EQ(shades.size(), 1u);
  EXPECT_NE(*shades.begin(), QColor(Qt::white).rgb());
}

TEST_F(GraphSceneTest, RedistributionEdgesAreLabelledWithCollectivesAndBytes) {
  Open({});
  auto scene = BuildGraphScene(run());
  ASSERT_TRUE(scene.ok());
  const auto edges = scene->Find("redistribution");
  ASSERT_EQ(edges.size(), run().redistributions.size());
  for (const SceneItem* e : edges) {
    EXPECT_TRUE(e->text.contains("all-to-all(mp) + all-gather(mp)")) << e->text.toStdString();
    EXPECT_TRUE(e->text.contains("256 B"));
    EXPECT_GT(e->stroke_width, 1.5);
  }
  EXPECT_FALSE(scene->Find("edge").empty());
}

TEST_F(GraphSceneTest, LargeScopesCollapseUnlessExpanded) {
  Open({.num_ops = 60, .ops_per_scope = 20, .steps = 1, .workers = 0});
  GraphOptions options;
  options.collapse_above = 10;
  auto collapsed = BuildGraphScene(run(), options);
  ASSERT_TRUE(collapsed.ok());
  EXPECT_TRUE(collapsed->Find("operator").empty());
  int boxes = 0;
  for (const SceneItem* c : collapsed->Find("cluster")) {
    if (c->text.contains("20 operators")) ++boxes;
  }
  EXPECT_EQ(boxes, 3);
  options.expanded.insert("block1");
  auto expanded = BuildGraphScene(run(), options);
  ASSERT_TRUE(expanded.ok());
  EXPECT_EQ(expanded->Find("operator").size(), 20u);
}

TEST_F(GraphSceneTest, PartitionedViewHasOneClusterPerWorkerAndSendRecvEdges) {
  Open({});
  GraphOptions options;
  options.partitioned = true;
  auto scene = BuildGraphScene(run(), options);
  ASSERT_TRUE(scene.ok());
  std::set<QString> workers;
  for (const SceneItem* c : scene->Find("cluster")) workers.insert(c->key);
  EXPECT_EQ(workers, (std::set<QString>{"worker 0", "worker 1", "worker 2", "worker 3"}));
  const auto sends = scene->Find("send_recv");
  ASSERT_EQ(sends.size(), run().send_recvs.size());
  ASSERT_FALSE(sends.empty());
  EXPECT_TRUE(sends[0]->text.startsWith("send r0→r1"));
}

TEST_F(GraphSceneTest, WithoutPlacementThePartitionedViewSaysSo) {
  Open({.num_ops = 10, .ops_per_scope = 5, .steps = 1, .workers = 0});
  GraphOptions options;
  options.partitioned = true;
  auto scene = BuildGraphScene(run(), options);
  ASSERT_TRUE(scene.ok());
  bool said = false;
  for (const SceneItem& item : scene->items) said |= item.text.contains("none recorded");
  EXPECT_TRUE(said);
  EXPECT_TRUE(scene->Find("send_recv").empty());
}

TEST_F(GraphSceneTest, FilterAndForwardOnlyRestrictTheOperators) {
  Open({});
  GraphOptions options;
  options.filter = "block2.";
  auto scene = BuildGraphScene(run(), options);
  ASSERT_TRUE(scene.ok());
  ASSERT_EQ(scene->Find("operator").size(), 6u);
  for (const SceneItem* op : scene->Find("operator")) {
    EXPECT_EQ(run().Operator(op->id)->scope, "block2");
  }
}

}  // namespace
}  // namespace shardscope::viewer
