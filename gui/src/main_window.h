// MainWindow: the debugger. Opens a run (dialog, recent files, drag and drop, argument) and
// shows its graph (centre), overview and a comparison with a second run (tabs), and docks
// that follow the selection: details (with runners-up), device matrix, tensor map,
// redistribution stepper, charts, per-rank table (per worker for placed runs), pipeline timeline. A
// run still being written is re-read while it changes. A file that cannot be opened leaves the
// current run in place and shows a (non-blocking) dialog with the reason.
#pragma once

#include <QMainWindow>
#include <memory>

#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/run_document.h"

class QCheckBox;
class QComboBox;
class QFileSystemWatcher;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTextBrowser;
class QTimer;

namespace shardscope::gui {

class CandidateTableModel;
class ChartsWidget;
class CompareModel;
class CompareView;
class FiguresCompareModel;
class GraphBuilder;
class GraphView;
class MeshSceneMemo;
class RankSpinBox;
class RankTableModel;
class RankView;
class RedistributionStepper;
class RunLoader;
class RedistributionTableModel;
class SceneWidget;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  MainWindow();
  ~MainWindow() override;
  // Opens `path`; on failure shows a dialog with the reason, keeps the current run, and
  // returns false (last_error() has the reason).
  bool OpenRun(const QString& path);
  // Opens `path` without waiting: the window shows "Reading…" with Cancel at once and fills
  // in as the run (then its overview) arrives; the current run stays until then. Failure
  // shows the dialog as OpenRun does. Closing the window cancels the read.
  void OpenRunInBackground(const QString& path);
  // Reading a run (OpenRunInBackground) or its overview.
  bool loading() const;
  RunLoader* run_loader() const { return run_loader_; }
  // Opens `path` as the right-hand run of the Compare tab.
  bool CompareWith(const QString& path);
  // Re-reads the open run (live refresh); true when something changed.
  bool Refresh();

  // Selection, as a click in the graph would do it.
  void SelectOperator(int64_t id);
  void SelectTensor(int64_t id);
  void SelectRedistribution(int64_t id);

  // For tests and scripts.
  const viewer::RunDocument* document() const { return document_.get(); }
  const QString& last_error() const { return last_error_; }
  // Why the last OpenRun / CompareWith failed (store::IsBadInput: the file's fault).
  store::StatusCode last_error_code() const { return last_error_code_; }
  QString details_html() const;
  GraphView* graph_view() const { return graph_; }
  GraphBuilder* graph_builder() const { return graph_builder_; }
  RedistributionStepper* stepper() const { return stepper_; }
  RankTableModel* rank_model() const { return rank_model_; }
  CandidateTableModel* candidate_model() const { return candidate_model_; }
  CompareModel* compare_model() const { return compare_model_; }
  FiguresCompareModel* figures_model() const { return figures_model_; }
  CompareView* compare_view() const { return compare_view_; }
  RedistributionTableModel* redistribution_model() const { return redistribution_model_; }
  SceneWidget* mesh_view() const { return mesh_view_; }
  SceneWidget* tensor_view() const { return tensor_view_; }
  ChartsWidget* charts() const { return charts_; }
  SceneWidget* timeline_view() const { return timeline_view_; }
  QSpinBox* timeline_step() const { return timeline_step_; }
  QTabWidget* tabs() const { return tabs_; }
  RankView* rank_view() const { return rank_view_; }
  // Shows one of the main views in front: "graph", "overview", "compare", "mesh",
  // "tensor", "redistribution", "charts", "ranks", "timeline", "rank" (screenshots).
  void ShowView(const QString& name);
  // View > Reset Layout: docks, tabs and sizes as a new window has them.
  void ResetLayout();

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void BuildMenus();
  void BuildDocks();
  void ChooseRun();
  void ChooseCompare();
  void ExportGraph();
  void AddRecent(const QString& path);
  QString RunsFolder() const;
  void UpdateRecentMenu();
  void ShowError(const QString& title, const QString& message);
  // Shows a document read by OpenRun or RunLoader; read_summary false: the Overview follows
  // (RunLoader::Summarised).
  void ShowOpened(const QString& path, std::unique_ptr<viewer::RunDocument> document,
                  bool read_summary);
  void ConnectRunLoader();
  void ShowRun(bool read_summary = true);
  void RebuildGraph();
  void OnGraphSelected(const QString& role, qint64 id, const QString& key);
  void ShowMesh(int64_t mesh_id, const std::vector<int>& axes);
  void ShowTensorMap(int64_t tensor_id);
  void OnStepChanged(int step);
  // The pipeline timeline of the step in timeline_step_ (placed runs), or why there is none.
  void ShowTimeline();
  void UpdateCompare();

  QByteArray default_layout_;
  QByteArray layout_before_compare_;  // docks as they were before the Compare tab came to front
  std::unique_ptr<viewer::RunDocument> document_;
  std::unique_ptr<viewer::RunDocument> other_;
  viewer::GraphOptions graph_options_;
  QString last_error_;
  store::StatusCode last_error_code_ = store::StatusCode::kOk;
  int64_t shown_mesh_ = -1;
  QSizeF shown_mesh_room_;  // the dock's room the device matrix was sized to
  std::vector<int> shown_axes_;
  int shown_mesh_rank_ = -2;  // the rank the device matrix shows selected

  std::unique_ptr<MeshSceneMemo> mesh_scenes_;  // device matrices built once
  int64_t shown_tensor_ = -1;
  bool auto_worker_colour_ = false;  // colour by worker chosen for a placed run, not by hand
  double last_updated_at_ = 0;
  int64_t last_steps_ = -1;

  QTabWidget* tabs_;
  GraphView* graph_;
  GraphBuilder* graph_builder_;
  bool fit_after_layout_ = false;  // a run just opened: fit the graph once it is laid out
  RunLoader* run_loader_ = nullptr;
  QPlainTextEdit* overview_;
  QTextBrowser* details_;
  QTableView* candidates_;
  CandidateTableModel* candidate_model_;
  SceneWidget* mesh_view_;
  QComboBox* mesh_axis_;
  SceneWidget* tensor_view_;
  RankSpinBox* tensor_rank_;  // ranks of the tensor's mesh, shown as the run's
  RedistributionStepper* stepper_;
  RedistributionTableModel* redistribution_model_;
  QTableView* redistributions_;
  ChartsWidget* charts_;
  RankTableModel* rank_model_;
  QTableView* ranks_;
  SceneWidget* timeline_view_;
  QSpinBox* timeline_step_;
  RankView* rank_view_;
  CompareModel* compare_model_;
  FiguresCompareModel* figures_model_;
  QTableView* compare_table_;
  CompareView* compare_view_;
  QPlainTextEdit* compare_left_;
  QPlainTextEdit* compare_right_;
  QLineEdit* search_;
  QComboBox* color_by_;
  QCheckBox* backward_;
  QCheckBox* partitioned_;
  QLineEdit* filter_;
  QMenu* recent_menu_;
  QLabel* status_;
  QTimer* refresh_timer_;
  QFileSystemWatcher* watcher_;
};

}  // namespace shardscope::gui
