#include "models.h"

#include <algorithm>
#include <map>

#include "shardscope/store/figures.h"
#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::gui {
namespace {

QString Bytes(int64_t bytes) { return viewer::FormatBytes(static_cast<double>(bytes)); }

}  // namespace

ColumnsModel::ColumnsModel(QStringList columns, QObject* parent)
    : QAbstractTableModel(parent), columns_(std::move(columns)) {}
int ColumnsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : RowCount();
}
int ColumnsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}
QVariant ColumnsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= RowCount() || index.column() >= columnCount()) return {};
  return Cell(index.row(), index.column(), role);
}
QVariant ColumnsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal || section < 0 || section >= columnCount()) {
    return {};
  }
  return columns_[section];
}

void ColumnsModel::SetColumnName(int column, const QString& name) {
  if (columns_[column] == name) return;
  columns_[column] = name;
  emit headerDataChanged(Qt::Horizontal, column, column);
}

// ---- RankTableModel

RankTableModel::RankTableModel(QObject* parent)
    : ColumnsModel({"rank", "steps", "compute (s)", "comm (s)", "sent", "received", "peak memory",
                    "parameters"},
                   parent) {}

void RankTableModel::SetRows(std::vector<store::RankTotalsRecord> rows, bool placed) {
  // Renamed first: the views fit their columns to the contents on the reset.
  SetColumnName(0, placed ? "worker" : "rank");
  SetColumnName(3, placed ? "idle (s)" : "comm (s)");
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}
int RankTableModel::RowCount() const { return static_cast<int>(rows_.size()); }
QVariant RankTableModel::Cell(int row, int column, int role) const {
  const auto& r = rows_[row];
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  const bool raw = role == Qt::UserRole;  // sortable numbers
  switch (column) {
    case 0:
      return QVariant::fromValue<qlonglong>(r.rank);
    case 1:
      return QVariant::fromValue<qlonglong>(r.steps);
    case 2:
      return raw ? QVariant(r.compute_seconds)
                 : QVariant(QString::number(r.compute_seconds, 'f', 4));
    case 3:
      return raw ? QVariant(r.comm_seconds) : QVariant(QString::number(r.comm_seconds, 'f', 4));
    case 4:
      return raw ? QVariant::fromValue<qlonglong>(r.bytes_sent) : QVariant(Bytes(r.bytes_sent));
    case 5:
      return raw ? QVariant::fromValue<qlonglong>(r.bytes_recv) : QVariant(Bytes(r.bytes_recv));
    case 6:
      return raw ? QVariant::fromValue<qlonglong>(r.peak_bytes) : QVariant(Bytes(r.peak_bytes));
    case 7:
      return raw ? QVariant::fromValue<qlonglong>(r.param_bytes) : QVariant(Bytes(r.param_bytes));
  }
  return {};
}

// ---- CandidateTableModel

CandidateTableModel::CandidateTableModel(QObject* parent)
    : ColumnsModel({"", "strategy", "cost (ms)", "compute (ms)", "comm (ms)", "memory", "note"},
                   parent) {}

void CandidateTableModel::SetOperator(const store::OperatorRecord* op) {
  beginResetModel();
  rows_ = op ? op->candidates : std::vector<store::CandidateRecord>{};
  chosen_ = op ? op->strategy : "";
  endResetModel();
}
int CandidateTableModel::RowCount() const { return static_cast<int>(rows_.size()); }
QVariant CandidateTableModel::Cell(int row, int column, int role) const {
  const auto& c = rows_[row];
  if (role == Qt::ToolTipRole && column == 6) {
    return viewer::PlainToolTip(QString::fromStdString(c.note));
  }
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case 0:
      return c.strategy == chosen_ ? QString("chosen") : QString("#%1").arg(row + 1);
    case 1:
      return QString::fromStdString(c.strategy);
    case 2:
      return QString::number(c.cost * 1e3, 'f', 3);
    // "—": the search recorded no breakdown for this candidate (older files).
    case 3:
      return c.has_breakdown() ? QString::number(c.compute_seconds * 1e3, 'f', 3) : QString("—");
    case 4:
      return c.has_breakdown() ? QString::number(c.comm_seconds * 1e3, 'f', 3) : QString("—");
    case 5:
      return c.memory_bytes >= 0 ? Bytes(c.memory_bytes) : QString("—");
    case 6:
      return QString::fromStdString(c.note);
  }
  return {};
}

