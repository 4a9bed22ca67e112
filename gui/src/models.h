// Item models over a run's plain records, for stock Qt views (QTableView). Each model copies
// its rows when set; an empty model has zero rows, never a fake one.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <array>
#include <vector>

#include "shardscope/viewer/run_document.h"

namespace shardscope::gui {

// A flat table with fixed, named columns: subclasses give the row count and each cell.
class ColumnsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  ColumnsModel(QStringList columns, QObject* parent);
  int rowCount(const QModelIndex& parent = {}) const final;
  int columnCount(const QModelIndex& parent = {}) const final;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const final;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const final;

 protected:
  // Renames a column (e.g. for a kind of run); emits headerDataChanged.
  void SetColumnName(int column, const QString& name);
  virtual int RowCount() const = 0;
  // Only called with row and column in range.
  virtual QVariant Cell(int row, int column, int role) const = 0;

 private:
  QStringList columns_;
};

// Per-rank totals over the training steps: compute, communication, bytes, peak memory. In a
// placed run (place(): one worker per rank) the rows are workers and the communication
// column is idle time (blocked in receives), as the run file records it.
class RankTableModel : public ColumnsModel {
  Q_OBJECT
 public:
  explicit RankTableModel(QObject* parent = nullptr);
  void SetRows(std::vector<store::RankTotalsRecord> rows, bool placed = false);

 protected:
  int RowCount() const override;
  QVariant Cell(int row, int column, int role) const override;

 private:
  std::vector<store::RankTotalsRecord> rows_;
};

// The strategies a search considered for one operator, best first (the chosen one marked).
class CandidateTableModel : public ColumnsModel {
  Q_OBJECT
 public:
  explicit CandidateTableModel(QObject* parent = nullptr);
  void SetOperator(const store::OperatorRecord* op);  // nullptr: empty

 protected:
  int RowCount() const override;
  QVariant Cell(int row, int column, int role) const override;

 private:
  std::vector<store::CandidateRecord> rows_;
  std::string chosen_;
};

// Two runs side by side: one row per operator name found in either, with both strategies
// (and provenance); rows whose strategies differ come first, then by name.
class CompareModel : public ColumnsModel {
  Q_OBJECT
 public:
  explicit CompareModel(QObject* parent = nullptr);
  void SetRuns(const viewer::RunData& a, const viewer::RunData& b);
  int differing() const { return differing_; }

 protected:
  int RowCount() const override;
  QVariant Cell(int row, int column, int role) const override;

 private:
  struct Row {
    QString name, strategy_a, strategy_b, provenance_a, provenance_b;
    bool differs = false;
  };
  std::vector<Row> rows_;
  int differing_ = 0;
};

// Two runs' figures side by side: devices, operators, redistributions and their bytes
// against the lower bound, steps, final loss, mean step time (compute and communication,
// max over ranks), peak memory. "none recorded" where a run has no such figure.
class FiguresCompareModel : public ColumnsModel {
  Q_OBJECT
 public:
  explicit FiguresCompareModel(QObject* parent = nullptr);
  void SetRuns(const viewer::RunData& a, const viewer::RunData& b);

 protected:
  int RowCount() const override;
  QVariant Cell(int row, int column, int role) const override;

 private:
  std::vector<std::array<QString, 3>> rows_;  // figure, left, right
};

// The redistributions of a run: id, tensor, consumer, collectives, bytes, lower bound.
class RedistributionTableModel : public ColumnsModel {
  Q_OBJECT
 public:
  explicit RedistributionTableModel(QObject* parent = nullptr);
  void SetRun(const viewer::RunData* run);
  int64_t IdAt(int row) const;

 protected:
  int RowCount() const override;
  QVariant Cell(int row, int column, int role) const override;

 private:
  struct Row {
    int64_t id;
    QString tensor, consumer, collectives;
    int64_t bytes, lower_bound;
  };
  std::vector<Row> rows_;
};

}  // namespace shardscope::gui
