#include "shardscope/viewer/mesh_scene.h"

#include <QStringList>
#include <algorithm>
#include <cmath>
#include <map>

#include "shardscope/viewer/rank_colors.h"

namespace shardscope::viewer {
namespace {

constexpr double kCellMax = 46;   // small meshes: big cells with the rank number
constexpr double kCellText = 20;  // below this a cell is a heat-map square (tooltip only)
constexpr double kCellMin = 4;
constexpr double kGap = 24;
constexpr double kPanelExtraW = 44, kPanelExtraH = 40;  // captions around a panel's grid

QString GroupText(std::vector<int> group, int offset) {
  for (int& r : group) r += offset;
  return "{" + RankText(group) + "}";
}

QString AxisName(const DeviceMesh& mesh, int a) { return DisplayAxisName(mesh.axis_name(a)); }

// One panel: fixed leading coordinates and rows [row_begin, row_end) of the grid.
struct Panel {
  std::vector<int64_t> lead;
  int64_t row_begin = 0, row_end = 1;
  QString caption;
};

}  // namespace

Scene BuildMeshScene(const DeviceMesh& mesh, const MeshSceneOptions& options) {
  Scene scene;
  const int n = mesh.num_axes();
  const std::vector<int64_t> shape(mesh.shape().begin(), mesh.shape().end());
  std::vector<QString> axis_names;  // once: every rank's tooltip names them
  for (int a = 0; a < n; ++a) axis_names.push_back(AxisName(mesh, a));
  // The grid: rows and columns are axes (mixed radix), the other axes small multiples
  // (panels). Small meshes: the last two axes; many panels: every axis in the grid, split
  // where rows and columns come out closest. A 1-D mesh wraps into rows of `wrap` ranks.
  std::vector<int> row_axes, col_axes, lead_axes;
  if (n >= 1) col_axes = {n - 1};
  if (n >= 2) row_axes = {n - 2};
  for (int a = 0; a + 2 < n; ++a) lead_axes.push_back(a);
  int64_t leads = 1;
  for (int a : lead_axes) leads *= mesh.axis_size(a);
  if (leads > 16) {
    int best_k = 1;
    double best = 1e300;
    for (int k = 1; k < n; ++k) {
      double r = 1, c = 1;
      for (int a = 0; a < n; ++a) (a < k ? r : c) *= static_cast<double>(mesh.axis_size(a));
      const double skew = std::abs(std::log(r / c));
      if (skew < best) best = skew, best_k = k;
    }
    row_axes.clear(), col_axes.clear(), lead_axes.clear();
    for (int a = 0; a < n; ++a) (a < best_k ? row_axes : col_axes).push_back(a);
    leads = 1;
  }
  const bool wrapped = n == 1 && mesh.size() > 16;
  int64_t wrap = mesh.size();
  if (wrapped) {
    wrap = 8;
    while (wrap * wrap < mesh.size()) wrap *= 2;
  }
  auto extent = [&](const std::vector<int>& axes) {
    int64_t e = 1;
    for (int a : axes) e *= mesh.axis_size(a);
    return e;
  };
  int64_t cols = wrapped ? wrap : extent(col_axes);
  int64_t rows = wrapped ? (mesh.size() + wrap - 1) / wrap : extent(row_axes);
  auto axes_text = [&](const std::vector<int>& axes) {
    QStringList names;
    for (int a : axes) names << AxisName(mesh, a);
    return names.join("×");
  };
  // Mixed-radix digits of `index` over `axes`, written into coords.
  auto spread = [&](int64_t index, const std::vector<int>& axes, std::vector<int64_t>* coords) {
    for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
      (*coords)[axes[i]] = index % mesh.axis_size(axes[i]);
      index /= mesh.axis_size(axes[i]);
    }
  };
  // A tall grid is cut into chunks of rows placed side by side; chunks and panels per row
  // are chosen for the largest cells that fit the picture's cap.
  const double max_w = std::clamp(options.max_size.width(), 400.0, 1400.0);
  const double max_h = std::clamp(options.max_size.height(), 300.0, 1000.0);
  struct Fit {
    double cell = 0;
    int per_row = 1;
    int64_t chunk = 1;
  };
  auto best_fit = [&](int64_t grid_rows, int64_t grid_cols, int64_t panels) {
    Fit best{0, 1, grid_rows};
    for (int64_t try_chunk = grid_rows; try_chunk >= 1;
         try_chunk = try_chunk > 4 ? (try_chunk + 1) / 2 : 0) {
      const int64_t count = panels * ((grid_rows + try_chunk - 1) / try_chunk);
      for (int64_t p = 1; p <= std::min<int64_t>(count, 64); ++p) {
        const int64_t panel_rows = (count + p - 1) / p;
        const double w = (max_w - static_cast<double>(p) * (kPanelExtraW + kGap)) /
                         static_cast<double>(p * grid_cols);
        const double h = (max_h - static_cast<double>(panel_rows) * (kPanelExtraH + kGap)) /
                         static_cast<double>(panel_rows * try_chunk);
        const double fit = std::min({w, h, kCellMax});
        if (fit > best.cell * 1.05) best = {fit, static_cast<int>(p), try_chunk};
      }
    }
    return best;
  };
  Fit fit = best_fit(rows, cols, leads);
  // Each panel costs its captions: when the panels leave cells too small for numbers, every
  // axis goes into one grid (rows some axes, columns the others) if its cells come out larger.
  if (!wrapped && !lead_axes.empty() && fit.cell < kCellText) {
    for (int mask = 1; mask + 1 < (1 << n); ++mask) {
      std::vector<int> r, c;
      for (int a = 0; a < n; ++a) ((mask >> a) & 1 ? r : c).push_back(a);
      const Fit one_grid = best_fit(extent(r), extent(c), 1);
      if (one_grid.cell <= fit.cell * 1.2) continue;
      fit = one_grid;
      row_axes = r, col_axes = c, lead_axes.clear();
      leads = 1, rows = extent(r), cols = extent(c);
    }
  }
  const int64_t chunk = fit.chunk;
  const int per_row = fit.per_row;
  double cell = fit.cell;
  const int64_t chunks = (rows + chunk - 1) / chunk;
  const int64_t panel_count = leads * chunks;
  cell = std::max(cell, kCellMin);
  // A number only where it fits its cell at a readable size (bold digits ~0.7 em wide).
  const double digits = QString::number(std::max(0, mesh.size() - 1)).size();
  const double number_font = std::min({12.0, cell * 0.3, (cell - 12) / (0.72 * digits)});
  const bool numbered = cell >= kCellText && number_font >= 6;
  const double pad = numbered ? 4 : cell >= 8 ? 1 : 0;

