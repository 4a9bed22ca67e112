#include "shardscope/viewer/tensor_scene.h"

#include <QStringList>
#include <algorithm>

#include "shardscope/viewer/rank_colors.h"

namespace shardscope::viewer {
namespace {

constexpr double kMinCellW = 78;
constexpr double kSliceExtraW = 56;  // a slice's row labels left of its grid
constexpr double kCellH = 40;

QString Join(const std::vector<int>& values) { return JoinNumbers(values); }

QString ShapeText(const Shape& shape) { return "[" + JoinNumbers(shape, ", ") + "]"; }

QString AxesText(const Layout& layout, const std::vector<int>& axes) {
  QStringList names;
  for (int a : axes) names << QString::fromStdString(layout.mesh().axis_name(a));
  return names.join(",");
}

// The element ranges of block `index` (per dimension block coordinates).
QString RangeText(const Layout& layout, const std::vector<int64_t>& index) {
  const Shape shard = layout.ShardShape();
  QStringList parts;
  for (size_t d = 0; d < index.size(); ++d) {
    parts << QString("%1:%2").arg(index[d] * shard[d]).arg((index[d] + 1) * shard[d]);
  }
  return "[" + parts.join(", ") + "]";
}

std::vector<int> Shifted(std::vector<int> ranks, int offset) {
  for (int& r : ranks) r += offset;
  return ranks;
}

std::vector<int64_t> Unlinear(int64_t linear, const std::vector<int64_t>& per_dim) {
  std::vector<int64_t> index(per_dim.size(), 0);
  for (int d = static_cast<int>(per_dim.size()) - 1; d >= 0; --d) {
    index[d] = linear % per_dim[d];
    linear /= per_dim[d];
  }
  return index;
}

}  // namespace

QString DescribeBlocks(const Layout& layout) {
  const auto owners = layout.BlockOwners();
  const auto per_dim = layout.BlocksPerDim();
  QStringList lines;
  for (size_t b = 0; b < owners.size(); ++b) {
    const auto index = Unlinear(static_cast<int64_t>(b), per_dim);
    std::vector<int> idx(index.begin(), index.end());
    lines << QString("block (%1) %2: ranks %3")
                 .arg(Join(idx), RangeText(layout, index), RankText(owners[b]));
  }
  return lines.join("\n");
}

Scene BuildTensorScene(const Layout& layout, const TensorSceneOptions& options) {
  Scene scene;
  const int dims = layout.rank();
  const auto per_dim = layout.BlocksPerDim();
  auto owners = layout.BlockOwners();
  if (options.rank_offset != 0) {
    for (auto& o : owners) o = Shifted(std::move(o), options.rank_offset);
  }
  const int64_t rows = dims >= 2 ? per_dim[dims - 2] : 1;
  const int64_t cols = dims >= 1 ? per_dim[dims - 1] : 1;
  int64_t slices = 1;
  for (int d = 0; d + 2 < dims; ++d) slices *= per_dim[d];

  double y = 0;
  const QString title = options.title.isEmpty() ? "tensor" : options.title;
  scene.items.push_back(TextItem(QRectF(0, y, 700, 18),
                                 title + "  " +
                                     DisplayLayoutText(QString::fromStdString(layout.ToString())) +
                                     "  shape " + ShapeText(layout.shape()),
                                 11, true));
  y += 20;
  QString caption = "shard " + ShapeText(layout.ShardShape()) + " on every rank; " +
                    QString::number(layout.NumBlocks()) + " block(s) on " +
                    QString::fromStdString(layout.mesh().ToString());
  scene.items.push_back(TextItem(QRectF(0, y, 700, 16), caption, 9));
  y += 16;
  if (options.rank_offset != 0) {  // a line of its own: beside another map, captions are cut
    scene.items.push_back(TextItem(QRectF(0, y, 700, 16),
                                   QString("a pipeline stage's mesh: ranks %1-%2 of the run")
                                       .arg(options.rank_offset)
                                       .arg(options.rank_offset + layout.mesh().size() - 1),
                                   9));
    y += 16;
  }
  if (layout.ReplicationFactor() > 1) {
    scene.items.push_back(TextItem(QRectF(0, y, 700, 16),
                                   QString("each block held by %1 replicas (axes %2 not used)")
                                       .arg(layout.ReplicationFactor())
                                       .arg(AxesText(layout, layout.replica_axes())),
                                   9));
    y += 16;
  }
  if (layout.is_partial()) {
    scene.items.push_back(TextItem(
        QRectF(0, y, 700, 16),
        QString("hatched: partial sum over %1 — the %2 ranks of a block hold addends, not copies")
            .arg(AxesText(layout, layout.partial_axes()))
            .arg(layout.PartialFactor()),
        9));
    y += 16;
  }
  y += 8;

  const std::vector<int64_t> rank_block = options.rank >= 0 && options.rank < layout.mesh().size()
                                              ? layout.BlockIndex(options.rank)
                                              : std::vector<int64_t>{};
  // Many slices: up to 8 a row, and at most kMaxSlices drawn (the rest are like them); at
  // most kMaxMapBlocks blocks in all, so a map costs the same at any rank count.
  constexpr int64_t kMaxSlices = 32;
  const int64_t drawn_slices = std::clamp(kMaxMapBlocks / std::max<int64_t>(1, rows * cols),
                                          int64_t{1}, std::min(slices, kMaxSlices));
  // A grid larger than the cap: its first rows (and columns) are drawn.
  const int64_t shown_cols = std::min(cols, kMaxMapBlocks);
  const int64_t shown_rows = std::min(rows, std::max<int64_t>(1, kMaxMapBlocks / shown_cols));
  // Wide enough for the longest "ranks a,b,c" label drawn.
  size_t longest = 0;
  const auto drawn_blocks = std::min<size_t>(owners.size(), drawn_slices * rows * cols);
  for (size_t b = 0; b < drawn_blocks; ++b)
    longest = std::max<size_t>(longest, RankText(owners[b]).size() + 6);
  // Wide slices (many blocks across) fewer a row, so the map stays within ~720 points.
  const int wide_limit =
      std::max(1, static_cast<int>(720.0 / (kSliceExtraW + 20 + static_cast<double>(shown_cols))));
  const int per_row = std::min(wide_limit, drawn_slices <= 4    ? static_cast<int>(drawn_slices)
                                           : drawn_slices <= 16 ? 4
                                                                : 8);
  const int64_t slice_rows = (drawn_slices + per_row - 1) / per_row;
  // Cells shrink to keep the map within ~720 x 560 points; small cells drop their text
  // (heat map: colour and tooltip).
  const double text_w =
      std::max(kMinCellW, 6.0 * static_cast<double>(std::min<size_t>(longest, 40)) + 12);
  const double cell_w =
      std::clamp(560.0 / static_cast<double>(per_row * shown_cols) - 4, 1.0, text_w);
  const double cell_h = std::clamp((320.0 - 54.0 * static_cast<double>(slice_rows - 1)) /
                                           static_cast<double>(slice_rows * shown_rows) -
                                       2,
                                   1.0, kCellH);
  const bool labelled = cell_w >= 40 && cell_h >= 18;
  const double gap = labelled ? 3 : std::min(cell_w, cell_h) >= 8 ? 1 : 0;  // cells stay visible
  const double slice_w = kSliceExtraW + shown_cols * cell_w;
  const double slice_h = 38 + shown_rows * cell_h;
  double max_x = 480;
  int64_t blocks_drawn = 0;
  for (int64_t s = 0; s < drawn_slices && scene.items.size() < kMaxSceneItems; ++s) {
    std::vector<int64_t> lead(std::max(0, dims - 2), 0);
    int64_t rest = s;
    for (int d = dims - 3; d >= 0; --d) {
      lead[d] = rest % per_dim[d];
      rest /= per_dim[d];
    }
    const double ox = (s % per_row) * (slice_w + 20);
    const double oy = y + (s / per_row) * (slice_h + 16);
    if (!lead.empty()) {
      QStringList where;
      for (size_t d = 0; d < lead.size(); ++d) {
        where << (slice_w >= 120 ? QString("dim %1 block %2") : QString("d%1:%2"))
                     .arg(d)
                     .arg(lead[d]);
      }
      scene.items.push_back(TextItem(QRectF(ox, oy, slice_w + 18, 14), where.join(", "), 8, true));
    }
    const double gx = ox + 52;
    const double gy = oy + 30;
    if (dims >= 1 && shown_cols * cell_w >= 48) {  // a narrower grid: the tooltip names its axes
      QString col_label = QString("dim %1").arg(dims - 1);
      if (!layout.dim_axes(dims - 1).empty()) {
        col_label += " over " + AxesText(layout, layout.dim_axes(dims - 1));
      }
      scene.items.push_back(TextItem(QRectF(gx, oy + 14, shown_cols * cell_w, 14), col_label + " →",
                                     8, false, 0x0084));
    }
    if (dims >= 2) {
      QString row_label = QString("dim %1").arg(dims - 2);
      if (!layout.dim_axes(dims - 2).empty()) {
        row_label += "\n" + AxesText(layout, layout.dim_axes(dims - 2));
      }
      scene.items.push_back(TextItem(QRectF(ox, gy, 50, 30), row_label + " ↓", 8, false, 0x0084));
    }
    for (int64_t r = 0; r < shown_rows && blocks_drawn < kMaxMapBlocks; ++r) {
      for (int64_t c = 0; c < shown_cols && blocks_drawn < kMaxMapBlocks; ++c) {
        ++blocks_drawn;
        std::vector<int64_t> index = lead;
        if (dims >= 2) index.push_back(r);
        if (dims >= 1) index.push_back(c);
        int64_t linear = 0;
        for (int d = 0; d < dims; ++d) linear = linear * per_dim[d] + index[d];
        QColor fill = DataColor(index, per_dim);
        const bool mine = !rank_block.empty() && index == rank_block;
        if (!rank_block.empty() && !mine) fill = QColor(235, 235, 235);
        QString text = "ranks " + RankText(owners[linear]);
        if (owners[linear].size() == 1) text = "rank " + Join(owners[linear]);
        SceneItem block =
            BoxItem(QRectF(gx + c * cell_w, gy + r * cell_h, cell_w - gap, cell_h - gap), fill,
                    labelled ? text : QString(), "block", linear);
        if (!owners[linear].empty()) block.key = QString::number(owners[linear].front());
        if (!labelled && !mine) block.stroke = Qt::transparent;
        block.text_color = Qt::black;
        block.font_size = owners[linear].size() > 8 ? 7 : 9;
        block.hatched = layout.is_partial();
        block.tooltip = "block (" + JoinNumbers(index) + ") " + RangeText(layout, index) +
                        " held by ranks " + RankText(owners[linear]);
        if (mine) {
          block.stroke = QColor(200, 0, 0);
          block.stroke_width = 3;
        } else if (static_cast<size_t>(linear) < options.changed_blocks.size() &&
                   options.changed_blocks[linear] && std::min(cell_w, cell_h) >= 4) {
          // (Smaller cells: an outline would hide the colour; the frame's bands show it.)
          block.stroke = QColor(230, 120, 0);
          block.stroke_width = std::clamp(std::min(cell_w, cell_h) * 0.12, 0.8, 2.5);
        }
        scene.items.push_back(block);
      }
    }
    max_x = std::max(max_x, ox + slice_w + 10);
  }
  y += static_cast<double>(slice_rows) * (slice_h + 16);
  if (drawn_slices < slices) {
    scene.items.push_back(TextItem(QRectF(0, y, 700, 16),
                                   QString("… %1 more slices like these (slices %2-%3)")
                                       .arg(slices - drawn_slices)
                                       .arg(drawn_slices)
                                       .arg(slices - 1),
                                   9));
    y += 18;
  }
  // Blocks cut inside the slices drawn (the slices left out are told above).
  if (const auto blocks = static_cast<int64_t>(owners.size());
      blocks_drawn < std::min(blocks, drawn_slices * rows * cols)) {
    scene.items.push_back(TextItem(QRectF(0, y, 700, 16),
                                   QString("%1 of %2 blocks drawn (at most %3 a map); the others "
                                           "follow the same pattern")
                                       .arg(blocks_drawn)
                                       .arg(blocks)
                                       .arg(kMaxMapBlocks),
                                   9));
    scene.items.back().role = "note";
    y += 20;
  }
  if (options.rank >= 0 && !rank_block.empty()) {
    const int rank = options.rank;
    std::vector<int> idx(rank_block.begin(), rank_block.end());
    QString text =
        QString("rank %1 holds block (%2) = elements %3, shard %4")
            .arg(rank + options.rank_offset)
            .arg(Join(idx), RangeText(layout, rank_block), ShapeText(layout.ShardShape()));
    if (layout.ReplicationFactor() > 1)
      text += "; same data on ranks " +
              RankText(Shifted(layout.ReplicaGroup(rank), options.rank_offset));
    if (layout.is_partial())
      text +=
          "; sums with ranks " + RankText(Shifted(layout.PartialGroup(rank), options.rank_offset));
    scene.items.push_back(TextItem(QRectF(0, y, std::max(max_x, 600.0), 16), text, 9, true));
    y += 18;
  }
  scene.bounds = QRectF(-8, -8, max_x + 16, y + 16);
  return scene;
}

}  // namespace shardscope::viewer
