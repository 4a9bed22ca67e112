#include "main_window.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <cmath>

#include "charts_widget.h"
#include "compare_view.h"
#include "details.h"
#include "graph_builder.h"
#include "graph_view.h"
#include "mesh_scene_memo.h"
#include "minimap.h"
#include "models.h"
#include "placement_text.h"
#include "rank_spin_box.h"
#include "rank_view.h"
#include "run_loader.h"
#include "scene_widget.h"
#include "shardscope/viewer/charts.h"
#include "shardscope/viewer/layout_text.h"
#include "shardscope/viewer/mesh_scene.h"
#include "shardscope/viewer/painter.h"
#include "shardscope/viewer/tensor_scene.h"
#include "shardscope/viewer/timeline_scene.h"
#include "stepper.h"
#include "table_columns.h"

namespace shardscope::gui {
namespace {

QTableView* MakeTable(QAbstractItemModel* model, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setModel(model);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  table->setAlternatingRowColors(true);
  table->setWordWrap(false);
  // Columns fit their contents whenever the model is refilled, measured on the first rows
  // (thousands of ranks or redistributions would hold the window up).
  table->horizontalHeader()->setResizeContentsPrecision(100);
  QObject::connect(model, &QAbstractItemModel::modelReset, table,
                   [table] { table->resizeColumnsToContents(); });
  return table;
}

QDockWidget* MakeDock(const QString& title, const QString& name, QWidget* content,
                      QMainWindow* window, Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, window);
  dock->setObjectName(name);
  dock->setWidget(content);
  window->addDockWidget(area, dock);
  return dock;
}

constexpr int kMaxRecent = 8;

// `room` less what the device matrix's captions and groups' legend take beyond the margin
// ShowMesh leaves for them (measured by building it once), so the whole picture fits.
QSizeF LessCaptionOverflow(const DeviceMesh& mesh, viewer::MeshSceneOptions options, QSizeF room) {
  if (room.isEmpty()) return room;
  options.max_size = room - QSizeF(40, 140);
  const QSizeF over = viewer::BuildMeshScene(mesh, options).bounds.size() - room;
  return room - over.expandedTo(QSizeF(0, 0));
}

}  // namespace

