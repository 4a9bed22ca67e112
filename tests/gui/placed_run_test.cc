// Placed runs in the window: a stage sharded over its sub-mesh (`place()` with strategies,
// recorded by `shardscope plan`) shows its strategy and ranks in Details and draws its
// tensors' blocks on its world ranks; a placed operator with no strategy says where it runs
// whole. Qt Test, offscreen.
#include <QRegularExpression>
#include <QTest>
#include <filesystem>

#include "details.h"
#include "main_window.h"
#include "run_shardscope.h"
#include "scene_widget.h"
#include "shardscope/viewer/layout_text.h"
#include "shardscope/viewer/redistribution_scene.h"
#include "shardscope/viewer/run_document.h"

namespace store = shardscope::store;
namespace viewer = shardscope::viewer;
using shardscope::gui::MainWindow;

namespace {

// The row `key` of a details table, its value cell's text without tags.
QString RowValue(const QString& html, const QString& key) {
  const QString start = "<tr><td><b>" + key + "</b></td><td>";
  const auto at = html.indexOf(start);
  if (at < 0) return "(no row " + key + ")";
  const auto from = at + start.size();
  QString cell = html.mid(from, html.indexOf("</td></tr>", from) - from);
  return cell.remove(QRegularExpression("<[^>]*>")).trimmed();
}

int64_t OperatorNamed(const viewer::RunData& run, const std::string& name) {
  for (const auto& op : run.operators) {
    if (op.name == name) return op.id;
  }
  return -1;
}

}  // namespace

class PlacedRunTest : public QObject {
  Q_OBJECT

 private:
  std::string db_;

 private slots:
  void initTestCase() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("shardscope-placed-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((dir / "config").string()));
    db_ = (dir / "placed_sharded.db").string();
    const auto out = shardscope_cli_test::Shardscope(
        "plan " + std::string(SHARDSCOPE_SOURCE_DIR) +
        "/samples/models/mlp_place_sharded.yaml --record " + db_ + " --overwrite");
    QVERIFY2(out.code == 0, out.text.c_str());
  }

  // Worker 1's fc3.matmul: its own strategy over the stage's sub-mesh, ranks 2-3 of 4.
  void detailsOfAShardedStageNameItsStrategyAndRanks() {
    auto doc = viewer::RunDocument::Open(db_);
    QVERIFY2(doc.ok(), doc.status().message().c_str());
    const viewer::RunData& run = (*doc)->data();
    const int64_t fc3 = OperatorNamed(run, "fc3.matmul");
    QVERIFY(fc3 >= 0);
    const QString html = shardscope::gui::OperatorDetailsHtml(run, fc3);
    const QString strategy = RowValue(html, "strategy");
    QVERIFY2(strategy.startsWith("((1, 2), (2, 1))"), qPrintable(strategy));
    QVERIFY2(strategy.contains("ranks 2-3"), qPrintable(strategy));
    QVERIFY2(RowValue(html, "worker").startsWith("worker 1: ranks 2-3"),
             qPrintable(RowValue(html, "worker")));
    // Worker 0's fc1.matmul: the other stage.
    const QString first =
        shardscope::gui::OperatorDetailsHtml(run, OperatorNamed(run, "fc1.matmul"));
    QVERIFY2(RowValue(first, "worker").startsWith("worker 0: ranks 0-1"),
             qPrintable(RowValue(first, "worker")));
  }

  // A placed operator without a strategy (one device per worker) runs whole on its worker.
  void detailsOfAWholePlacedOperatorSayWhereItRuns() {
    viewer::RunData run;
    store::OperatorRecord op;
    op.id = 0;
    op.name = "fc2.matmul";
    op.kind = "MatMul";
    op.worker = 1;
    op.mesh_id = store::kNone;
    run.operators.push_back(op);
    const QString html = shardscope::gui::OperatorDetailsHtml(run, 0);
    QCOMPARE(RowValue(html, "strategy"), QString("worker 1, whole (placed, not sharded)"));
    QCOMPARE(RowValue(html, "worker"), QString("worker 1 (rank 1), whole"));
  }

  // The tensor map of fc3's weight (worker 1, split over k): two blocks held by ranks 2
  // and 3, the run's ranks; rank 1 of the stage's mesh is world rank 3.
  void tensorMapOfAPlacedShardedTensorDrawsBlocks() {
    MainWindow window;
    QVERIFY(window.OpenRun(QString::fromStdString(db_)));
    const auto& run = window.document()->data();
    const store::TensorRecord* weight = run.TensorNamed("fc3.weight");
    QVERIFY(weight != nullptr);
    window.SelectTensor(weight->id);
    const auto blocks = window.tensor_view()->scene().Find("block");
    QCOMPARE(static_cast<int>(blocks.size()), 2);
    QStringList held;
    for (const auto* b : blocks) held << b->text;
    held.sort();
    QCOMPARE(held, QStringList({"rank 2", "rank 3"}));
    QVERIFY(!window.tensor_view()->message().contains("no layout"));
  }

  // A redistribution on worker 1 (its plan mesh: ranks 2-3): the stepper frame's groups or
  // transfers and its maps name ranks 2 and 3, not the stage's own 0 and 1.
  void framesOfAStageNameTheRunsRanks() {
    auto doc = viewer::RunDocument::Open(db_);
    QVERIFY(doc.ok());
    const viewer::RunData& run = (*doc)->data();
    const store::RedistributionRecord* on_stage = nullptr;
    for (const auto& r : run.redistributions) {
      const store::MeshRecord* m = run.Mesh(r.plan_mesh_id);
      if (m && viewer::MeshRankOffset(*m) == 2 && !r.steps.empty() && !r.steps[0].groups.empty())
        on_stage = &r;
    }
    QVERIFY(on_stage != nullptr);
    auto frame = viewer::BuildRedistributionFrame(run, *on_stage, 0);
    QVERIFY2(frame.ok(), frame.status().message().c_str());
    QStringList exchanges;
    for (const auto* item : frame->Find("exchange")) exchanges << item->text;
    // A group "{2,3}" or transfers "r3 → r2": ranks 2 and 3, never 0 or 1.
    QVERIFY2(exchanges.join(" ").contains(QRegularExpression("[{r,][23]\\b")),
             qPrintable(exchanges.join(" | ")));
    QVERIFY2(!exchanges.join(" ").contains(QRegularExpression("[{r,][01]\\b")),
             qPrintable(exchanges.join(" | ")));
    QStringList blocks;
    for (const auto* item : frame->Find("block")) blocks << item->text;
    QVERIFY2(!blocks.filter(QRegularExpression("\\b[23]\\b")).isEmpty(),
             qPrintable(blocks.join(" | ")));
    QVERIFY2(blocks.filter(QRegularExpression("\\b[01]\\b")).isEmpty(),
             qPrintable(blocks.join(" | ")));
  }
};

QTEST_MAIN(PlacedRunTest)
#include "placed_run_test.moc"