  std::vector<int> group_of(mesh.size(), -1);
  std::vector<std::vector<int>> groups;
  if (!options.axes.empty()) {
    groups = mesh.Groups(options.axes);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (int r : groups[g]) group_of[r] = static_cast<int>(g);
    }
  }
  // Colour: the mesh coordinates; with groups, the coordinates off the group's axes (one
  // colour per group).
  auto colour_of = [&](const std::vector<int64_t>& coords) {
    if (options.axes.empty()) return MeshColor(coords, shape);
    std::vector<int64_t> c, s;
    for (int a = 0; a < n; ++a) {
      if (std::find(options.axes.begin(), options.axes.end(), a) != options.axes.end()) continue;
      c.push_back(coords[a]);
      s.push_back(shape[a]);
    }
    return s.empty() ? QColor(120, 160, 210) : MeshColor(c, s);
  };

  double y = 0;
  QString heading = options.title.isEmpty() ? "" : options.title + ": ";
  heading += DisplayLayoutText(QString::fromStdString(mesh.ToString()));
  heading += options.rank_offset == 0 ? QString("  (%1 ranks)").arg(mesh.size())
                                      : QString("  (ranks %1-%2 of the run)")
                                            .arg(options.rank_offset)
                                            .arg(options.rank_offset + mesh.size() - 1);
  scene.items.push_back(TextItem(QRectF(0, y, 900, 20), heading, 11, true));
  y += 22;
  if (!numbered) {  // its own line: the dock may be narrow
    scene.items.push_back(
        TextItem(QRectF(0, y, 600, 14), "colour = mesh coordinates; hover a cell for its rank", 8));
    y += 16;
  }
  y += 2;

  std::vector<Panel> panels;
  for (int64_t p = 0; p < panel_count; ++p) {
    Panel panel;
    panel.lead.assign(n, 0);
    spread(p / chunks, lead_axes, &panel.lead);
    panel.row_begin = (p % chunks) * chunk;
    panel.row_end = std::min(rows, panel.row_begin + chunk);
    QStringList where;
    for (int a : lead_axes) where << AxisName(mesh, a) + "=" + QString::number(panel.lead[a]);
    if (chunks > 1) {
      const QString axis = wrapped                ? "ranks "
                           : row_axes.size() == 1 ? AxisName(mesh, row_axes[0]) + "="
                                                  : "rows ";
      const int64_t scale = wrapped ? wrap : 1;
      where << axis + QString("%1-%2").arg(panel.row_begin * scale).arg(panel.row_end * scale - 1);
    }
    panel.caption = where.join(" ");
    panels.push_back(std::move(panel));
  }

  const double panel_w = static_cast<double>(cols) * cell + kPanelExtraW;
  const double panel_h = static_cast<double>(chunk) * cell + kPanelExtraH;
  double max_x = 320;
  int64_t ranks_drawn = 0;
  std::vector<SceneItem> outlines;
  // Every rank's tooltip names its group: each group's text once (4096 ranks, groups of 512).
  std::vector<QString> group_texts(groups.size());
  auto group_text = [&](int g) -> const QString& {
    if (group_texts[g].isEmpty()) group_texts[g] = GroupText(groups[g], options.rank_offset);
    return group_texts[g];
  };
  for (size_t p = 0; p < panels.size() && scene.items.size() < kMaxSceneItems; ++p) {
    const Panel& panel = panels[p];
    const double ox = static_cast<double>(p % per_row) * (panel_w + kGap);
    const double oy = y + static_cast<double>(p / per_row) * (panel_h + kGap);
    if (!panel.caption.isEmpty())
      scene.items.push_back(TextItem(QRectF(ox, oy, panel_w + kGap - 2, 16), panel.caption,
                                     panel_w > 110 ? 9 : 7, true));
    double gx = ox + 36, gy = oy + 18;
    // Axis captions: columns across the top, rows down the left.
    if (!col_axes.empty() && (p < static_cast<size_t>(per_row))) {
      const QString across =
          wrapped
              ? QString("%1 (%2), %3 per row →").arg(AxisName(mesh, 0)).arg(mesh.size()).arg(wrap)
              : axes_text(col_axes) + " (" + QString::number(cols) + ") →";
      scene.items.push_back(
          TextItem(QRectF(gx, gy - 2, std::max(cols * cell, 60.0), 14), across, 8, false, 0x0081));
    }
    if (!row_axes.empty() && p % per_row == 0) {
      scene.items.push_back(TextItem(QRectF(ox, gy + 14, 34, 28),
                                     axes_text(row_axes) + "\n(" + QString::number(rows) + ") ↓", 8,
                                     false, 0x0084));
    }
    gy += 14;
    std::map<int, QRectF> group_rect;
    std::map<int, int64_t> group_cells;
    for (int64_t r = panel.row_begin; r < panel.row_end; ++r) {
      for (int64_t c = 0; c < cols && scene.items.size() < kMaxSceneItems; ++c) {
        std::vector<int64_t> coords = panel.lead;
        if (wrapped) {
          if (r * wrap + c >= mesh.size()) break;
          coords = {r * wrap + c};
        } else {
          spread(r, row_axes, &coords);
          spread(c, col_axes, &coords);
        }
        ++ranks_drawn;
        const int rank = n == 0 ? 0 : mesh.rank_at(coords);
        const QRectF box(gx + static_cast<double>(c) * cell,
                         gy + static_cast<double>(r - panel.row_begin) * cell, cell - pad,
                         cell - pad);
        const QColor fill = colour_of(coords);
        const QString named = QString::number(rank + options.rank_offset);
        SceneItem item = BoxItem(box, fill, numbered ? named : "", "rank", rank);
        item.font_size = number_font;
        item.bold = true;
        item.stroke = numbered ? QColor(60, 60, 60) : Qt::transparent;
        item.stroke_width = numbered ? 1 : 0;
        QStringList coord_text;
        for (int a = 0; a < n; ++a) coord_text << axis_names[a] + "=" + QString::number(coords[a]);
        item.tooltip = "rank " + named + " at " + coord_text.join(", ");
        if (group_of[rank] >= 0) {
          item.tooltip += "\ngroup " + group_text(group_of[rank]);
          group_rect[group_of[rank]] |= box;
          ++group_cells[group_of[rank]];
        }
        if (rank == options.selected_rank) {
          item.stroke = QColor(200, 0, 0);
          item.stroke_width = 3;
        }
        scene.items.push_back(item);
      }
    }
    // Outlined where a group's cells fill a rectangle (a group strided over the rows of a
    // flattened grid is told apart by its colour alone).
    for (const auto& [g, rect] : group_rect) {
      const auto area = std::llround(rect.width() / cell) * std::llround(rect.height() / cell);
      if (area != group_cells[g]) continue;
      SceneItem outline = BoxItem(rect.adjusted(-pad / 2 - 0.5, -pad / 2 - 0.5, 0.5, 0.5),
                                  Qt::transparent, "", "group", g);
      outline.stroke = QColor(20, 20, 20);
      outline.stroke_width = std::clamp(cell * 0.08, 1.2, 2.5);
      outline.tooltip = "group " + group_text(g);
      outlines.push_back(outline);
    }
    max_x = std::max(max_x, ox + panel_w);
  }
  for (SceneItem& outline : outlines) {
    if (scene.items.size() >= kMaxSceneItems) break;
    scene.items.push_back(std::move(outline));
  }
  const auto panel_rows = static_cast<int64_t>((panels.size() + per_row - 1) / per_row);
  y += static_cast<double>(panel_rows) * (panel_h + kGap);
  if (ranks_drawn < mesh.size()) {
    scene.items.push_back(
        CapNote(QRectF(0, y, 640, 16), mesh.size() - ranks_drawn, mesh.size(), "ranks"));
    y += 20;
  }
  if (!groups.empty()) {
    QStringList names;
    for (int a : options.axes) names << AxisName(mesh, a);
    // Two lines: the picture may be narrow (one group of 8 ranks).
    scene.items.push_back(TextItem(QRectF(0, y, std::max(max_x, 300.0), 16),
                                   QString("%1 rank group%2 of %3 along %4")
                                       .arg(groups.size())
                                       .arg(groups.size() == 1 ? "" : "s")
                                       .arg(groups.front().size())
                                       .arg(names.join(",")),
                                   9, true));
    y += 16;
    scene.items.push_back(TextItem(QRectF(0, y, std::max(max_x, 300.0), 14),
                                   "a colour each; outlined where adjacent:", 8));
    y += 16;
    // The first groups, then the pattern: every group is the first shifted.
    constexpr size_t kListed = 6;
    for (size_t g = 0; g < groups.size() && g < kListed; ++g) {
      const int first = groups[g].front();
      SceneItem swatch = BoxItem(QRectF(4, y + 2, 12, 12), colour_of(mesh.coords_of(first)), "");
      swatch.role = "legend";
      scene.items.push_back(swatch);
      scene.items.push_back(
          TextItem(QRectF(22, y, 700, 16), GroupText(groups[g], options.rank_offset), 9));
      y += 16;
    }
    if (groups.size() > kListed) {
      std::vector<int> firsts;
      for (size_t g = kListed; g < groups.size(); ++g)
        firsts.push_back(groups[g].front() + options.rank_offset);
      scene.items.push_back(TextItem(QRectF(22, y, 700, 16),
                                     QString("… %1 more like these, starting at ranks %2")
                                         .arg(groups.size() - kListed)
                                         .arg(RankText(firsts)),
                                     9));
      y += 16;
    }
  }
  scene.bounds = QRectF(-8, -8, max_x + 16, y + 16);
  return scene;
}

}  // namespace shardscope::viewer