MainWindow::MainWindow()
    : tabs_(new QTabWidget(this)),
      graph_(new GraphView(this)),
      graph_builder_(new GraphBuilder(this)),
      overview_(new QPlainTextEdit(this)),
      details_(new QTextBrowser(this)),
      candidate_model_(new CandidateTableModel(this)),
      mesh_view_(new SceneWidget(this)),
      mesh_axis_(new QComboBox(this)),
      tensor_view_(new SceneWidget(this)),
      tensor_rank_(new RankSpinBox(this)),
      stepper_(new RedistributionStepper(this)),
      redistribution_model_(new RedistributionTableModel(this)),
      charts_(new ChartsWidget(this)),
      rank_model_(new RankTableModel(this)),
      timeline_view_(new SceneWidget(this)),
      timeline_step_(new QSpinBox(this)),
      rank_view_(new RankView(this)),
      compare_model_(new CompareModel(this)),
      figures_model_(new FiguresCompareModel(this)),
      compare_left_(new QPlainTextEdit(this)),
      compare_right_(new QPlainTextEdit(this)),
      search_(new QLineEdit(this)),
      color_by_(new QComboBox(this)),
      backward_(new QCheckBox("backward", this)),
      partitioned_(new QCheckBox("per worker", this)),
      filter_(new QLineEdit(this)),
      status_(new QLabel(this)),
      refresh_timer_(new QTimer(this)),
      watcher_(new QFileSystemWatcher(this)) {
  mesh_scenes_ = std::make_unique<MeshSceneMemo>();
  setWindowTitle("Shardscope");
  setAcceptDrops(true);
  overview_->setReadOnly(true);
  overview_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  overview_->setPlainText(
      "Open a run file (File > Open, or drop it here).\n"
      "Runs are written by `shardscope train MODEL --record runs/NAME.db`.");
  for (QPlainTextEdit* e : {compare_left_, compare_right_}) {
    e->setReadOnly(true);
    e->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  }
  compare_table_ = MakeTable(compare_model_, this);
  auto* compare = new QSplitter(Qt::Vertical, this);
  compare_view_ = new CompareView(compare);  // the diff `shardscope diff` prints, and curves
  compare->addWidget(compare_view_);
  compare->addWidget(compare_table_);
  compare->addWidget(MakeTable(figures_model_, this));
  auto* figures = new QSplitter(Qt::Horizontal, compare);
  figures->addWidget(compare_left_);
  figures->addWidget(compare_right_);
  compare->addWidget(figures);
  compare->setSizes({560, 120, 120, 100});
  compare_left_->setPlainText("File > Compare with... opens a second run here.");
  tabs_->addTab(graph_, "Graph");
  tabs_->addTab(overview_, "Overview");
  tabs_->addTab(compare, "Compare");
  setCentralWidget(tabs_);
  // The Compare tab takes the full height: the bottom docks step aside while it is in front.
  connect(tabs_, &QTabWidget::currentChanged, this, [this, compare] {
    if (tabs_->currentWidget() == compare && layout_before_compare_.isEmpty()) {
      layout_before_compare_ = saveState();
      for (auto* dock : findChildren<QDockWidget*>())
        if (dockWidgetArea(dock) == Qt::BottomDockWidgetArea) dock->hide();
    } else if (tabs_->currentWidget() != compare && !layout_before_compare_.isEmpty()) {
      restoreState(layout_before_compare_);
      layout_before_compare_.clear();
    }
  });
  new Minimap(graph_);  // a child of the graph view, in its corner
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(new GraphLayoutProgress(graph_builder_, this));
  connect(graph_builder_, &GraphBuilder::Finished, this, [this](const viewer::Scene& scene) {
    graph_->SetScene(scene);
    if (fit_after_layout_) graph_->FitReadable();
    fit_after_layout_ = false;
  });
  connect(graph_builder_, &GraphBuilder::Failed, this,
          [this](const QString& message) { ShowError("Cannot draw the graph", message); });
  ConnectRunLoader();
  BuildMenus();
  BuildDocks();
  connect(graph_, &GraphView::Selected, this, &MainWindow::OnGraphSelected);
  connect(graph_, &GraphView::ClusterActivated, this, [this](const QString& key) {
    const std::string scope = key.toStdString();
    if (graph_options_.expanded.count(scope)) {
      graph_options_.expanded.erase(scope);
      graph_options_.collapsed.insert(scope);
    } else {
      graph_options_.collapsed.erase(scope);
      graph_options_.expanded.insert(scope);
    }
    RebuildGraph();
  });
  connect(stepper_, &RedistributionStepper::StepChanged, this, &MainWindow::OnStepChanged);
  // Live refresh: the file (and its write-ahead log) changing, and a timer while it is live.
  connect(watcher_, &QFileSystemWatcher::fileChanged, this, [this] { Refresh(); });
  refresh_timer_->setInterval(2000);
  connect(refresh_timer_, &QTimer::timeout, this, [this] {
    if (document_ &&
        (document_->live() || document_->data().run.status == store::RunStatus::kRunning)) {
      Refresh();
    }
  });
  refresh_timer_->start();
  // Fits a 1920x1080 screen with its task bar; the docks get room for their pictures.
  resize(1900, 1000);
  default_layout_ = saveState();
  InstallStepperShortcuts(stepper_, this);
}

void MainWindow::ResetLayout() {
  layout_before_compare_.clear();
  restoreState(default_layout_);
  for (auto* dock : findChildren<QDockWidget*>()) dock->show();
  ShowView("graph");
  ShowView("redistribution");
}

MainWindow::~MainWindow() = default;

