#include "charts_widget.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QValueAxis>
#include <cmath>

namespace shardscope::gui {
namespace {

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
  double lo = 0, hi = 1;
  bool first = true;
  for (const auto& [name, values] : series) {
    auto* line = new QLineSeries;
    line->setName(name);
    for (size_t i = 0; i < x.size() && i < values->size(); ++i) {
      const double v = (*values)[i];
      if (std::isnan(v)) continue;
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
  if (!x.empty()) x_axis->setRange(x.front(), std::max(x.back(), x.front() + 1));
  y_axis->setRange(std::min(0.0, lo), hi > lo ? hi * 1.05 : lo + 1);
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
  chart->setTitle(data.peak_bytes_per_rank.empty() ? "Peak memory per rank: none recorded"
                                                   : "Peak memory per rank (MB)");
  auto* set = new QBarSet("peak");
  QStringList ranks;
  double hi = 1;
  for (size_t r = 0; r < data.peak_bytes_per_rank.size(); ++r) {
    *set << data.peak_bytes_per_rank[r] / 1e6;
    hi = std::max(hi, data.peak_bytes_per_rank[r] / 1e6);
    ranks << QString::number(r);
  }
  auto* bars = new QBarSeries;
  bars->append(set);
  chart->addSeries(bars);
  auto* x_axis = new QBarCategoryAxis;
  x_axis->append(ranks);
  x_axis->setTitleText("rank");
  auto* y_axis = new QValueAxis;
  y_axis->setRange(0, hi * 1.1);
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);
  bars->attachAxis(x_axis);
  bars->attachAxis(y_axis);
  chart->legend()->setVisible(false);
  addTab(MakeView(chart), "Memory");
}

}  // namespace shardscope::gui
