// Minimap: a small overview of the graph in the graph view's bottom-right corner (as Netron
// has): the whole scene scaled to fit, the main view's visible part outlined; a click or a
// drag centres the main view there. It paints the same items at a tiny scale, where their
// level of detail leaves out the text.
#pragma once

#include <QGraphicsView>

namespace shardscope::gui {

class GraphView;

class Minimap : public QGraphicsView {
  Q_OBJECT
 public:
  explicit Minimap(GraphView* view);
  // The part of the scene the main view shows (scene coordinates).
  QRectF VisibleRect() const;

 protected:
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void Refit();
  void Place();  // the bottom-right corner of the main view's viewport
  void CentreMainViewAt(const QPoint& at);
  GraphView* view_;
};

}  // namespace shardscope::gui