void MainWindow::BuildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open...", QKeySequence::Open, this, &MainWindow::ChooseRun);
  recent_menu_ = file->addMenu("Open &Recent");
  file->addAction("&Compare with...", QKeySequence("Ctrl+Shift+O"), this,
                  &MainWindow::ChooseCompare);
  file->addAction("&Export graph (SVG/PNG)...", this, &MainWindow::ExportGraph);
  file->addAction("&Reload", QKeySequence::Refresh, this, [this] { Refresh(); });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  UpdateRecentMenu();

  QToolBar* bar = addToolBar("Graph");
  bar->setObjectName("graph-toolbar");
  bar->addAction("Zoom in", this, [this] { graph_->ZoomBy(1.25); })
      ->setShortcut(QKeySequence::ZoomIn);
  bar->addAction("Zoom out", this, [this] { graph_->ZoomBy(0.8); })
      ->setShortcut(QKeySequence::ZoomOut);
  bar->addAction("Fit", this, [this] { graph_->Fit(); })->setShortcut(Qt::Key_F);
  bar->addSeparator();
  search_->setPlaceholderText("Search name (Enter: next)");
  search_->setMaximumWidth(220);
  bar->addWidget(search_);
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    if (!graph_->Search(search_->text()))
      status_->setText("no operator or tensor matches '" + search_->text() + "'");
  });
  bar->addSeparator();
  bar->addWidget(new QLabel(" colour by ", this));
  color_by_->addItems({"strategy", "worker", "memory"});
  bar->addWidget(color_by_);
  backward_->setChecked(true);
  bar->addWidget(backward_);
  bar->addWidget(partitioned_);
  filter_->setPlaceholderText("Filter operators");
  filter_->setMaximumWidth(180);
  bar->addWidget(filter_);
  connect(color_by_, &QComboBox::currentIndexChanged, this, [this](int index) {
    graph_options_.color_by = static_cast<viewer::ColorBy>(index);
    auto_worker_colour_ = false;
    RebuildGraph();
  });
  connect(backward_, &QCheckBox::toggled, this, [this](bool on) {
    graph_options_.show_backward = on;
    RebuildGraph();
  });
  connect(partitioned_, &QCheckBox::toggled, this, [this](bool on) {
    graph_options_.partitioned = on;
    RebuildGraph();
  });
  connect(filter_, &QLineEdit::editingFinished, this, [this] {
    if (graph_options_.filter == filter_->text().toStdString()) return;
    graph_options_.filter = filter_->text().toStdString();
    RebuildGraph();
  });
}

