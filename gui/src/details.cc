#include "details.h"

#include <QStringList>

#include "placement_text.h"

#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::gui {
namespace {

QString E(const std::string& text) { return QString::fromStdString(text).toHtmlEscaped(); }

QString Row(const QString& key, const QString& value) {
  return "<tr><td><b>" + key + "</b></td><td>" + value + "</td></tr>";
}

QString MeshText(const viewer::RunData& run, int64_t id) {
  const store::MeshRecord* m = run.Mesh(id);
  if (!m) return "none recorded";
  QStringList axes;
  for (size_t i = 0; i < m->shape.size() && i < m->axis_names.size(); ++i) {
    axes << QString("%1=%2").arg(E(m->axis_names[i])).arg(m->shape[i]);
  }
  QString text = QString("mesh %1 (%2)").arg(m->id).arg(axes.join(", "));
  if (!m->ranks.empty()) text += " ranks " + viewer::RankText(m->ranks);
  return text;
}

// A layout; a placed operator's tensors have none: they are whole on its worker.
QString LayoutText(const store::OperatorRecord& op, const std::string& layout) {
  return layout.empty() && op.worker != store::kNone ? QString("whole") : E(layout);
}

QString OpName(const viewer::RunData& run, int64_t id) {
  const store::OperatorRecord* op = run.Operator(id);
  return op ? E(op->name) : QString("(none)");
}

QString ShapeText(const std::vector<int64_t>& shape) {
  return "[" + viewer::JoinNumbers(shape, ", ") + "]";
}

QString RedistLine(const viewer::RunData& run, const store::RedistributionRecord& r) {
  const store::TensorRecord* t = run.Tensor(r.tensor_id);
  return QString("#%1 %2: %3 → %4, %5, %6 (lower bound %7)")
      .arg(r.id)
      .arg(t ? E(t->name) : QString("?"))
      .arg(E(r.from_layout), E(r.to_layout), E(viewer::DescribeCollectives(r)),
           viewer::FormatBytes(static_cast<double>(r.bytes)),
           viewer::FormatBytes(static_cast<double>(r.lower_bound_bytes)));
}

}  // namespace

QString OperatorDetailsHtml(const viewer::RunData& run, int64_t id) {
  const store::OperatorRecord* op = run.Operator(id);
  if (!op) return QString("operator %1 is not in the run").arg(id);
  QString html = "<h3>" + E(op->name) + "</h3><table cellspacing=4>";
  html += Row("kind", E(op->kind) + (op->is_backward ? " (backward)" : ""));
  if (op->forward_id != store::kNone) html += Row("forward operator", OpName(run, op->forward_id));
  html += Row("scope", op->scope.empty() ? "(top level)" : E(op->scope));
  html += Row("strategy", StrategyText(run, *op));
  html += Row("mesh", MeshText(run, op->mesh_id));
  // The kind, then its sentence (which never repeats the kind).
  QString why =
      op->provenance.empty() ? QString("none recorded") : "<b>" + E(op->provenance) + "</b>";
  if (!op->provenance_detail.empty()) why += " — " + E(op->provenance_detail);
  html += Row("why", why);
  if (op->provenance_op != store::kNone)
    html += Row("from operator", OpName(run, op->provenance_op));
  html += Row("search round", op->search_round == store::kNone ? QString("none recorded")
                                                               : QString::number(op->search_round));
  html += Row("cost", op->cost > 0 ? QString("%1 ms").arg(op->cost * 1e3, 0, 'f', 4)
                                   : QString("none recorded"));
  html += Row("worker", WorkerText(run, *op));
  int64_t memory = -1;
  for (const auto& c : op->candidates) {
    if (c.strategy == op->strategy) memory = c.memory_bytes;
  }
  html += Row("memory", memory >= 0 ? viewer::FormatBytes(static_cast<double>(memory))
                                    : QString("none recorded (no candidates)"));
  html += "</table><p><b>Inputs</b> (layout this operator needs)</p><ul>";
  bool any = false;
  for (const auto& e : run.edges) {
    if (e.dst_op != op->id) continue;
    const store::TensorRecord* t = run.Tensor(e.tensor_id);
    html += QString("<li>%1: %2 <tt>%3</tt></li>")
                .arg(e.dst_input)
                .arg(t ? E(t->name) : QString::number(e.tensor_id), LayoutText(*op, e.layout));
    any = true;
  }
  if (!any) html += "<li>none recorded</li>";
  html += "</ul><p><b>Outputs</b> (layout as produced)</p><ul>";
  any = false;
  for (const auto& t : run.tensors) {
    if (t.producer_op != op->id) continue;
    html += QString("<li>%1 %2 <tt>%3</tt></li>")
                .arg(E(t.name), ShapeText(t.shape), LayoutText(*op, t.layout));
    any = true;
  }
  if (!any) html += "<li>none recorded</li>";
  html += "</ul><p><b>Redistributions into it</b></p><ul>";
  any = false;
  for (const auto& r : run.redistributions) {
    if (r.consumer_op != op->id) continue;
    html += "<li>" + RedistLine(run, r) + "</li>";
    any = true;
  }
  if (!any) html += "<li>none</li>";
  html += "</ul><p><b>Runners-up</b>: ";
  html += op->candidates.empty()
              ? "none recorded (this run's search kept no candidates)"
              : QString("%1 candidates in the table below").arg(op->candidates.size());
  html += "</p>";
  return html;
}

