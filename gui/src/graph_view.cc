#include "graph_view.h"

#include <QGraphicsScene>
#include <QMouseEvent>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>
#include <QWheelEvent>

#include "shardscope/viewer/painter.h"

namespace shardscope::gui {

SceneGraphicsItem::SceneGraphicsItem(viewer::SceneItem item) : item_(std::move(item)) {
  if (!item_.tooltip.isEmpty()) setToolTip(viewer::PlainToolTip(item_.tooltip));
}

QRectF SceneGraphicsItem::boundingRect() const {
  QRectF r = item_.rect;
  if (!item_.points.isEmpty())
    r = r.isNull() ? item_.points.boundingRect() : r.united(item_.points.boundingRect());
  return r.adjusted(-6, -6, 6, 6);
}

viewer::SceneItem AtDetail(const viewer::SceneItem& item, double level_of_detail) {
  viewer::SceneItem drawn = item;
  if (item.font_size * level_of_detail < kMinTextPixels) drawn.text.clear();
  return drawn;
}

void SceneGraphicsItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = option ? option->levelOfDetailFromTransform(painter->worldTransform()) : 1;
  viewer::SceneItem drawn = AtDetail(item_, lod);
  if (drawn.shape == viewer::SceneItem::Shape::kText && drawn.text.isEmpty()) return;
  painter->setRenderHint(QPainter::Antialiasing, lod >= 0.5);
  if (isSelected()) {
    drawn.stroke = QColor(220, 0, 0);
    drawn.stroke_width = item_.stroke_width + 2;
  }
  viewer::PaintItem(drawn, painter);
}

OperatorItem::OperatorItem(viewer::SceneItem item) : SceneGraphicsItem(std::move(item)) {
  setFlag(ItemIsSelectable);
  setZValue(3);
}
ClusterItem::ClusterItem(viewer::SceneItem item) : SceneGraphicsItem(std::move(item)) {
  setFlag(ItemIsSelectable);
  // A collapsed scope is a node; an open one is a frame behind the nodes.
  setZValue(this->item().shape == viewer::SceneItem::Shape::kRoundedRect &&
                    this->item().text.isEmpty()
                ? 0
                : 3);
}
TensorItem::TensorItem(viewer::SceneItem item) : SceneGraphicsItem(std::move(item)) {
  setFlag(ItemIsSelectable);
  setZValue(3);
}
EdgeItem::EdgeItem(viewer::SceneItem item) : SceneGraphicsItem(std::move(item)) {
  setFlag(ItemIsSelectable);
  setZValue(2);
}
QPainterPath EdgeItem::shape() const {
  QPainterPath path;
  if (item().points.isEmpty()) return path;
  path.moveTo(item().points.front());
  for (const QPointF& p : item().points) path.lineTo(p);
  QPainterPathStroker stroker;
  stroker.setWidth(8);
  QPainterPath stroke = stroker.createStroke(path);
  if (!item().text.isEmpty()) stroke.addRect(item().rect);
  return stroke;
}
LabelItem::LabelItem(viewer::SceneItem item) : SceneGraphicsItem(std::move(item)) { setZValue(1); }

SceneGraphicsItem* MakeGraphicsItem(const viewer::SceneItem& item) {
  if (item.role == "operator") return new OperatorItem(item);
  if (item.role == "cluster") return new ClusterItem(item);
  if (item.role == "tensor") return new TensorItem(item);
  if (item.role == "edge" || item.role == "redistribution" || item.role == "send_recv") {
    return new EdgeItem(item);
  }
  return new LabelItem(item);
}

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setDragMode(QGraphicsView::ScrollHandDrag);
  setRenderHint(QPainter::Antialiasing);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  connect(scene(), &QGraphicsScene::selectionChanged, this, &GraphView::OnSelectionChanged);
}

void GraphView::SetScene(const viewer::Scene& description) {
  scene()->blockSignals(true);
  scene()->clear();
  scene()->blockSignals(false);
  for (const viewer::SceneItem& item : description.items) scene()->addItem(MakeGraphicsItem(item));
  scene()->setSceneRect(description.bounds);
  setBackgroundBrush(description.background);
}

void GraphView::OnSelectionChanged() {
  const auto selected = scene()->selectedItems();
  if (selected.isEmpty()) return;
  const auto* item = dynamic_cast<SceneGraphicsItem*>(selected.front());
  if (!item) return;
  const viewer::SceneItem& s = item->item();
  emit Selected(s.role, s.id, s.key);
}

bool GraphView::SelectItem(const QString& role, int64_t id) {
  for (QGraphicsItem* g : scene()->items(Qt::AscendingOrder)) {
    auto* item = dynamic_cast<SceneGraphicsItem*>(g);
    if (item && item->item().role == role && item->item().id == id) {
      scene()->clearSelection();
      item->setSelected(true);
      centerOn(item);
      return true;
    }
  }
  return false;
}

bool GraphView::Search(const QString& text) {
  if (text.isEmpty()) return false;
  std::vector<SceneGraphicsItem*> matches;
  for (QGraphicsItem* g : scene()->items(Qt::AscendingOrder)) {
    auto* item = dynamic_cast<SceneGraphicsItem*>(g);
    if (!item) continue;
    const auto& s = item->item();
    if ((s.role == "operator" || s.role == "tensor" || s.role == "cluster") &&
        (s.tooltip.contains(text, Qt::CaseInsensitive) ||
         s.text.contains(text, Qt::CaseInsensitive))) {
      matches.push_back(item);
    }
  }
  if (matches.empty()) return false;
  // Deterministic order: top to bottom, left to right; continue after the current one.
  std::stable_sort(matches.begin(), matches.end(), [](auto* a, auto* b) {
    const QPointF pa = a->item().rect.center(), pb = b->item().rect.center();
    return pa.y() != pb.y() ? pa.y() < pb.y() : pa.x() < pb.x();
  });
  size_t next = 0;
  for (size_t i = 0; i < matches.size(); ++i) {
    if (matches[i]->isSelected()) next = (i + 1) % matches.size();
  }
  scene()->clearSelection();
  matches[next]->setSelected(true);
  centerOn(matches[next]);
  return true;
}

void GraphView::ZoomBy(double factor) { scale(factor, factor); }

void GraphView::Fit() { fitInView(scene()->sceneRect(), Qt::KeepAspectRatio); }

void GraphView::FitReadable() {
  resetTransform();
  const QRectF r = scene()->sceneRect();
  if (r.isEmpty()) return;
  const double fit = std::min(viewport()->width() / r.width(), viewport()->height() / r.height());
  const double s = std::clamp(fit, 0.75, 1.25);
  scale(s, s);
  // Horizontally on the first operator (the top of the forward graph), vertically the top.
  double x = r.center().x();
  double top = r.bottom();
  for (QGraphicsItem* g : scene()->items()) {
    auto* item = dynamic_cast<SceneGraphicsItem*>(g);
    if (item && item->item().role == "operator" && item->item().rect.top() < top) {
      top = item->item().rect.top();
      x = item->item().rect.center().x();
    }
  }
  centerOn(x, r.top() + viewport()->height() / (2 * s));
}

void GraphView::wheelEvent(QWheelEvent* event) {
  ZoomBy(event->angleDelta().y() > 0 ? 1.15 : 1 / 1.15);
  event->accept();
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  auto* item = dynamic_cast<SceneGraphicsItem*>(itemAt(event->pos()));
  if (item && item->item().role == "cluster") emit ClusterActivated(item->item().key);
  QGraphicsView::mouseDoubleClickEvent(event);
}

}  // namespace shardscope::gui