void MainWindow::BuildDocks() {
  auto* details = new QSplitter(Qt::Vertical, this);
  details_->setOpenLinks(false);
  details_->setHtml("Select an operator, a tensor (edge) or a redistribution in the graph.");
  details->addWidget(details_);
  candidates_ = MakeTable(candidate_model_, this);
  details->addWidget(candidates_);
  details->setStretchFactor(0, 3);
  details->setStretchFactor(1, 1);
  QDockWidget* details_dock =
      MakeDock("Details", "details", details, this, Qt::RightDockWidgetArea);

  auto* mesh = new QWidget(this);
  auto* mesh_layout = new QVBoxLayout(mesh);
  auto* mesh_controls = new QHBoxLayout;
  mesh_controls->addWidget(new QLabel("highlight groups along", mesh));
  mesh_controls->addWidget(mesh_axis_, 1);
  mesh_layout->addLayout(mesh_controls);
  mesh_layout->addWidget(InScrollArea(mesh_view_, mesh), 1);
  mesh_view_->SetMessage("The device matrix of the selection appears here.");
  QDockWidget* mesh_dock = MakeDock("Device matrix", "mesh", mesh, this, Qt::RightDockWidgetArea);
  // The matrix is sized to its dock: built again when a resize of the dock pauses.
  auto* mesh_resized = new QTimer(this);
  mesh_resized->setSingleShot(true);
  mesh_resized->setInterval(80);
  connect(mesh_view_, &SceneWidget::RoomResized, mesh_resized, qOverload<>(&QTimer::start));
  connect(mesh_resized, &QTimer::timeout, this, [this] {
    if (shown_mesh_ >= 0) ShowMesh(shown_mesh_, shown_axes_);
  });
  connect(mesh_axis_, &QComboBox::activated, this, [this](int index) {
    std::vector<int> axes;
    if (index > 0) axes.push_back(index - 1);
    ShowMesh(shown_mesh_, axes);
  });

  auto* tensor = new QWidget(this);
  auto* tensor_layout = new QVBoxLayout(tensor);
  auto* tensor_controls = new QHBoxLayout;
  tensor_controls->addWidget(new QLabel("one rank's view", tensor));
  tensor_rank_->setRange(-1, 0);
  tensor_rank_->setValue(-1);
  tensor_rank_->setSpecialValueText("all ranks");
  tensor_controls->addWidget(tensor_rank_, 1);
  tensor_layout->addLayout(tensor_controls);
  tensor_layout->addWidget(InScrollArea(tensor_view_, tensor), 1);
  tensor_view_->SetMessage("The tensor map of the selected tensor appears here.");
  QDockWidget* tensor_dock =
      MakeDock("Tensor map", "tensor", tensor, this, Qt::RightDockWidgetArea);
  connect(tensor_rank_, &QSpinBox::valueChanged, this, [this] { ShowTensorMap(shown_tensor_); });
  connect(mesh_view_, &SceneWidget::Clicked, this, [this](const QString& role, qint64 id) {
    if (role == "rank") {
      tensor_rank_->setValue(static_cast<int>(id));
      const int offset = document_ ? RankOffsetOf(document_->data(), shown_mesh_) : 0;
      rank_view_->SetRank(static_cast<int>(id) + offset);  // a stage's mesh: world rank
      ShowView("rank");
    }
  });
  // A block of the tensor map: its lowest holder becomes the rank of the stepper and Rank view.
  connect(tensor_view_, &SceneWidget::Clicked, this, [this](const QString& role, qint64 id) {
    const auto found = tensor_view_->scene().Find(role, id);
    if (role == "block" && !found.empty() && !found.front()->key.isEmpty())
      rank_view_->SetRank(found.front()->key.toInt());
  });
  connect(rank_view_, &RankView::RankChanged, stepper_, &RedistributionStepper::SetRank);
  tabifyDockWidget(mesh_dock, tensor_dock);
  mesh_dock->raise();

  auto* redist = new QSplitter(Qt::Horizontal, this);
  redistributions_ = MakeTable(redistribution_model_, this);
  FitColumnsToWidth(redistributions_, {1, 2, 3});  // bytes and lower bound always in sight
  redist->addWidget(redistributions_);
  redist->addWidget(stepper_);
  redist->setStretchFactor(1, 3);
  redist->setSizes({540, 820});  // at 1920 wide: the list's six columns, the frame beside it
  connect(redistributions_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            const int64_t id = redistribution_model_->IdAt(current.row());
            if (id >= 0 && id != stepper_->redistribution()) SelectRedistribution(id);
          });
  QDockWidget* redist_dock =
      MakeDock("Redistribution stepper", "redistribution", redist, this, Qt::BottomDockWidgetArea);
  QDockWidget* charts_dock = MakeDock("Charts", "charts", charts_, this, Qt::BottomDockWidgetArea);
  ranks_ = MakeTable(rank_model_, this);
  QDockWidget* ranks_dock = MakeDock("Ranks", "ranks", ranks_, this, Qt::BottomDockWidgetArea);
  auto* timeline = new QWidget(this);
  auto* timeline_layout = new QVBoxLayout(timeline);
  auto* timeline_controls = new QHBoxLayout;
  timeline_controls->addWidget(new QLabel("training step", timeline));
  timeline_step_->setRange(0, 0);
  timeline_step_->setEnabled(false);
  timeline_controls->addWidget(timeline_step_);
  timeline_controls->addStretch(1);
  timeline_layout->addLayout(timeline_controls);
  timeline_layout->addWidget(InScrollArea(timeline_view_, timeline), 1);
  timeline_view_->SetMessage("The pipeline timeline of a placed run appears here.");
  connect(timeline_step_, &QSpinBox::valueChanged, this, [this] { ShowTimeline(); });
  QDockWidget* timeline_dock =
      MakeDock("Pipeline timeline", "timeline", timeline, this, Qt::BottomDockWidgetArea);
  tabifyDockWidget(redist_dock, charts_dock);
  tabifyDockWidget(charts_dock, ranks_dock);
  tabifyDockWidget(ranks_dock, timeline_dock);
  QDockWidget* rank_dock = MakeDock("Rank", "rank", rank_view_, this, Qt::BottomDockWidgetArea);
  tabifyDockWidget(timeline_dock, rank_dock);
  redist_dock->raise();
  // Details and the device matrix run the full height; the stepper sits under the graph.
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  resizeDocks({details_dock, mesh_dock}, {560, 560}, Qt::Horizontal);
  resizeDocks({details_dock, mesh_dock}, {460, 500}, Qt::Vertical);
  resizeDocks({redist_dock}, {560}, Qt::Vertical);
  QMenu* view = menuBar()->addMenu("&View");
  for (QDockWidget* dock : {details_dock, mesh_dock, tensor_dock, redist_dock, charts_dock,
                            ranks_dock, timeline_dock, rank_dock}) {
    view->addAction(dock->toggleViewAction());
  }
  view->addSeparator();
  view->addAction(stepper_->animate_action());
  view->addAction("Reset &Layout", this, &MainWindow::ResetLayout);
}

