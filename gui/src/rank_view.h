// RankView: everything one rank holds and does, read with store::ReadRankSummary (the code of
// `shardscope inspect RUN --rank R`, so the figures agree): memory by kind with the total and
// the peak, the time of a timed step (chosen among the recorded ones; the last by default) by
// operator kind and by collective, its timeline
// (viewer::BuildRankTimelineScene: compute and communication per instruction, SPMD runs timed
// by train --timing-every) and its parameters with their layouts (placed runs: its operators).
// The summary is read and its timeline built on a worker thread (1024 ranks: a large file);
// meanwhile the view says so, and a read for a run, rank or step no longer asked for is dropped.
#pragma once

#include <QWidget>
#include <vector>

#include "shardscope/viewer/run_document.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QStandardItemModel;
class QTableView;

namespace shardscope::gui {

class SceneWidget;

class RankView : public QWidget {
  Q_OBJECT
 public:
  explicit RankView(QWidget* parent = nullptr);
  // `run` must outlive its use here (nullptr clears). Keeps the rank when it is in the run.
  void SetRun(const viewer::RunData* run);
  void SetRank(int rank);
  int rank() const;
  // The timed step shown (train --timing-every; inspect --rank R --step S), kNone when the run
  // has none. SetStep picks one of the recorded ones (the combo box's entries).
  int64_t step() const { return shown_step_; }
  void SetStep(int64_t step);

  // For tests: the rows as shown. Memory rows: what, bytes (Qt::UserRole: exact bytes),
  // share of the peak; time rows: kind (UserRole: the kind as inspect names it), seconds
  // (UserRole: exact), count, share of the step.
  QStandardItemModel* memory_model() const { return memory_; }
  QStandardItemModel* time_model() const { return time_; }
  QStandardItemModel* holdings_model() const { return holdings_; }
  SceneWidget* timeline_view() const { return timeline_; }
  QSpinBox* rank_box() const { return rank_box_; }
  QComboBox* step_box() const { return step_box_; }
  QString error() const { return error_; }
  QString title() const;  // the line above the tables
  // Reading the rank's summary; Loaded follows when its figures (or an error) are shown.
  bool loading() const { return loading_; }

 signals:
  void RankChanged(int rank);
  void Loaded();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  struct Read;
  // Reads the rank's summary in the background when shown, else when it comes into view.
  void Show();
  // One read at a time: a request made meanwhile starts when it ends (rapid rank changes
  // read only the first and the last rank).
  void StartRead();
  void Fill(const Read& read);
  // The run's timed steps in the step box, the shown one selected.
  void ShowTimedSteps(const store::RankTiming& timing);
  bool stale_ = false;
  bool loading_ = false;     // the shown figures are not the asked-for rank's yet
  bool reading_ = false;     // a read is running on the worker thread
  uint64_t generation_ = 0;  // bumped by every request: a read of an older one is dropped
  const viewer::RunData* run_ = nullptr;
  QSpinBox* rank_box_;
  QComboBox* step_box_;
  int64_t chosen_step_ = -1;  // store::kNone: the last timed step
  int64_t shown_step_ = -1;
  QLabel* rank_label_;  // "rank", or "worker" in a placed run
  QLabel* title_;
  QStandardItemModel* memory_;
  QStandardItemModel* time_;
  QStandardItemModel* holdings_;
  std::vector<QTableView*> tables_;
  SceneWidget* timeline_;
  QString error_;
};

}  // namespace shardscope::gui
