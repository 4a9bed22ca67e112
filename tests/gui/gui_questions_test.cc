// Issue 21's questions answered in the window: each test drives the real MainWindow on a
// recorded run with mouse clicks and key presses (counted by `User`) and checks that the
// answer is on screen (details text, a table, the tensor map, the graph, the Compare view)
// after at most 3 interactions. Questions 3 and 8 (per rank) are the rank view's tests.
// The Compare view's numbers are checked against `shardscope diff --json`.
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QLineEdit>
#include <QLineSeries>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTextDocument>
#include <QTimer>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "compare_view.h"
#include "graph_view.h"
#include "main_window.h"
#include "models.h"
#include "run_shardscope.h"
#include "scene_widget.h"
#include "shardscope/store/reader.h"
#include "shardscope/viewer/scene.h"
#include "stepper.h"

using nlohmann::json;
namespace gui = shardscope::gui;
namespace store = shardscope::store;
namespace viewer = shardscope::viewer;

namespace {

constexpr int kMaxInteractions = 3;

// A person at the window: every click, key press or typed name is one interaction.
struct User {
  int interactions = 0;
  void Click(QWidget* w, QPoint at) {
    QTest::mouseClick(w, Qt::LeftButton, {}, at);
    ++interactions;
  }
  void Key(QWidget* w, int key, Qt::KeyboardModifiers mods = {}) {
    QTest::keyClick(w, static_cast<Qt::Key>(key), mods);
    ++interactions;
  }
  void Type(QWidget* w, const QString& text) {  // a name typed into a field
    w->setFocus();
    QTest::keyClicks(w, text);
    ++interactions;
  }
  void ClickRow(QTableView* table, int row) {
    const QModelIndex index = table->model()->index(row, 1);
    table->scrollTo(index);
    Click(table->viewport(), table->visualRect(index).center());
  }
  // A tab of `bar` by its text (the window's tabs, or tabified docks).
  bool ClickTab(QTabBar* bar, const QString& text) {
    for (int i = 0; i < bar->count(); ++i) {
      if (bar->tabText(i) == text) {
        Click(bar, bar->tabRect(i).center());
        return true;
      }
    }
    return false;
  }
};

json Json(const std::string& args) {
  return json::parse(shardscope_cli_test::Shardscope(args, false).text, nullptr, false);
}

std::unique_ptr<store::RunReader> Open(const std::string& path) {
  auto r = store::RunReader::Open(path);
  return r.ok() ? std::move(r).value() : nullptr;
}

// The text a person reads, table cells and lines joined by single spaces.
QString PlainText(const QString& html) {
  QTextDocument doc;
  doc.setHtml(html);
  return doc.toPlainText().simplified();
}

QTableView* TableOf(QWidget* window, const QAbstractItemModel* model) {
  for (auto* t : window->findChildren<QTableView*>())
    if (t->model() == model) return t;
  return nullptr;
}

QTabBar* DockTabsWith(QWidget* window, const QString& text) {
  for (auto* bar : window->findChildren<QTabBar*>()) {
    for (int i = 0; i < bar->count(); ++i)
      if (bar->tabText(i) == text) return bar;
  }
  return nullptr;
}

QLineEdit* SearchField(QWidget* window) {
  for (auto* e : window->findChildren<QLineEdit*>())
    if (e->placeholderText().startsWith("Search")) return e;
  return nullptr;
}

}  // namespace

class GuiQuestionsTest : public QObject {
  Q_OBJECT

 private:
  std::filesystem::path dir_;
  std::string File(const std::string& name) const { return (dir_ / name).string(); }
  std::string Sample(const std::string& name) const {
    return std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + name;
  }
  const std::string data_ =
      " --limit 512 --data " + std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

  // A shown window with `run` open, and the user who will click in it.
  std::unique_ptr<gui::MainWindow> Window(const std::string& run) {
    auto w = std::make_unique<gui::MainWindow>();
    w->resize(1920, 1080);  // a full-HD screen: the answers must be in sight there
    w->show();
    if (!QTest::qWaitForWindowExposed(w.get()) || !w->OpenRun(QString::fromStdString(run)))
      return nullptr;
    QApplication::processEvents();
    return w;
  }

