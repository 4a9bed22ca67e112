#include "shardscope/viewer/redistribution_scene.h"

#include <QStringList>

#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/layout_text.h"
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

// Places `scene` into `into` at offset (dx, dy).
void Append(const Scene& scene, double dx, double dy, Scene* into) {
  const QPointF offset = QPointF(dx, dy) - scene.bounds.topLeft();
  for (SceneItem item : scene.items) {
    item.rect.translate(offset);
    item.points.translate(offset);
    into->items.push_back(item);
  }
}

QString Ranks(const std::vector<int64_t>& ranks) { return "{" + RankText(ranks) + "}"; }

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
                                              const store::RedistributionRecord& light, int step) {
  // The transfers of irregular steps stay in the file until a frame needs them.
  const auto full = run.RedistributionInFull(light.id);
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
  // Maps before and after, side by side.
  std::vector<bool> changed;
  if (before->mesh() == after->mesh() && before->NumBlocks() == after->NumBlocks()) {
    const auto a = before->BlockOwners();
    const auto b = after->BlockOwners();
    for (size_t i = 0; i < b.size(); ++i) changed.push_back(a[i] != b[i]);
  }
  TensorSceneOptions before_options;
  before_options.title = "before";
  const Scene before_scene = BuildTensorScene(*before, before_options);
  TensorSceneOptions after_options;
  after_options.title = "after";
  after_options.changed_blocks = changed;
  const Scene after_scene = BuildTensorScene(*after, after_options);
  Append(before_scene, 0, y, &scene);
  const double right = before_scene.bounds.width() + 30;
  Append(after_scene, right, y, &scene);
  SceneItem arrow;
  arrow.shape = SceneItem::Shape::kPolyline;
  arrow.points << QPointF(right - 26, y + 60) << QPointF(right - 6, y + 60);
  arrow.arrow = true;
  arrow.stroke_width = 2;
  scene.items.push_back(arrow);
  y += std::max(before_scene.bounds.height(), after_scene.bounds.height()) + 8;

  // Who exchanges what.
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
        lines << QString("r%1 → r%2  [%3]").arg(t.src).arg(t.dst).arg(box.join(", "));
      }
    } else if (!s.groups.empty()) {
      total = s.groups.size();
      for (int64_t g = 0; g < std::min(total, kShown); ++g)
        lines << "group " + Ranks(s.groups.Group(g));
    } else {
      total = 1;
      lines << "each rank on its own (no messages)";
    }
    for (const QString& text : lines) {
      SceneItem line = TextItem(QRectF(12, y, 880, 14), text, 8);
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
                                     "ranks that zero their block: " + Ranks(s.zero_ranks), 8));
      y += 14;
    }
    y += 6;
    scene.items.push_back(TextItem(
        QRectF(0, y, 900, 16),
        QString("this step: %1 sent, %2 received per rank (max), %3 messages, %4 ms predicted")
            .arg(FormatBytes(static_cast<double>(s.bytes_sent_max)),
                 FormatBytes(static_cast<double>(s.bytes_recv_max)))
            .arg(s.messages)
            .arg(s.seconds * 1e3, 0, 'f', 3),
        9));
    y += 18;
  }
  // Running total against the lower bound, as two bars.
  int64_t running = 0;
  for (int k = 0; k <= step && k < static_cast<int>(r.steps.size()); ++k) {
    running += r.steps[k].bytes_recv_max;
  }
  const double scale_max = static_cast<double>(
      std::max<int64_t>({r.bytes, r.lower_bound_bytes, running, static_cast<int64_t>(1)}));
  const double bar_w = 420;
  auto bar = [&](const QString& label, int64_t bytes, const QColor& colour) {
    scene.items.push_back(TextItem(QRectF(0, y, 175, 16), label, 9));
    SceneItem back = BoxItem(QRectF(180, y + 2, bar_w, 12), QColor(240, 240, 240), "");
    back.stroke = QColor(200, 200, 200);
    scene.items.push_back(back);
    SceneItem fill = BoxItem(QRectF(180, y + 2, bar_w * bytes / scale_max, 12), colour, "");
    fill.stroke = Qt::transparent;
    fill.role = "bar";
    scene.items.push_back(fill);
    scene.items.push_back(
        TextItem(QRectF(190 + bar_w, y, 200, 16), FormatBytes(static_cast<double>(bytes)), 9));
    y += 18;
  };
  bar("received so far (max/rank)", running, QColor(230, 100, 0));
  bar("whole plan", r.bytes, QColor(240, 170, 110));
  bar("lower bound", r.lower_bound_bytes, QColor(89, 161, 79));
  scene.items.push_back(TextItem(QRectF(0, y, 900, 16),
                                 r.byte_optimal ? "the plan moves no more than the lower bound"
                                                : "the plan moves more than the lower bound",
                                 9, !r.byte_optimal));
  y += 18;
  scene.bounds = QRectF(-10, -10, std::max(right + after_scene.bounds.width(), 760.0) + 20, y + 20);
  return scene;
}

}  // namespace shardscope::viewer
