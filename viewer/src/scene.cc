#include "shardscope/viewer/scene.h"

#include <cmath>

#include "shardscope/base/format.h"

namespace shardscope::viewer {

std::vector<const SceneItem*> Scene::Find(const QString& role, int64_t id) const {
  std::vector<const SceneItem*> found;
  for (const SceneItem& item : items) {
    if (item.role == role && (id < 0 || item.id == id)) found.push_back(&item);
  }
  return found;
}

SceneItem TextItem(const QRectF& rect, const QString& text, double font_size, bool bold,
                   int align) {
  SceneItem item;
  item.shape = SceneItem::Shape::kText;
  item.rect = rect;
  item.text = text;
  item.font_size = font_size;
  item.bold = bold;
  item.align = align;
  item.role = "label";
  return item;
}

SceneItem BoxItem(const QRectF& rect, const QColor& fill, const QString& text, const QString& role,
                  int64_t id) {
  SceneItem item;
  item.shape = SceneItem::Shape::kRect;
  item.rect = rect;
  item.fill = fill;
  item.stroke = QColor(60, 60, 60);
  item.text = text;
  item.text_color = TextColorOn(fill);
  item.role = role;
  item.id = id;
  return item;
}

QColor PaletteColor(int index) {
  // Tableau 20 (pairs: strong, light), strong colours first.
  static const unsigned kColors[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2,
                                     0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac,
                                     0xa0cbe8, 0xffbe7d, 0x8cd17d, 0xff9d9a, 0x86bcb6,
                                     0xf1ce63, 0xd4a6c8, 0xfabfd2, 0xd7b5a6, 0x79706e};
  const int n = sizeof(kColors) / sizeof(kColors[0]);
  return QColor::fromRgb(kColors[((index % n) + n) % n]);
}

QColor TextColorOn(const QColor& fill) {
  if (fill.alpha() < 128) return Qt::black;
  const double luma = 0.299 * fill.red() + 0.587 * fill.green() + 0.114 * fill.blue();
  return luma < 140 ? Qt::white : Qt::black;
}

QString FormatBytes(double bytes) { return QString::fromStdString(shardscope::FormatBytes(bytes)); }

}  // namespace shardscope::viewer
