#include "minimap.h"

#include <QMouseEvent>
#include <QScrollBar>

#include "graph_view.h"

namespace shardscope::gui {
namespace {

constexpr QSize kSize(220, 160);
constexpr int kMargin = 8;

}  // namespace

Minimap::Minimap(GraphView* view) : QGraphicsView(view->scene(), view), view_(view) {
  setObjectName("minimap");
  setFixedSize(kSize);
  setInteractive(false);  // clicks move the main view; they never select
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFrameShape(QFrame::Box);
  setRenderHint(QPainter::Antialiasing, false);
  setToolTip("Overview: click or drag to move the graph view");
  connect(view->scene(), &QGraphicsScene::sceneRectChanged, this, [this] { Refit(); });
  const auto repaint = [this] { viewport()->update(); };
  for (QScrollBar* bar : {view->horizontalScrollBar(), view->verticalScrollBar()}) {
    connect(bar, &QScrollBar::valueChanged, this, repaint);
    connect(bar, &QScrollBar::rangeChanged, this, repaint);
  }
  view->viewport()->installEventFilter(this);
  Place();
}

QRectF Minimap::VisibleRect() const {
  return view_->mapToScene(view_->viewport()->rect()).boundingRect();
}

void Minimap::Refit() {
  const QRectF r = sceneRect();
  if (!r.isEmpty()) fitInView(r, Qt::KeepAspectRatio);
  viewport()->update();
}

void Minimap::Place() {
  const QWidget* area = view_->viewport();
  move(area->x() + area->width() - width() - kMargin,
       area->y() + area->height() - height() - kMargin);
  raise();
}

void Minimap::drawForeground(QPainter* painter, const QRectF&) {
  QPen pen(QColor(220, 0, 0), 0);  // cosmetic: one pixel at any scale
  painter->setPen(pen);
  painter->setBrush(QColor(220, 0, 0, 30));
  painter->drawRect(VisibleRect().intersected(sceneRect()));
}

void Minimap::CentreMainViewAt(const QPoint& at) {
  view_->centerOn(mapToScene(at));
  viewport()->update();
}

void Minimap::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) CentreMainViewAt(event->position().toPoint());
  event->accept();
}

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) CentreMainViewAt(event->position().toPoint());
  event->accept();
}

void Minimap::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  Refit();
}

bool Minimap::eventFilter(QObject* watched, QEvent* event) {
  if (watched == view_->viewport() && event->type() == QEvent::Resize) {
    Place();
    viewport()->update();
  }
  return QGraphicsView::eventFilter(watched, event);
}

}  // namespace shardscope::gui
