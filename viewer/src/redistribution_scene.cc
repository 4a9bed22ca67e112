#include "shardscope/viewer/redistribution_scene.h"

#include <QStringList>
#include <algorithm>
#include <map>

#include "redistribution_movement.h"
#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/layout_text.h"
#include "shardscope/viewer/rank_colors.h"
#include "shardscope/viewer/tensor_scene.h"

namespace shardscope::viewer {
namespace {

store::Status Invalid(const std::string& message) {
  return store::Status(store::StatusCode::kInvalidInput, message);
}

store::Result<Layout> LayoutOn(const RunData& run, const std::string& text, int64_t mesh_id,
                               const std::vector<int64_t>& shape, const std::string& context) {
  const store::MeshRecord* record = run.Mesh(mesh_id);
  if (!record) return Invalid(context + ": mesh " + std::to_string(mesh_id) + " is not in the run");
  auto mesh = MeshFromRecord(*record);
  if (!mesh.ok()) return Invalid(context + ": " + mesh.status().message());
  auto layout = ParseStoredLayout(text, *mesh, shape);
  if (!layout.ok()) return Invalid(context + ": " + layout.status().message());
  return *layout;
}

// Places `scene` into `into` at offset (dx, dy); its blocks' rects by block index in `blocks`.
void Append(const Scene& scene, double dx, double dy, Scene* into,
            std::map<int64_t, QRectF>* blocks) {
  const QPointF offset = QPointF(dx, dy) - scene.bounds.topLeft();
  for (SceneItem item : scene.items) {
    item.rect.translate(offset);
    item.points.translate(offset);
    if (item.role == "block") (*blocks)[item.id] = item.rect;
    into->items.push_back(item);
  }
}

// The sources of the blocks after a frame traces, each traced once.
class Sources {
 public:
  Sources(const Layout& before, const Layout& after)
      : before_(before),
        after_(after),
        before_owners_(before.BlockOwners()),
        after_owners_(after.BlockOwners()) {}
  const std::vector<BlockSource>& Of(size_t b) {
    auto it = traced_.find(b);
    if (it != traced_.end()) return it->second;
    const int receiver = after_owners_[b].empty() ? -1 : after_owners_[b].front();
    return traced_[b] =
               BlockSources(before_, after_, static_cast<int64_t>(b), before_owners_, receiver);
  }
  const std::vector<std::vector<int>>& after_owners() const { return after_owners_; }