 private slots:
  void initTestCase() {
    dir_ = std::filesystem::temp_directory_path() /
           ("shardscope-gui-questions-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string ffn = "train " + Sample("ffn.yaml") + " --devices 8 --steps 3" + data_;
    for (const auto& [args, db] : std::vector<std::pair<std::string, std::string>>{
             {ffn, "ffn.db"},
             {ffn + " --ignore-parallel", "ffn_dp.db"},
             {"plan " + Sample("ffn.yaml") + " --devices 8 --search dynamic_programming",
              "plan.db"},
             {"train " + Sample("lenet5_place.yaml") + " --steps 2" + data_, "placed.db"}}) {
      const auto o = shardscope_cli_test::Shardscope(args + " --record " + File(db));
      QVERIFY2(o.code == 0, o.text.c_str());
    }
  }
  void cleanupTestCase() { std::filesystem::remove_all(dir_); }

  // (1) Why was this redistribution inserted: one click on its row; the details say why.
  void q01_whyWasThisRedistributionInserted() {
    auto w = Window(File("ffn.db"));
    QVERIFY(w);
    const auto redists = Open(File("ffn.db"))->Redistributions(false).value();
    QVERIFY(redists.size() >= 2);
    User user;
    const int row = static_cast<int>(redists.size()) - 1;  // not the one shown on opening
    user.ClickRow(TableOf(w.get(), w->redistribution_model()), row);
    const store::RedistributionRecord& r = redists[row];
    QCOMPARE(w->stepper()->redistribution(), r.id);
    const QString text = PlainText(w->details_html());
    QVERIFY(!r.reason.empty());
    QVERIFY2(text.contains("why " + QString::fromStdString(r.reason).simplified()),
             qPrintable(text));
    QVERIFY(user.interactions <= kMaxInteractions);
  }

  // (2) Which ranks hold block (i,j) of tensor T: its name in the search field, Enter, the
  // Tensor map tab; each block's ranks as `layout --run --tensor --json` lists them.
  void q02_whichRanksHoldBlockOfTensor() {
    auto w = Window(File("ffn.db"));
    QVERIFY(w);
    const std::string name = "dense2.weight";
    const json j = Json("layout --run " + File("ffn.db") + " --tensor " + name + " --json");
    std::map<std::vector<int64_t>, std::vector<int64_t>> holders;  // block -> ranks
    for (const json& r : j.at("ranks"))
      holders[r.at("block").get<std::vector<int64_t>>()].push_back(r.at("rank"));
    QVERIFY(holders.size() > 1);
    User user;
    QLineEdit* search = SearchField(w.get());
    QVERIFY(search);
    user.Type(search, QString::fromStdString(name));
    user.Key(search, Qt::Key_Return);
    QVERIFY(user.ClickTab(DockTabsWith(w.get(), "Tensor map"), "Tensor map"));
    QVERIFY(user.interactions <= kMaxInteractions);
    QVERIFY(w->tensor_view()->isVisible());
    std::set<QString> tips;
    for (const auto& item : w->tensor_view()->scene().items)
      if (item.role == "block") tips.insert(item.tooltip);
    QCOMPARE(tips.size(), holders.size());
    for (const auto& [block, ranks] : holders) {
      const QString want = "block (" + viewer::JoinNumbers(block) + ")";
      const QString held = "held by ranks " + viewer::RankText(ranks);
      bool found = false;
      for (const QString& tip : tips) found = found || (tip.startsWith(want) && tip.endsWith(held));
      QVERIFY2(found, qPrintable(want + " " + held));
    }
  }

  // (4) Which collective runs on which rank group: one click on a redistribution; the details
  // list each step's collective with its groups (of the product of its axes' sizes).
  void q04_whichCollectiveOnWhichGroup() {
    auto w = Window(File("ffn.db"));
    QVERIFY(w);
    auto run = Open(File("ffn.db"));
    const auto redists = run->Redistributions().value();
    std::map<int64_t, std::vector<int64_t>> shapes;
    const auto meshes = run->Meshes().value();
    for (const auto& m : meshes) shapes[m.id] = m.shape;
    int collectives = 0;
    for (size_t row = 0; row < redists.size(); ++row) {
      User user;
      user.ClickRow(TableOf(w.get(), w->redistribution_model()), static_cast<int>(row));
      QVERIFY(user.interactions <= kMaxInteractions);
      const QString text = PlainText(w->details_html());
      for (const auto& step : redists[row].steps) {
        const auto groups = step.groups.Expand();
        if (groups.empty()) continue;
        QVERIFY2(text.contains(QString::fromStdString(step.kind) + " along") ||
                     text.contains(QString::fromStdString(step.kind) + " on"),
                 qPrintable(text));
        QVERIFY2(text.contains(QString("on %1 group(s): {%2}")
                                   .arg(groups.size())
                                   .arg(viewer::RankText(groups.front()))),
                 qPrintable(text));
        if (step.kind != "all-gather" && step.kind != "all-reduce" && step.kind != "all-to-all")
          continue;
        int64_t size = 1;
        for (int64_t a : step.axes) size *= shapes.at(redists[row].plan_mesh_id).at(a);
        for (const auto& g : groups) QCOMPARE(static_cast<int64_t>(g.size()), size);
        ++collectives;
      }
    }
    QVERIFY(collectives > 0);
  }

  // (5) Where did this strategy come from: name, Enter; the details give the provenance and
  // the operator it was propagated from.
  void q05_whereDidThisStrategyComeFrom() {
    auto w = Window(File("ffn.db"));
    QVERIFY(w);
    const auto ops = Open(File("ffn.db"))->Operators(false).value();
    std::map<int64_t, std::string> names;
    for (const auto& o : ops) names[o.id] = o.name;
    int checked = 0;
    for (const auto& o : ops) {
      if (o.is_backward || (o.provenance != "propagated" && o.provenance != "user")) continue;
      User user;
      QLineEdit* search = SearchField(w.get());
      search->clear();
      user.Type(search, QString::fromStdString(o.name));
      user.Key(search, Qt::Key_Return);
      QVERIFY(user.interactions <= kMaxInteractions);
      const QString text = PlainText(w->details_html());
      if (!text.startsWith(QString::fromStdString(o.name) + " ")) continue;  // a longer name
      QVERIFY2(text.contains("why " + QString::fromStdString(o.provenance)), qPrintable(text));
      if (o.provenance == "propagated")
        QVERIFY2(text.contains(QString::fromStdString(names.at(o.provenance_op))),
                 qPrintable(text));
      ++checked;
    }
    QVERIFY(checked >= 3);
  }

  // (6) What would the runner-up cost, with its breakdown: name, Enter; the candidates table
  // lists the runners-up with cost, compute and communication.
  void q06_whatWouldTheRunnerUpCost() {
    auto w = Window(File("plan.db"));
    QVERIFY(w);
    const auto ops = Open(File("plan.db"))->Operators().value();  // with candidates
    const store::OperatorRecord* op = nullptr;
    for (const auto& o : ops)
      if (!o.is_backward && o.candidates.size() >= 2 && o.candidates[1].has_breakdown()) op = &o;
    QVERIFY(op);
    User user;
    QLineEdit* search = SearchField(w.get());
    user.Type(search, QString::fromStdString(op->name));
    user.Key(search, Qt::Key_Return);
    QVERIFY(user.interactions <= kMaxInteractions);
    QVERIFY(PlainText(w->details_html()).startsWith(QString::fromStdString(op->name)));
    auto* m = w->candidate_model();
    QCOMPARE(m->rowCount(), static_cast<int>(op->candidates.size()));
    for (int row = 0; row < m->rowCount(); ++row) {
      const auto& c = op->candidates[row];
      QCOMPARE(m->index(row, 1).data().toString(), QString::fromStdString(c.strategy));
      QCOMPARE(m->index(row, 2).data().toString().toDouble(), std::round(c.cost * 1e6) / 1e3);
      if (!c.has_breakdown()) continue;
      QCOMPARE(m->index(row, 3).data().toString().toDouble(),
               std::round(c.compute_seconds * 1e6) / 1e3);
      QCOMPARE(m->index(row, 4).data().toString().toDouble(),
               std::round(c.comm_seconds * 1e6) / 1e3);
    }
    QVERIFY(TableOf(w.get(), m)->isVisible());
  }

  // (7) How far is this plan from the byte lower bound: the Overview tab has the totals; a
  // redistribution's row has its own, and its details say how far above the bound it is.
  void q07_howFarFromTheByteLowerBound() {
    auto w = Window(File("ffn.db"));
    QVERIFY(w);
    const auto redists = Open(File("ffn.db"))->Redistributions(false).value();
    int64_t bytes = 0, bound = 0;
    for (const auto& r : redists) bytes += r.bytes, bound += r.lower_bound_bytes;
    User user;
    QVERIFY(user.ClickTab(w->tabs()->tabBar(), "Overview"));
    const QString overview =
        static_cast<QPlainTextEdit*>(w->tabs()->currentWidget())->toPlainText();
    QVERIFY2(overview.contains(viewer::FormatBytes(static_cast<double>(bytes))),
             qPrintable(overview));
    QVERIFY2(overview.contains(viewer::FormatBytes(static_cast<double>(bound))),
             qPrintable(overview));
    QTableView* list = TableOf(w.get(), w->redistribution_model());
    user.ClickRow(list, 0);
    QVERIFY(user.interactions <= kMaxInteractions);
    // The row's bytes and lower bound are in sight, not behind a scrollbar.
    for (int column : {4, 5}) {
      const QRect cell = list->visualRect(list->model()->index(0, column));
      QVERIFY2(cell.left() >= 0 && cell.right() < list->viewport()->width(),
               qPrintable(list->model()->headerData(column, Qt::Horizontal).toString()));
    }
    const QString text = PlainText(w->details_html());
    const auto& r = redists[0];
    QVERIFY2(text.contains("lower bound " +
                           viewer::FormatBytes(static_cast<double>(r.lower_bound_bytes))),
             qPrintable(text));
    QVERIFY(text.contains(r.bytes > r.lower_bound_bytes ? "above it" : "at the bound"));
  }

  // (9) What differs between two runs: Ctrl+Shift+O, pick the file; the Compare view shows
  // both runs' curves and the redistribution diff of `shardscope diff --json`, same numbers.
  void q09_whatDiffersBetweenTwoRuns() {
    auto w = Window(File("ffn.db"));
    QVERIFY(w);
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    User user;
    const QString other = QString::fromStdString(File("ffn_dp.db"));
    bool picked = false;
    QString refused;  // a message box the dialog raised instead of accepting (closed, reported)
    QTimer refusal;
    connect(&refusal, &QTimer::timeout, [&] {
      if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
        refused = box->text();
        box->reject();
      }
    });
    QTimer pick;  // the file dialog is modal: choose the file once it is up
    connect(&pick, &QTimer::timeout, [&] {
      if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
        pick.stop();
        refusal.start(20);
        // Typed as a person would: selectFile() races the dialog's folder listing.
        auto* name = dialog->findChild<QLineEdit*>("fileNameEdit");
        QVERIFY(name != nullptr);
        name->setText(other);
        static_cast<QDialog*>(dialog)->accept();  // QDialog: public
        // Still up two seconds later: refused (see `refused`); close it rather than hang.
        QTimer::singleShot(2000, dialog, [dialog] { dialog->reject(); });
        picked = true;
        ++user.interactions;  // a double click on the file
      }
    });
    pick.start(20);
    user.Key(w.get(), Qt::Key_O, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY(picked);
    QVERIFY2(refused.isEmpty(), qPrintable("the file dialog refused " + other + ": " + refused));
    QVERIFY(user.interactions <= kMaxInteractions);
    QCOMPARE(w->tabs()->tabText(w->tabs()->currentIndex()), QString("Compare"));
    const json d = Json("diff " + File("ffn.db") + " " + File("ffn_dp.db") + " --json");
    gui::CompareView* view = w->compare_view();
    QVERIFY(view->isVisible());
    auto* m = view->redistribution_model();
    QCOMPARE(static_cast<size_t>(m->rowCount()), d.at("redistributions").size());
    QVERIFY(m->rowCount() > 0);
    for (int row = 0; row < m->rowCount(); ++row) {
      const json& e = d.at("redistributions")[row];
      QCOMPARE(m->index(row, 0).data().toString().toStdString(), e.at("change").get<std::string>());
      QCOMPARE(m->index(row, 1).data().toString().toStdString(), e.at("tensor").get<std::string>());
      for (int side = 0; side < 2; ++side) {
        const json& s = e.at(side == 0 ? "a" : "b");
        QCOMPARE(m->BytesAt(row, side), s.is_null() ? int64_t{-1} : s.at("bytes").get<int64_t>());
      }
    }
    QCOMPARE(static_cast<size_t>(view->strategy_model()->rowCount()), d.at("strategies").size());
    // Run names as the column headers, and in the chart's legend with a point per step.
    const QString a = QString::fromStdString(d.at("a").at("name").get<std::string>());
    const QString b = QString::fromStdString(d.at("b").at("name").get<std::string>());
    QVERIFY(m->headerData(5, Qt::Horizontal, Qt::DisplayRole).toString().contains(a));
    QVERIFY(m->headerData(8, Qt::Horizontal, Qt::DisplayRole).toString().contains(b));
    // The bottom docks step aside for the Compare tab and come back with the graph.
    auto* stepper_dock = w->findChild<QDockWidget*>("redistribution");
    QVERIFY(stepper_dock && !stepper_dock->isVisible());
    QTRY_VERIFY(view->height() > w->height() / 2);
    const auto series = view->chart_view()->chart()->series();
    QCOMPARE(series.size(), 4);
    for (auto* s : series) {
      auto* line = qobject_cast<QLineSeries*>(s);
      QVERIFY(line);
      const bool is_a = line->name().startsWith("A: " + a);
      QVERIFY2(is_a || line->name().startsWith("B: " + b), qPrintable(line->name()));
      QCOMPARE(static_cast<int64_t>(line->count()),
               d.at(is_a ? "a" : "b").at("steps").get<int64_t>());
    }
    w->tabs()->setCurrentIndex(0);
    QVERIFY(stepper_dock->isVisible());
  }

