// GraphView: the graph scene on screen (QGraphicsView), one item class per drawn element:
// OperatorItem, ClusterItem, TensorItem, EdgeItem (plain, redistribution, send/recv) and
// LabelItem, each painting its viewer::SceneItem with the same painter as the PNG/SVG export.
// Zoom (wheel, +/-), pan (drag), fit, search by name; selecting an item emits what it is.
#pragma once

#include <QGraphicsItem>
#include <QGraphicsView>

#include "shardscope/viewer/scene.h"

namespace shardscope::gui {

class SceneGraphicsItem : public QGraphicsItem {
 public:
  explicit SceneGraphicsItem(viewer::SceneItem item);
  const viewer::SceneItem& item() const { return item_; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  viewer::SceneItem item_;
};

class OperatorItem : public SceneGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  explicit OperatorItem(viewer::SceneItem item);
  int type() const override { return Type; }
};
class ClusterItem : public SceneGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  explicit ClusterItem(viewer::SceneItem item);
  int type() const override { return Type; }
};
class TensorItem : public SceneGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  explicit TensorItem(viewer::SceneItem item);
  int type() const override { return Type; }
};
class EdgeItem : public SceneGraphicsItem {
 public:
  enum { Type = UserType + 4 };
  explicit EdgeItem(viewer::SceneItem item);
  int type() const override { return Type; }
  QPainterPath shape() const override;  // the stroke, so clicks hit the line, not its box
};
class LabelItem : public SceneGraphicsItem {
 public:
  enum { Type = UserType + 5 };
  explicit LabelItem(viewer::SceneItem item);
  int type() const override { return Type; }
};

// Level of detail: at a scale (QStyleOptionGraphicsItem::levelOfDetailFromTransform) where
// the item's text would be under kMinTextPixels high it is drawn without it, and a text-only
// label not at all, so a zoomed-out graph or the minimap stays fast and uncluttered.
inline constexpr double kMinTextPixels = 4;
viewer::SceneItem AtDetail(const viewer::SceneItem& item, double level_of_detail);

// Builds the QGraphicsItem for one scene element.
SceneGraphicsItem* MakeGraphicsItem(const viewer::SceneItem& item);

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphView(QWidget* parent = nullptr);
  void SetScene(const viewer::Scene& scene);
  // Selects and centres the first operator (then tensor) whose name contains `text`
  // (case-insensitive), after the current selection; false when none matches.
  bool Search(const QString& text);
  // Selects the item of `role` and `id`; false when it is not drawn.
  bool SelectItem(const QString& role, int64_t id);
  void ZoomBy(double factor);
  void Fit();
  // Fits the graph when that keeps text readable; else a readable scale, top of the graph.
  void FitReadable();

 signals:
  // role "operator" / "tensor" / "edge" (id = tensor) / "redistribution" / "cluster" (key).
  void Selected(const QString& role, qint64 id, const QString& key);
  void ClusterActivated(const QString& key);  // double click on a cluster

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  void OnSelectionChanged();
};

}  // namespace shardscope::gui