 private:
  const Layout& before_;
  const Layout& after_;
  std::vector<std::vector<int>> before_owners_, after_owners_;
  std::map<size_t, std::vector<BlockSource>> traced_;
};

// The blocks after whose arrows are drawn (see FrameOptions); ranks named plus `offset`.
std::vector<size_t> ArrowTargets(const Layout& after, const BlockMovement& m, Sources* sources,
                                 int rank, int offset, QString* caption) {
  std::vector<size_t> moved;
  size_t arrows = 0;
  for (size_t b = 0; b < m.changed.size(); ++b) {
    if (!m.changed[b]) continue;
    moved.push_back(b);
    // Counted while few: past the cap one block is drawn in full.
    if (arrows <= static_cast<size_t>(kMaxFrameArrows)) arrows += sources->Of(b).size();
  }
  if (moved.empty()) return {};
  if (rank >= 0 && rank < after.mesh().size()) {
    const auto b = static_cast<size_t>(after.LinearBlockIndex(rank));
    *caption = QString("arrows: where rank %1's block comes from").arg(rank + offset);
    return m.changed[b] ? std::vector<size_t>{b} : std::vector<size_t>{};
  }
  if (arrows <= static_cast<size_t>(kMaxFrameArrows)) {
    *caption = "arrows: where every moved block comes from";
    return moved;
  }
  const auto& owners = sources->after_owners();
  std::vector<int> firsts, first_block = owners[moved.front()];
  for (size_t b : moved) firsts.push_back(owners[b].empty() ? -1 : owners[b].front() + offset);
  for (int& r : first_block) r += offset;
  *caption = QString(
                 "arrows: block of ranks %1 drawn in full; the other %2 moved blocks move "
                 "alike (first holders %3)")
                 .arg(RankText(first_block))
                 .arg(moved.size() - 1)
                 .arg(RankText(std::vector<int>(firsts.begin() + 1, firsts.end())));
  return {moved.front()};
}

// Arrows from the blocks before into `targets`; the pieces' senders as a band in every moved
// block drawn (`moved`, targets first), each piece keyed by its block before; sums.
void DrawMovement(const Layout& before, const Layout& after, const BlockMovement& m,
                  const std::vector<size_t>& targets, const std::vector<size_t>& moved,
                  Sources* sources, const std::map<int64_t, QRectF>& from,
                  const std::map<int64_t, QRectF>& to, Scene* scene) {
  const Shape shard = after.ShardShape();
  const int dims = after.rank();
  const std::vector<int64_t> mesh_shape(before.mesh().shape().begin(), before.mesh().shape().end());
  size_t pieces = 0;
  for (size_t b : moved) {
    const bool arrows = std::find(targets.begin(), targets.end(), b) != targets.end();
    if (!arrows && pieces >= static_cast<size_t>(kMaxFramePieces)) break;
    auto dst = to.find(static_cast<int64_t>(b));
    if (dst == to.end()) continue;
    const QRectF box = dst->second;
    if (!arrows && std::min(box.width(), box.height()) < 4) continue;  // a band too thin to see
    const QRectF band(box.left(), box.bottom() - box.height() * 0.3, box.width(),
                      box.height() * 0.3);
    const std::vector<int64_t> index = [&] {
      std::vector<int64_t> i(dims);
      int64_t rest = static_cast<int64_t>(b);
      const auto per = after.BlocksPerDim();
      for (int d = dims - 1; d >= 0; --d) i[d] = rest % per[d], rest /= per[d];
      return i;
    }();
    for (const BlockSource& s : sources->Of(b)) {
      auto src = from.find(s.before_block);
      if (arrows && src != from.end()) {
        SceneItem arrow;
        arrow.shape = SceneItem::Shape::kBezier;
        const QPointF a(src->second.right(), src->second.center().y());
        const QPointF z = box.center();  // the middle: arrows into inner blocks stay apart
        const double bend = std::max(20.0, (z.x() - a.x()) * 0.4);
        arrow.points << a << QPointF(a.x() + bend, a.y()) << QPointF(z.x() - bend, z.y()) << z;
        arrow.arrow = true;
        arrow.stroke = QColor(40, 40, 40, 150);
        arrow.stroke_width = 1.2;
        arrow.role = "move";
        arrow.id = static_cast<int64_t>(b);
        arrow.tooltip = QString("block %1 before → block %2 after, from rank %3")
                            .arg(s.before_block)
                            .arg(b)
                            .arg(s.source_rank);
        scene->items.push_back(arrow);
      }
      // The piece's place inside the target, along its last two dimensions, in the band.
      double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
      if (dims >= 1 && shard[dims - 1] > 0) {
        const double base = static_cast<double>(index[dims - 1] * shard[dims - 1]);
        x0 =
            (static_cast<double>(s.offset[dims - 1]) - base) / static_cast<double>(shard[dims - 1]);
        x1 = x0 + static_cast<double>(s.extent[dims - 1]) / static_cast<double>(shard[dims - 1]);
      }
      if (dims >= 2 && shard[dims - 2] > 0) {
        const double base = static_cast<double>(index[dims - 2] * shard[dims - 2]);
        y0 =
            (static_cast<double>(s.offset[dims - 2]) - base) / static_cast<double>(shard[dims - 2]);
        y1 = y0 + static_cast<double>(s.extent[dims - 2]) / static_cast<double>(shard[dims - 2]);
      }
      const QColor colour = s.source_rank >= 0 && s.source_rank < before.mesh().size()
                                ? MeshColor(before.mesh().coords_of(s.source_rank), mesh_shape)
                                : QColor(200, 200, 200);
      SceneItem piece =
          BoxItem(QRectF(band.left() + x0 * band.width(), band.top() + y0 * band.height(),
                         (x1 - x0) * band.width(), (y1 - y0) * band.height()),
                  colour, "", "source", s.source_rank);
      // A thin white edge tells pieces apart where they are large enough to see.
      piece.stroke = piece.rect.width() >= 6 ? QColor(255, 255, 255, 160) : QColor(Qt::transparent);
      piece.stroke_width = 0.5;
      piece.tooltip = QString("from rank %1").arg(s.source_rank);
      // Where it travels from and to (frame_animation): "block before>block after".
      piece.key = QString("%1>%2").arg(s.before_block).arg(b);
      scene->items.push_back(piece);
      ++pieces;
    }
    if (m.summed && (arrows || box.width() >= 40)) {  // "Σ" where it fits beside the arrows
      SceneItem sum = BoxItem(QRectF(box.right() - 16, box.top() + 1, 15, 14),
                              QColor(255, 255, 255), "Σ", "sum", static_cast<int64_t>(b));
      sum.font_size = 9;
      sum.bold = true;
      sum.tooltip = QString("sums %1 partial addends").arg(before.PartialFactor());
      scene->items.push_back(sum);
    }
  }
}

// A pipeline stage's steps number its ranks 0..k-1; shown as the run's (MeshRankOffset).
QString Ranks(std::vector<int64_t> ranks, int64_t offset) {
  for (int64_t& r : ranks) r += offset;
  return "{" + RankText(ranks) + "}";
}

// The layout after step `k`: on the mesh recorded with the step. Older files recorded none:
// then the plan mesh, or (a last step that renames axes into the target mesh) the target or
// source mesh, the first that parses.
store::Result<Layout> StepLayout(const RunData& run, const store::RedistributionRecord& r, int k,
                                 const std::vector<int64_t>& shape, const std::string& context) {
  const store::RedistStepRecord& step = r.steps[static_cast<size_t>(k)];
  const std::string where = context + " step " + std::to_string(k);
  if (step.mesh_id != store::kNone)
    return LayoutOn(run, step.layout_after, step.mesh_id, shape, where);
  auto on_plan = LayoutOn(run, step.layout_after, r.plan_mesh_id, shape, where);
  if (on_plan.ok()) return on_plan;
  for (int64_t mesh : {r.to_mesh_id, r.from_mesh_id}) {
    auto other = LayoutOn(run, step.layout_after, mesh, shape, where);
    if (other.ok()) return other;
  }
  return on_plan.status();
}

}  // namespace

int FrameCount(const store::RedistributionRecord& r) {
  return std::max<int>(1, static_cast<int>(r.steps.size()));
}

store::Result<Scene> BuildRedistributionFrame(const RunData& run,
                                              const store::RedistributionRecord& light, int step,
                                              const FrameOptions& options) {
  // The transfers of irregular steps stay in the file until a frame of the run's own record
  // needs them (a caller's edited copy is drawn as given).
  const auto full = run.details && run.Redistribution(light.id) == &light
                        ? run.RedistributionInFull(light.id)
                        : nullptr;
  const store::RedistributionRecord& r = full ? *full : light;
  const std::string context = run.run.name + ": redistribution " + std::to_string(r.id);
  if (step < 0 || step >= FrameCount(r)) {
    return Invalid(context + ": step " + std::to_string(step) + " out of range (it has " +
                   std::to_string(r.steps.size()) + " steps)");
  }
  const store::TensorRecord* tensor = run.Tensor(r.tensor_id);
  if (!tensor) return Invalid(context + ": tensor " + std::to_string(r.tensor_id) + " not found");
  const auto& shape = tensor->shape;
  const bool has_steps = !r.steps.empty();
  // Before: the source layout (step 0) or the previous step's result, on the plan mesh.
  auto before = step == 0 ? LayoutOn(run, r.from_layout, r.from_mesh_id, shape, context)
                          : StepLayout(run, r, step - 1, shape, context);
  if (!before.ok()) return before.status();
  auto after = has_steps ? StepLayout(run, r, step, shape, context)
                         : LayoutOn(run, r.to_layout, r.to_mesh_id, shape, context);
  if (!after.ok()) return after.status();

  Scene scene;
  double y = 0;
  const store::OperatorRecord* consumer = run.Operator(r.consumer_op);
  const QString title =
      QString("redistribution %1 of %2 → %3   step %4 of %5")
          .arg(r.id)
          .arg(QString::fromStdString(tensor->name))
          .arg(consumer ? QString::fromStdString(consumer->name) : QString("optimizer"))
          .arg(step + 1)
          .arg(FrameCount(r));
  scene.items.push_back(TextItem(QRectF(0, y, 900, 18), title, 12, true));
  y += 20;
  scene.items.push_back(TextItem(QRectF(0, y, 900, 16),
                                 QString::fromStdString(r.from_layout + "  →  " + r.to_layout +
                                                        "    (" + DescribeCollectives(r) + ")"),
                                 9));
  y += 16;
  if (!r.reason.empty()) {
    scene.items.push_back(
        TextItem(QRectF(0, y, 900, 16), "why: " + QString::fromStdString(r.reason), 8));
    y += 16;
  }
  y += 6;
  // Step header: what moves.
  if (has_steps) {
    const auto& s = r.steps[step];
    QString what = QString::fromStdString(s.kind);
    if (!s.axis_names.empty()) {
      QStringList axes;
      for (const auto& a : s.axis_names) axes << QString::fromStdString(a);
      what += " along " + axes.join(",");
    }
    if (s.dim >= 0) what += QString(", tensor dim %1").arg(s.dim);
    if (s.dim_to >= 0) what += QString(" → dim %1").arg(s.dim_to);
    scene.items.push_back(TextItem(QRectF(0, y, 900, 16),
                                   "step " + QString::number(step + 1) + ": " + what, 10, true));
    y += 18;
    if (!s.reason.empty()) {
      // Word-wrapped over up to three lines: reasons are sentences.
      scene.items.push_back(TextItem(QRectF(0, y, 900, 36), QString::fromStdString(s.reason), 8,
                                     false, 0x1000 | 0x0001 | 0x0020));
      y += 38;
    }
  } else {
    scene.items.push_back(TextItem(QRectF(0, y, 900, 16),
                                   "no communication: the consumer reads the producer's buffer", 10,
                                   true));
    y += 18;
  }
  // Maps before and after, side by side; changed blocks compared by elements (the mesh and
  // the block count may differ).
  const BlockMovement movement = ChangedBlocks(*before, *after);
  const store::MeshRecord* plan_mesh = run.Mesh(r.plan_mesh_id);
  const int offset = plan_mesh ? static_cast<int>(MeshRankOffset(*plan_mesh)) : 0;
  TensorSceneOptions before_options;
  before_options.title = "before";
  before_options.rank_offset = offset;
  const Scene before_scene = BuildTensorScene(*before, before_options);
  TensorSceneOptions after_options;
  after_options.title = "after";
  after_options.rank_offset = offset;
  after_options.changed_blocks = movement.changed;
  const Scene after_scene = BuildTensorScene(*after, after_options);
  std::map<int64_t, QRectF> from, to;
  Append(before_scene, 0, y, &scene, &from);
  const double right = before_scene.bounds.width() + 90;  // room for the arrows
  Append(after_scene, right, y, &scene, &to);
  QString arrows_caption;
  Sources sources(*before, *after);
  // options.rank is a rank of the run: on a stage's mesh, its own rank there (else none).
  const int rank = options.rank >= offset && options.rank - offset < after->mesh().size()
                       ? options.rank - offset
                       : -1;
  const auto targets = ArrowTargets(*after, movement, &sources, rank, offset, &arrows_caption);
  // Bands (and the motion) for the arrows' blocks, then every other moved block drawn.
  std::vector<size_t> moved = targets;
  if (rank < 0) {
    for (const auto& [b, rect] : to) {
      const auto block = static_cast<size_t>(b);
      if (block < movement.changed.size() && movement.changed[block] &&
          std::find(targets.begin(), targets.end(), block) == targets.end())
        moved.push_back(block);
    }
  }
  DrawMovement(*before, *after, movement, targets, moved, &sources, from, to, &scene);
  y += std::max(before_scene.bounds.height(), after_scene.bounds.height()) + 8;
  if (!arrows_caption.isEmpty()) {
    scene.items.push_back(TextItem(QRectF(0, y, 1100, 16),
                                   arrows_caption +
                                       "; colour = which elements (kept as they move); band = "
                                       "the sending rank",
                                   8));
    y += 18;
  }

  // Who exchanges what (left), the running total against the lower bound (right).
  const double exchanges_top = y;
  if (has_steps) {
    const auto& s = r.steps[step];
    scene.items.push_back(TextItem(QRectF(0, y, 900, 16), "who exchanges:", 9, true));
    y += 16;
    // Only the lines shown are expanded: a step over thousands of ranks is a pattern.
    constexpr int64_t kShown = 16;
    QStringList lines;
    int64_t total = 0;
    if (!s.transfers.empty()) {
      total = s.transfers.size();
      for (const auto& t : s.transfers.Expand(kShown)) {
        QStringList box;
        for (size_t d = 0; d < t.offset.size() && d < t.extent.size(); ++d) {
          box << QString("%1:%2").arg(t.offset[d]).arg(t.offset[d] + t.extent[d]);
        }
        lines << QString("r%1 → r%2  [%3]")
                     .arg(t.src + offset)
                     .arg(t.dst + offset)
                     .arg(box.join(", "));
      }
    } else if (!s.groups.empty()) {
      // One group in full; the others are the same collective on shifted ranks.
      total = s.groups.size();
      lines << "group " + Ranks(s.groups.Group(0), offset);
      if (total > 1) {
        std::vector<int64_t> firsts;
        for (int64_t g = 1; g < total; ++g) firsts.push_back(s.groups.Group(g).front() + offset);
        lines << QString("%1 more group%2 like it, of %3 ranks, starting at %4 %5")
                     .arg(total - 1)
                     .arg(total > 2 ? "s" : "")
                     .arg(s.groups.group_size())
                     .arg(total > 2 ? "ranks" : "rank")
                     .arg(RankText(firsts));
        total = static_cast<int64_t>(lines.size());
      }
    } else {
      total = 1;
      lines << "each rank on its own (no messages)";
    }
    for (const QString& text : lines) {
      SceneItem line = TextItem(QRectF(12, y, 620, 14), text, 8);
      line.role = "exchange";
      scene.items.push_back(line);
      y += 14;
    }
    if (total > lines.size()) {
      scene.items.push_back(
          TextItem(QRectF(12, y, 880, 14), QString("... %1 more").arg(total - lines.size()), 8));
      y += 14;
    }
    if (!s.zero_ranks.empty()) {
      scene.items.push_back(TextItem(QRectF(12, y, 880, 14),
                                     "ranks that zero their block: " + Ranks(s.zero_ranks, offset),
                                     8));
      y += 14;
    }
    y += 6;
    scene.items.push_back(TextItem(
        QRectF(0, y, 630, 16),
        QString("this step: %1 sent, %2 received per rank (max), %3 messages, %4 ms predicted")
            .arg(FormatBytes(static_cast<double>(s.bytes_sent_max)),
                 FormatBytes(static_cast<double>(s.bytes_recv_max)))
            .arg(s.messages)
            .arg(s.seconds * 1e3, 0, 'f', 3),
        9));
    y += 18;
  }
  const double exchanges_bottom = y;
  y = has_steps ? exchanges_top : y;
  const double bx = has_steps ? 640 : 0;  // the bars' column
  int64_t running = 0;
  for (int k = 0; k <= step && k < static_cast<int>(r.steps.size()); ++k) {
    running += r.steps[k].bytes_recv_max;
  }
  const double scale_max = static_cast<double>(
      std::max<int64_t>({r.bytes, r.lower_bound_bytes, running, static_cast<int64_t>(1)}));
  const double bar_w = has_steps ? 300 : 420;
  auto bar = [&](const QString& label, int64_t bytes, const QColor& colour) {
    scene.items.push_back(TextItem(QRectF(bx, y, 175, 16), label, 9));
    SceneItem back = BoxItem(QRectF(bx + 180, y + 2, bar_w, 12), QColor(240, 240, 240), "");
    back.stroke = QColor(200, 200, 200);
    scene.items.push_back(back);
    SceneItem fill = BoxItem(QRectF(bx + 180, y + 2, bar_w * bytes / scale_max, 12), colour, "");
    fill.stroke = Qt::transparent;
    fill.role = "bar";
    scene.items.push_back(fill);
    scene.items.push_back(
        TextItem(QRectF(bx + 190 + bar_w, y, 120, 16), FormatBytes(static_cast<double>(bytes)), 9));
    y += 18;
  };
  bar("received so far (max/rank)", running, QColor(230, 100, 0));
  bar("whole plan", r.bytes, QColor(240, 170, 110));
  bar("lower bound", r.lower_bound_bytes, QColor(89, 161, 79));
  scene.items.push_back(TextItem(QRectF(bx, y, 600, 16),
                                 r.byte_optimal ? "the plan moves no more than the lower bound"
                                                : "the plan moves more than the lower bound",
                                 9, !r.byte_optimal));
  y += 18;
  y = std::max(y, exchanges_bottom);
  scene.bounds = QRectF(
      -10, -10, std::max({right + after_scene.bounds.width(), 760.0, bx + 620}) + 20, y + 20);
  return scene;
}

}  // namespace shardscope::viewer