// ---- CompareModel

CompareModel::CompareModel(QObject* parent)
    : ColumnsModel({"operator", "strategy (left)", "strategy (right)", "why (left)", "why (right)"},
                   parent) {}

void CompareModel::SetRuns(const viewer::RunData& a, const viewer::RunData& b) {
  beginResetModel();
  std::map<std::string, Row> by_name;
  for (const auto& op : a.operators) {
    Row& row = by_name[op.name];
    row.name = QString::fromStdString(op.name);
    row.strategy_a = QString::fromStdString(op.strategy);
    row.provenance_a = QString::fromStdString(op.provenance);
  }
  for (const auto& op : b.operators) {
    Row& row = by_name[op.name];
    row.name = QString::fromStdString(op.name);
    row.strategy_b = QString::fromStdString(op.strategy);
    row.provenance_b = QString::fromStdString(op.provenance);
  }
  rows_.clear();
  differing_ = 0;
  for (auto& [name, row] : by_name) {
    row.differs = row.strategy_a != row.strategy_b;
    differing_ += row.differs ? 1 : 0;
    rows_.push_back(row);
  }
  std::stable_sort(rows_.begin(), rows_.end(),
                   [](const Row& x, const Row& y) { return x.differs && !y.differs; });
  endResetModel();
}
int CompareModel::RowCount() const { return static_cast<int>(rows_.size()); }
QVariant CompareModel::Cell(int row, int column, int role) const {
  const Row& r = rows_[row];
  if (role == Qt::BackgroundRole && r.differs) return QColor(255, 236, 210);
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case 0:
      return r.name;
    case 1:
      return r.strategy_a.isEmpty() ? QString("(absent)") : r.strategy_a;
    case 2:
      return r.strategy_b.isEmpty() ? QString("(absent)") : r.strategy_b;
    case 3:
      return r.provenance_a;
    case 4:
      return r.provenance_b;
  }
  return {};
}

// ---- FiguresCompareModel

FiguresCompareModel::FiguresCompareModel(QObject* parent)
    : ColumnsModel({"figure", "left", "right"}, parent) {}

namespace {

std::vector<QString> Figures(const viewer::RunData& run) {
  int64_t backward = 0, lower = 0;
  for (const auto& op : run.operators) backward += op.is_backward ? 1 : 0;
  for (const auto& r : run.redistributions) lower += r.lower_bound_bytes;
  const int64_t planned = run.PlannedRecvBytesPerStep();
  // Each figure as docs/run-format.md defines it (store::FiguresOf), meaned over the steps.
  double seconds = 0, compute = 0, comm = 0, received = 0;
  for (const auto& step : run.steps) {
    const store::StepFigures f = store::FiguresOf(step);
    seconds += f.seconds;
    compute += f.compute_seconds;
    comm += f.comm_seconds;
    received += static_cast<double>(f.bytes_recv);
  }
  int64_t peak = 0;
  for (const auto& t : run.rank_totals) peak = std::max(peak, t.peak_bytes);
  const double n = static_cast<double>(run.steps.size());
  const QString none = "none recorded";
  auto ms = [&](double total) {
    return n > 0 ? QString("%1 ms").arg(total / n * 1e3, 0, 'f', 3) : none;
  };
  return {QString::fromStdString(run.run.name + " (" + RunStatusName(run.run.status) + ")"),
          QString::number(run.run.devices),
          QString("%1 (%2 backward)").arg(run.operators.size()).arg(backward),
          QString::number(run.redistributions.size()),
          QString("%1 (redistributions' lower bound %2)").arg(Bytes(planned), Bytes(lower)),
          n > 0 ? Bytes(static_cast<int64_t>(received / n)) : none,
          QString::number(run.steps.size()),
          run.steps.empty() ? none : QString::number(run.steps.back().loss, 'g', 5),
          ms(seconds),
          ms(compute),
          ms(comm),
          run.rank_totals.empty() ? none : Bytes(peak)};
}

}  // namespace

