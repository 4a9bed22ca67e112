#include "shardscope/viewer/rank_timeline_scene.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "shardscope/viewer/axis.h"
#include "timeline_axis.h"

namespace shardscope::viewer {
namespace {

constexpr double kLabelWidth = 130;
constexpr double kChartWidth = 760;  // as the pipeline timeline
constexpr double kLaneHeight = 30;
constexpr double kLaneGap = 8;
const QColor kCompute(76, 139, 202);
const QColor kRedistribution(232, 142, 52);
const QColor kBucket(200, 62, 62);
const QColor kCollective(245, 196, 140);
const QColor kLane(240, 241, 244);

QString Precise(double seconds) { return QString::number(seconds * 1e3, 'f', 3) + " ms"; }

QString Percent(double part, double whole) {
  return whole > 0 ? QString::number(100 * part / whole, 'f', 1) + "%" : QString("-");
}

int LaneOf(const store::RankSpan& s) {
  if (s.kind == "compute") return 0;
  return s.communication() ? 1 : 2;
}

QColor ColourOf(const store::RankSpan& s) {
  if (s.kind == "compute") return kCompute;
  if (!store::SpanCollectiveName(s.kind).empty()) return kBucket;  // one call of its own
  return s.kind == "redistribution" ? kRedistribution : kCollective;
}

}  // namespace

Scene BuildRankTimelineScene(const store::RankSummary& summary, bool breakdown) {
  Scene scene;
  const store::RankTiming& timing = summary.timing;
  if (timing.spans.empty()) {
    SceneItem none = TextItem(
        QRectF(0, 0, 760, 24),
        summary.placed       ? "placed run: this worker's spans are in the Pipeline timeline"
        : summary.steps == 0 ? "plan run: no training steps, so nothing was timed"
                             : QString("no per-instruction timing recorded for rank %1 (train "
                                       "--timing-every N records it)")
                                   .arg(summary.rank),
        11);
    none.role = "label";
    scene.items.push_back(none);
    scene.bounds = QRectF(-8, -8, 776, 40);
    return scene;
  }
  double y = 0;
  scene.items.push_back(
      TextItem(QRectF(0, y, kLabelWidth + kChartWidth, 20),
               QString("Rank %1, step %2: %3 — compute %4 (%5), communication %6 (%7)")
                   .arg(summary.rank)
                   .arg(timing.step)
                   .arg(Milliseconds(timing.span))
                   .arg(Milliseconds(timing.compute))
                   .arg(Percent(timing.compute, timing.compute + timing.comm))
                   .arg(Milliseconds(timing.comm))
                   .arg(Percent(timing.comm, timing.compute + timing.comm)),
               12, true));
  y += 28;
  const double scale = AxisScale(kChartWidth, timing.span);
  const double x0 = kLabelWidth;
  const char* lanes[] = {"compute", "communication", "collectives"};
  int64_t left_out = 0;
  for (int lane = 0; lane < 3; ++lane) {
    const QRectF row(x0, y, kChartWidth, kLaneHeight);
    scene.items.push_back(BoxItem(row, kLane, "", "", -1));
    scene.items.back().stroke = QColor(200, 202, 208);
    SceneItem name = TextItem(QRectF(0, y, kLabelWidth - 6, kLaneHeight), lanes[lane], 10, true,
                              0x0082 /* right | vcenter */);
    name.role = "lane";
    name.key = lanes[lane];
    scene.items.push_back(name);
    for (const store::RankSpan& s : timing.spans) {
      if (LaneOf(s) != lane) continue;
      if (!std::isfinite(s.start_seconds) || !std::isfinite(s.end_seconds) ||
          s.end_seconds < s.start_seconds || scene.items.size() >= kMaxSceneItems) {
        ++left_out;
        continue;
      }
      const QColor colour = ColourOf(s);
      const QRectF box(x0 + s.start_seconds * scale, y + 2,
                       std::max(1.0, (s.end_seconds - s.start_seconds) * scale), kLaneHeight - 4);
      SceneItem item = BoxItem(box, colour, QString(), "span", s.ordinal);
      item.key = QString::fromStdString(s.kind);
      item.stroke = box.width() >= 3 ? colour.darker(140) : Qt::transparent;
      item.tooltip =
          QString("%1 (%2)\n%3 → %4: %5\n%6")
              .arg(QString::fromStdString(s.name), QString::fromStdString(s.kind),
                   Milliseconds(s.start_seconds), Milliseconds(s.end_seconds),
                   Milliseconds(s.end_seconds - s.start_seconds), QString::fromStdString(s.text));
      scene.items.push_back(item);
      // The name where it fits whole (about 5.5 px a character at 8 pt).
      if (box.width() >= 8 + 5.5 * static_cast<double>(s.name.size())) {
        SceneItem label =
            TextItem(box.adjusted(2, 0, -2, 0), QString::fromStdString(s.name), 8, false, 0x0084);
        label.text_color = lane == 2 ? Qt::black : Qt::white;
        scene.items.push_back(label);
      }
    }
    y += kLaneHeight + kLaneGap;
  }
  if (left_out > 0) {
    SceneItem note = TextItem(QRectF(x0, y, kChartWidth, 16),
                              QString("Not drawn: %1 spans (no usable times, or over the drawing "
                                      "limit).")
                                  .arg(left_out),
                              9);
    note.role = "note";
    scene.items.push_back(note);
    y += 20;
  }
  y = AddTimeAxis(&scene, x0, kChartWidth, y, timing.span);
  // Legend.
  double lx = 0;
  for (const auto& [colour, text] :
       {std::tuple{kCompute, "compute (an operator)"},
        std::tuple{kRedistribution, "redistribution (whole)"},
        std::tuple{kBucket, "gradient bucket, ZeRO collective"},
        std::tuple{kCollective, "collective inside a redistribution"}}) {
    SceneItem swatch = BoxItem(QRectF(lx, y + 2, 14, 12), colour, "");
    swatch.role = "legend";
    scene.items.push_back(swatch);
    scene.items.push_back(TextItem(QRectF(lx + 18, y, 200, 16), text, 9));
    lx += lx == 0 ? 180 : 210;
  }
  y += 24;
  if (!breakdown) {
    scene.bounds = QRectF(-8, -8, kLabelWidth + kChartWidth + 24, y + 8);
    return scene;
  }
  // Where the time goes: per operator kind, then per collective.
  scene.items.push_back(TextItem(QRectF(0, y, 600, 16),
                                 "time by operator kind and by collective (this step)", 10, true));
  y += 20;
  const double total = timing.compute + timing.comm;
  const double bar_width = 420;
  for (const auto* by : {&timing.compute_by_kind, &timing.collectives}) {
    for (const auto& [kind, v] : *by) {
      const bool compute = by == &timing.compute_by_kind;
      scene.items.push_back(
          TextItem(QRectF(0, y, 260, 16), QString::fromStdString(kind), 9, false, 0x0082));
      const double w = total > 0 ? std::max(1.0, bar_width * v.first / total) : 1.0;
      SceneItem bar =
          BoxItem(QRectF(268, y + 2, w, 12), compute ? kCompute : kRedistribution, "", "kind", -1);
      bar.key = QString::fromStdString(kind);
      bar.stroke = Qt::transparent;
      scene.items.push_back(bar);
      scene.items.push_back(TextItem(
          QRectF(268 + bar_width + 8, y, 260, 16),
          QString("%1  ×%2  %3").arg(Precise(v.first)).arg(v.second).arg(Percent(v.first, total)),
          9));
      y += 16;
    }
  }
  y += 8;
  scene.bounds = QRectF(-8, -8, kLabelWidth + kChartWidth + 24, y + 16);
  return scene;
}

}  // namespace shardscope::viewer