  // (10) Which worker runs which part of the graph, and what crosses between them: one click
  // on "per worker"; every operator sits in its worker's cluster, every send/receive is drawn.
  void q10_whichWorkerRunsWhatAndWhatCrosses() {
    auto w = Window(File("placed.db"));
    QVERIFY(w);
    auto run = Open(File("placed.db"));
    const auto ops = run->Operators(false).value();
    const auto pairs = run->SendRecvs().value();
    QVERIFY(!pairs.empty());
    QCheckBox* per_worker = nullptr;
    for (auto* c : w->findChildren<QCheckBox*>())
      if (c->text() == "per worker") per_worker = c;
    QVERIFY(per_worker);
    User user;
    user.Click(per_worker, per_worker->rect().center());
    QVERIFY(per_worker->isChecked());
    QVERIFY(user.interactions <= kMaxInteractions);
    std::map<int64_t, QRectF> op_rects;
    std::vector<std::pair<QString, QRectF>> clusters;
    std::vector<QString> edge_labels;
    for (QGraphicsItem* g : w->graph_view()->scene()->items()) {
      auto* item = dynamic_cast<gui::SceneGraphicsItem*>(g);
      if (!item) continue;
      const auto& s = item->item();
      if (s.role == "operator") op_rects[s.id] = s.rect;
      if (s.role == "cluster") clusters.emplace_back(s.key, s.rect);
      if (s.role == "send_recv") edge_labels.push_back(s.text);
    }
    int placed = 0;
    for (const auto& o : ops) {
      if (!op_rects.count(o.id)) continue;
      const QString worker = QString("worker %1").arg(o.worker);
      bool inside = false;
      for (const auto& [key, rect] : clusters)
        inside = inside || ((key == worker || key.startsWith(worker + "/")) &&
                            rect.contains(op_rects[o.id].center()));
      QVERIFY2(inside, o.name.c_str());
      ++placed;
    }
    QVERIFY(placed > 0);
    for (const auto& p : pairs) {
      const QString label = QString("send r%1\u2192r%2").arg(p.src_rank).arg(p.dst_rank);
      bool drawn = false;
      for (const QString& t : edge_labels) drawn = drawn || t.startsWith(label);
      QVERIFY2(drawn, qPrintable(label));
    }
  }
};

QTEST_MAIN(GuiQuestionsTest)
#include "gui_questions_test.moc"
