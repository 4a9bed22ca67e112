// FrameTween: the motion between two stepper frames (issue 21, "animation between frames").
// The pieces a step moves travel from their blocks before to their place in the blocks after,
// in the colour of their data; partial sums arrive as a stack of hatched addends that merge
// into one summed block. A tween only paints: the frame itself stays the static frame, and
// at t = 1 the picture is exactly viewer::PaintScene of that frame.
#pragma once

#include <QColor>
#include <QRectF>
#include <vector>

#include "shardscope/viewer/scene.h"

class QPainter;

namespace shardscope::gui {

struct FrameTween {
  struct Piece {
    QRectF from, to;  // its source block before; its place inside the block after
    QColor fill;      // the source block's data colour (kept while it moves)
    int addends = 1;  // > 1: partial sums, drawn as a stack that merges on arrival
  };
  std::vector<Piece> pieces;
  // Items of the frame that appear as the pieces land: the blocks after that receive them,
  // the sender bands, "Σ" and the arrows (indices into Scene::items, ascending).
  std::vector<size_t> arriving;
  bool empty() const { return pieces.empty(); }
};

// The motion drawn by a redistribution frame (viewer::BuildRedistributionFrame): one piece per
// "source" band piece (every moved block drawn, not only those with arrows), from its block
// before to its place in its block after. Empty when the frame moves nothing.
FrameTween PlanTween(const viewer::Scene& frame);

// The still part of the picture during the tween: PaintScene without the arriving items.
void PaintTweenBase(const viewer::Scene& frame, const FrameTween& tween, QPainter* painter);
// The moving part at time t in [0, 1) (eased by the caller), over PaintTweenBase's picture,
// in scene coordinates as PaintScene uses them.
void PaintTweenMotion(const viewer::Scene& frame, const FrameTween& tween, double t,
                      QPainter* painter);

}  // namespace shardscope::gui
