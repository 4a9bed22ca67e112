// The debugger's window and models on the offscreen platform.
#include <sqlite3.h>

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QSpinBox>
#include <QTest>
#include <filesystem>
#include <fstream>

#include "charts_widget.h"
#include "graph_view.h"
#include "main_window.h"
#include "models.h"
#include "scene_widget.h"
#include "shardscope/store/writer.h"
#include "stepper.h"
#include "synthetic_run.h"
#include "temp_file.h"

using shardscope::gui::MainWindow;
namespace testing_ns = shardscope::viewer::testing;

class GuiTest : public QObject {
  Q_OBJECT

 private:
  testing_ns::TempPath dir_{"run.db"};
  std::string Synthetic(const std::string& name, testing_ns::SyntheticRunOptions options = {}) {
    const std::string path = dir_.Sibling(name);
    const auto status = testing_ns::WriteSyntheticRun(path, options);
    if (!status.ok()) qFatal("%s", status.message().c_str());
    return path;
  }
  static int MessageBoxes(const MainWindow& window) {
    return static_cast<int>(window.findChildren<QMessageBox*>().size());
  }

 private slots:
  void initTestCase() {
    // Settings (the recent-files list) go to a private directory, not the user's.
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(dir_.Sibling("config")));
  }

  void recentFilesRememberOpenedRuns() {
    MainWindow window;
    const QString first = QString::fromStdString(Synthetic("recent1.db"));
    const QString second = QString::fromStdString(Synthetic("recent2.db"));
    QVERIFY(window.OpenRun(first));
    QVERIFY(window.OpenRun(second));
    QVERIFY(window.OpenRun(first));
    const QStringList recent =
        QSettings("Shardscope", "shardscope-gui").value("recent").toStringList();
    QCOMPARE(recent.size(), 2);
    QCOMPARE(recent[0], QFileInfo(first).absoluteFilePath());  // most recent first, no duplicates
    QCOMPARE(recent[1], QFileInfo(second).absoluteFilePath());
    QSettings("Shardscope", "shardscope-gui").sync();
    QVERIFY(QFileInfo::exists(QString::fromStdString(dir_.Sibling("config")) +
                              "/Shardscope/shardscope-gui.conf"));
  }

  void modelsPassTheModelTester() {
    auto doc = shardscope::viewer::RunDocument::Open(Synthetic("models.db"));
    QVERIFY(doc.ok());
    const auto& data = (*doc)->data();
    shardscope::gui::RankTableModel ranks;
    QAbstractItemModelTester rank_tester(&ranks,
                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
    ranks.SetRows(data.rank_totals);
    QCOMPARE(ranks.rowCount(), 8);
    QCOMPARE(ranks.data(ranks.index(7, 0)).toLongLong(), 7LL);
    QCOMPARE(ranks.data(ranks.index(0, 1)).toLongLong(), 4LL);  // 4 steps

    shardscope::gui::CandidateTableModel candidates;
    QAbstractItemModelTester candidate_tester(
        &candidates, QAbstractItemModelTester::FailureReportingMode::QtTest);
    candidates.SetOperator(data.Operator(4));
    QCOMPARE(candidates.rowCount(), 3);
    QCOMPARE(candidates.data(candidates.index(0, 0)).toString(), QString("chosen"));
    QCOMPARE(candidates.data(candidates.index(1, 0)).toString(), QString("#2"));
    // A runner-up whose breakdown was never recorded shows a dash, not "0.000 / 0 B".
    shardscope::store::OperatorRecord unrecorded = *data.Operator(4);
    unrecorded.candidates[2].compute_seconds = shardscope::store::kMissing;
    unrecorded.candidates[2].comm_seconds = shardscope::store::kMissing;
    unrecorded.candidates[2].memory_bytes = shardscope::store::kNone;
    candidates.SetOperator(&unrecorded);
    QCOMPARE(candidates.data(candidates.index(2, 3)).toString(), QString("—"));
    QCOMPARE(candidates.data(candidates.index(2, 4)).toString(), QString("—"));
    QCOMPARE(candidates.data(candidates.index(2, 5)).toString(), QString("—"));
    QVERIFY(candidates.data(candidates.index(1, 3)).toString() != QString("—"));
    candidates.SetOperator(nullptr);
    QCOMPARE(candidates.rowCount(), 0);

    shardscope::gui::RedistributionTableModel redists;
    QAbstractItemModelTester redist_tester(&redists,
                                           QAbstractItemModelTester::FailureReportingMode::QtTest);
    redists.SetRun(&data);
    QCOMPARE(redists.rowCount(), static_cast<int>(data.redistributions.size()));
    QCOMPARE(redists.data(redists.index(0, 3)).toString(),
             QString("all-to-all(mp) + all-gather(mp)"));

    auto other = shardscope::viewer::RunDocument::Open(
        Synthetic("other.db", {.num_ops = 30, .ops_per_scope = 6, .steps = 1, .workers = 0}));
    QVERIFY(other.ok());
    shardscope::gui::CompareModel compare;
    QAbstractItemModelTester compare_tester(&compare,
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
    compare.SetRuns(data, (*other)->data());
    QCOMPARE(compare.rowCount(), 30);
    QCOMPARE(compare.differing(), 6);  // the 6 operators only the right run has
    QCOMPARE(compare.data(compare.index(0, 1)).toString(), QString("(absent)"));

    shardscope::gui::FiguresCompareModel figures;
    QAbstractItemModelTester figures_tester(&figures,
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
    figures.SetRuns(data, (*other)->data());
    QCOMPARE(figures.columnCount(), 3);
    QVERIFY(figures.rowCount() > 5);
    QCOMPARE(figures.data(figures.index(2, 1)).toString(), QString("24 (0 backward)"));
    QCOMPARE(figures.data(figures.index(2, 2)).toString(), QString("30 (0 backward)"));
    QCOMPARE(figures.data(figures.index(6, 1)).toString(), QString("4"));  // steps
    QCOMPARE(figures.data(figures.index(6, 2)).toString(), QString("1"));
  }

  void pipelineTimelineDockFollowsTheStep() {
    MainWindow window;
    QVERIFY(window.OpenRun(QString::fromStdString(Synthetic(
        "pipeline.db",
        {.num_ops = 12, .ops_per_scope = 6, .steps = 3, .workers = 4, .micro_batches = 3}))));
    QVERIFY(window.timeline_step()->isEnabled());
    QCOMPARE(window.timeline_step()->minimum(), 0);
    QCOMPARE(window.timeline_step()->maximum(), 2);
    QCOMPARE(window.timeline_step()->value(), 2);  // the last step first
    const auto& scene = window.timeline_view()->scene();
    QCOMPARE(static_cast<int>(scene.Find("lane").size()), 4);
    QCOMPARE(static_cast<int>(scene.Find("span").size()), 4 * 3 * 2);
    QVERIFY(scene.items.front().text.contains("step 2"));
    window.timeline_step()->setValue(1);
    QVERIFY(window.timeline_view()->scene().items.front().text.contains("step 1"));
    // A placed run's rank table is per worker, its communication column idle time.
    auto* ranks = window.rank_model();
    QAbstractItemModelTester tester(ranks, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(ranks->headerData(0, Qt::Horizontal, Qt::DisplayRole).toString(), QString("worker"));
    QCOMPARE(ranks->headerData(3, Qt::Horizontal, Qt::DisplayRole).toString(), QString("idle (s)"));
    window.ShowView("timeline");

    // A run without spans says so and the table is per rank again.
    QVERIFY(window.OpenRun(QString::fromStdString(Synthetic("plain.db"))));
    QVERIFY(!window.timeline_step()->isEnabled());
    QVERIFY(window.timeline_view()->message().contains("No pipeline timeline recorded"));
    QCOMPARE(ranks->headerData(3, Qt::Horizontal, Qt::DisplayRole).toString(), QString("comm (s)"));
  }

  void placedRunsAreColouredByWorkerUntilTheNextRun() {
    MainWindow window;
    QComboBox* colour = nullptr;
    for (auto* combo : window.findChildren<QComboBox*>()) {
      if (combo->findText("memory") >= 0) colour = combo;
    }
    QVERIFY(colour);
    QVERIFY(window.OpenRun(QString::fromStdString(Synthetic("placed.db"))));  // has workers
    QCOMPARE(colour->currentText(), QString("worker"));
    QVERIFY(window.OpenRun(QString::fromStdString(
        Synthetic("unplaced.db", {.num_ops = 10, .ops_per_scope = 5, .steps = 1, .workers = 0}))));
    QCOMPARE(colour->currentText(), QString("strategy"));
    colour->setCurrentText("memory");  // a choice by hand stays
    QVERIFY(window.OpenRun(QString::fromStdString(Synthetic("placed.db"))));
    QCOMPARE(colour->currentText(), QString("memory"));
  }

  void selectionFillsTheDetails() {
    MainWindow window;
    QVERIFY(window.OpenRun(QString::fromStdString(Synthetic("select.db"))));
    QVERIFY(window.graph_view()->SelectItem("operator", 7));
    const QString html = window.details_html();
    QVERIFY(html.contains("block1.op1"));
    QVERIFY(html.contains("((8,1),)"));       // its strategy
    QVERIFY(html.contains("cheapest of 3"));  // provenance detail
    QVERIFY(html.contains("rank 3"));         // worker
    QCOMPARE(window.candidate_model()->rowCount(), 3);
    // The tensor map follows: the operator's output.
    QVERIFY(window.tensor_view()->scene().items.size() > 0);
    // Search selects by name.
    QVERIFY(window.graph_view()->Search("block3.op2"));
    QVERIFY(window.details_html().contains("block3.op2"));
    QVERIFY(!window.graph_view()->Search("no such operator"));
    window.SelectTensor(0);
    QVERIFY(window.details_html().contains("fed to the graph"));
  }

  void stepperNavigatesAndTheMeshFollows() {
    MainWindow window;
    window.show();
    QVERIFY(window.OpenRun(QString::fromStdString(Synthetic("stepper.db"))));
    window.SelectRedistribution(1);
    auto* stepper = window.stepper();
    QCOMPARE(stepper->redistribution(), 1LL);
    QCOMPARE(stepper->frames(), 2);
    QCOMPARE(stepper->step(), 0);
    QVERIFY(stepper->error().isEmpty());
    QTest::keyClick(stepper, Qt::Key_Right);
    QCOMPARE(stepper->step(), 1);
    QTest::keyClick(stepper, Qt::Key_Right);  // stays on the last step
    QCOMPARE(stepper->step(), 1);
    QTest::keyClick(stepper, Qt::Key_Left);
    QCOMPARE(stepper->step(), 0);
    QTest::keyClick(stepper, Qt::Key_End);
    QCOMPARE(stepper->step(), 1);
    stepper->Previous();
    QCOMPARE(stepper->step(), 0);
    // The device matrix shows the plan mesh with the groups of the step's axis (mp).
    bool groups = false;
    for (const auto& item : window.mesh_view()->scene().items)
      groups |= item.text.contains("rank groups of") && item.text.contains("along mp");
    QVERIFY(groups);
    // Play walks to the end and stops.
    stepper->TogglePlay();
    QVERIFY(stepper->playing());
    QTRY_COMPARE_WITH_TIMEOUT(stepper->step(), 1, 3000);
    QTRY_VERIFY_WITH_TIMEOUT(!stepper->playing(), 3000);
  }

  void badFilesShowTheReasonAndKeepTheRun() {
    MainWindow window;
    const QString good = QString::fromStdString(Synthetic("good.db"));
    QVERIFY(window.OpenRun(good));
    const auto* doc = window.document();

    const std::string garbage = dir_.Sibling("garbage.db");
    std::ofstream(garbage) << std::string(5000, 'x');
    QVERIFY(!window.OpenRun(QString::fromStdString(garbage)));
    QVERIFY2(window.last_error().contains("not an SQLite database"),
             qPrintable(window.last_error()));
    QVERIFY(shardscope::store::IsBadInput(window.last_error_code()));
    QCOMPARE(window.document(), doc);
    QVERIFY(MessageBoxes(window) >= 1);

    const std::string truncated = dir_.Sibling("truncated.db");
    std::filesystem::copy_file(good.toStdString(), truncated);
    std::filesystem::resize_file(truncated, std::filesystem::file_size(truncated) / 3);
    QVERIFY(!window.OpenRun(QString::fromStdString(truncated)));
    QVERIFY(!window.last_error().isEmpty());
    QCOMPARE(window.document(), doc);

    const std::string newer = dir_.Sibling("newer.db");
    std::filesystem::copy_file(good.toStdString(), newer);
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    QVERIFY(!window.OpenRun(QString::fromStdString(newer)));
    QVERIFY2(window.last_error().contains("newer Shardscope"), qPrintable(window.last_error()));

    QVERIFY(!window.OpenRun(QString::fromStdString(dir_.Sibling("missing.db"))));
    QCOMPARE(window.document(), doc);
  }

  void liveRunRefreshes() {
    const std::string path = dir_.Sibling("live.db");
    shardscope::store::RunInfo info;
    info.name = "live";
    auto writer = shardscope::store::RunWriter::Create(path, info);
    QVERIFY(writer.ok());
    QVERIFY((*writer)->AddMesh({0, "m", {2}, {"dp"}, {}}).ok());
    QVERIFY((*writer)->Commit().ok());
    MainWindow window;
    QVERIFY(window.OpenRun(QString::fromStdString(path)));
    QCOMPARE(window.rank_model()->rowCount(), 0);
    QCOMPARE(window.charts()->loss_points(), 0);
    for (int k = 0; k < 3; ++k) {
      shardscope::store::StepRecord step;
      step.step = k;
      step.loss = 1.0 / (k + 1);
      step.ranks = {{.rank = 0, .compute_seconds = 0.1}, {.rank = 1, .compute_seconds = 0.1}};
      QVERIFY((*writer)->AddStep(step).ok());
    }
    QVERIFY((*writer)->Commit().ok());
    QVERIFY(window.Refresh());
    QCOMPARE(window.rank_model()->rowCount(), 2);
    QCOMPARE(window.charts()->loss_points(), 3);
    QVERIFY(!window.Refresh());  // nothing new
    QVERIFY((*writer)->Finish(shardscope::store::RunStatus::kCompleted).ok());
    // The window connects only while it reads: the run it shows left WAL mode at its end
    // (SQLite header byte 18: 1 = rollback journal, 2 = WAL).
    std::ifstream file(path, std::ios::binary);
    char header[20] = {};
    file.read(header, sizeof(header));
    QCOMPARE(static_cast<int>(header[18]), 1);
    QVERIFY(window.Refresh());
    QCOMPARE(window.document()->data().run.status, shardscope::store::RunStatus::kCompleted);
  }

  void droppedFileOpensAndScopesExpandOnDoubleClick() {
    MainWindow window;
    window.show();
    const QString path = QString::fromStdString(
        Synthetic("drop.db", {.num_ops = 100, .ops_per_scope = 50, .steps = 1, .workers = 0}));
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(path)});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &drop);
    // Read on a worker thread (RunLoader): the window fills in when the file is read.
    QTRY_VERIFY2(window.document() != nullptr || !window.last_error().isEmpty(),
                 qPrintable(window.last_error()));
    QVERIFY2(window.document() != nullptr, qPrintable(window.last_error()));
    QCOMPARE(QString::fromStdString(window.document()->path()), path);
    auto operators = [&] {
      int count = 0;
      for (QGraphicsItem* item : window.graph_view()->scene()->items()) {
        count += item->type() == shardscope::gui::OperatorItem::Type ? 1 : 0;
      }
      return count;
    };
    QCOMPARE(operators(), 0);  // two scopes of 50, both collapsed
    emit window.graph_view()->ClusterActivated("block1");
    QCOMPARE(operators(), 50);
    emit window.graph_view()->ClusterActivated("block1");
    QCOMPARE(operators(), 0);
  }

  void comparesTwoRuns() {
    MainWindow window;
    QVERIFY(window.OpenRun(QString::fromStdString(Synthetic("left.db"))));
    QVERIFY(window.CompareWith(QString::fromStdString(
        Synthetic("right.db", {.num_ops = 24, .ops_per_scope = 8, .steps = 2, .workers = 0}))));
    // Scopes of 6 (block0..3) against scopes of 8 (block0..2): 30 names in all; rows whose
    // strategies differ (or that one run lacks) come first.
    auto* model = window.compare_model();
    QCOMPARE(model->rowCount(), 30);
    QVERIFY(model->differing() > 0 && model->differing() < 30);
    for (int row = 0; row < model->rowCount(); ++row) {
      const bool differs = model->data(model->index(row, 1)).toString() !=
                           model->data(model->index(row, 2)).toString();
      QCOMPARE(differs, row < model->differing());
    }
    QCOMPARE(window.tabs()->currentIndex(), 2);
  }
};

QTEST_MAIN(GuiTest)
#include "gui_test.moc"
