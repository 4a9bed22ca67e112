#include "charts_widget.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QValueAxis>
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

QChart* LineChart(const QString& title, const std::vector<double>& x,
                  const std::vector<std::pair<QString, const std::vector<double>*>>& series,
                  const QString& y_title, int* points = nullptr) {
  auto* chart = new QChart;
  chart->setTitle(x.empty() ? title + ": none recorded (no training steps)" : title);
  auto* x_axis = new QValueAxis;
  x_axis->setTitleText("step");
  x_axis->setLabelFormat("%d");
  auto* y_axis = new QValueAxis;
  y_axis->setTitleText(y_title);
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);
  double lo = 0, hi = 0;
  bool first = true;
  for (const auto& [name, values] : series) {
    auto* line = new QLineSeries;
    line->setName(name);
    for (size_t i = 0; i < x.size() && i < values->size(); ++i) {
      const double v = (*values)[i];
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
  const viewer::AxisRange values = viewer::ChartRange(std::min(0.0, lo), hi);
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
  addTab(MakeView(LineChart("Bytes received per step (busiest rank)", data.step,
                            {{"bytes", &data.bytes}}, "bytes")),
         "Bytes");
  auto* chart = new QChart;
  const size_t shown = std::min(data.peak_bytes_by_rank.size(), kMaxBars);
  chart->setTitle(data.peak_bytes_by_rank.empty() ? "Peak memory per rank: none recorded"
                  : shown < data.peak_bytes_by_rank.size()
                      ? QString("Peak memory per rank (MB): the first %1 of %2 ranks")
                            .arg(shown)
                            .arg(data.peak_bytes_by_rank.size())
                      : QString("Peak memory per rank (MB)"));
  auto* set = new QBarSet("peak");
  QStringList ranks;
  double hi = 0;
  for (size_t i = 0; i < shown; ++i) {
    const auto& [rank, bytes] = data.peak_bytes_by_rank[i];
    const double mb = std::isfinite(bytes) ? bytes / 1e6 : 0;
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
