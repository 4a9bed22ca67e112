#include "shardscope/viewer/painter.h"

#include <QFileInfo>
#include <QImage>
#include <QPainterPath>
#include <QSvgGenerator>
#include <cmath>

namespace shardscope::viewer {
namespace {

void DrawArrowHead(QPainter* painter, QPointF from, QPointF to, const QColor& color) {
  const double angle = std::atan2(to.y() - from.y(), to.x() - from.x());
  const double size = 7;
  QPolygonF head;
  head << to << to - QPointF(size * std::cos(angle - 0.4), size * std::sin(angle - 0.4))
       << to - QPointF(size * std::cos(angle + 0.4), size * std::sin(angle + 0.4));
  painter->save();
  painter->setPen(Qt::NoPen);
  painter->setBrush(color);
  painter->drawPolygon(head);
  painter->restore();
}

}  // namespace

void PaintItem(const SceneItem& item, QPainter* painter) {
  QPen pen(item.stroke, item.stroke_width);
  if (item.dashed) pen.setStyle(Qt::DashLine);
  if (item.stroke.alpha() == 0) pen = Qt::NoPen;
  painter->setPen(pen);
  painter->setBrush(item.fill.alpha() == 0 ? QBrush(Qt::NoBrush) : QBrush(item.fill));
  switch (item.shape) {
    case SceneItem::Shape::kRect:
      painter->drawRect(item.rect);
      break;
    case SceneItem::Shape::kRoundedRect:
      painter->drawRoundedRect(item.rect, 6, 6);
      break;
    case SceneItem::Shape::kEllipse:
      painter->drawEllipse(item.rect);
      break;
    case SceneItem::Shape::kPolyline:
    case SceneItem::Shape::kBezier: {
      if (item.points.size() < 2) break;
      QPainterPath path(item.points.front());
      if (item.shape == SceneItem::Shape::kBezier) {
        for (int i = 1; i + 2 < item.points.size(); i += 3) {
          path.cubicTo(item.points[i], item.points[i + 1], item.points[i + 2]);
        }
      } else {
        for (int i = 1; i < item.points.size(); ++i) path.lineTo(item.points[i]);
      }
      painter->setBrush(Qt::NoBrush);
      painter->drawPath(path);
      if (item.arrow) {
        DrawArrowHead(painter, item.points[item.points.size() - 2], item.points.back(),
                      item.stroke);
      }
      break;
    }
    case SceneItem::Shape::kText:
      break;
  }
  if (item.hatched) {
    painter->setPen(Qt::NoPen);
    painter->setBrush(QBrush(QColor(0, 0, 0, 90), Qt::BDiagPattern));
    painter->drawRect(item.rect);
  }
  if (!item.text.isEmpty()) {
    const QString text = DrawableText(item.text);
    QFont font = painter->font();
    font.setPointSizeF(item.font_size);
    font.setBold(item.bold);
    painter->setFont(font);
    painter->setPen(item.text_color);
    const QRectF text_rect =
        item.shape == SceneItem::Shape::kText ? item.rect : item.rect.adjusted(3, 1, -3, -1);
    const bool polyline =
        item.shape == SceneItem::Shape::kPolyline || item.shape == SceneItem::Shape::kBezier;
    if (polyline) {
      // Edge labels sit in rect, on a white backing so they stay readable over lines.
      painter->fillRect(painter->boundingRect(text_rect, item.align, text),
                        QColor(255, 255, 255, 220));
    }
    painter->drawText(text_rect, item.align, text);
  }
}

void PaintScene(const Scene& scene, QPainter* painter) {
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setRenderHint(QPainter::TextAntialiasing);
  painter->fillRect(QRectF(QPointF(0, 0), scene.bounds.size()), scene.background);
  painter->translate(-scene.bounds.topLeft());
  for (const SceneItem& item : scene.items) PaintItem(item, painter);
  painter->restore();
}

store::Status SaveScene(const Scene& scene, const std::string& path, double png_scale) {
  const QString file = QString::fromStdString(path);
  const QString suffix = QFileInfo(file).suffix().toLower();
  const QSize size = scene.bounds.size().toSize().expandedTo(QSize(1, 1));
  if (suffix == "svg") {
    QSvgGenerator svg;
    svg.setFileName(file);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle("Shardscope");
    QPainter painter;
    if (!painter.begin(&svg)) {
      return store::Status(store::StatusCode::kIoError, path + ": cannot write the SVG file");
    }
    PaintScene(scene, &painter);
    painter.end();
    if (!QFileInfo::exists(file)) {
      return store::Status(store::StatusCode::kIoError, path + ": cannot write the SVG file");
    }
    return store::Status::Ok();
  }
  if (suffix == "png") {
    const double scale = png_scale > 0 ? png_scale : 2;
    QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
    image.fill(scene.background);
    QPainter painter(&image);
    painter.scale(scale, scale);
    PaintScene(scene, &painter);
    painter.end();
    if (!image.save(file, "PNG")) {
      return store::Status(store::StatusCode::kIoError, path + ": cannot write the PNG file");
    }
    return store::Status::Ok();
  }
  return store::Status(
      store::StatusCode::kInvalidInput,
      path + ": unknown picture format '" + suffix.toStdString() + "': use .svg or .png");
}

}  // namespace shardscope::viewer
