#include "charts_widget.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "shardscope/viewer/axis.h"

namespace shardscope::gui {
namespace {

constexpr size_t kMaxBars = 512;  // ranks drawn in the memory chart

QChartView* MakeView(QChart* chart) {
  auto* view = new QChartView(chart);
  view->setRenderHint(QPainter::Antialiasing);
  return view;
}

// `divisor` scales the values into the unit `y_title` names (bytes into KiB, MiB, ...).
QChart* LineChart(const QString& title, const std::vector<double>& x,
                  const std::vector<std::pair<QString, const std::vector<double>*>>& series,
                  const QString& y_title, int* points = nullptr, double divisor = 1) {
  auto* chart = new QChart;
  chart->setTitle(x.empty() ? title + ": none recorded (no training steps)" : title);
  auto* x_axis = new QValueAxis;
  x_axis->setTitleText("step");
  x_axis->setLabelFormat("%d");
  auto* y_axis = new QValueAxis;
  y_axis->setTitleText(y_title);
  y_axis->setLabelFormat("%.4g");  // 9.064, not 9064161.0
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);
  double lo = 0, hi = 0;
  bool first = true;
  for (const auto& [name, values] : series) {
    auto* line = new QLineSeries;
    line->setName(name);
    for (size_t i = 0; i < x.size() && i < values->size(); ++i) {
      const double v = (*values)[i] / divisor;
      if (!std::isfinite(v) || !std::isfinite(x[i])) continue;
      line->append(x[i], v);
      lo = first ? v : std::min(lo, v);
      hi = first ? v : std::max(hi, v);
      first = false;
    }
    if (points) *points = line->count();
    chart->addSeries(line);
    line->attachAxis(x_axis);
    line->attachAxis(y_axis);
  }
  if (!x.empty()) {
    const viewer::AxisRange steps = viewer::ChartRange(x.front(), x.back(), 0);
    x_axis->setRange(steps.lo, steps.hi);
  }
  const viewer::AxisRange values = viewer::DataRange(lo, hi);
  y_axis->setRange(values.lo, values.hi);
  chart->legend()->setVisible(series.size() > 1);
  return chart;
}

}  // namespace

ChartsWidget::ChartsWidget(QWidget* parent) : QTabWidget(parent) { SetData({}); }

void ChartsWidget::SetData(const viewer::ChartsData& data) {
  while (count() > 0) {
    QWidget* page = widget(0);
    removeTab(0);
    delete page;
  }
  addTab(MakeView(LineChart("Loss", data.step, {{"loss", &data.loss}}, "loss", &loss_points_)),
         "Loss");
  addTab(MakeView(LineChart("Step time (slowest rank); compute and communication (max over ranks)",
                            data.step,
                            {{"step", &data.step_ms},
                             {"compute", &data.compute_ms},
                             {"communication", &data.comm_ms}},
                            "ms")),
         "Time");
  double most_bytes = 0;
  for (double b : data.bytes) most_bytes = std::isfinite(b) ? std::max(most_bytes, b) : most_bytes;
  const viewer::ByteUnit unit = viewer::ByteUnitFor(most_bytes);
  addTab(MakeView(LineChart("Bytes received per step (busiest rank)", data.step,
                            {{"bytes", &data.bytes}}, unit.name, nullptr, unit.divisor)),
         "Bytes");
  auto* chart = new QChart;
  const size_t shown = std::min(data.peak_bytes_by_rank.size(), kMaxBars);
  double most_peak = 0;
  for (const auto& [rank, bytes] : data.peak_bytes_by_rank) {
    if (std::isfinite(bytes)) most_peak = std::max(most_peak, bytes);
  }
  const viewer::ByteUnit peak_unit = viewer::ByteUnitFor(most_peak);
  chart->setTitle(data.peak_bytes_by_rank.empty() ? "Peak memory per rank: none recorded"
                  : shown < data.peak_bytes_by_rank.size()
                      ? QString("Peak memory per rank (%1): the first %2 of %3 ranks")
                            .arg(peak_unit.name)
                            .arg(shown)
                            .arg(data.peak_bytes_by_rank.size())
                      : QString("Peak memory per rank (%1)").arg(peak_unit.name));
  auto* set = new QBarSet("peak");
  QStringList ranks;
  double hi = 0;
  for (size_t i = 0; i < shown; ++i) {
    const auto& [rank, bytes] = data.peak_bytes_by_rank[i];
    const double mb = std::isfinite(bytes) ? bytes / peak_unit.divisor : 0;
    *set << mb;
    hi = std::max(hi, mb);
    ranks << QString::number(rank);
  }
  auto* bars = new QBarSeries;
  bars->append(set);
  chart->addSeries(bars);
  auto* x_axis = new QBarCategoryAxis;
  x_axis->append(ranks);
  x_axis->setTitleText("rank");
  auto* y_axis = new QValueAxis;
  y_axis->setTitleText(peak_unit.name);
  y_axis->setLabelFormat("%.4g");
  const viewer::AxisRange memory = viewer::ChartRange(0, hi, 0.1);
  y_axis->setRange(memory.lo, memory.hi);
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);
  bars->attachAxis(x_axis);
  bars->attachAxis(y_axis);
  chart->legend()->setVisible(false);
  addTab(MakeView(chart), "Memory");
}

}  // namespace shardscope::gui
