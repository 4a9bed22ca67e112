#include "shardscope/viewer/scene.h"

#include <algorithm>
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

SceneItem CapNote(const QRectF& rect, int64_t left_out, int64_t total, const QString& what) {
  SceneItem note = TextItem(rect,
                            QString("Not drawn: %1 of %2 %3 (a view draws at most %4 items).")
                                .arg(left_out)
                                .arg(total)
                                .arg(what)
                                .arg(kMaxSceneItems),
                            9);
  note.role = "note";
  return note;
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

QString DrawableText(const QString& text, int max_chars) {
  QString out;
  out.reserve(std::min<qsizetype>(text.size(), max_chars) + 1);
  const qsizetype n = text.size();
  for (qsizetype i = 0; i < n; ++i) {
    if (out.size() >= max_chars) {
      out += QChar(0x2026);  // …
      break;
    }
    const char16_t c = text[i].unicode();
    if (QChar::isHighSurrogate(c) && i + 1 < n && QChar::isLowSurrogate(text[i + 1].unicode())) {
      out += text[i];
      out += text[++i];
    } else if (c == '\n') {
      out += text[i];
    } else if (c < 0x20) {
      out += QChar(0x2400 + c);  // the Control Pictures block: U+241B for ESC
    } else if (c == 0x7f) {
      out += QChar(0x2421);
    } else if ((c >= 0x80 && c <= 0x9f) || QChar::isSurrogate(c) || c == 0xfffe || c == 0xffff ||
               c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
               (c >= 0x2066 && c <= 0x2069)) {
      out += QChar(QChar::ReplacementCharacter);
    } else {
      out += text[i];
    }
  }
  return out;
}

QString PlainToolTip(const QString& text) {
  if (text.isEmpty()) return text;
  // Rich text with the whole text escaped: shown literally, line breaks kept.
  return "<p style='white-space:pre-wrap'>" + DrawableText(text).toHtmlEscaped() + "</p>";
}

}  // namespace shardscope::viewer
