// Colours that say where a rank sits on its mesh, and axis names as a person reads them.
//
// MeshColor: hue from the leading axes (mixed radix), lightness from the last axis, so ranks
// that differ in any coordinate differ in colour at any mesh size (a 1-D mesh is folded into
// two coordinates first); the same coordinates give the same colour in every view.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>
#include <vector>

namespace shardscope::viewer {

// The colour of `coords` on a mesh of `shape` (coords[a] < shape[a]).
QColor MeshColor(const std::vector<int64_t>& coords, const std::vector<int64_t>& shape);

// Synthesized factor axes ("d_0", "a_2": the redistribution planner splits an axis into its
// factors) as "d₀", "a₂"; other names unchanged.
QString DisplayAxisName(const QString& name);
QString DisplayAxisName(const std::string& name);
// Every synthesized axis name inside a layout or mesh text: "[a.v | d_0.b]" -> "[a.v | d₀.b]".
QString DisplayLayoutText(const QString& text);

}  // namespace shardscope::viewer
