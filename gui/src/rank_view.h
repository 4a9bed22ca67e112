// RankView: everything one rank holds and does, read with store::ReadRankSummary (the code of
// `shardscope inspect RUN --rank R`, so the figures agree): memory by kind with the total and
// the peak, the time of its last timed step by operator kind and by collective, its timeline
// (viewer::BuildRankTimelineScene: compute and communication per instruction, SPMD runs timed
// by train --timing-every) and its parameters with their layouts (placed runs: its operators).
#pragma once

#include <QWidget>
#include <vector>

#include "shardscope/viewer/run_document.h"

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

  // For tests: the rows as shown. Memory rows: what, bytes (Qt::UserRole: exact bytes),
  // share of the peak; time rows: kind (UserRole: the kind as inspect names it), seconds
  // (UserRole: exact), count, share of the step.
  QStandardItemModel* memory_model() const { return memory_; }
  QStandardItemModel* time_model() const { return time_; }
  QStandardItemModel* holdings_model() const { return holdings_; }
  SceneWidget* timeline_view() const { return timeline_; }
  QSpinBox* rank_box() const { return rank_box_; }
  QString error() const { return error_; }

 signals:
  void RankChanged(int rank);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  // Reads the rank's summary from the file now when shown, else when it comes into view.
  void Show();
  bool stale_ = false;
  const viewer::RunData* run_ = nullptr;
  QSpinBox* rank_box_;
  QLabel* title_;
  QStandardItemModel* memory_;
  QStandardItemModel* time_;
  QStandardItemModel* holdings_;
  std::vector<QTableView*> tables_;
  SceneWidget* timeline_;
  QString error_;
};

}  // namespace shardscope::gui
