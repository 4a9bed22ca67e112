// Colours that say where a rank sits on its mesh, and axis names as a person reads them.
//
// MeshColor: hue from the leading axes (mixed radix), lightness from the last axis, so ranks
// that differ in any coordinate differ in colour; a large mesh (or a 1-D one) folds its
// row-major index into (index / k, index % k) first. Same coordinates, same colour everywhere.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>
#include <vector>

namespace shardscope::viewer {

// The colour of `coords` on a mesh of `shape` (coords[a] < shape[a]).
QColor MeshColor(const std::vector<int64_t>& coords, const std::vector<int64_t>& shape);

// The colour of the data in block `index` of a grid of `blocks` blocks per dimension: from
// the block's centre as a fraction of the tensor, so a block that moves keeps its colour and
// a finer grid shades within its coarser block's colour.
QColor DataColor(const std::vector<int64_t>& index, const std::vector<int64_t>& blocks);

// Synthesized factor axes ("d_0", "a_2": the redistribution planner splits an axis into its
// factors) as "d₀", "a₂"; other names unchanged.
QString DisplayAxisName(const QString& name);
QString DisplayAxisName(const std::string& name);
// Every synthesized axis name inside a layout or mesh text: "[a.v | d_0.b]" -> "[a.v | d₀.b]".
QString DisplayLayoutText(const QString& text);

}  // namespace shardscope::viewer