QString TensorDetailsHtml(const viewer::RunData& run, int64_t id) {
  const store::TensorRecord* t = run.Tensor(id);
  if (!t) return QString("tensor %1 is not in the run").arg(id);
  QString html = "<h3>" + E(t->name) + "</h3><table cellspacing=4>";
  html += Row("kind", E(t->kind) + " " + E(t->dtype));
  html += Row("shape", ShapeText(t->shape));
  html += Row("producer", t->producer_op == store::kNone ? QString("(none: fed to the graph)")
                                                         : OpName(run, t->producer_op));
  const int64_t worker = TensorWorker(run, *t);
  html +=
      Row("layout", !t->layout.empty()       ? "<tt>" + E(t->layout) + "</tt>"
                    : worker != store::kNone ? QString("whole on worker %1 (placed)").arg(worker)
                                             : QString("none recorded"));
  html += Row("mesh", MeshText(run, t->mesh_id));
  html += "</table><p><b>Consumers</b> (layout each needs)</p><ul>";
  bool any = false;
  for (const auto& e : run.edges) {
    if (e.tensor_id != id) continue;
    html += QString("<li>%1 input %2: <tt>%3</tt></li>")
                .arg(OpName(run, e.dst_op))
                .arg(e.dst_input)
                .arg(E(e.layout));
    any = true;
  }
  if (!any) html += "<li>none</li>";
  html += "</ul><p><b>Redistributions</b></p><ul>";
  any = false;
  for (const auto& r : run.redistributions) {
    if (r.tensor_id != id) continue;
    html += "<li>" + RedistLine(run, r) + "</li>";
    any = true;
  }
  if (!any) html += "<li>none</li>";
  return html + "</ul>";
}

QString RedistributionDetailsHtml(const viewer::RunData& run, int64_t id) {
  const store::RedistributionRecord* r = run.Redistribution(id);
  if (!r) return QString("redistribution %1 is not in the run").arg(id);
  constexpr size_t kGroupsShown = 8;
  QString html = QString("<h3>redistribution #%1</h3><table cellspacing=4>").arg(r->id);
  html += Row("why", r->reason.empty() ? QString("none recorded") : E(r->reason));
  html += Row("into",
              r->consumer_op == store::kNone
                  ? QString("(no consumer operator)")
                  : QString("%1 input %2").arg(OpName(run, r->consumer_op)).arg(r->consumer_input));
  html += Row("layouts", "<tt>" + E(r->from_layout) + "</tt> → <tt>" + E(r->to_layout) + "</tt>");
  const int64_t over = r->bytes - r->lower_bound_bytes;
  html += Row("bytes",
              QString("%1 received (busiest rank), lower bound %2: %3")
                  .arg(viewer::FormatBytes(static_cast<double>(r->bytes)),
                       viewer::FormatBytes(static_cast<double>(r->lower_bound_bytes)),
                       over <= 0 ? QString("at the bound")
                                 : viewer::FormatBytes(static_cast<double>(over)) + " above it"));
  // A stage's steps list its own ranks 0..k-1: shown as the run's ranks.
  const int offset = RankOffsetOf(run, r->plan_mesh_id);
  html += "</table><p><b>Steps</b> (collective on rank groups)</p><ol>";
  for (const auto& step : r->steps) {
    const auto groups = step.groups.Expand();
    QStringList shown;
    for (size_t g = 0; g < groups.size() && g < kGroupsShown; ++g) {
      std::vector<int64_t> ranks = groups[g];
      for (int64_t& rank : ranks) rank += offset;
      shown << "{" + viewer::RankText(ranks) + "}";
    }
    QString text = E(step.kind);
    if (!step.axis_names.empty()) {
      QStringList axes;
      for (const auto& a : step.axis_names) axes << E(a);
      text += " along " + axes.join(", ");
    }
    text += groups.empty() ? QString(" (no groups)")
                           : QString(" on %1 group(s): %2%3")
                                 .arg(groups.size())
                                 .arg(shown.join(" "))
                                 .arg(groups.size() > kGroupsShown ? " …" : "");
    text +=
        QString(", %1 received").arg(viewer::FormatBytes(static_cast<double>(step.bytes_recv_max)));
    html += "<li>" + text + "</li>";
  }
  if (r->steps.empty()) html += "<li>none</li>";
  return html + "</ol><hr>" + TensorDetailsHtml(run, r->tensor_id);
}

}  // namespace shardscope::gui
