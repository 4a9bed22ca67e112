// Reading a run off the UI thread (RunLoader): the window paints its loading state at once,
// fills in the document and then its overview, a newer open wins, a bad file reports its
// reason, and closing the window cancels the read.
#include <QAbstractButton>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTabWidget>
#include <QTest>
#include <QThreadPool>

#include "graph_view.h"
#include "main_window.h"
#include "run_loader.h"
#include "synthetic_run.h"
#include "temp_file.h"

namespace gui = shardscope::gui;
namespace viewer = shardscope::viewer;

namespace {

bool WriteRun(const std::string& path, int num_ops) {
  viewer::testing::SyntheticRunOptions o;
  o.num_ops = num_ops;
  o.ops_per_scope = 50;
  o.steps = 2;
  return viewer::testing::WriteSyntheticRun(path, o).ok();
}

// Lets every read started so far finish and its watcher deliver (or drop) the result.
void Settle() {
  for (int i = 0; i < 3; ++i) {
    QThreadPool::globalInstance()->waitForDone();
    QCoreApplication::processEvents();
  }
}

QString OverviewText(gui::MainWindow& window) {
  auto* overview = qobject_cast<QPlainTextEdit*>(window.tabs()->widget(1));
  return overview ? overview->toPlainText() : QString();
}

QString ProgressText(gui::MainWindow& window) {
  auto* progress = window.findChild<gui::RunLoadProgress*>();
  if (!progress || !progress->isVisible()) return {};
  auto* label = progress->findChild<QLabel*>();
  return label ? label->text() : QString();
}

}  // namespace

class RunLoadingTest : public QObject {
  Q_OBJECT

 private slots:
  void theWindowPaintsAtOnceAndFillsIn() {
    viewer::testing::TempPath file{"big.db"};
    QVERIFY(WriteRun(file.path(), 3000));
    gui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.OpenRunInBackground(QString::fromStdString(file.path()));
    // Nothing read yet: the window says what it reads and can paint.
    QVERIFY(window.loading());
    QVERIFY(window.document() == nullptr);
    QVERIFY2(ProgressText(window).contains("big.db"), qPrintable(ProgressText(window)));
    QVERIFY(OverviewText(window).contains("Reading big.db"));
    QVERIFY(!window.grab().isNull());
    // The document, then its overview, then the graph.
    QTRY_VERIFY_WITH_TIMEOUT(window.document() != nullptr, 60000);
    QCOMPARE(window.document()->data().operators.size(), size_t{3000});
    QTRY_VERIFY_WITH_TIMEOUT(!window.loading(), 60000);
    QCOMPARE(OverviewText(window), QString::fromStdString(window.document()->Summary()));
    QVERIFY(ProgressText(window).isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(!window.graph_view()->scene()->items().isEmpty(), 120000);
  }

  void closingTheWindowCancelsTheRead() {
    viewer::testing::TempPath file{"big.db"};
    QVERIFY(WriteRun(file.path(), 3000));
    gui::MainWindow window;
    window.show();
    window.OpenRunInBackground(QString::fromStdString(file.path()));
    QVERIFY(window.loading());
    window.close();
    QVERIFY(!window.loading());
    Settle();
    QVERIFY(window.document() == nullptr);
    QVERIFY(ProgressText(window).isEmpty());
  }

  // The file asked for last is shown, whichever read finishes first; the Cancel button
  // keeps the run shown.
  void theLastOpenWins() {
    viewer::testing::TempPath big{"big.db"}, small{"small.db"};
    QVERIFY(WriteRun(big.path(), 3000));
    QVERIFY(WriteRun(small.path(), 60));
    gui::MainWindow window;
    window.OpenRunInBackground(QString::fromStdString(big.path()));
    window.OpenRunInBackground(QString::fromStdString(small.path()));
    Settle();
    QVERIFY(window.document() != nullptr);
    QCOMPARE(window.document()->path(), small.path());
    window.OpenRunInBackground(QString::fromStdString(big.path()));
    QVERIFY(window.OpenRun(QString::fromStdString(small.path())));  // waits: it wins too
    Settle();
    QCOMPARE(window.document()->path(), small.path());
    window.OpenRunInBackground(QString::fromStdString(big.path()));
    auto* progress = window.findChild<gui::RunLoadProgress*>();
    QVERIFY(progress);
    auto* cancel = progress->findChild<QAbstractButton*>();
    QVERIFY(cancel);
    cancel->click();
    Settle();
    QCOMPARE(window.document()->path(), small.path());
    QCOMPARE(window.document()->data().operators.size(), size_t{60});
  }

  void aBadFileReportsItsReasonAndKeepsTheRun() {
    viewer::testing::TempPath small{"small.db"};
    QVERIFY(WriteRun(small.path(), 60));
    gui::MainWindow window;
    QVERIFY(window.OpenRun(QString::fromStdString(small.path())));
    window.OpenRunInBackground(QString::fromStdString(small.Sibling("missing.db")));
    Settle();
    QVERIFY2(window.last_error().contains("missing.db: no such run file"),
             qPrintable(window.last_error()));
    QCOMPARE(window.last_error_code(), shardscope::store::StatusCode::kNotFound);
    QCOMPARE(window.document()->path(), small.path());
    QVERIFY(!window.loading());
  }
};

QTEST_MAIN(RunLoadingTest)
#include "run_loading_test.moc"
