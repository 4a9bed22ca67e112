// CompareView: what differs between two runs, computed by store::DiffRuns exactly as
// `shardscope diff A B` prints it: both runs' loss and step-time curves overlaid in one chart
// (run names in the legend), and the redistributions added, removed or changed (with bytes)
// under the runs' names as column headers. MainWindow puts it at the top of the Compare tab.
#pragma once

#include <QWidget>

#include "models.h"
#include "shardscope/store/run_diff.h"

class QChartView;
class QLabel;
class QTableView;

namespace shardscope::gui {

// One row per redistribution that differs (store::RunDiff::redistributions, in its order):
// change, tensor, consumer (input), then per run its layouts, collectives and bytes.
class RedistributionDiffModel : public ColumnsModel {
  Q_OBJECT
 public:
  explicit RedistributionDiffModel(QObject* parent = nullptr);
  void SetDiff(const store::RunDiff& diff);
  // Bytes of run A (side 0) or B (side 1) in `row`; -1 when the redistribution is absent there.
  int64_t BytesAt(int row, int side) const;

 protected:
  int RowCount() const override;
  QVariant Cell(int row, int column, int role) const override;

 private:
  std::vector<store::RedistributionDiff> rows_;
};

// One row per operator whose strategy differs (store::RunDiff::strategies).
class StrategyDiffModel : public ColumnsModel {
  Q_OBJECT
 public:
  explicit StrategyDiffModel(QObject* parent = nullptr);
  void SetDiff(const store::RunDiff& diff);

 protected:
  int RowCount() const override;
  QVariant Cell(int row, int column, int role) const override;

 private:
  std::vector<store::StrategyDiff> rows_;
};

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  // Diffs the run files at `a` and `b` (read afresh, as the CLI does); false and a message in
  // the view when either cannot be read.
  bool SetRuns(const std::string& a, const std::string& b);
  const store::RunDiff& diff() const { return diff_; }
  RedistributionDiffModel* redistribution_model() const { return redistributions_; }
  StrategyDiffModel* strategy_model() const { return strategies_; }
  QChartView* chart_view() const { return chart_; }
  QString summary() const;  // the headline above the tables

 private:
  void ShowChart();
  store::RunDiff diff_;
  QLabel* headline_;
  QChartView* chart_;
  RedistributionDiffModel* redistributions_;
  StrategyDiffModel* strategies_;
};

// The column header naming a run: "A: name" (with the file name when both runs share a name).
QString RunHeader(const store::RunDiff& diff, int side);

}  // namespace shardscope::gui
