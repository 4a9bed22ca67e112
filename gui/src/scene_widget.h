// SceneWidget: paints a viewer::Scene scaled to fit the widget (device matrix, tensor map and
// redistribution frames in docks); a click reports the scene item under the mouse.
#pragma once

#include <QWidget>

#include "shardscope/viewer/scene.h"

namespace shardscope::gui {

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

 signals:
  void Clicked(const QString& role, qint64 id);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QTransform Transform() const;
  viewer::Scene scene_;
  QString message_;
};

}  // namespace shardscope::gui
