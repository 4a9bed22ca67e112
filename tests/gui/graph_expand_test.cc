// Opening a folded layer without a new layout of the whole graph (viewer::GraphSceneOn): the
// opened layer's operators are spliced in place of its box, overlap no other node, leave
// every other node's order as it was, and draw the same nodes and edges as a full dot layout;
// closing it again gives the folded picture back without dot. In the window: the splice runs
// on the UI thread and the minimap follows.
#include <QGraphicsScene>
#include <QTest>
#include <QThreadPool>
#include <algorithm>
#include <map>
#include <tuple>

#include "graph_builder.h"
#include "graph_view.h"
#include "main_window.h"
#include "minimap.h"
#include "synthetic_run.h"
#include "temp_file.h"

namespace gui = shardscope::gui;
namespace viewer = shardscope::viewer;

namespace {

// 100 units of 6 forward operators with their gradients: they fold ("block0 … block99");
// block100's 4 operators and their gradients are drawn as they are.
std::unique_ptr<viewer::RunDocument> FoldingRun(const std::string& path) {
  viewer::testing::SyntheticRunOptions o;
  o.num_ops = 604;
  o.ops_per_scope = 6;
  o.steps = 1;
  o.workers = 0;
  o.backward = true;
  if (!viewer::testing::WriteSyntheticRun(path, o).ok()) return nullptr;
  auto doc = viewer::RunDocument::Open(path);
  return doc.ok() ? std::move(doc).value() : nullptr;
}

bool IsNode(const viewer::SceneItem& item) {
  return (item.role == "operator" || item.role == "cluster" || item.role == "tensor" ||
          item.role == "label" || item.role == "more") &&
         item.shape != viewer::SceneItem::Shape::kText && !item.text.isEmpty();
}

// Drawn nodes by what they show (role, key and text: a fold that shrank is another node).
std::map<QString, QRectF> Nodes(const viewer::Scene& scene) {
  std::map<QString, QRectF> nodes;
  for (const auto& item : scene.items) {
    if (IsNode(item)) nodes[item.role + ":" + item.key + ":" + item.text] = item.rect;
  }
  return nodes;
}

// What a scene draws, without where: every item's role, id, key and text.
std::vector<std::tuple<QString, qint64, QString, QString>> Contents(const viewer::Scene& scene) {
  std::vector<std::tuple<QString, qint64, QString, QString>> contents;
  for (const auto& item : scene.items) {
    contents.emplace_back(item.role, item.id, item.key, item.text);
  }
  std::sort(contents.begin(), contents.end());
  return contents;
}

int Sign(double v) { return v > 1e-6 ? 1 : v < -1e-6 ? -1 : 0; }

}  // namespace

class GraphExpandTest : public QObject {
  Q_OBJECT

 private slots:
  void openingSplicesTheLayerAndClosingRestoresIt() {
    viewer::testing::TempPath file{"fold.db"};
    auto doc = FoldingRun(file.path());
    QVERIFY(doc);
    const auto& run = doc->data();
    auto base = viewer::LayOutGraph(run, {});
    QVERIFY2(base.ok(), base.status().message().c_str());
    viewer::GraphGeometry geometry;
    auto folded = viewer::GraphSceneOn(run, **base, {}, false, &geometry);
    QVERIFY(folded.ok());
    QCOMPARE(geometry, viewer::GraphGeometry::kSpliced);

    viewer::GraphOptions open;
    open.expanded.insert("block5");
    QCOMPARE(viewer::BaseGraphOptions(run, open), viewer::LaidOutOptions(**base));
    auto opened = viewer::GraphSceneOn(run, **base, open, true, &geometry);
    QVERIFY(opened.ok());
    QCOMPARE(geometry, viewer::GraphGeometry::kSpliced);  // no full layout

    // The same nodes and edges as dot draws for the whole graph.
    auto full = viewer::BuildGraphSceneInFull(run, open);
    QVERIFY(full.ok());
    QCOMPARE(Contents(*opened), Contents(*full));
    QCOMPARE(opened->Find("operator").size(), 12u + 8u);  // block5, block100, their gradients

    // No two nodes overlap; the scene's bounds hold them all.
    const auto before = Nodes(*folded), after = Nodes(*opened);
    for (auto a = after.begin(); a != after.end(); ++a) {
      QVERIFY(opened->bounds.contains(a->second));
      for (auto b = std::next(a); b != after.end(); ++b) {
        QVERIFY2(!a->second.intersects(b->second), qPrintable(a->first + " overlaps " + b->first));
      }
    }
    // Every node of both pictures keeps its order (left/right, above/below) to every other.
    std::vector<QString> common;
    for (const auto& [key, rect] : before) {
      if (after.count(key)) common.push_back(key);
    }
    QVERIFY(common.size() > 5);
    for (const QString& a : common) {
      for (const QString& b : common) {
        const QPointF was = before.at(a).center() - before.at(b).center();
        const QPointF now = after.at(a).center() - after.at(b).center();
        QVERIFY2(Sign(was.x()) == Sign(now.x()) && Sign(was.y()) == Sign(now.y()),
                 qPrintable(a + " against " + b));
      }
    }
    // The opened operators sit where the forward fold's box was, or below it.
    QRectF box;
    for (const auto* c : folded->Find("cluster")) {
      if (c->text.startsWith("block0")) box = c->rect;
    }
    QVERIFY(!box.isNull());
    int placed = 0;
    for (const auto* op : opened->Find("operator")) {
      if (run.Operator(op->id)->name.rfind("block5.", 0) != 0) continue;
      QVERIFY(op->rect.top() >= box.top() - 1);
      ++placed;
    }
    QCOMPARE(placed, 6);

    // Closing it again (the window marks it collapsed) needs no dot: the folded picture.
    viewer::GraphOptions closed;
    closed.collapsed.insert("block5");
    auto again = viewer::GraphSceneOn(run, **base, closed, /*may_lay_out=*/false, &geometry);
    QVERIFY(again.ok());
    QCOMPARE(geometry, viewer::GraphGeometry::kSpliced);
    QCOMPARE(Nodes(*again), before);
  }

