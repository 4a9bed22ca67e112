// The Rank view (issue 21, "a per-rank view") on a recorded run: its figures equal
// `shardscope inspect RUN --rank R --json`, its timeline has the rank's compute and
// all-reduce spans, and questions 3 (what does rank r hold, how much memory) and 8 (where
// does step time go, per rank and per operator) take at most 3 clicks from the opened window.
// On a 1024-rank run the summary is read off the UI thread: SetRun and SetRank return at once,
// the view says it is reading, and a read no longer asked for is dropped.
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTest>
#include <QThreadPool>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "large_run.h"
#include "main_window.h"
#include "rank_view.h"
#include "run_shardscope.h"
#include "scene_widget.h"
#include "stepper.h"

using nlohmann::json;
using shardscope::gui::MainWindow;
using shardscope::gui::SceneWidget;

namespace {

// `shardscope inspect DB --rank R [--step S] --json` (step < 0: the last timed step).
json InspectRank(const std::string& db, int rank, int64_t step = -1) {
  const std::string at = step >= 0 ? " --step " + std::to_string(step) : "";
  return json::parse(shardscope_cli_test::Shardscope(
                         "inspect " + db + " --rank " + std::to_string(rank) + at + " --json",
                         /*merge_stderr=*/false)
                         .text,
                     nullptr, false);
}

// The rows of `model` by the key in column 0's Qt::UserRole, with column `column`'s UserRole.
std::map<std::string, QVariant> ByKey(const QStandardItemModel* model, int column) {
  std::map<std::string, QVariant> rows;
  for (int r = 0; r < model->rowCount(); ++r) {
    const QVariant key = model->item(r, 0)->data(Qt::UserRole);
    if (key.isValid())
      rows[key.toString().toStdString()] = model->item(r, column)->data(Qt::UserRole);
  }
  return rows;
}

}  // namespace

class RankViewTest : public QObject {
  Q_OBJECT

 private:
  std::filesystem::path dir_;
  std::string db_;
  std::string large_;     // 1024 ranks (large_run.h)
  int interactions_ = 0;  // mouse clicks and key presses since the window opened

  // A person's click on the item (role, id) of a picture in the window.
  bool ClickItem(SceneWidget* view, const QString& role, int64_t id, QString* key = nullptr) {
    const auto found = view->scene().Find(role, id);
    if (found.empty()) return false;
    if (key != nullptr) *key = found.front()->key;
    QTest::mouseClick(view, Qt::LeftButton, {}, view->ToWidget(found.front()->rect.center()));
    ++interactions_;
    return true;
  }