void MainWindow::ShowView(const QString& name) {
  if (name == "graph") tabs_->setCurrentIndex(0);
  if (name == "overview") tabs_->setCurrentIndex(1);
  if (name == "compare") tabs_->setCurrentIndex(2);
  const std::map<QString, QString> docks = {
      {"mesh", "mesh"},     {"tensor", "tensor"}, {"redistribution", "redistribution"},
      {"charts", "charts"}, {"ranks", "ranks"},   {"timeline", "timeline"},
      {"rank", "rank"}};
  auto it = docks.find(name);
  if (it != docks.end()) {
    if (auto* dock = findChild<QDockWidget*>(it->second)) {
      dock->show();
      dock->raise();
    }
  }
}

void MainWindow::ShowError(const QString& title, const QString& message) {
  last_error_ = message;
  status_->setText(title + ": " + message);
  // Non-blocking, so a script or test driving the window is never stuck on it.
  auto* box = new QMessageBox(QMessageBox::Warning, title, viewer::DrawableText(message),
                              QMessageBox::Ok, this);
  box->setTextFormat(Qt::PlainText);  // a file name or message may look like markup
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

// Where the file dialogs start: the open run's folder (runs to compare are usually beside
// it), else ./runs, where `train` records by default.
QString MainWindow::RunsFolder() const {
  const QStringList watched = watcher_->files();
  return watched.isEmpty() ? QString("runs") : QFileInfo(watched.first()).absolutePath();
}

void MainWindow::ChooseRun() {
  const QString path = QFileDialog::getOpenFileName(this, "Open run", RunsFolder(),
                                                    "Shardscope runs (*.db);;All files (*)");
  if (!path.isEmpty()) OpenRunInBackground(path);
}

void MainWindow::ChooseCompare() {
  const QString path = QFileDialog::getOpenFileName(this, "Compare with run", RunsFolder(),
                                                    "Shardscope runs (*.db);;All files (*)");
  if (!path.isEmpty()) CompareWith(path);
}

void MainWindow::ExportGraph() {
  if (!document_) return;
  const QString path =
      QFileDialog::getSaveFileName(this, "Export graph", "graph.svg", "SVG (*.svg);;PNG (*.png)");
  if (path.isEmpty()) return;
  auto scene = viewer::BuildGraphScene(document_->data(), graph_options_);
  const auto saved = scene.ok() ? viewer::SaveScene(*scene, path.toStdString()) : scene.status();
  if (!saved.ok()) ShowError("Cannot export", QString::fromStdString(saved.message()));
}

void MainWindow::AddRecent(const QString& path) {
  QSettings settings("Shardscope", "shardscope-gui");
  QStringList recent = settings.value("recent").toStringList();
  const QString full = QFileInfo(path).absoluteFilePath();
  recent.removeAll(full);
  recent.prepend(full);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recent", recent);
  UpdateRecentMenu();
}

void MainWindow::UpdateRecentMenu() {
  recent_menu_->clear();
  QSettings settings("Shardscope", "shardscope-gui");
  const QStringList recent = settings.value("recent").toStringList();
  for (const QString& path : recent) {
    recent_menu_->addAction(path, this, [this, path] { OpenRunInBackground(path); });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

bool MainWindow::OpenRun(const QString& path) {
  auto doc = viewer::RunDocument::Open(path.toStdString());
  if (!doc.ok()) {
    last_error_code_ = doc.status().code();
    ShowError("Cannot open run", QString::fromStdString(doc.status().message()));
    return false;
  }
  run_loader_->Cancel();  // the file asked for last wins
  ShowOpened(path, std::move(doc).value(), /*read_summary=*/true);
  return true;
}

void MainWindow::ShowOpened(const QString& path, std::unique_ptr<viewer::RunDocument> document,
                            bool read_summary) {
  if (!watcher_->files().isEmpty()) watcher_->removePaths(watcher_->files());
  document_ = std::move(document);
  last_error_.clear();
  watcher_->addPath(path);
  if (QFileInfo::exists(path + "-wal")) watcher_->addPath(path + "-wal");
  graph_options_.expanded.clear();
  graph_options_.collapsed.clear();
  AddRecent(path);
  setWindowTitle("Shardscope — " + QFileInfo(path).fileName());
  stepper_->SetRedistribution(nullptr, -1);
  mesh_scenes_->Clear();
  shown_mesh_ = -1;
  shown_tensor_ = -1;
  ShowRun(read_summary);
  // A placed run has no strategies to tell apart: colour its graph by worker (and back to
  // strategies for the next run, unless the person chose a colouring).
  const bool placed = !document_->data().send_recvs.empty();
  const auto colour = placed && graph_options_.color_by == viewer::ColorBy::kStrategy
                          ? viewer::ColorBy::kWorker
                      : !placed && auto_worker_colour_ ? viewer::ColorBy::kStrategy
                                                       : graph_options_.color_by;
  if (colour != graph_options_.color_by) {
    const QSignalBlocker blocker(color_by_);
    color_by_->setCurrentIndex(static_cast<int>(colour));
    graph_options_.color_by = colour;
    auto_worker_colour_ = colour == viewer::ColorBy::kWorker;
  }
  graph_->SetScene({});  // not the last run's graph while this one is laid out
  fit_after_layout_ = true;
  RebuildGraph();
  if (!graph_builder_->running()) graph_->FitReadable();
  // Start where a person looks first: the first redistribution, the largest mesh.
  const auto& data = document_->data();
  stepper_->SetIdleMessage(
      data.redistributions.empty()
          ? "This run has no redistributions: every consumer reads its producer's layout."
          : "Click an orange redistribution edge in the graph (or pick one in the list) to step "
            "through its plan.");
  if (!data.redistributions.empty()) SelectRedistribution(data.redistributions.front().id);
  int64_t best = -1, best_size = 0;
  for (const auto& m : data.meshes) {
    int64_t size = 1;
    for (int64_t d : m.shape) size *= d;
    if (size > best_size) best = m.id, best_size = size;
  }
  if (best >= 0 && data.redistributions.empty()) ShowMesh(best, {});
}

void MainWindow::ShowRun(bool read_summary) {
  const auto& data = document_->data();
  overview_->setPlainText(read_summary ? QString::fromStdString(document_->Summary())
                                       : QString("Reading the overview…"));
  rank_model_->SetRows(data.rank_totals,
                       data.run.search == "place" || !data.pipeline_spans.empty());
  ShowTimeline();
  rank_view_->SetRun(&data);
  redistribution_model_->SetRun(&data);
  charts_->SetData(viewer::BuildChartsData(data));
  last_updated_at_ = data.run.updated_at;
  last_steps_ = data.counts.steps;
  status_->setText(QString("%1: %2 operators, %3 redistributions, %4 steps, %5")
                       .arg(QString::fromStdString(data.run.name))
                       .arg(data.operators.size())
                       .arg(data.redistributions.size())
                       .arg(data.steps.size())
                       .arg(store::RunStatusName(data.run.status)));
  UpdateCompare();
}

bool MainWindow::Refresh() {
  if (!document_) return false;
  const auto reloaded = document_->Reload();
  if (!reloaded.ok()) {
    status_->setText("reload failed: " + QString::fromStdString(reloaded.message()));
    return false;
  }
  const auto& data = document_->data();
  if (data.run.updated_at == last_updated_at_ && data.counts.steps == last_steps_) return false;
  const bool plan_changed =
      graph_->scene()->items().isEmpty() && !data.operators.empty() && !graph_builder_->running();
  // The views hold pointers into the data: reset the ones that do.
  const int64_t redist = stepper_->redistribution();
  const int step = stepper_->step();
  ShowRun();
  stepper_->SetRedistribution(&data, redist);
  stepper_->GoTo(step);
  if (plan_changed) RebuildGraph();
  return true;
}

void MainWindow::RebuildGraph() {
  if (!document_) return;
  if (document_->data().operators.size() >= kBackgroundLayoutOperators) {
    graph_builder_->Start(document_->data(), graph_options_);
    return;
  }
  graph_builder_->Cancel();  // a smaller graph replaces one still being laid out
  auto scene = viewer::BuildGraphScene(document_->data(), graph_options_);
  if (!scene.ok()) {
    ShowError("Cannot draw the graph", QString::fromStdString(scene.status().message()));
    return;
  }
  graph_->SetScene(*scene);
}

QString MainWindow::details_html() const { return details_->toHtml(); }

void MainWindow::OnGraphSelected(const QString& role, qint64 id, const QString& key) {
  if (role == "operator") SelectOperator(id);
  if (role == "tensor" || role == "edge") SelectTensor(id);
  if (role == "redistribution") SelectRedistribution(id);
  if (role == "cluster" && document_) {
    const size_t ops = viewer::CountOperatorsInScope(document_->data(), key.toStdString());
    details_->setHtml(
        QString("<h3>scope %1</h3><p>%2 operators. Double-click the box to %3 it.</p>")
            .arg(key.toHtmlEscaped())
            .arg(ops)
            .arg(graph_options_.expanded.count(key.toStdString()) ? "collapse" : "expand"));
    candidate_model_->SetOperator(nullptr);
  }
}

void MainWindow::SelectOperator(int64_t id) {
  if (!document_) return;
  const auto& data = document_->data();
  details_->setHtml(OperatorDetailsHtml(data, id));
  const store::OperatorRecord* op = data.Operator(id);
  candidate_model_->SetOperator(op);
  if (!op) return;
  ShowMesh(op->mesh_id, {});
  for (const auto& t : data.tensors) {
    if (t.producer_op == id) {
      ShowTensorMap(t.id);
      break;
    }
  }
}

void MainWindow::SelectTensor(int64_t id) {
  if (!document_) return;
  const auto& data = document_->data();
  details_->setHtml(TensorDetailsHtml(data, id));
  candidate_model_->SetOperator(nullptr);
  if (const store::TensorRecord* t = data.Tensor(id)) ShowMesh(t->mesh_id, {});
  ShowTensorMap(id);
}

void MainWindow::SelectRedistribution(int64_t id) {
  if (!document_) return;
  const auto& data = document_->data();
  const store::RedistributionRecord* r = data.Redistribution(id);
  if (!r) return;
  stepper_->SetRedistribution(&data, id);
  details_->setHtml(RedistributionDetailsHtml(data, id));
  candidate_model_->SetOperator(nullptr);
  ShowTensorMap(r->tensor_id);
  OnStepChanged(0);
  for (int row = 0; row < redistribution_model_->rowCount(); ++row) {
    if (redistribution_model_->IdAt(row) == id) {
      redistributions_->selectRow(row);
      break;
    }
  }
}

void MainWindow::OnStepChanged(int step) {
  if (!document_) return;
  const store::RedistributionRecord* r =
      document_->data().Redistribution(stepper_->redistribution());
  if (!r) return;
  // The device matrix follows the stepper: the plan mesh, the groups of this step's axes.
  std::vector<int> axes;
  if (step < static_cast<int>(r->steps.size())) {
    for (int64_t a : r->steps[step].axes) axes.push_back(static_cast<int>(a));
  }
  ShowMesh(r->plan_mesh_id, axes);
}

void MainWindow::ShowTimeline() {
  if (!document_) return;
  const auto& spans = document_->data().pipeline_spans;
  const std::vector<int64_t> steps = viewer::TimelineSteps(spans);
  if (steps.empty()) {
    timeline_step_->setEnabled(false);
    timeline_view_->SetMessage(
        "No pipeline timeline recorded: only runs with place() and --micro-batches record "
        "one (docs/run-format.md, pipeline_span).");
    return;
  }
  // Keep the chosen step across refreshes; a new run starts at its last step.
  const QSignalBlocker blocker(timeline_step_);
  const bool in_range = timeline_step_->isEnabled() && timeline_step_->value() >= steps.front() &&
                        timeline_step_->value() <= steps.back();
  timeline_step_->setRange(static_cast<int>(steps.front()), static_cast<int>(steps.back()));
  if (!in_range) timeline_step_->setValue(static_cast<int>(steps.back()));
  timeline_step_->setEnabled(true);
  timeline_view_->SetScene(viewer::BuildTimelineScene(spans, timeline_step_->value()));
}

void MainWindow::ShowMesh(int64_t mesh_id, const std::vector<int>& axes) {
  if (!document_) return;
  const store::MeshRecord* record = document_->data().Mesh(mesh_id);
  if (!record) {
    mesh_view_->SetMessage("no mesh recorded for the selection");
    shown_mesh_ = -1;
    return;
  }
  // A stepper frame on the same mesh and axes in the same room: the picture stays (4096 ranks
  // take a while). A scrollbar coming or going is no new room.
  const int rank = tensor_rank_->value();
  const QSizeF dock_room = mesh_view_->RoomAtReadableScale();
  const QSizeF grown = dock_room - shown_mesh_room_;
  const bool same_room = std::abs(grown.width()) < 30 && std::abs(grown.height()) < 30;
  if (mesh_id == shown_mesh_ && axes == shown_axes_ && rank == shown_mesh_rank_ && same_room)
    return;
  auto mesh = viewer::MeshFromRecord(*record);
  if (!mesh.ok()) {
    mesh_view_->SetMessage(QString::fromStdString(mesh.status().message()));
    shown_mesh_ = -1;
    return;
  }
  if (mesh_id != shown_mesh_) {
    mesh_axis_->clear();
    mesh_axis_->addItem("(none)");
    for (const auto& name : record->axis_names) mesh_axis_->addItem(QString::fromStdString(name));
  }
  mesh_axis_->setCurrentIndex(axes.size() == 1 ? axes[0] + 1 : 0);
  shown_mesh_ = mesh_id;
  shown_axes_ = axes;
  shown_mesh_rank_ = rank;
  shown_mesh_room_ = dock_room;
  viewer::MeshSceneOptions options;
  options.axes = axes;
  options.title = QString("mesh %1").arg(mesh_id);
  options.selected_rank = rank;
  options.rank_offset = static_cast<int>(viewer::MeshRankOffset(*record));
  // Sized to the dock (margin for the captions): a large mesh is seen whole, as a heat map.
  if (const QSizeF room = LessCaptionOverflow(*mesh, options, dock_room); !room.isEmpty())
    options.max_size = room - QSizeF(40, 140);
  mesh_view_->SetScene(mesh_scenes_->Get(mesh_id, *mesh, options));
}

void MainWindow::ShowTensorMap(int64_t tensor_id) {
  if (!document_) return;
  const auto& data = document_->data();
  const store::TensorRecord* t = data.Tensor(tensor_id);
  if (!t) return;
  shown_tensor_ = tensor_id;
  const store::MeshRecord* record = data.Mesh(t->mesh_id);
  if (!record || t->layout.empty()) {
    tensor_view_->SetMessage(NoLayoutText(data, *t));
    return;
  }
  auto mesh = viewer::MeshFromRecord(*record);
  auto layout = mesh.ok() ? viewer::ParseStoredLayout(t->layout, *mesh, t->shape)
                          : Result<Layout>(mesh.status());
  if (!layout.ok()) {
    tensor_view_->SetMessage(QString::fromStdString(layout.status().message()));
    return;
  }
  tensor_rank_->blockSignals(true);
  tensor_rank_->setRange(-1, mesh->size() - 1);
  tensor_rank_->blockSignals(false);
  viewer::TensorSceneOptions options;
  options.title = QString::fromStdString(t->name);
  options.rank = tensor_rank_->value();
  options.rank_offset = RankOffsetOf(data, t->mesh_id);
  tensor_rank_->SetOffset(options.rank_offset);
  tensor_view_->SetScene(viewer::BuildTensorScene(*layout, options));
}

bool MainWindow::CompareWith(const QString& path) {
  auto doc = viewer::RunDocument::Open(path.toStdString());
  if (!doc.ok()) {
    last_error_code_ = doc.status().code();
    ShowError("Cannot open run", QString::fromStdString(doc.status().message()));
    return false;
  }
  other_ = std::move(doc).value();
  UpdateCompare();
  tabs_->setCurrentIndex(2);
  return true;
}

void MainWindow::UpdateCompare() {
  if (!document_ || !other_) return;
  compare_view_->SetRuns(document_->path(), other_->path());
  compare_model_->SetRuns(document_->data(), other_->data());
  figures_model_->SetRuns(document_->data(), other_->data());
  compare_left_->setPlainText(
      QString::fromStdString(document_->path() + "\n\n" + document_->Summary()));
  compare_right_->setPlainText(QString::fromStdString(other_->path() + "\n\n" + other_->Summary()));
  status_->setText(QString("compare: %1 forward operators with another strategy, %2 "
                           "redistributions differ (as `shardscope diff`)")
                       .arg(compare_view_->diff().strategies.size())
                       .arg(compare_view_->diff().redistributions.size()));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (!urls.isEmpty()) OpenRunInBackground(urls.first().toLocalFile());
}

}  // namespace shardscope::gui