void FiguresCompareModel::SetRuns(const viewer::RunData& a, const viewer::RunData& b) {
  static const char* const kNames[] = {"run",
                                       "devices",
                                       "operators",
                                       "redistributions",
                                       "received per step (busiest rank, planned)",
                                       "received per step (busiest rank, measured)",
                                       "steps",
                                       "last loss",
                                       "step time (mean; the slowest rank's wall time)",
                                       "compute per step (mean of max/rank)",
                                       "communication per step (mean of max/rank)",
                                       "peak memory (max/rank)"};
  beginResetModel();
  const auto left = Figures(a), right = Figures(b);
  rows_.clear();
  for (size_t i = 0; i < left.size(); ++i) rows_.push_back({kNames[i], left[i], right[i]});
  endResetModel();
}
int FiguresCompareModel::RowCount() const { return static_cast<int>(rows_.size()); }
QVariant FiguresCompareModel::Cell(int row, int column, int role) const {
  if (role != Qt::DisplayRole) return {};
  return rows_[row][column];
}

// ---- RedistributionTableModel

RedistributionTableModel::RedistributionTableModel(QObject* parent)
    : ColumnsModel({"id", "tensor", "consumer", "collectives", "bytes", "lower bound"}, parent) {}

void RedistributionTableModel::SetRun(const viewer::RunData* run) {
  beginResetModel();
  rows_.clear();
  if (run) {
    for (const auto& r : run->redistributions) {
      const auto* t = run->Tensor(r.tensor_id);
      const auto* c = run->Operator(r.consumer_op);
      rows_.push_back({r.id, t ? QString::fromStdString(t->name) : QString("?"),
                       c ? QString::fromStdString(c->name) : QString("optimizer"),
                       QString::fromStdString(viewer::DescribeCollectives(r)), r.bytes,
                       r.lower_bound_bytes});
    }
  }
  endResetModel();
}
int RedistributionTableModel::RowCount() const { return static_cast<int>(rows_.size()); }
QVariant RedistributionTableModel::Cell(int row, int column, int role) const {
  const Row& r = rows_[row];
  // Narrow columns elide long names in the middle: the tooltip has the whole text.
  if (role == Qt::ToolTipRole) {
    switch (column) {
      case 1:
        return "tensor " + r.tensor;
      case 2:
        return "read by " + r.consumer;
      case 3:
        return r.collectives;
      case 4:
        return QString("%1 (%2 bytes) received per step by the busiest rank")
            .arg(Bytes(r.bytes))
            .arg(r.bytes);
      case 5:
        return QString("%1 (%2 bytes): no plan receives less on its busiest rank")
            .arg(Bytes(r.lower_bound))
            .arg(r.lower_bound);
    }
    return {};
  }
  if (role == Qt::TextAlignmentRole && (column == 0 || column >= 4))
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case 0:
      return QVariant::fromValue<qlonglong>(r.id);
    case 1:
      return r.tensor;
    case 2:
      return r.consumer;
    case 3:
      return r.collectives;
    case 4:
      return Bytes(r.bytes);
    case 5:
      return Bytes(r.lower_bound);
  }
  return {};
}
int64_t RedistributionTableModel::IdAt(int row) const {
  return row >= 0 && row < RowCount() ? rows_[row].id : -1;
}

}  // namespace shardscope::gui
