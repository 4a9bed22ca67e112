#include "frame_animation.h"

#include <QPainter>
#include <QRegularExpression>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "shardscope/viewer/painter.h"

namespace shardscope::gui {
namespace {

using viewer::Scene;
using viewer::SceneItem;

// The pieces travel during the first part; the blocks after fade in as they land.
constexpr double kTravelEnd = 0.8;
constexpr double kLandingStart = 0.65;

double Ramp(double t, double from, double to) {
  return std::clamp((t - from) / (to - from), 0.0, 1.0);
}

QRectF Lerp(const QRectF& a, const QRectF& b, double u) {
  return {a.left() + (b.left() - a.left()) * u, a.top() + (b.top() - a.top()) * u,
          a.width() + (b.width() - a.width()) * u, a.height() + (b.height() - a.height()) * u};
}

// "sums 4 partial addends" (the "Σ" item's tooltip): how many addends a summed piece shows.
int Addends(const SceneItem& sum) {
  static const QRegularExpression number("(\\d+)");
  const auto match = number.match(sum.tooltip);
  return std::clamp(match.hasMatch() ? match.captured(1).toInt() : 2, 2, 4);
}

}  // namespace

FrameTween PlanTween(const Scene& frame) {
  FrameTween tween;
  const auto& items = frame.items;
  // Block items by id: one in the map before, one in the map after (to its right).
  std::multimap<int64_t, size_t> blocks;
  std::map<int64_t, int> addends;  // of the blocks after marked "Σ"
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].role == "block") blocks.emplace(items[i].id, i);
    if (items[i].role == "sum") addends[items[i].id] = Addends(items[i]);
  }
  auto block = [&](int64_t id, auto&& fits) -> std::optional<size_t> {
    for (auto [it, end] = blocks.equal_range(id); it != end; ++it)
      if (fits(items[it->second].rect)) return it->second;
    return std::nullopt;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const SceneItem& item = items[i];
    if (item.role == "move" || item.role == "sum") tween.arriving.push_back(i);
    if (item.role != "source") continue;
    tween.arriving.push_back(i);
    // "B>A": from block B before to block A after, whose band holds the piece.
    const QStringList ends = item.key.split('>');
    if (ends.size() != 2) continue;
    const QPointF centre = item.rect.center();
    const auto to = block(ends[1].toLongLong(), [&](const QRectF& r) {
      return r.adjusted(-0.01, -0.01, 0.01, 0.01).contains(centre);
    });
    if (!to) continue;
    const QRectF box = items[*to].rect;
    const auto from =
        block(ends[0].toLongLong(), [&](const QRectF& r) { return r.right() <= box.left(); });
    if (!from) continue;
    // The band is the foot of the block after (30 %); the piece's place scales to the block.
    const double band_top = box.bottom() - box.height() * 0.3;
    const double band_h = box.height() * 0.3;
    FrameTween::Piece piece;
    piece.from = items[*from].rect;
    piece.to =
        QRectF(item.rect.left(), box.top() + (item.rect.top() - band_top) / band_h * box.height(),
               item.rect.width(), item.rect.height() / band_h * box.height());
    piece.fill = items[*from].fill;
    if (auto sum = addends.find(items[*to].id); sum != addends.end()) piece.addends = sum->second;
    tween.pieces.push_back(piece);
    tween.arriving.push_back(*to);
  }
  std::sort(tween.arriving.begin(), tween.arriving.end());
  tween.arriving.erase(std::unique(tween.arriving.begin(), tween.arriving.end()),
                       tween.arriving.end());
  return tween;
}

void PaintTweenBase(const Scene& frame, const FrameTween& tween, QPainter* painter) {
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setRenderHint(QPainter::TextAntialiasing);
  painter->fillRect(QRectF(QPointF(0, 0), frame.bounds.size()), frame.background);
  painter->translate(-frame.bounds.topLeft());
  auto next = tween.arriving.begin();
  for (size_t i = 0; i < frame.items.size(); ++i) {
    if (next != tween.arriving.end() && *next == i) {
      ++next;
      continue;
    }
    viewer::PaintItem(frame.items[i], painter);
  }
  painter->restore();
}

void PaintTweenMotion(const Scene& frame, const FrameTween& tween, double t, QPainter* painter) {
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  painter->translate(-frame.bounds.topLeft());
  // The arrows faint from the start (where things go), the blocks after as the pieces land.
  const double landing = Ramp(t, kLandingStart, 1);
  for (size_t i : tween.arriving) {
    const SceneItem& item = frame.items[i];
    const bool arrow = item.role == "move";
    if (!arrow && landing == 0) continue;
    painter->setOpacity(arrow ? 0.3 + 0.7 * landing : landing);
    viewer::PaintItem(item, painter);
  }
  const double travel = Ramp(t, 0, kTravelEnd);
  painter->setOpacity(1 - Ramp(t, kTravelEnd, 1));
  for (const FrameTween::Piece& piece : tween.pieces) {
    const QRectF at = Lerp(piece.from, piece.to, travel);
    // Partial sums: a stack of addends whose offsets close up as they arrive.
    for (int k = piece.addends - 1; k >= 0; --k) {
      const double offset = 5.0 * k * (1 - travel);
      const QRectF card = at.translated(offset, offset);
      painter->setPen(QPen(piece.fill.darker(160), 1));
      painter->setBrush(piece.fill);
      painter->drawRect(card);
      if (piece.addends > 1 && travel < 1) {
        painter->setPen(Qt::NoPen);
        painter->setBrush(
            QBrush(QColor(0, 0, 0, static_cast<int>(90 * (1 - travel))), Qt::BDiagPattern));
        painter->drawRect(card);
      }
    }
  }
  painter->restore();
}

}  // namespace shardscope::gui
