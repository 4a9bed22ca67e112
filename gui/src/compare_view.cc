#include "compare_view.h"

#include <QChart>
#include <QChartView>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QPen>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>
#include <cmath>

#include "shardscope/viewer/axis.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::gui {
namespace {

constexpr int kSideColumns = 3;  // layouts, collectives, bytes
const QColor kSideColor[2] = {QColor(31, 119, 180), QColor(255, 127, 14)};

QString Q(const std::string& text) { return QString::fromStdString(text); }

QTableView* DiffTable(QAbstractItemModel* model, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setModel(model);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  table->setWordWrap(false);
  QObject::connect(model, &QAbstractItemModel::modelReset, table,
                   [table] { table->resizeColumnsToContents(); });
  return table;
}

const store::RunSideSummary& SideOf(const store::RunDiff& d, int side) {
  return side == 0 ? d.a : d.b;
}

}  // namespace

QString RunHeader(const store::RunDiff& diff, int side) {
  const store::RunSideSummary& s = SideOf(diff, side);
  QString text = QString(side == 0 ? "A: " : "B: ") + Q(s.name.empty() ? "(unnamed)" : s.name);
  if (diff.a.name == diff.b.name) text += " (" + QFileInfo(Q(s.path)).fileName() + ")";
  return text;
}

// ---- RedistributionDiffModel

RedistributionDiffModel::RedistributionDiffModel(QObject* parent)
    : ColumnsModel({"change", "tensor", "consumer", "A layouts", "A collectives", "A bytes",
                    "B layouts", "B collectives", "B bytes"},
                   parent) {}

void RedistributionDiffModel::SetDiff(const store::RunDiff& diff) {
  beginResetModel();
  rows_ = diff.redistributions;
  endResetModel();
  for (int side = 0; side < 2; ++side) {
    const QString run = RunHeader(diff, side);
    SetColumnName(3 + side * kSideColumns, run + " layouts");
    SetColumnName(4 + side * kSideColumns, run + " collectives");
    SetColumnName(5 + side * kSideColumns, run + " bytes");
  }
}

int64_t RedistributionDiffModel::BytesAt(int row, int side) const {
  const auto& s = side == 0 ? rows_.at(row).a : rows_.at(row).b;
  return s.id == store::kNone ? -1 : s.bytes;
}

int RedistributionDiffModel::RowCount() const { return static_cast<int>(rows_.size()); }

QVariant RedistributionDiffModel::Cell(int row, int column, int role) const {
  const store::RedistributionDiff& r = rows_[row];
  if (role == Qt::BackgroundRole) {
    switch (r.change) {
      case store::RedistributionDiff::Change::kAdded:
        return QColor(222, 242, 214);
      case store::RedistributionDiff::Change::kRemoved:
        return QColor(250, 220, 220);
      default:
        return QColor(255, 236, 210);
    }
  }
  if (role != Qt::DisplayRole) return {};
  if (column == 0) return QString(store::ChangeName(r.change));
  if (column == 1) return Q(r.tensor);
  if (column == 2) {
    if (r.consumer.empty())
      return QString("— (no consumer)%1").arg(r.is_backward ? " (backward)" : "");
    return QString("%1 input %2%3")
        .arg(Q(r.consumer))
        .arg(r.consumer_input)
        .arg(r.is_backward ? " (backward)" : "");
  }
  const auto& s = column < 3 + kSideColumns ? r.a : r.b;
  if (s.id == store::kNone) return QString("—");
  switch ((column - 3) % kSideColumns) {
    case 0:
      return Q(s.from) + " → " + Q(s.to);
    case 1:
      return Q(s.steps);
    default:
      return viewer::FormatBytes(static_cast<double>(s.bytes));
  }
}

// ---- StrategyDiffModel

StrategyDiffModel::StrategyDiffModel(QObject* parent)
    : ColumnsModel({"operator", "A strategy", "B strategy"}, parent) {}

void StrategyDiffModel::SetDiff(const store::RunDiff& diff) {
  beginResetModel();
  rows_ = diff.strategies;
  endResetModel();
  SetColumnName(1, RunHeader(diff, 0) + " strategy");
  SetColumnName(2, RunHeader(diff, 1) + " strategy");
}

int StrategyDiffModel::RowCount() const { return static_cast<int>(rows_.size()); }

QVariant StrategyDiffModel::Cell(int row, int column, int role) const {
  if (role != Qt::DisplayRole) return {};
  const store::StrategyDiff& s = rows_[row];
  const std::string& text = column == 0 ? s.op : column == 1 ? s.a : s.b;
  return text.empty() ? QString("(absent)") : Q(text);
}

// ---- CompareView