  // A change other than opening a unit (here: forward only) is laid out in full.
  void otherChangesAreLaidOutInFull() {
    viewer::testing::TempPath file{"fold.db"};
    auto doc = FoldingRun(file.path());
    QVERIFY(doc);
    auto base = viewer::LayOutGraph(doc->data(), {});
    QVERIFY(base.ok());
    viewer::GraphOptions forward;
    forward.show_backward = false;
    viewer::GraphGeometry geometry;
    auto scene = viewer::GraphSceneOn(doc->data(), **base, forward, false, &geometry);
    QVERIFY(scene.ok());
    QCOMPARE(geometry, viewer::GraphGeometry::kNotYet);
    scene = viewer::GraphSceneOn(doc->data(), **base, forward, true, &geometry);
    QVERIFY(scene.ok());
    QCOMPARE(geometry, viewer::GraphGeometry::kLaidOut);
    QCOMPARE(Contents(*scene), Contents(*viewer::BuildGraphSceneInFull(doc->data(), forward)));
  }

  void theWindowSplicesOnItsThreadAndTheMinimapFollows() {
    viewer::testing::TempPath file{"fold.db"};
    QVERIFY(FoldingRun(file.path()));
    gui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.OpenRun(QString::fromStdString(file.path())));
    QTRY_VERIFY_WITH_TIMEOUT(
        !window.graph_builder()->running() && !window.graph_view()->scene()->items().isEmpty(),
        120000);
    QThreadPool::globalInstance()->waitForDone();  // the folds' units laid out
    const QRectF folded_rect = window.graph_view()->scene()->sceneRect();
    auto* minimap = window.graph_view()->findChild<gui::Minimap*>();
    QVERIFY(minimap);
    emit window.graph_view()->ClusterActivated("block0");
    QVERIFY(!window.graph_builder()->running());  // done at once, no worker
    QVERIFY(window.graph_builder()->last_spliced());
    int operators = 0;
    for (QGraphicsItem* item : window.graph_view()->scene()->items()) {
      operators += item->type() == gui::OperatorItem::Type;
    }
    QCOMPARE(operators, 12 + 8);  // block0 and block100 with their gradients
    const QRectF opened_rect = window.graph_view()->scene()->sceneRect();
    QVERIFY(opened_rect.height() > folded_rect.height());
    QCOMPARE(minimap->sceneRect(), opened_rect);
    emit window.graph_view()->ClusterActivated("block0");  // closes it
    QVERIFY(window.graph_builder()->last_spliced());
    QCOMPARE(window.graph_view()->scene()->sceneRect(), folded_rect);
    QCOMPARE(minimap->sceneRect(), folded_rect);
  }
};

QTEST_MAIN(GraphExpandTest)
#include "graph_expand_test.moc"
