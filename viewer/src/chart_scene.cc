#include "shardscope/viewer/chart_scene.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "shardscope/viewer/axis.h"
#include "shardscope/viewer/charts.h"

namespace shardscope::viewer {
namespace {

constexpr double kLeft = 72, kTop = 44, kWidth = 720, kHeight = 300;
constexpr size_t kMaxBars = 512;  // ranks drawn in the memory chart

struct Series {
  QString name;
  QColor colour;
  std::vector<double> y;
};

QString Number(double v) { return QString::number(v, 'g', 4); }

SceneItem Line(QPointF a, QPointF b, QColor colour, double width = 1) {
  SceneItem item;
  item.shape = SceneItem::Shape::kPolyline;
  item.points << a << b;
  item.stroke = colour;
  item.stroke_width = width;
  return item;
}

Scene Empty(const QString& text) {
  Scene scene;
  SceneItem none = TextItem(QRectF(0, 0, 520, 24), text, 11);
  none.role = "label";
  scene.items.push_back(none);
  scene.bounds = QRectF(-8, -8, 536, 40);
  return scene;
}

// The frame, title, y ticks and the legend of a chart whose y axis spans `range` (in the
// unit the label names); returns the y of a value.
std::function<double(double)> Frame(Scene& scene, const QString& title, const QString& y_label,
                                    AxisRange range, const std::vector<Series>& legend) {
  scene.items.push_back(TextItem(QRectF(0, 0, kLeft + kWidth, 22), title, 11, true));
  SceneItem box = BoxItem(QRectF(kLeft, kTop, kWidth, kHeight), Qt::transparent, "", "frame");
  box.stroke = QColor(150, 150, 150);
  scene.items.push_back(box);
  const double scale = AxisScale(kHeight, range.hi - range.lo);
  const auto y_of = [=](double v) { return kTop + kHeight - (v - range.lo) * scale; };
  const std::vector<double> ticks = AxisTicks(range.hi - range.lo, 5);
  const double spacing = ticks.size() > 1 ? ticks[1] : 0;
  // Round values inside the range: from lo rounded up to the spacing.
  for (int i = 0; spacing > 0 && i <= 12; ++i) {
    const double v = std::ceil(range.lo / spacing) * spacing + i * spacing;
    if (v > range.hi) break;
    const double y = y_of(v);
    scene.items.push_back(
        Line(QPointF(kLeft - 4, y), QPointF(kLeft + kWidth, y), QColor(225, 225, 225)));
    SceneItem label = TextItem(QRectF(0, y - 8, kLeft - 8, 16), Number(v), 8, false,
                               0x0082 /* right | vcenter */);
    label.role = "tick";
    scene.items.push_back(label);
  }
  SceneItem ylab = TextItem(QRectF(0, 22, kLeft + kWidth, 16), y_label, 9);
  scene.items.push_back(ylab);
  double x = kLeft;
  for (const Series& s : legend) {
    SceneItem swatch = BoxItem(QRectF(x, kTop + kHeight + 30, 14, 10), s.colour, "", "legend");
    swatch.key = s.name;
    scene.items.push_back(swatch);
    scene.items.push_back(TextItem(QRectF(x + 18, kTop + kHeight + 27, 160, 16), s.name, 9));
    x += 30 + 7.0 * s.name.size();
  }
  scene.bounds = QRectF(-8, -8, kLeft + kWidth + 24, kTop + kHeight + 56);
  return y_of;
}

// A line per series over x (the step numbers); NaN values break the line.
Scene LineChart(const QString& title, const QString& y_label, const std::vector<double>& x,
                const std::vector<Series>& series) {
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : series)
    for (double v : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (x.empty() || !(lo <= hi)) return Empty("no training steps recorded (" + title + ")");
  Scene scene;
  const auto y_of = Frame(scene, title, y_label, DataRange(lo, hi), series);
  const double x_lo = x.front(), x_hi = x.back();
  const double x_scale = AxisScale(kWidth, x_hi - x_lo);
  const auto x_of = [&](double v) {
    return kLeft + (x_hi > x_lo ? (v - x_lo) * x_scale : kWidth / 2);
  };
  for (double t : AxisTicks(x_hi - x_lo, 8)) {
    if (t != std::floor(t)) continue;  // steps are whole numbers
    SceneItem label = TextItem(QRectF(x_of(x_lo + t) - 30, kTop + kHeight + 4, 60, 14),
                               Number(x_lo + t), 8, false, 0x0084);
    label.role = "tick";
    scene.items.push_back(label);
  }
  scene.items.push_back(
      TextItem(QRectF(kLeft + kWidth - 60, kTop + kHeight + 14, 60, 14), "step", 8, false, 0x0082));
  for (size_t k = 0; k < series.size(); ++k) {
    SceneItem line;
    line.shape = SceneItem::Shape::kPolyline;
    line.stroke = series[k].colour;
    line.stroke_width = 1.6;
    line.role = "series";
    line.key = series[k].name;
    line.id = static_cast<int64_t>(k);
    const auto flush = [&] {
      if (line.points.size() >= 1) scene.items.push_back(line);
      line.points.clear();
    };
    const size_t n = std::min(x.size(), series[k].y.size());
    // At most ~2 points per pixel: a million steps draw as fast as a thousand.
    const size_t stride = std::max<size_t>(1, n / static_cast<size_t>(2 * kWidth));
    for (size_t i = 0; i < n; i += stride) {
      const double v = series[k].y[i];
      if (!std::isfinite(v)) {
        flush();
        continue;
      }
      line.points << QPointF(x_of(x[i]), y_of(v));
    }
    flush();
  }
  return scene;
}

}  // namespace

Scene BuildLossChart(const RunData& run) {
  const ChartsData d = BuildChartsData(run);
  return LineChart("Loss per step: " + QString::fromStdString(run.run.name), "loss", d.step,
                   {{"loss", QColor(46, 104, 176), d.loss}});
}

Scene BuildStepTimeChart(const RunData& run) {
  const ChartsData d = BuildChartsData(run);
  return LineChart("Step time: " + QString::fromStdString(run.run.name),
                   "ms (step: slowest rank's wall time; compute, communication: max over ranks)",
                   d.step,
                   {{"step", QColor(40, 40, 40), d.step_ms},
                    {"compute", QColor(76, 139, 202), d.compute_ms},
                    {"communication", QColor(232, 142, 52), d.comm_ms}});
}

Scene BuildMemoryChart(const RunData& run) {
  std::vector<const store::RankTotalsRecord*> ranks;
  for (const auto& t : run.rank_totals)
    if (t.rank >= 0) ranks.push_back(&t);
  if (ranks.empty()) return Empty("no training steps recorded (memory per rank)");
  const size_t drawn = std::min(ranks.size(), kMaxBars);
  double top = 0;
  for (size_t i = 0; i < drawn; ++i) {
    const auto& t = *ranks[i];
    top = std::max({top, static_cast<double>(t.peak_bytes),
                    static_cast<double>(t.param_bytes + t.grad_bytes + t.optimizer_bytes +
                                        t.activation_bytes)});
  }
  const ByteUnit unit = ByteUnitFor(top);
  const std::vector<Series> kinds = {{"parameters", QColor(46, 104, 176), {}},
                                     {"gradients", QColor(232, 142, 52), {}},
                                     {"optimizer", QColor(120, 170, 90), {}},
                                     {"activations", QColor(170, 120, 190), {}}};
  Scene scene;
  const auto y_of = Frame(scene,
                          "Memory per rank: " + QString::fromStdString(run.run.name) +
                              QString(" (%1 ranks)").arg(ranks.size()),
                          QString("%1 (largest over the steps)").arg(unit.name),
                          ChartRange(0, top / unit.divisor), kinds);
  const double slot = kWidth / static_cast<double>(drawn);
  for (size_t i = 0; i < drawn; ++i) {
    const auto& t = *ranks[i];
    const double parts[] = {static_cast<double>(t.param_bytes), static_cast<double>(t.grad_bytes),
                            static_cast<double>(t.optimizer_bytes),
                            static_cast<double>(t.activation_bytes)};
    const double d = unit.divisor;
    double base = 0;
    for (size_t k = 0; k < 4; ++k) {
      const double y0 = y_of(base / d), y1 = y_of((base + parts[k]) / d);
      SceneItem bar = BoxItem(QRectF(kLeft + i * slot + slot * 0.1, y1, std::max(0.5, slot * 0.8),
                                     std::max(0.0, y0 - y1)),
                              kinds[k].colour, "", "rank", t.rank);
      bar.key = kinds[k].name;
      bar.stroke = Qt::transparent;
      bar.tooltip = QString("rank %1 %2: %3 (peak %4)")
                        .arg(t.rank)
                        .arg(kinds[k].name)
                        .arg(FormatBytes(parts[k]))
                        .arg(FormatBytes(static_cast<double>(t.peak_bytes)));
      scene.items.push_back(bar);
      base += parts[k];
    }
    if (slot >= 18 || i % std::max<size_t>(1, drawn / 16) == 0) {
      SceneItem label = TextItem(QRectF(kLeft + i * slot - 10, kTop + kHeight + 4, slot + 20, 14),
                                 QString::number(t.rank), 8, false, 0x0084);
      label.role = "tick";
      scene.items.push_back(label);
    }
  }
  if (drawn < ranks.size()) {
    scene.items.push_back(CapNote(QRectF(kLeft, kTop + kHeight + 44, kWidth, 14),
                                  static_cast<int64_t>(ranks.size() - drawn),
                                  static_cast<int64_t>(ranks.size()), "ranks"));
    scene.bounds.adjust(0, 0, 0, 16);
  }
  return scene;
}

}  // namespace shardscope::viewer
