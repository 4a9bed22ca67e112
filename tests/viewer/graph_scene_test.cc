#include "shardscope/viewer/graph_scene.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// Texts of the items with `role`.
std::vector<QString> Texts(const Scene& scene, const QString& role) {
  std::vector<QString> texts;
  for (const SceneItem* item : scene.Find(role)) texts.push_back(item->text);
  return texts;
}

bool AnyContains(const std::vector<QString>& texts, const QString& part) {
  return std::any_of(texts.begin(), texts.end(),
                     [&](const QString& t) { return t.contains(part); });
}

TEST_F(GraphSceneTest, RepeatedScopesFoldForwardAndBackwardWhateverTheirSize) {
  // 100 scopes of 6 operators each (below collapse_above), the same operators in each.
  Open({.num_ops = 600, .ops_per_scope = 6, .steps = 1, .workers = 0, .backward = true});
  auto scene = BuildGraphScene(run());
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  EXPECT_TRUE(scene->Find("operator").empty());
  const auto boxes = Texts(*scene, "cluster");
  EXPECT_TRUE(AnyContains(boxes, "block0 \u2026 block99\n\u00d7100 \u00b7 6 operators each"));
  EXPECT_TRUE(AnyContains(boxes, "\u2207 block0 \u2026 block99\n\u00d7100"));
  int64_t drawn_nodes = 0;
  for (const SceneItem& item : scene->items) {
    drawn_nodes += item.role == "cluster" && item.shape == SceneItem::Shape::kRoundedRect &&
                   item.stroke_width > 1.5;
  }
  EXPECT_LE(drawn_nodes, 4);  // the two folds, nothing per block
}

TEST_F(GraphSceneTest, ExpandingOneRepeatDrawsItAndFoldsTheOthersAroundIt) {
  Open({.num_ops = 600, .ops_per_scope = 6, .steps = 1, .workers = 0, .backward = true});
  GraphOptions options;
  options.expanded.insert("block5");
  auto scene = BuildGraphScene(run(), options);
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  std::set<std::string> drawn;
  for (const SceneItem* op : scene->Find("operator")) drawn.insert(run().Operator(op->id)->name);
  EXPECT_EQ(drawn.size(), 12u);  // block5's six operators and their six gradients
  EXPECT_TRUE(drawn.count("block5.op0") && drawn.count("grad.block5.op3.dx"));
  const auto boxes = Texts(*scene, "cluster");
  EXPECT_TRUE(AnyContains(boxes, "block0 \u2026 block4\n\u00d75"));
  EXPECT_TRUE(AnyContains(boxes, "block6 \u2026 block99\n\u00d794"));
  // The backward operators sit in their own scope cluster, beside the forward one.
  std::set<QString> clusters;
  for (const SceneItem* c : scene->Find("cluster")) clusters.insert(c->key);
  EXPECT_TRUE(clusters.count("block5") && clusters.count("grad.block5"));
}

TEST_F(GraphSceneTest, SmallGraphsAreNotFolded) {
  Open({.num_ops = 48, .ops_per_scope = 6, .steps = 1, .workers = 0});
  auto scene = BuildGraphScene(run());
  ASSERT_TRUE(scene.ok());
  EXPECT_EQ(scene->Find("operator").size(), 48u);
}

TEST_F(GraphSceneTest, NodesBeyondTheCapBecomeOneMoreNode) {
  Open({.num_ops = 300, .ops_per_scope = 1, .steps = 1, .workers = 0});
  GraphOptions options;
  options.fold_above = 1'000'000;  // nothing folds, no scope has more than one operator
  options.max_nodes = 50;
  auto scene = BuildGraphScene(run(), options);
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  EXPECT_EQ(scene->Find("operator").size(), 50u);
  const auto more = scene->Find("more");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0]->id, 250);
  EXPECT_TRUE(more[0]->text.contains("250 more operators"));
}

}  // namespace
}  // namespace shardscope::viewer