CompareView::CompareView(QWidget* parent)
    : QWidget(parent),
      headline_(new QLabel("File > Compare with... (Ctrl+Shift+O) opens a second run here.", this)),
      chart_(new QChartView(this)),
      redistributions_(new RedistributionDiffModel(this)),
      strategies_(new StrategyDiffModel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  headline_->setWordWrap(true);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(headline_);
  // The chart across the full width (its legend names four curves), the diffs below it.
  auto* split = new QSplitter(Qt::Vertical, this);
  chart_->setRenderHint(QPainter::Antialiasing);
  chart_->setMinimumHeight(220);
  split->addWidget(chart_);
  auto* tables = new QSplitter(Qt::Horizontal, split);
  tables->addWidget(DiffTable(redistributions_, tables));
  tables->addWidget(DiffTable(strategies_, tables));
  tables->setSizes({900, 500});
  split->addWidget(tables);
  split->setSizes({300, 260});
  layout->addWidget(split, 1);
  ShowChart();
}

bool CompareView::SetRuns(const std::string& a, const std::string& b) {
  auto ra = store::RunReader::Open(a);
  auto rb =
      ra.ok() ? store::RunReader::Open(b) : Result<std::unique_ptr<store::RunReader>>(ra.status());
  auto diff = rb.ok() ? store::DiffRuns(**ra, **rb) : Result<store::RunDiff>(rb.status());
  if (!diff.ok()) {
    headline_->setText("Cannot compare: " + Q(diff.status().message()));
    return false;
  }
  diff_ = std::move(diff).value();
  redistributions_->SetDiff(diff_);
  strategies_->SetDiff(diff_);
  headline_->setText(summary());
  ShowChart();
  return true;
}

QString CompareView::summary() const {
  return QString(
             "%1  against  %2: %3 operator(s) with another strategy; redistributions %4 "
             "differ, %5 the same; planned received per step %6 against %7")
      .arg(RunHeader(diff_, 0), RunHeader(diff_, 1))
      .arg(diff_.strategies.size())
      .arg(diff_.redistributions.size())
      .arg(diff_.same_redistributions)
      .arg(viewer::FormatBytes(static_cast<double>(diff_.a.bytes_per_step)),
           viewer::FormatBytes(static_cast<double>(diff_.b.bytes_per_step)));
}

// Loss on the left axis, step time (ms) on the right; solid loss, dashed step time.
void CompareView::ShowChart() {
  auto* chart = new QChart;
  auto* x_axis = new QValueAxis;
  x_axis->setTitleText("step");
  x_axis->setLabelFormat("%d");
  auto* loss_axis = new QValueAxis;
  loss_axis->setTitleText("loss");
  loss_axis->setLabelFormat("%.4g");
  auto* time_axis = new QValueAxis;
  time_axis->setTitleText("step time (ms)");  // the slowest rank's wall time
  time_axis->setLabelFormat("%.4g");
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(loss_axis, Qt::AlignLeft);
  chart->addAxis(time_axis, Qt::AlignRight);
  struct Range {
    double lo = INFINITY, hi = -INFINITY;
    void Add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
    bool empty() const { return lo > hi; }
  } steps, loss, time;
  for (int side = 0; side < 2; ++side) {
    const store::RunSideSummary& s = SideOf(diff_, side);
    for (int curve = 0; curve < 2; ++curve) {
      auto* line = new QLineSeries;
      line->setName(RunHeader(diff_, side) + (curve == 0 ? " loss" : " step time"));
      QPen pen(kSideColor[side], 2, curve == 0 ? Qt::SolidLine : Qt::DashLine);
      line->setPen(pen);
      const std::vector<double>& values = curve == 0 ? s.loss : s.step_seconds;
      for (size_t i = 0; i < s.step_numbers.size() && i < values.size(); ++i) {
        const double v = curve == 0 ? values[i] : values[i] * 1e3;
        if (!std::isfinite(v)) continue;
        const double x = static_cast<double>(s.step_numbers[i]);
        line->append(x, v);
        steps.Add(x);
        (curve == 0 ? loss : time).Add(v);
      }
      chart->addSeries(line);
      line->attachAxis(x_axis);
      line->attachAxis(curve == 0 ? loss_axis : time_axis);
    }
  }
  chart->setTitle(steps.empty() ? "Loss and step time: none recorded (no training steps)"
                                : "Loss (solid) and step time (dashed) of both runs");
  if (!steps.empty()) {
    const viewer::AxisRange r = viewer::ChartRange(steps.lo, steps.hi, 0);
    x_axis->setRange(r.lo, r.hi);
  }
  for (auto [axis, range] : {std::pair{loss_axis, loss}, std::pair{time_axis, time}}) {
    if (range.empty()) continue;
    const viewer::AxisRange r = viewer::DataRange(range.lo, range.hi);
    axis->setRange(axis == time_axis ? std::max(0.0, r.lo) : r.lo, r.hi);  // no negative time
  }
  chart->legend()->setAlignment(Qt::AlignBottom);
  QChart* old = chart_->chart();
  chart_->setChart(chart);
  delete old;
}

}  // namespace shardscope::gui
