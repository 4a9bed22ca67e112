// Recorder::RecordSubMeshPlan: a program cut into pipeline stages of k devices, each row on
// its stage's mesh (plan_stages.h), and the values crossing stages as send_recv rows.
#include "record/plan_stages.h"
#include "shardscope/recorder.h"

namespace shardscope {

std::vector<int64_t> PlanStages::WorldIndexed(const std::vector<int64_t>& local, int stage) const {
  if (local.empty() || stage < 0) return local;
  std::vector<int64_t> world(static_cast<size_t>(stage) * stage_devices, 0);
  world.insert(world.end(), local.begin(), local.end());
  return world;
}

void PlanStages::OnStage(const DeviceMesh& mesh, int stage, store::MeshRecord* record) const {
  const int64_t first = static_cast<int64_t>(stage) * stage_devices;
  record->ranks.clear();
  for (int r : mesh.rank_list()) record->ranks.push_back(first + r);
  const std::string last = std::to_string(first + mesh.size() - 1);
  record->name = mesh.ToString() + " on stage " + std::to_string(stage) +
                 (mesh.size() == 1 ? " (rank " + last + ")"
                                   : " (ranks " + std::to_string(first) + "-" + last + ")");
}

namespace {

PlanStages StagesOf(const Graph& g, const SubMeshPlan& plan) {
  const DistProgram& p = plan.program;
  PlanStages at;
  at.stages = plan.stages;
  at.stage_devices = plan.stage_devices;
  at.instr_stage = plan.instr_stage;
  at.node_stage.assign(g.num_nodes(), -1);
  at.value_stage.assign(p.values.size(), -1);
  for (size_t i = 0; i < p.instrs.size() && i < plan.instr_stage.size(); ++i) {
    const DistInstr& in = p.instrs[i];
    const int stage = plan.instr_stage[i];
    if (in.kind == DistInstr::Kind::kCompute && in.node != kNoNode) at.node_stage[in.node] = stage;
    for (int v : in.outputs) {
      if (at.value_stage[v] < 0) at.value_stage[v] = stage;
    }
  }
  // Values no instruction produces (inputs, parameters): their first reader's stage.
  for (size_t i = 0; i < p.instrs.size() && i < plan.instr_stage.size(); ++i) {
    for (int v : p.instrs[i].inputs) {
      if (at.value_stage[v] < 0) at.value_stage[v] = plan.instr_stage[i];
    }
  }
  return at;
}

}  // namespace

Status Recorder::RecordSubMeshPlan(const Graph& g, const SubMeshPlan& plan) {
  const PlanStages stages = StagesOf(g, plan);
  SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->Begin()));
  SHARDSCOPE_RETURN_IF_ERROR(RecordProgramRows(g, plan.program, nullptr, &stages));
  const DistProgram& p = plan.program;
  for (const StageCut& cut : plan.cuts) {
    store::SendRecvRecord sr;
    const ValueId global = p.values[cut.value].global;
    sr.tensor_id = global;
    sr.src_rank = static_cast<int64_t>(cut.src_stage) * plan.stage_devices;
    sr.dst_rank = static_cast<int64_t>(cut.dst_stage) * plan.stage_devices;
    const NodeId producer = g.value(global).producer;
    sr.src_op = producer == kNoNode ? store::kNone : producer;
    for (size_t i = 0; i < p.instrs.size() && i < plan.instr_stage.size(); ++i) {
      const DistInstr& in = p.instrs[i];
      if (plan.instr_stage[i] != cut.dst_stage || in.kind != DistInstr::Kind::kCompute) continue;
      bool reads = false;
      for (int v : in.inputs) reads = reads || p.values[v].global == global;
      if (reads) {
        sr.dst_op = in.node;
        break;
      }
    }
    sr.bytes = cut.bytes * plan.micro_batches;  // per training step
    sr.is_backward = cut.send_backward;
    SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddSendRecv(sr)));
  }
  return Check(writer_->Commit());
}

}  // namespace shardscope
