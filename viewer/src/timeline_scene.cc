#include "shardscope/viewer/timeline_scene.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace shardscope::viewer {
namespace {

constexpr double kLabelWidth = 96;   // the worker names left of the lanes
constexpr double kChartWidth = 760;  // the time axis
constexpr double kLaneHeight = 30;
constexpr double kLaneGap = 8;
const QColor kForward(76, 139, 202);
const QColor kBackward(232, 142, 52);
const QColor kIdle(222, 224, 228);

QString Milliseconds(double seconds) {
  const double ms = seconds * 1000;
  return QString::number(ms, 'f', ms < 10 ? 2 : 1) + " ms";
}

QString Percent(double fraction) { return QString::number(fraction * 100, 'f', 1) + "%"; }

// A round tick spacing giving about `count` ticks over `span`.
double TickSpacing(double span, int count) {
  const double raw = span / count;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

}  // namespace

std::vector<int64_t> TimelineSteps(const std::vector<store::PipelineSpanRecord>& spans) {
  std::set<int64_t> steps;
  for (const auto& s : spans) steps.insert(s.step);
  return {steps.begin(), steps.end()};
}

TimelineSummary SummarizeTimeline(const std::vector<store::PipelineSpanRecord>& spans,
                                  int64_t step) {
  TimelineSummary summary;
  summary.step = step;
  std::set<int64_t> workers, micro_batches;
  for (const auto& s : spans) {
    if (s.step != step) continue;
    summary.spans.push_back(s);
    workers.insert(s.rank);
    micro_batches.insert(s.micro_batch);
    summary.makespan_seconds = std::max(summary.makespan_seconds, s.end_seconds);
  }
  std::stable_sort(summary.spans.begin(), summary.spans.end(), [](const auto& a, const auto& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_seconds < b.start_seconds;
  });
  summary.workers = static_cast<int>(workers.size());
  summary.micro_batches = static_cast<int>(micro_batches.size());
  if (summary.workers == 0) return summary;
  for (int64_t w : workers) summary.per_worker.push_back(TimelineWorker{.worker = w});
  double busy_total = 0;
  for (const auto& s : summary.spans) {
    auto& w = *std::find_if(summary.per_worker.begin(), summary.per_worker.end(),
                            [&](const TimelineWorker& t) { return t.worker == s.rank; });
    const double busy = std::max(0.0, s.end_seconds - s.start_seconds - s.idle_seconds);
    w.busy_seconds += busy;
    w.compute_seconds += s.compute_seconds;
    w.end_seconds = std::max(w.end_seconds, s.end_seconds);
    busy_total += busy;
  }
  for (auto& w : summary.per_worker) {
    w.idle_seconds = std::max(0.0, summary.makespan_seconds - w.busy_seconds);
  }
  const double p = summary.workers, m = summary.micro_batches;
  summary.theoretical_bubble = (p - 1) / (m + p - 1);
  if (summary.makespan_seconds > 0) {
    summary.measured_bubble = std::clamp(1 - busy_total / (p * summary.makespan_seconds), 0.0, 1.0);
  }
  return summary;
}

Scene BuildTimelineScene(const std::vector<store::PipelineSpanRecord>& spans, int64_t step) {
  Scene scene;
  const TimelineSummary summary = SummarizeTimeline(spans, step);
  if (summary.workers == 0) {
    SceneItem none =
        TextItem(QRectF(0, 0, 520, 24),
                 spans.empty() ? "no pipeline timeline recorded (not a placed run)"
                               : "no pipeline timeline recorded for step " + QString::number(step),
                 11);
    none.role = "label";
    scene.items.push_back(none);
    scene.bounds = QRectF(-8, -8, 536, 40);
    return scene;
  }
  double y = 0;
  scene.items.push_back(
      TextItem(QRectF(0, y, kLabelWidth + kChartWidth, 20),
               QString("Pipeline timeline, step %1: %2 workers, %3 micro-batches, step time %4")
                   .arg(step)
                   .arg(summary.workers)
                   .arg(summary.micro_batches)
                   .arg(Milliseconds(summary.makespan_seconds)),
               11, true));
  y += 26;
  const double scale = kChartWidth / std::max(summary.makespan_seconds, 1e-9);
  const double x0 = kLabelWidth;
  for (const auto& worker : summary.per_worker) {
    const QRectF lane(x0, y, kChartWidth, kLaneHeight);
    SceneItem background = BoxItem(lane, kIdle, "", "idle", worker.worker);
    background.hatched = true;
    background.stroke = QColor(190, 192, 198);
    background.tooltip = QString("worker %1 idle %2 of %3")
                             .arg(worker.worker)
                             .arg(Milliseconds(worker.idle_seconds))
                             .arg(Milliseconds(summary.makespan_seconds));
    scene.items.push_back(background);
    SceneItem name =
        TextItem(QRectF(0, y, kLabelWidth - 6, kLaneHeight),
                 QString("worker %1").arg(worker.worker), 10, true, 0x0082 /* right | vcenter */);
    name.role = "lane";
    name.id = worker.worker;
    scene.items.push_back(name);
    for (const auto& s : summary.spans) {
      if (s.rank != worker.worker || s.end_seconds <= s.start_seconds) continue;
      const bool forward = s.phase == "forward";
      const QColor colour = forward ? kForward : kBackward;
      const QRectF box(x0 + s.start_seconds * scale, y + 2,
                       std::max(1.0, (s.end_seconds - s.start_seconds) * scale), kLaneHeight - 4);
      // The span: light where the worker waited for its input, solid where it worked. The
      // waiting comes first (a receive blocks before the kernels that need it).
      const double waited = std::clamp(s.idle_seconds * scale, 0.0, box.width());
      SceneItem item = BoxItem(box, colour.lighter(175), QString(), "span", s.micro_batch);
      item.key = QString::fromStdString(s.phase);
      item.stroke = colour.darker(140);
      item.tooltip = QString("worker %1, micro-batch %2, %3: %4 → %5 (compute %6, waiting %7)")
                         .arg(s.rank)
                         .arg(s.micro_batch)
                         .arg(QString::fromStdString(s.phase))
                         .arg(Milliseconds(s.start_seconds))
                         .arg(Milliseconds(s.end_seconds))
                         .arg(Milliseconds(s.compute_seconds))
                         .arg(Milliseconds(s.idle_seconds));
      scene.items.push_back(item);
      const QRectF work = box.adjusted(waited, 0, 0, 0);
      SceneItem busy = BoxItem(work, colour, QString(), "work", s.micro_batch);
      busy.key = item.key;
      busy.stroke = Qt::transparent;
      busy.tooltip = item.tooltip;
      if (work.width() >= 1) scene.items.push_back(busy);
      // The micro-batch label where it fits: on the work, else on the whole span.
      const QRectF label_room = work.width() >= 14 ? work : box;
      if (label_room.width() >= 14) {
        SceneItem label = TextItem(label_room, QString::number(s.micro_batch), 9, true, 0x0084);
        label.text_color = label_room == work ? Qt::white : colour.darker(180);
        scene.items.push_back(label);
      }
    }
    scene.items.push_back(TextItem(QRectF(x0 + kChartWidth + 8, y, 170, kLaneHeight),
                                   QString("busy %1\nidle %2")
                                       .arg(Milliseconds(worker.busy_seconds))
                                       .arg(Milliseconds(worker.idle_seconds)),
                                   8));
    y += kLaneHeight + kLaneGap;
  }
  // Time axis.
  const double tick = TickSpacing(summary.makespan_seconds, 8);
  SceneItem axis;
  axis.shape = SceneItem::Shape::kPolyline;
  axis.points << QPointF(x0, y) << QPointF(x0 + kChartWidth, y);
  scene.items.push_back(axis);
  for (double t = 0; t <= summary.makespan_seconds * 1.0001; t += tick) {
    SceneItem mark;
    mark.shape = SceneItem::Shape::kPolyline;
    mark.points << QPointF(x0 + t * scale, y) << QPointF(x0 + t * scale, y + 4);
    scene.items.push_back(mark);
    scene.items.push_back(TextItem(QRectF(x0 + t * scale - 30, y + 4, 60, 14),
                                   QString::number(t * 1000, 'g', 4), 8, false, 0x0084));
  }
  scene.items.push_back(
      TextItem(QRectF(x0, y + 18, kChartWidth, 14), "time in the step (ms)", 8, false, 0x0084));
  y += 40;
  SceneItem bubble =
      TextItem(QRectF(0, y, kLabelWidth + kChartWidth + 180, 34),
               QString("bubble: measured %1 (idle share of %2 workers × step time)\n"
                       "theoretical (p−1)/(m+p−1) = (%3−1)/(%4+%3−1) = %5 (equal stages, "
                       "free communication)")
                   .arg(Percent(summary.measured_bubble))
                   .arg(summary.workers)
                   .arg(summary.workers)
                   .arg(summary.micro_batches)
                   .arg(Percent(summary.theoretical_bubble)),
               10, true);
  bubble.role = "bubble";
  scene.items.push_back(bubble);
  y += 40;
  // Legend.
  double lx = 0;
  for (const auto& [colour, text, hatched] :
       {std::tuple{kForward, "forward", false}, std::tuple{kBackward, "backward", false},
        std::tuple{kIdle, "idle (bubble)", true}}) {
    SceneItem swatch = BoxItem(QRectF(lx, y + 2, 14, 12), colour, "");
    swatch.role = "legend";
    swatch.hatched = hatched;
    scene.items.push_back(swatch);
    scene.items.push_back(TextItem(QRectF(lx + 18, y, 150, 16), text, 9));
    lx += 170;
  }
  y += 20;
  scene.items.push_back(TextItem(QRectF(0, y, kLabelWidth + kChartWidth, 16),
                                 "label = micro-batch; light part of a box = waiting for its "
                                 "input; the optimizer update is not recorded as a span",
                                 8));
  y += 20;
  scene.bounds = QRectF(-8, -8, kLabelWidth + kChartWidth + 190, y + 16);
  return scene;
}

}  // namespace shardscope::viewer
