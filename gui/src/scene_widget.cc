#include "scene_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>

#include "frame_animation.h"
#include "shardscope/viewer/painter.h"

namespace shardscope::gui {

SceneWidget::SceneWidget(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 150);
  setAutoFillBackground(true);
}

void SceneWidget::SetScene(viewer::Scene scene) {
  SetTween(nullptr);
  scene_ = std::move(scene);
  message_.clear();
  UpdateMinimumSize();
  update();
}

void SceneWidget::SetMessage(const QString& message) {
  SetTween(nullptr);
  scene_ = {};
  message_ = message;
  UpdateMinimumSize();
  update();
}

void SceneWidget::SetTween(std::shared_ptr<const FrameTween> tween, double t) {
  if (tween != tween_) tween_base_ = {};
  tween_ = t < 1 ? std::move(tween) : nullptr;
  tween_t_ = t;
  update();
}

constexpr double kMinScale = 0.7;  // text stays readable (8 pt items at 5.6 px)
constexpr double kMaxScale = 1.5;

QSizeF SceneWidget::RoomAtReadableScale() const {
  const QWidget* room = parentWidget();
  if (!room || room->width() < 100 || room->height() < 100) return {};
  return QSizeF(room->size()) / kMinScale;
}

QSizeF SceneWidget::Room(double* bar) const {
  *bar = 0;
  if (!parentWidget()) return {};
  // The scroll area's room without scrollbars, so the scale does not depend on a bar a
  // taller picture before left (the bar would stay: a picture sized to the narrower room).
  const auto* area = qobject_cast<const QAbstractScrollArea*>(parentWidget()->parentWidget());
  if (!area) return parentWidget()->size();
  *bar = area->verticalScrollBar()->sizeHint().width();
  return area->maximumViewportSize();
}

double SceneWidget::Scale() const {
  const QSizeF size = scene_.bounds.size();
  double bar = 0;
  const QSizeF room = Room(&bar);
  if (size.isEmpty() || room.isEmpty()) return 1;
  const double fit = std::min(room.width() / size.width(), room.height() / size.height());
  // The whole picture when it stays readable (no scrolling), else the width beside the
  // vertical scrollbar it then needs.
  if (fit >= kMinScale) return std::min(fit, kMaxScale);
  const double fit_width = (room.width() - bar) / size.width();
  return std::clamp(std::min(fit_width, 1.0), kMinScale, kMaxScale);
}

void SceneWidget::UpdateMinimumSize() {
  const double scale = Scale();
  const QSize needed = (scene_.bounds.size() * scale).toSize();
  setMinimumSize(scene_.items.empty() ? QSize(200, 150) : needed);
}

void SceneWidget::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  UpdateMinimumSize();
}

bool SceneWidget::eventFilter(QObject* watched, QEvent* event) {
  if (watched == parentWidget() && event->type() == QEvent::Resize) {
    UpdateMinimumSize();  // the room changed while this widget kept its size
    emit RoomResized();
  }
  return QWidget::eventFilter(watched, event);
}

void SceneWidget::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  if (scene_.items.empty()) {
    painter.setPen(QColor(90, 90, 90));
    painter.drawText(rect().adjusted(10, 10, -10, -10), Qt::AlignCenter | Qt::TextWordWrap,
                     message_);
    return;
  }
  const double scale = Scale();
  if (tween_) {
    const double ratio = devicePixelRatioF();
    if (tween_base_.size() != size() * ratio) {
      tween_base_ = QPixmap(size() * ratio);
      tween_base_.setDevicePixelRatio(ratio);
      tween_base_.fill(Qt::white);
      QPainter base(&tween_base_);
      base.scale(scale, scale);
      PaintTweenBase(scene_, *tween_, &base);
    }
    painter.drawPixmap(0, 0, tween_base_);
    painter.scale(scale, scale);
    PaintTweenMotion(scene_, *tween_, tween_t_, &painter);
    return;
  }
  painter.scale(scale, scale);
  viewer::PaintScene(scene_, &painter);
}

QPoint SceneWidget::ToWidget(const QPointF& scene_point) const {
  return ((scene_point - scene_.bounds.topLeft()) * Scale()).toPoint();
}

void SceneWidget::mousePressEvent(QMouseEvent* event) {
  const QPointF at = event->position() / Scale() + scene_.bounds.topLeft();
  for (auto it = scene_.items.rbegin(); it != scene_.items.rend(); ++it) {
    if ((it->role == "rank" || it->role == "block") && it->rect.contains(at)) {
      emit Clicked(it->role, it->id);
      return;
    }
  }
}

QScrollArea* InScrollArea(SceneWidget* widget, QWidget* parent) {
  auto* area = new QScrollArea(parent);
  area->setWidgetResizable(true);
  area->setWidget(widget);
  area->viewport()->installEventFilter(widget);
  area->setBackgroundRole(QPalette::Base);
  return area;
}

}  // namespace shardscope::gui
