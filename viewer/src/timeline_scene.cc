#include "shardscope/viewer/timeline_scene.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "shardscope/viewer/axis.h"
#include "timeline_axis.h"

namespace shardscope::viewer {
namespace {

constexpr double kLabelWidth = 96;   // the worker names left of the lanes
constexpr double kChartWidth = 760;  // the time axis
constexpr double kLaneHeight = 30;
constexpr double kLaneGap = 8;
const QColor kForward(76, 139, 202);
const QColor kBackward(232, 142, 52);
const QColor kIdle(222, 224, 228);
constexpr size_t kMaxLanes = 256;  // workers drawn; a damaged file may name millions

QString Percent(double fraction) { return QString::number(fraction * 100, 'f', 1) + "%"; }

// A span the chart can place: finite times, not before the step, not ending before it starts.
// NULL times read back as NaN; a damaged file may hold anything.
bool Placeable(const store::PipelineSpanRecord& s) {
  return std::isfinite(s.start_seconds) && std::isfinite(s.end_seconds) && s.start_seconds >= 0 &&
         s.end_seconds >= s.start_seconds;
}

double FiniteOrZero(double v) { return std::isfinite(v) ? v : 0; }

// What the chart leaves out, in one sentence ("" when nothing).
std::string LeftOutText(const TimelineSummary& summary, size_t lanes, int64_t spans_left_out) {
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  if (summary.unplaceable_spans > 0) {
    add(std::to_string(summary.unplaceable_spans) +
        " spans without usable times (missing, negative or ending before they start)");
  }
  if (lanes < summary.per_worker.size()) {
    add("the first " + std::to_string(lanes) + " of " + std::to_string(summary.per_worker.size()) +
        " workers");
  }
  if (spans_left_out > 0) add(std::to_string(spans_left_out) + " spans over the drawing limit");
  return text.empty() ? text : "Not drawn: " + text + ".";
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
  std::map<int64_t, TimelineWorker> workers;
  std::set<int64_t> micro_batches;
  for (const auto& s : spans) {
    if (s.step != step) continue;
    workers.emplace(s.rank, TimelineWorker{.worker = s.rank});
    micro_batches.insert(s.micro_batch);
    if (!Placeable(s)) {
      ++summary.unplaceable_spans;
      continue;
    }
    summary.spans.push_back(s);
    summary.makespan_seconds = std::max(summary.makespan_seconds, s.end_seconds);
  }
  std::stable_sort(summary.spans.begin(), summary.spans.end(), [](const auto& a, const auto& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_seconds < b.start_seconds;
  });
  summary.workers = static_cast<int64_t>(workers.size());
  summary.micro_batches = static_cast<int64_t>(micro_batches.size());
  if (summary.workers == 0) return summary;
  double busy_total = 0;
  for (const auto& s : summary.spans) {
    TimelineWorker& w = workers[s.rank];
    const double length = s.end_seconds - s.start_seconds;
    const double busy = length - std::clamp(FiniteOrZero(s.idle_seconds), 0.0, length);
    w.busy_seconds += busy;
    w.compute_seconds += FiniteOrZero(s.compute_seconds);
    w.end_seconds = std::max(w.end_seconds, s.end_seconds);
    busy_total += busy;
  }
  for (auto& [id, w] : workers) {
    w.idle_seconds = std::max(0.0, summary.makespan_seconds - w.busy_seconds);
    summary.per_worker.push_back(w);
  }
  const double p = static_cast<double>(summary.workers);
  const double m = static_cast<double>(summary.micro_batches);
  summary.theoretical_bubble = (p - 1) / (m + p - 1);
  const double capacity = p * summary.makespan_seconds;
  if (capacity > 0 && std::isfinite(capacity)) {
    summary.measured_bubble = std::clamp(1 - busy_total / capacity, 0.0, 1.0);
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
  const double scale = AxisScale(kChartWidth, summary.makespan_seconds);
  const double x0 = kLabelWidth;
  const size_t lanes = std::min(summary.per_worker.size(), kMaxLanes);
  size_t next_span = 0;  // summary.spans is by (worker, start): each lane takes its run
  int64_t spans_left_out = 0;
  for (size_t lane_index = 0; lane_index < lanes; ++lane_index) {
    const TimelineWorker& worker = summary.per_worker[lane_index];
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
    while (next_span < summary.spans.size() && summary.spans[next_span].rank < worker.worker) {
      ++next_span;
    }
    for (; next_span < summary.spans.size() && summary.spans[next_span].rank == worker.worker;
         ++next_span) {
      const auto& s = summary.spans[next_span];
      if (s.end_seconds <= s.start_seconds) continue;
      if (scene.items.size() >= kMaxSceneItems) {
        ++spans_left_out;
        continue;
      }
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
  const std::string left_out = LeftOutText(summary, lanes, spans_left_out);
  if (!left_out.empty()) {
    SceneItem note = TextItem(QRectF(x0, y, kChartWidth, 16), QString::fromStdString(left_out), 9);
    note.role = "note";
    scene.items.push_back(note);
    y += 20;
  }
  y = AddTimeAxis(&scene, x0, kChartWidth, y, summary.makespan_seconds);
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
