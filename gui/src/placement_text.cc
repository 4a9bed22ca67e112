#include "placement_text.h"

#include <algorithm>

#include "shardscope/viewer/layout_text.h"

namespace shardscope::gui {

int RankOffsetOf(const viewer::RunData& run, int64_t mesh_id) {
  const store::MeshRecord* m = run.Mesh(mesh_id);
  return m ? static_cast<int>(viewer::MeshRankOffset(*m)) : 0;
}

QString WorkerText(const viewer::RunData& run, const store::OperatorRecord& op) {
  if (op.worker == store::kNone) return "none (not placed)";
  const store::MeshRecord* m = run.Mesh(op.mesh_id);
  if (m == nullptr || m->ranks.empty()) return QString("worker %1 (rank %1), whole").arg(op.worker);
  const auto [low, high] = std::minmax_element(m->ranks.begin(), m->ranks.end());
  if (*low == *high) return QString("worker %1 (rank %2), whole").arg(op.worker).arg(*low);
  QString mesh = QString::fromStdString(m->name);
  if (const auto on = mesh.indexOf(" on stage"); on > 0) mesh.truncate(on);
  return QString("worker %1: ranks %2-%3 (its stage's %4)")
      .arg(op.worker)
      .arg(*low)
      .arg(*high)
      .arg(mesh.toHtmlEscaped());
}

QString StrategyText(const viewer::RunData& run, const store::OperatorRecord& op) {
  const store::MeshRecord* m = run.Mesh(op.mesh_id);
  const bool one_device = m != nullptr && m->ranks.size() == 1;  // a stage of one device
  if (!op.strategy.empty() && !(one_device && op.worker != store::kNone)) {
    QString text = "<tt>" + QString::fromStdString(op.strategy).toHtmlEscaped() + "</tt>";
    if (op.worker != store::kNone && m != nullptr && !m->ranks.empty())
      text += " over " + WorkerText(run, op);
    return text;
  }
  if (op.worker != store::kNone)
    return QString("worker %1, whole (placed, not sharded)").arg(op.worker);
  return "none recorded";
}

int64_t TensorWorker(const viewer::RunData& run, const store::TensorRecord& tensor) {
  if (const store::OperatorRecord* p = run.Operator(tensor.producer_op); p && p->worker >= 0)
    return p->worker;
  for (const store::EdgeRecord& e : run.edges) {
    if (e.tensor_id != tensor.id) continue;
    if (const store::OperatorRecord* c = run.Operator(e.dst_op); c && c->worker >= 0)
      return c->worker;
  }
  return store::kNone;
}

QString NoLayoutText(const viewer::RunData& run, const store::TensorRecord& tensor) {
  const QString name = QString::fromStdString(tensor.name);
  const int64_t worker = TensorWorker(run, tensor);
  if (worker == store::kNone) return name + ": no layout recorded";
  return QString(
             "%1: whole on worker %2 (rank %2): a placed run keeps each tensor whole on "
             "its worker's device, so there are no blocks to draw")
      .arg(name)
      .arg(worker);
}

}  // namespace shardscope::gui
