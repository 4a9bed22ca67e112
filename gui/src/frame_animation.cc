#include "frame_animation.h"

#include <QPainter>
#include <QRegularExpression>
#include <algorithm>
#include <cmath>

#include "shardscope/viewer/painter.h"

namespace shardscope::gui {
namespace {

using viewer::Scene;
using viewer::SceneItem;

bool Near(double a, double b) { return std::abs(a - b) < 0.01; }

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
  std::vector<size_t> blocks;
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].role == "block") blocks.push_back(i);
  // Each band piece ("source") follows the arrow of its before block, when drawn.
  const SceneItem* arrow = nullptr;
  for (size_t i = 0; i < items.size(); ++i) {
    const SceneItem& item = items[i];
    if (item.role == "move" && item.points.size() >= 2) {
      arrow = &item;
      tween.arriving.push_back(i);
    } else if (item.role == "sum") {
      tween.arriving.push_back(i);
    } else if (item.role == "source") {
      tween.arriving.push_back(i);
      if (arrow == nullptr) continue;
      const QPointF a = arrow->points.front(), z = arrow->points.back();
      const SceneItem* from = nullptr;
      const SceneItem* to = nullptr;
      size_t to_index = 0;
      for (size_t b : blocks) {
        const SceneItem& block = items[b];
        if (!from && Near(block.rect.right(), a.x()) && Near(block.rect.center().y(), a.y()))
          from = &block;
        if (!to && block.id == arrow->id && Near(block.rect.center().x(), z.x()) &&
            Near(block.rect.center().y(), z.y())) {
          to = &block;
          to_index = b;
        }
      }
      arrow = nullptr;
      if (!from || !to) continue;
      // The band is the foot of the block after (30 %); the piece's place scales to the block.
      const QRectF box = to->rect;
      const double band_top = box.bottom() - box.height() * 0.3;
      const double band_h = box.height() * 0.3;
      FrameTween::Piece piece;
      piece.from = from->rect;
      piece.to =
          QRectF(item.rect.left(), box.top() + (item.rect.top() - band_top) / band_h * box.height(),
                 item.rect.width(), item.rect.height() / band_h * box.height());
      piece.fill = from->fill;
      for (const SceneItem* sum : frame.Find("sum", to->id)) piece.addends = Addends(*sum);
      tween.pieces.push_back(piece);
      tween.arriving.push_back(to_index);
    }
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
