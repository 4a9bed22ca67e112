#include "scene_widget.h"

#include <QMouseEvent>
#include <QPainter>

#include "shardscope/viewer/painter.h"

namespace shardscope::gui {

SceneWidget::SceneWidget(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 150);
  setAutoFillBackground(true);
}

void SceneWidget::SetScene(viewer::Scene scene) {
  scene_ = std::move(scene);
  message_.clear();
  update();
}

void SceneWidget::SetMessage(const QString& message) {
  scene_ = {};
  message_ = message;
  update();
}

QTransform SceneWidget::Transform() const {
  const QSizeF size = scene_.bounds.size();
  if (size.isEmpty()) return {};
  const double scale = std::min({width() / size.width(), height() / size.height(), 2.0});
  QTransform t;
  t.scale(scale, scale);
  return t;
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
  painter.setTransform(Transform());
  viewer::PaintScene(scene_, &painter);
}

void SceneWidget::mousePressEvent(QMouseEvent* event) {
  const QPointF at = Transform().inverted().map(event->position()) + scene_.bounds.topLeft();
  for (auto it = scene_.items.rbegin(); it != scene_.items.rend(); ++it) {
    if ((it->role == "rank" || it->role == "block") && it->rect.contains(at)) {
      emit Clicked(it->role, it->id);
      return;
    }
  }
}

}  // namespace shardscope::gui
