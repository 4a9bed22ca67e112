// Scene: a picture as plain data (shapes, text, colours), built by the views and drawn by
// PaintScene (QPainter: screen, PNG, SVG) or turned into QGraphicsItems by the GUI, so the
// same description is shown on screen and rendered headless.
//
// Coordinates are in points, y down. Every item says what it depicts (`role`, `id`) so a
// click or a test can find it: role "operator" id = operator id, "cluster" (key = scope or
// worker), "edge", "redistribution" id = redistribution id, "send_recv", "tensor", "rank"
// id = rank, "block" id = linear block index, "legend", "label".
#pragma once

#include <QColor>
#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <cstdint>
#include <vector>

namespace shardscope::viewer {

struct SceneItem {
  enum class Shape { kRect, kRoundedRect, kEllipse, kPolyline, kBezier, kText };
  Shape shape = Shape::kRect;
  QRectF rect;         // boxes and the box text is laid out in
  QPolygonF points;    // polylines; beziers as start + (control, control, end)*
  bool arrow = false;  // an arrow head at the last point
  QColor fill = Qt::transparent;
  QColor stroke = Qt::black;
  double stroke_width = 1;
  bool dashed = false;
  bool hatched = false;  // diagonal hatching over the fill (partial sums)
  QString text;          // drawn centred in rect (kText: aligned by `align`)
  QColor text_color = Qt::black;
  double font_size = 9;
  bool bold = false;
  int align = 0x0084;  // Qt::AlignCenter
  QString role;
  QString key;      // e.g. a cluster's scope
  int64_t id = -1;  // the operator, redistribution, rank or block it depicts
  QString tooltip;
};

// Items per view at most: a run file may list millions of spans, ranks or blocks; views stop
// adding at the cap and say what they left out.
inline constexpr size_t kMaxSceneItems = 20000;

struct Scene {
  QRectF bounds;
  QColor background = Qt::white;
  std::vector<SceneItem> items;  // drawn in order
  // Items with `role` (and `id` when >= 0), in order.
  std::vector<const SceneItem*> Find(const QString& role, int64_t id = -1) const;
};

// Helpers the views share.
// "Not drawn: 120 of 20120 ranks (a view draws at most 20000 items).", role "note".
SceneItem CapNote(const QRectF& rect, int64_t left_out, int64_t total, const QString& what);
SceneItem TextItem(const QRectF& rect, const QString& text, double font_size = 9, bool bold = false,
                   int align = 0x0081 /* left | vcenter */);
SceneItem BoxItem(const QRectF& rect, const QColor& fill, const QString& text,
                  const QString& role = {}, int64_t id = -1);
// A palette of distinguishable colours; index wraps around.
QColor PaletteColor(int index);
// Light text on dark fills, dark text on light ones.
QColor TextColorOn(const QColor& fill);
// "0,4,2,6" (separator ","), "[2, 4]" with JoinNumbers(shape, ", ") wrapped by the caller.
template <typename Int>
QString JoinNumbers(const std::vector<Int>& values, const QString& separator = ",") {
  QString text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) text += separator;
    text += QString::number(values[i]);
  }
  return text;
}
// Ranks as a person reads them: "3", "0-7", "0-1023 step 128" for arithmetic runs of 3 or
// more; other sets list their first 8: "0,5,9,... (40 ranks)".
template <typename Int>
QString RankText(const std::vector<Int>& ranks) {
  const size_t n = ranks.size();
  if (n >= 3) {
    const long long step = static_cast<long long>(ranks[1]) - static_cast<long long>(ranks[0]);
    bool regular = step > 0;
    for (size_t i = 2; i < n && regular; ++i) {
      regular = static_cast<long long>(ranks[i]) - static_cast<long long>(ranks[i - 1]) == step;
    }
    if (regular) {
      const QString range = QString("%1-%2").arg(ranks.front()).arg(ranks.back());
      return step == 1 ? range : range + QString(" step %1").arg(step);
    }
  }
  constexpr size_t kListed = 8;
  if (n <= kListed) return JoinNumbers(ranks);
  return JoinNumbers(std::vector<Int>(ranks.begin(), ranks.begin() + kListed)) +
         QString(",\u2026 (%1 ranks)").arg(n);
}
// shardscope::FormatBytes as a QString: "1.5 KiB", "312 B".
QString FormatBytes(double bytes);

// Text from a run file as it may be drawn (screen, PNG, SVG, tooltips): control characters
// but newlines as their Unicode pictures (ESC -> U+241B) or U+FFFD, bidirectional overrides
// and what XML cannot hold (unpaired surrogates, U+FFFE, U+FFFF) as U+FFFD; cut to max_chars.
// PaintItem draws every text through it, so an SVG is valid XML whatever the file holds.
inline constexpr int kMaxDrawnChars = 2000;
QString DrawableText(const QString& text, int max_chars = kMaxDrawnChars);
// A tooltip shown as plain text: Qt would take "<b>..." from a file as rich text.
QString PlainToolTip(const QString& text);

}  // namespace shardscope::viewer
