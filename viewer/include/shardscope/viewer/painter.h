// Painting a Scene with QPainter: on screen, into a PNG (QImage) or an SVG (QSvgGenerator).
//
// SaveScene works without a display as long as a QGuiApplication exists (the offscreen
// platform is enough: QT_QPA_PLATFORM=offscreen).
#pragma once

#include <QPainter>
#include <string>

#include "shardscope/store/status.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

void PaintItem(const SceneItem& item, QPainter* painter);
// Fills the background and paints every item, translated so that bounds.topLeft() is at 0,0.
void PaintScene(const Scene& scene, QPainter* painter);
// Writes `scene` to `path`: SVG for *.svg, PNG for *.png (`png_scale` pixels per point: 2
// for sharp text, less for a thumbnail); any other extension is kInvalidInput. Errors name
// the file.
store::Status SaveScene(const Scene& scene, const std::string& path, double png_scale = 2);

}  // namespace shardscope::viewer