  void Open(MainWindow& window) {
    window.resize(1920, 1080);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.OpenRun(QString::fromStdString(db_)));
    QCoreApplication::processEvents();
    interactions_ = 0;
  }

  void CheckAgainstInspect(MainWindow& window, int rank, int64_t step = -1) {
    CheckAgainstInspect(window.rank_view(), db_, rank, step);
  }

  // The Rank view shows what inspect --rank prints for `rank` of `db`, once read.
  void CheckAgainstInspect(shardscope::gui::RankView* view, const std::string& db, int rank,
                           int64_t step = -1) {
    QTRY_VERIFY_WITH_TIMEOUT(!view->loading(), 60000);
    QCOMPARE(view->rank(), rank);
    QVERIFY(view->error().isEmpty());
    const json j = InspectRank(db, rank, step);
    QVERIFY(j.is_object());
    // Memory: each kind's bytes, then the total and the peak.
    const auto memory = ByKey(view->memory_model(), 1);
    QCOMPARE(memory.size(), j.at("memory").size());
    int64_t sum = 0;
    for (const auto& [key, bytes] : j.at("memory").items()) {
      QVERIFY2(memory.count(key), key.c_str());
      QCOMPARE(memory.at(key).toLongLong(), bytes.get<int64_t>());
      if (key != "peak_bytes") sum += bytes.get<int64_t>();
    }
    QVERIFY(j.at("memory").at("peak_bytes").get<int64_t>() > 0);
    bool total_shown = false;
    for (int r = 0; r < view->memory_model()->rowCount(); ++r)
      total_shown =
          total_shown || view->memory_model()->item(r, 1)->data(Qt::UserRole).toLongLong() == sum;
    QVERIFY(total_shown);
    // Parameters with their layouts.
    QCOMPARE(view->holdings_model()->rowCount(), static_cast<int>(j.at("parameters").size()));
    for (size_t i = 0; i < j.at("parameters").size(); ++i) {
      QCOMPARE(view->holdings_model()->item(static_cast<int>(i), 0)->text().toStdString(),
               j.at("parameters")[i].at("name").get<std::string>());
      QCOMPARE(view->holdings_model()->item(static_cast<int>(i), 2)->text().toStdString(),
               j.at("parameters")[i].at("layout").get<std::string>());
    }
    // Time per operator kind and per collective of the timed step.
    const json& t = j.at("timing");
    QCOMPARE(view->step(), t.at("step").get<int64_t>());
    const auto seconds = ByKey(view->time_model(), 1);
    const auto counts = ByKey(view->time_model(), 2);
    QCOMPARE(seconds.size(), t.at("compute_by_kind").size() + t.at("collectives").size());
    for (const char* table : {"compute_by_kind", "collectives"}) {
      for (const auto& [kind, v] : t.at(table).items()) {
        QVERIFY2(seconds.count(kind), kind.c_str());
        QVERIFY(std::abs(seconds.at(kind).toDouble() - v.at("seconds").get<double>()) < 1e-12);
        QCOMPARE(counts.at(kind).toLongLong(), v.at("count").get<int64_t>());
      }
    }
    QCOMPARE(view->time_model()->item(0, 1)->data(Qt::UserRole).toDouble(),
             t.at("compute_seconds").get<double>());
    QCOMPARE(view->time_model()->item(1, 1)->data(Qt::UserRole).toDouble(),
             t.at("comm_seconds").get<double>());
  }

 private slots:
  void initTestCase() {
    dir_ = std::filesystem::temp_directory_path() /
           ("shardscope-rank-view-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((dir_ / "config").string()));
    db_ = (dir_ / "matmul3.db").string();
    // Seed 004's model on 8 devices: redistributions, and gradient buckets (default 25 MiB).
    const auto o = shardscope_cli_test::Shardscope(
        "train " + std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/matmul3.yaml" +
        " --devices 8 --steps 4 --limit 256 --data " + SHARDSCOPE_DATASETS_DIR +
        "/mnist --timing-every 2 --record " + db_);
    QVERIFY2(o.code == 0, o.text.c_str());
    large_ = (dir_ / "large.db").string();
    const auto written = shardscope_gui_test::WriteLargeRun(large_);
    QVERIFY2(written.ok(), written.message().c_str());
  }
  void cleanupTestCase() { std::filesystem::remove_all(dir_); }

  // Question 3: one click on rank 3 in the device matrix shows what it holds and how much
  // memory, the same figures as inspect --rank 3.
  void q03_whatDoesRank3HoldInOneClick() {
    MainWindow window;
    Open(window);
    QVERIFY(ClickItem(window.mesh_view(), "rank", 3));
    QVERIFY(window.rank_view()->isVisible());  // the Rank dock came to the front
    CheckAgainstInspect(window, 3);
    QVERIFY(interactions_ <= 3);
  }

  // Question 8: compute against communication per rank and per operator kind, and the rank's
  // timeline with its compute and all-reduce spans: a click per rank.
  void q08_whereDoesStepTimeGoPerRank() {
    MainWindow window;
    Open(window);
    for (int rank : {5, 2}) {
      QVERIFY(ClickItem(window.mesh_view(), "rank", rank));
      CheckAgainstInspect(window, rank);
      const json t = InspectRank(db_, rank).at("timing");
      const auto& scene = window.rank_view()->timeline_view()->scene();
      int64_t compute = 0;
      for (const auto& [kind, v] : t.at("compute_by_kind").items())
        compute += v.at("count").get<int64_t>();
      int64_t spans = 0, buckets = 0, all_reduces = 0;
      for (const auto* item : scene.Find("span")) {
        spans += item->key == "compute";
        buckets += item->key == "bucket";
        all_reduces += item->key == "collective" && item->tooltip.startsWith("all-reduce");
      }
      QCOMPARE(spans, compute);
      QVERIFY(compute > 0);
      // The gradient bucket's all-reduce is a span of its own, as inspect counts it.
      QVERIFY(t.at("collectives").contains("all-reduce (gradient bucket)"));
      QCOMPARE(buckets,
               t.at("collectives").at("all-reduce (gradient bucket)").at("count").get<int64_t>());
      QVERIFY(all_reduces + buckets > 0);
    }
    QVERIFY(interactions_ <= 3);
  }

  // The step box lists the timed steps (the last shown first); choosing one shows that step's
  // figures and timeline, equal to inspect --rank R --step S; inspect refuses an untimed step.
  void stepChooserMatchesInspectStep() {
    MainWindow window;
    Open(window);
    QVERIFY(ClickItem(window.mesh_view(), "rank", 6));
    auto* view = window.rank_view();
    QTRY_VERIFY_WITH_TIMEOUT(!view->loading(), 60000);
    QComboBox* box = view->step_box();
    QVERIFY(box->count() >= 2);
    QVERIFY(box->isEnabled());
    std::vector<int64_t> steps;
    for (int i = 0; i < box->count(); ++i) steps.push_back(box->itemData(i).toLongLong());
    QVERIFY(std::is_sorted(steps.begin(), steps.end()));
    QCOMPARE(view->step(), steps.back());
    CheckAgainstInspect(window, 6);
    QString last_timeline, first_timeline;
    for (const auto* item : view->timeline_view()->scene().Find("span"))
      last_timeline += item->tooltip;
    box->setCurrentIndex(0);  // as a person picks it
    QTRY_VERIFY_WITH_TIMEOUT(!view->loading(), 60000);
    QCOMPARE(view->step(), steps.front());
    CheckAgainstInspect(window, 6, steps.front());
    for (const auto* item : view->timeline_view()->scene().Find("span"))
      first_timeline += item->tooltip;
    QVERIFY(!first_timeline.isEmpty());
    QVERIFY(first_timeline != last_timeline);  // another step's measured times
    // The chosen step stays when the rank changes.
    QVERIFY(ClickItem(window.mesh_view(), "rank", 1));
    CheckAgainstInspect(window, 1, steps.front());
    QVERIFY(interactions_ <= 3);
    // A step that was not timed: inspect says which were.
    int64_t untimed = 0;
    while (std::binary_search(steps.begin(), steps.end(), untimed)) ++untimed;
    const auto bad = shardscope_cli_test::Shardscope("inspect " + db_ + " --rank 1 --step " +
                                                     std::to_string(untimed));
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.text.find("was not timed (timed steps: " + std::to_string(steps.front())) !=
                 std::string::npos,
             bad.text.c_str());
  }

  // A block of the tensor map chooses its lowest holder as the stepper's and Rank view's rank.
  void tensorMapBlockChoosesTheStepperRank() {
    MainWindow window;
    Open(window);
    window.ShowView("tensor");
    QCoreApplication::processEvents();
    const auto blocks = window.tensor_view()->scene().Find("block");
    QVERIFY(blocks.size() > 1);
    const auto* last = blocks.back();
    QVERIFY(!last->key.isEmpty());
    const int holder = last->key.toInt();
    QVERIFY(holder > 0);
    QVERIFY(ClickItem(window.tensor_view(), "block", last->id));
    QCOMPARE(window.stepper()->rank(), holder);
    QCOMPARE(window.rank_view()->rank(), holder);
    QVERIFY(window.stepper()->error().isEmpty());
  }

  // 1024 ranks: the UI thread returns from SetRun and SetRank at once and the view says it is
  // reading; the figures, once read, equal inspect --rank. Ranks asked for in a row read only
  // the last one's figures onto the screen; a run closed meanwhile shows nothing of it.
  void largeRunIsReadOffTheUiThread() {
    auto document = shardscope::viewer::RunDocument::Open(large_);
    QVERIFY2(document.ok(), document.status().message().c_str());
    const auto& data = (*document)->data();
    QCOMPARE(data.run.devices, int64_t{1024});
    shardscope::gui::RankView view;
    view.resize(1400, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy loaded(&view, &shardscope::gui::RankView::Loaded);
    QElapsedTimer clock;
    clock.start();
    view.SetRun(&data);
    const qint64 set_run_ms = clock.elapsed();
    QVERIFY(view.loading());
    QVERIFY2(view.title().startsWith("Reading rank 0 of 1024"), qPrintable(view.title()));
    QCOMPARE(view.memory_model()->rowCount(), 0);  // nothing read on the UI thread
    CheckAgainstInspect(&view, large_, 0);
    const qint64 read_ms = clock.elapsed();
    qInfo("SetRun returned after %lld ms; the figures were shown after %lld ms", set_run_ms,
          read_ms);
    QVERIFY2(set_run_ms < 100, qPrintable(QString::number(set_run_ms)));
    QCOMPARE(loaded.count(), 1);
    // Three ranks in a row (arrow keys held): the last one's figures, read once more at most.
    loaded.clear();
    clock.restart();
    for (int rank : {700, 701, 1023}) view.SetRank(rank);
    QVERIFY(clock.elapsed() < 100);
    QVERIFY(view.loading());
    CheckAgainstInspect(&view, large_, 1023);
    QCOMPARE(loaded.count(), 1);
    // The run goes while a read runs: nothing of it is shown.
    loaded.clear();
    view.SetRank(5);
    view.SetRun(nullptr);
    QVERIFY(!view.loading());
    QVERIFY(QThreadPool::globalInstance()->waitForDone(60000));
    QTest::qWait(50);  // the read's end is delivered, and dropped
    QCOMPARE(view.memory_model()->rowCount(), 0);
    QVERIFY(loaded.isEmpty());
  }

  // render --view timeline --rank R draws the same picture headless.
  void renderDrawsTheRankTimeline() {
    const std::string png = (dir_ / "rank3.png").string();
    const auto o =
        shardscope_cli_test::Shardscope("render " + db_ + " --view timeline --rank 3 --out " + png);
    QVERIFY2(o.code == 0, o.text.c_str());
    QVERIFY(std::filesystem::file_size(png) > 1000);
    const auto bad = shardscope_cli_test::Shardscope("render " + db_ +
                                                     " --view timeline --rank 99 --out " + png);
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.text.find("rank 99") != std::string::npos, bad.text.c_str());
  }
};

QTEST_MAIN(RankViewTest)
#include "rank_view_test.moc"
