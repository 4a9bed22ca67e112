// Internal: what the pipeline timeline (timeline_scene.cc) and the rank timeline
// (rank_timeline_scene.cc) draw alike: milliseconds, the time axis under the lanes.
#pragma once

#include <QString>

#include "shardscope/viewer/axis.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

inline QString Milliseconds(double seconds) {
  const double ms = seconds * 1000;
  return QString::number(ms, 'f', ms < 10 ? 2 : 1) + " ms";
}

// The axis from x0 (time 0) to x0 + width (`seconds`) at height y, ticks in ms and its title;
// returns the height under it.
inline double AddTimeAxis(Scene* scene, double x0, double width, double y, double seconds) {
  const double scale = AxisScale(width, seconds);
  SceneItem axis;
  axis.shape = SceneItem::Shape::kPolyline;
  axis.points << QPointF(x0, y) << QPointF(x0 + width, y);
  scene->items.push_back(axis);
  for (double t : AxisTicks(seconds, 8)) {
    SceneItem mark;
    mark.shape = SceneItem::Shape::kPolyline;
    mark.points << QPointF(x0 + t * scale, y) << QPointF(x0 + t * scale, y + 4);
    scene->items.push_back(mark);
    scene->items.push_back(TextItem(QRectF(x0 + t * scale - 30, y + 4, 60, 14),
                                    QString::number(t * 1000, 'g', 4), 8, false, 0x0084));
  }
  scene->items.push_back(
      TextItem(QRectF(x0, y + 18, width, 14), "time in the step (ms)", 8, false, 0x0084));
  return y + 40;
}

}  // namespace shardscope::viewer
