#include "shardscope/viewer/mesh_scene.h"

#include <QStringList>

namespace shardscope::viewer {
namespace {

constexpr double kCell = 46;
constexpr double kGap = 24;

QString GroupText(const std::vector<int>& group) { return "{" + RankText(group) + "}"; }

}  // namespace

Scene BuildMeshScene(const DeviceMesh& mesh, const MeshSceneOptions& options) {
  Scene scene;
  const int n = mesh.num_axes();
  // Grid axes: the last two (rows, columns); panels: every coordinate of the others.
  const int row_axis = n >= 2 ? n - 2 : -1;
  const int col_axis = n >= 1 ? n - 1 : -1;
  const int64_t rows = row_axis >= 0 ? mesh.axis_size(row_axis) : 1;
  const int64_t cols = col_axis >= 0 ? mesh.axis_size(col_axis) : 1;
  int64_t panels = 1;
  for (int a = 0; a + 2 < n; ++a) panels *= mesh.axis_size(a);

  std::vector<int> group_of(mesh.size(), -1);
  std::vector<std::vector<int>> groups;
  if (!options.axes.empty()) {
    groups = mesh.Groups(options.axes);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (int r : groups[g]) group_of[r] = static_cast<int>(g);
    }
  }

  double y = 0;
  QString heading = options.title.isEmpty() ? "" : options.title + ": ";
  heading += QString::fromStdString(mesh.ToString());
  scene.items.push_back(TextItem(QRectF(0, y, 640, 20), heading, 11, true));
  y += 24;
  const double panel_w = cols * kCell + 40;
  const double panel_h = rows * kCell + 40;
  const int per_row = panels <= 4 ? static_cast<int>(panels) : 4;
  double max_x = 320;
  int64_t ranks_drawn = 0;
  for (int64_t p = 0; p < panels && scene.items.size() < kMaxSceneItems; ++p) {
    // Leading coordinates of this panel, row-major.
    std::vector<int64_t> lead(std::max(0, n - 2), 0);
    int64_t rest = p;
    for (int a = n - 3; a >= 0; --a) {
      lead[a] = rest % mesh.axis_size(a);
      rest /= mesh.axis_size(a);
    }
    const double ox = (p % per_row) * (panel_w + kGap);
    const double oy = y + (p / per_row) * (panel_h + kGap);
    QStringList where;
    for (int a = 0; a + 2 < n; ++a) {
      where << QString::fromStdString(mesh.axis_name(a)) + "=" + QString::number(lead[a]);
    }
    double gx = ox + 36, gy = oy + 18;
    if (!where.isEmpty())
      scene.items.push_back(TextItem(QRectF(ox, oy, panel_w, 16), where.join(" "), 9, true));
    // Axis captions: columns across the top, rows down the left.
    if (col_axis >= 0) {
      scene.items.push_back(TextItem(
          QRectF(gx, gy - 2, cols * kCell, 14),
          QString::fromStdString(mesh.axis_name(col_axis)) + " (" + QString::number(cols) + ") →",
          8, false, 0x0084));
    }
    if (row_axis >= 0) {
      scene.items.push_back(TextItem(
          QRectF(ox, gy + 14, 34, 28),
          QString::fromStdString(mesh.axis_name(row_axis)) + "\n(" + QString::number(rows) + ") ↓",
          8, false, 0x0084));
    }
    gy += 14;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols && scene.items.size() < kMaxSceneItems; ++c) {
        ++ranks_drawn;
        std::vector<int64_t> coords = lead;
        if (row_axis >= 0) coords.push_back(r);
        if (col_axis >= 0) coords.push_back(c);
        const int rank = n == 0 ? 0 : mesh.rank_at(coords);
        const QColor fill =
            group_of[rank] >= 0 ? PaletteColor(group_of[rank]).lighter(130) : QColor(235, 238, 243);
        SceneItem cell = BoxItem(QRectF(gx + c * kCell, gy + r * kCell, kCell - 4, kCell - 4), fill,
                                 QString::number(rank), "rank", rank);
        cell.text_color = Qt::black;
        cell.font_size = 12;
        cell.bold = true;
        QStringList coord_text;
        for (int a = 0; a < n; ++a) {
          coord_text << QString::fromStdString(mesh.axis_name(a)) + "=" +
                            QString::number(coords[a]);
        }
        cell.tooltip = "rank " + QString::number(rank) + " at " + coord_text.join(", ");
        if (rank == options.selected_rank) {
          cell.stroke = QColor(200, 0, 0);
          cell.stroke_width = 3;
        }
        scene.items.push_back(cell);
      }
    }
    max_x = std::max(max_x, ox + panel_w);
  }
  const int64_t panel_rows = (panels + per_row - 1) / per_row;
  y += static_cast<double>(panel_rows) * (panel_h + kGap);
  if (ranks_drawn < mesh.size()) {
    scene.items.push_back(
        CapNote(QRectF(0, y, 640, 16), mesh.size() - ranks_drawn, mesh.size(), "ranks"));
    y += 20;
  }
  if (!groups.empty()) {
    QStringList names;
    for (int a : options.axes) names << QString::fromStdString(mesh.axis_name(a));
    scene.items.push_back(
        TextItem(QRectF(0, y, 600, 16), "rank groups along " + names.join(",") + ":", 9, true));
    y += 18;
    for (size_t g = 0; g < groups.size() && scene.items.size() < kMaxSceneItems; ++g) {
      SceneItem swatch =
          BoxItem(QRectF(4, y + 2, 12, 12), PaletteColor(static_cast<int>(g)).lighter(130), "");
      swatch.role = "legend";
      scene.items.push_back(swatch);
      scene.items.push_back(TextItem(QRectF(22, y, 400, 16), GroupText(groups[g]), 9));
      y += 16;
    }
  }
  scene.bounds = QRectF(-8, -8, max_x + 16, y + 16);
  return scene;
}

}  // namespace shardscope::viewer
