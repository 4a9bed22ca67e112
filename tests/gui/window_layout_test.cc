// The window at 1920x1080 on a 1024-rank run (large_run.h): the redistribution list shows all
// its columns without scrolling (long names elided in the middle, whole in the tooltip, bytes
// and lower bound in full) beside a stepper frame that keeps its room, and the device matrix
// follows its dock's size (square cells, the whole picture in the dock) with no change of
// selection.
#include <QDockWidget>
#include <QHeaderView>
#include <QScrollBar>
#include <QTableView>
#include <QTest>
#include <filesystem>

#include "large_run.h"
#include "main_window.h"
#include "models.h"
#include "scene_widget.h"
#include "stepper.h"

using shardscope::gui::MainWindow;

namespace {

QTableView* TableOf(QWidget* window, const QAbstractItemModel* model) {
  for (auto* t : window->findChildren<QTableView*>())
    if (t->model() == model) return t;
  return nullptr;
}

// The first cell of the device matrix: its rank item's rect (empty when none is drawn).
QRectF FirstCell(const shardscope::gui::SceneWidget* view) {
  const auto cells = view->scene().Find("rank");
  return cells.empty() ? QRectF() : cells.front()->rect;
}

}  // namespace

class WindowLayoutTest : public QObject {
  Q_OBJECT

 private:
  std::filesystem::path dir_;
  std::string run_;

  void Open(MainWindow& window) {
    window.resize(1920, 1080);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.OpenRun(QString::fromStdString(run_)));
    QTest::qWait(200);  // docks laid out, the matrix sized to its dock
  }

 private slots:
  void initTestCase() {
    dir_ = std::filesystem::temp_directory_path() /
           ("shardscope-window-layout-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((dir_ / "config").string()));
    run_ = (dir_ / "large.db").string();
    const auto written = shardscope_gui_test::WriteLargeRun(run_, {.steps = 2, .timing_every = 2});
    QVERIFY2(written.ok(), written.message().c_str());
  }
  void cleanupTestCase() { std::filesystem::remove_all(dir_); }

  void redistributionListFitsBesideTheStepper() {
    MainWindow window;
    Open(window);
    window.ShowView("redistribution");
    QCoreApplication::processEvents();
    QTableView* table = TableOf(&window, window.redistribution_model());
    QVERIFY(table && table->isVisible());
    QVERIFY(table->model()->rowCount() > 0);
    const QHeaderView* header = table->horizontalHeader();
    const int room = table->viewport()->width();
    const QFontMetrics metrics(table->font());
    for (int c = 0; c < header->count(); ++c) {
      const QString name = table->model()->headerData(c, Qt::Horizontal).toString();
      QVERIFY2(header->sectionViewportPosition(c) >= 0, qPrintable(name));
      QVERIFY2(header->sectionViewportPosition(c) + header->sectionSize(c) <= room,
               qPrintable(QString("%1 ends at %2 of %3")
                              .arg(name)
                              .arg(header->sectionViewportPosition(c) + header->sectionSize(c))
                              .arg(room)));
      QVERIFY2(header->sectionSize(c) >= 36, qPrintable(name));
    }
    QVERIFY(!table->horizontalScrollBar()->isVisible());
    // Bytes and the lower bound whole; a long tensor name elided, whole in its tooltip.
    const QModelIndex first = table->model()->index(0, 1);
    for (int c : {4, 5}) {
      const QString text = table->model()->index(0, c).data().toString();
      QVERIFY2(header->sectionSize(c) > metrics.horizontalAdvance(text), qPrintable(text));
      QVERIFY(table->model()->index(0, c).data(Qt::ToolTipRole).toString().contains("bytes"));
    }
    const QString tensor = first.data().toString();
    QVERIFY(metrics.horizontalAdvance(tensor) > header->sectionSize(1));  // elided on screen
    QCOMPARE(table->textElideMode(), Qt::ElideMiddle);
    QVERIFY(first.data(Qt::ToolTipRole).toString().endsWith(tensor));
    // The frame beside the list keeps most of the dock.
    QVERIFY2(window.stepper()->width() >= 700,
             qPrintable(QString::number(window.stepper()->width())));
  }

  void deviceMatrixFollowsItsDock() {
    MainWindow window;
    Open(window);
    window.ShowView("mesh");
    auto* dock = window.findChild<QDockWidget*>("mesh");
    QVERIFY(dock);
    const auto* mesh = window.mesh_view();
    QTRY_VERIFY(!FirstCell(mesh).isEmpty());
    const int64_t redistribution = window.stepper()->redistribution();
    const QRectF before = FirstCell(mesh);
    const auto fits = [mesh] {
      const QPoint corner = mesh->ToWidget(mesh->scene().bounds.bottomRight());
      const QWidget* room = mesh->parentWidget();
      return corner.x() <= room->width() + 1 && corner.y() <= room->height() + 1;
    };
    QVERIFY(fits());
    // Larger: larger cells, still square and whole in the dock.
    const QSize small = dock->size();
    window.resizeDocks({dock}, {small.width() + 500}, Qt::Horizontal);
    window.resizeDocks({dock}, {small.height() + 400}, Qt::Vertical);
    QTRY_VERIFY(FirstCell(mesh).width() > before.width() * 1.2);
    const QRectF wide = FirstCell(mesh);
    QCOMPARE(wide.width(), wide.height());
    QVERIFY(mesh->scene().Find("rank").front()->tooltip.startsWith("rank 0 at "));
    QTRY_VERIFY(fits());
    // Back: the cells shrink again, never below a visible square.
    window.resizeDocks({dock}, {small.width()}, Qt::Horizontal);
    window.resizeDocks({dock}, {small.height()}, Qt::Vertical);
    QTRY_VERIFY(FirstCell(mesh).width() < wide.width());
    QVERIFY(FirstCell(mesh).width() >= 4);
    QCOMPARE(FirstCell(mesh).width(), FirstCell(mesh).height());
    QTRY_VERIFY(fits());
    QCOMPARE(window.stepper()->redistribution(), redistribution);  // no selection changed
  }
};

QTEST_MAIN(WindowLayoutTest)
#include "window_layout_test.moc"
