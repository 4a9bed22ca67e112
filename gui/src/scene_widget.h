// SceneWidget: paints a viewer::Scene (device matrix, tensor map and redistribution frames in
// docks) scaled to the widget's width, never below a readable scale: when the picture does
// not fit it asks for more room (minimum size) and the scroll area around it scrolls. A
// click reports the scene item under the mouse.
#pragma once

#include <QPixmap>
#include <QWidget>
#include <memory>

class QScrollArea;

#include "shardscope/viewer/scene.h"

namespace shardscope::gui {

struct FrameTween;

class SceneWidget : public QWidget {
  Q_OBJECT
 public:
  explicit SceneWidget(QWidget* parent = nullptr);
  void SetScene(viewer::Scene scene);
  // Shown instead of a picture (e.g. "select a tensor").
  void SetMessage(const QString& message);
  const viewer::Scene& scene() const { return scene_; }
  const QString& message() const { return message_; }
  QSize sizeHint() const override { return {420, 300}; }
  // Where a point of the scene is drawn in the widget (tests click items there).
  QPoint ToWidget(const QPointF& scene_point) const;
  // The largest picture (points) shown whole without scrolling: the visible room at the
  // smallest readable scale; empty before the widget is laid out.
  QSizeF RoomAtReadableScale() const;
  // Paints the scene in motion (frame_animation.h) at time t until SetTween(nullptr) or
  // t >= 1; scene() stays the still frame. Setting a scene or a message ends the tween.
  void SetTween(std::shared_ptr<const FrameTween> tween, double t = 0);
  bool tweening() const { return tween_ != nullptr; }

 signals:
  void Clicked(const QString& role, qint64 id);
  // The room around the widget (the scroll area's viewport) changed size: a view whose
  // picture depends on the room (the device matrix) builds it again.
  void RoomResized();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  double Scale() const;
  // The room the picture is scaled to (points), and the width of the vertical scrollbar
  // that a taller picture needs beside it.
  QSizeF Room(double* bar) const;
  void UpdateMinimumSize();
  void resizeEvent(QResizeEvent* event) override;
  viewer::Scene scene_;
  QString message_;
  std::shared_ptr<const FrameTween> tween_;
  double tween_t_ = 0;
  QPixmap tween_base_;  // the still part, painted once per tween and size
};

// `widget` inside a scroll area (resizable), as SceneWidget expects; RoomResized follows the
// scroll area's viewport.
QScrollArea* InScrollArea(SceneWidget* widget, QWidget* parent);

}  // namespace shardscope::gui
