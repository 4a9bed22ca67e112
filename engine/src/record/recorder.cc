#include "shardscope/recorder.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>

#include "record/plan_stages.h"
#include "record/provenance_text.h"

namespace shardscope {
namespace {

std::string Scope(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? "" : name.substr(0, dot);
}

std::string TensorKind(const Value& v, bool is_grad) {
  if (v.kind != ValueKind::kActivation) return ValueKindName(v.kind);
  return is_grad ? "gradient" : "activation";
}

// A tensor's record without its layout.
store::TensorRecord TensorOf(const Value& v, bool is_grad) {
  store::TensorRecord t;
  t.id = v.id;
  t.name = v.name;
  t.shape.assign(v.shape.begin(), v.shape.end());
  t.dtype = DTypeName(v.dtype);
  t.kind = TensorKind(v, is_grad);
  t.producer_op = v.producer == kNoNode ? store::kNone : v.producer;
  t.producer_output = v.producer_output;
  return t;
}

// Meshes, each recorded once, keyed by their printed form (and stage, with `stages`).
class MeshTable {
 public:
  MeshTable(store::RunWriter& w, std::function<Status(const Status&)> check,
            const PlanStages* stages = nullptr)
      : w_(w), check_(std::move(check)), stages_(stages) {}
  Result<int64_t> Id(const DeviceMesh& mesh, int stage = -1) {
    if (stages_ == nullptr) stage = -1;
    const std::string key = mesh.ToString() + (stage >= 0 ? "@" + std::to_string(stage) : "");
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    store::MeshRecord m;
    m.id = static_cast<int64_t>(ids_.size());
    m.name = key;
    m.shape.assign(mesh.shape().begin(), mesh.shape().end());
    m.axis_names = mesh.names();
    if (mesh.has_explicit_ranks()) {
      for (int r : mesh.rank_list()) m.ranks.push_back(r);
    }
    if (stage >= 0) stages_->OnStage(mesh, stage, &m);
    SHARDSCOPE_RETURN_IF_ERROR(check_(w_.AddMesh(m)));
    ids_[key] = m.id;
    return m.id;
  }

 private:
  store::RunWriter& w_;
  std::function<Status(const Status&)> check_;
  const PlanStages* stages_;
  std::map<std::string, int64_t> ids_;
};

}  // namespace

Result<std::unique_ptr<Recorder>> Recorder::Create(const std::string& path,
                                                   const store::RunInfo& run, bool overwrite) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  SHARDSCOPE_ASSIGN_OR_RETURN(
      auto writer,
      store::RunWriter::Create(path, run, store::RunWriterOptions{.overwrite = overwrite}));
  return std::unique_ptr<Recorder>(new Recorder(std::move(writer)));
}

Recorder::Recorder(std::unique_ptr<store::RunWriter> writer)
    : writer_(std::move(writer)), thread_([this] { WriteLoop(); }) {}

Recorder::~Recorder() { (void)Drain(); }

const std::string& Recorder::path() const { return writer_->path(); }

void Recorder::WriteLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] {
      return stop_ || !queue_.empty() || !span_queue_.empty() || !instr_queue_.empty();
    });
    if (queue_.empty() && span_queue_.empty() && instr_queue_.empty() && stop_) return;
    std::deque<store::StepRecord> batch;
    batch.swap(queue_);
    std::vector<store::PipelineSpanRecord> spans;
    spans.swap(span_queue_);
    std::vector<store::InstructionSpanRecord> instr_spans;
    instr_spans.swap(instr_queue_);
    if (!error_.ok()) continue;  // after a failure, later steps would leave a gap in the file
    lock.unlock();
    Status st;
    for (const store::StepRecord& s : batch) {
      if (st.ok()) st = Check(writer_->AddStep(s));
    }
    for (const store::PipelineSpanRecord& s : spans) {
      if (st.ok()) st = Check(writer_->AddPipelineSpan(s));
    }
    for (const store::InstructionSpanRecord& s : instr_spans) {
      if (st.ok()) st = Check(writer_->AddInstructionSpan(s));
    }
    if (st.ok()) st = Check(writer_->Commit());
    lock.lock();
    if (st.ok() && !batch.empty()) last_step_ = batch.back().step;
  }
}

Status Recorder::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

namespace {

// The search's account of one forward operator: provenance (user, propagated from which
// operator, search, default), its cost and the candidates it beat, best first.
void AddSearchProvenance(const Graph& g, const SearchResult& search, NodeId id,
                         const std::string& mapping, store::OperatorRecord* op) {
  for (const OperatorChoice& c : search.operators) {
    if (c.node != id) continue;
    const std::string& why = c.provenance;
    const ProvenanceText text = DescribeProvenance(why, "");
    op->provenance = text.kind;
    op->provenance_detail = text.detail + mapping;
    const size_t from = why.find("propagated from operator '");
    if (from != std::string::npos) {
      const size_t begin = from + std::string("propagated from operator '").size();
      op->provenance_op = g.FindNode(why.substr(begin, why.find('\'', begin) - begin));
      if (op->provenance_op == kNoNode) op->provenance_op = store::kNone;
    }
    op->cost = c.local_cost_s;
    store::CandidateRecord chosen;
    chosen.strategy = c.strategy;
    chosen.cost = c.local_cost_s;
    chosen.compute_seconds = c.compute_s;
    chosen.comm_seconds = c.local_cost_s - c.compute_s;
    chosen.memory_bytes = static_cast<int64_t>(c.memory_bytes);
    chosen.note = "chosen";
    op->candidates.push_back(chosen);
    for (const ScoredCandidate& s : c.runners_up) {
      store::CandidateRecord r;
      r.strategy = s.strategy;
      r.cost = s.cost_s;
      r.compute_seconds = s.compute_s;
      r.comm_seconds = s.cost_s - s.compute_s;
      r.memory_bytes = static_cast<int64_t>(s.memory_bytes);
      r.note = "runner-up";
      op->candidates.push_back(r);
    }
    std::stable_sort(op->candidates.begin(), op->candidates.end(),
                     [](const auto& a, const auto& b) { return a.cost < b.cost; });
    return;
  }
}

// A step's rank groups as the run file keeps them: the grid of the collective along the
// step's axes when they are exactly that (a row-major mesh), else the list.
store::RankGroups StoredGroups(const DeviceMesh& mesh, const RedistStep& step) {
  std::vector<std::vector<int64_t>> list;
  for (const auto& g : step.groups) list.emplace_back(g.begin(), g.end());
  store::RankGroups stored(std::move(list));
  if (mesh.has_explicit_ranks() || step.axes.empty() || stored.empty()) return stored;
  std::vector<int64_t> stride(mesh.num_axes(), 1);
  for (int a = mesh.num_axes() - 1; a > 0; --a) stride[a - 1] = stride[a] * mesh.shape()[a];
  std::vector<store::GridAxis> members, groups;
  std::vector<bool> along(mesh.num_axes(), false);
  for (int a : step.axes) {
    along[a] = true;
    members.push_back({mesh.shape()[a], stride[a]});
  }
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (!along[a]) groups.push_back({mesh.shape()[a], stride[a]});
  }
  store::RankGroups grid = store::RankGroups::Grid(0, std::move(members), std::move(groups));
  return grid == stored ? grid : stored;
}

// The fields of an operator's row that come from its node alone.
store::OperatorRecord OperatorOf(const Node& n) {
  store::OperatorRecord op;
  op.id = n.id;
  op.name = n.name;
  op.scope = Scope(n.name);
  op.kind = OpName(n.op);
  op.is_backward = n.is_backward;
  op.forward_id = n.forward_node;
  return op;
}

}  // namespace

Status Recorder::RecordPlan(const Graph& g, const DistProgram& p, const SearchResult* search) {
  SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->Begin()));
  SHARDSCOPE_RETURN_IF_ERROR(RecordProgramRows(g, p, search, nullptr));
  return Check(writer_->Commit());
}

Status Recorder::RecordProgramRows(const Graph& g, const DistProgram& p, const SearchResult* search,
                                   const PlanStages* stages) {
  MeshTable meshes(
      *writer_, [this](const Status& st) { return Check(st); }, stages);
  const PlanStages none;
  const PlanStages& at = stages != nullptr ? *stages : none;
  for (const Node& n : g.nodes()) {
    store::OperatorRecord op = OperatorOf(n);
    const OpStrategy& s = p.strategies[n.id];
    SHARDSCOPE_ASSIGN_OR_RETURN(op.mesh_id, meshes.Id(s.mesh, at.OfNode(n.id)));
    op.strategy = !n.annotations.in_strategy.empty() ? n.annotations.in_strategy : s.ToString();
    const ProvenanceText why = DescribeProvenance("", s.provenance);
    const std::string mapping = ": " + s.ToString();  // letters on mesh axes
    op.provenance = why.kind;
    op.provenance_detail = why.detail + mapping;
    if (n.is_backward) op.provenance_op = n.forward_node;
    op.worker = n.annotations.worker >= 0 ? n.annotations.worker : store::kNone;
    if (at.OfNode(n.id) >= 0) op.worker = at.OfNode(n.id);
    if (search != nullptr) AddSearchProvenance(g, *search, n.id, mapping, &op);
    SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddOperator(op)));
  }
  // Tensors: the layout at their home (as produced or stored).
  std::vector<bool> is_grad(g.num_values(), false);
  for (const Node& n : g.nodes()) {
    for (ValueId v : n.outputs) is_grad[v] = n.is_backward;
  }
  for (const Value& v : g.values()) {
    store::TensorRecord t = TensorOf(v, is_grad[v.id]);
    if (p.home[v.id] >= 0) {
      const Layout& l = p.values[p.home[v.id]].layout;
      t.layout = l.ToString();
      SHARDSCOPE_ASSIGN_OR_RETURN(t.mesh_id, meshes.Id(l.mesh(), at.OfValue(p.home[v.id])));
    }
    SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddTensor(t)));
  }
  // Edges from compute instructions (the layout each consumer reads), and redistributions.
  std::vector<int> producer_instr(p.values.size(), -1);
  int64_t redist_id = 0;
  store::ProgramRecord program;
  program.text = p.ToText(g);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const DistInstr& in = p.instrs[i];
    store::InstructionRecord ir;
    ir.ordinal = static_cast<int64_t>(i);
    const int stage = i < at.instr_stage.size() ? at.instr_stage[i] : -1;
    if (in.kind == DistInstr::Kind::kCompute) {
      const Node& n = g.node(in.node);
      for (size_t k = 0; k < in.inputs.size(); ++k) {
        store::EdgeRecord e;
        e.tensor_id = n.inputs[k];
        const Value& v = g.value(n.inputs[k]);
        e.src_op = v.producer == kNoNode ? store::kNone : v.producer;
        e.src_output = v.producer_output;
        e.dst_op = n.id;
        e.dst_input = static_cast<int64_t>(k);
        const Layout& l = p.values[in.inputs[k]].layout;
        e.layout = l.ToString();
        SHARDSCOPE_ASSIGN_OR_RETURN(e.mesh_id, meshes.Id(l.mesh(), stage));
        SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddEdge(e)));
      }
      ir.kind = "compute";
      ir.op_id = n.id;
      ir.text = n.name + " = " + OpName(n.op);
    } else {
      const RedistPlan& plan = *in.plan;
      store::RedistributionRecord r;
      r.id = redist_id++;
      r.tensor_id = p.values[in.inputs[0]].global;
      // The consumer: the first compute instruction after it that reads its output.
      for (size_t j = i + 1; j < p.instrs.size(); ++j) {
        const DistInstr& c = p.instrs[j];
        if (c.kind != DistInstr::Kind::kCompute) continue;
        for (size_t k = 0; k < c.inputs.size(); ++k) {
          if (c.inputs[k] == in.outputs[0] && r.consumer_op == store::kNone) {
            r.consumer_op = c.node;
            r.consumer_input = static_cast<int64_t>(k);
          }
        }
        if (r.consumer_op != store::kNone) break;
      }
      const Value& tv = g.value(r.tensor_id);
      r.is_backward = tv.producer != kNoNode && g.node(tv.producer).is_backward;
      r.from_layout = plan.from.ToString();
      SHARDSCOPE_ASSIGN_OR_RETURN(r.from_mesh_id, meshes.Id(plan.from.mesh(), stage));
      r.to_layout = plan.to.ToString();
      SHARDSCOPE_ASSIGN_OR_RETURN(r.to_mesh_id, meshes.Id(plan.to.mesh(), stage));
      SHARDSCOPE_ASSIGN_OR_RETURN(r.plan_mesh_id, meshes.Id(plan.mesh, stage));
      r.reason = in.reason;
      r.bytes = plan.planned_bytes;
      r.lower_bound_bytes = plan.lower_bound_bytes;
      r.bytes_total = plan.total_planned_bytes;
      r.lower_bound_total = plan.total_lower_bound_bytes;
      r.lower_bound_per_rank =
          stage >= 0 ? at.WorldIndexed(plan.lower_bound, stage) : plan.lower_bound;
      r.byte_optimal = plan.byte_optimal;
      r.predicted_seconds = plan.predicted_seconds;
      for (size_t k = 0; k < plan.steps.size(); ++k) {
        const RedistStep& s = plan.steps[k];
        store::RedistStepRecord sr;
        sr.ordinal = static_cast<int64_t>(k);
        sr.kind = s.KindName();
        sr.axes.assign(s.axes.begin(), s.axes.end());
        sr.axis_names = s.axis_names;
        sr.dim = s.dim;
        sr.dim_to = s.dim_to;
        sr.groups = StoredGroups(plan.mesh, s);
        sr.bytes_sent_max = s.bytes_sent_per_rank;
        sr.bytes_recv_max = s.bytes_recv_per_rank;
        sr.bytes_sent = stage >= 0 ? at.WorldIndexed(s.bytes_sent, stage) : s.bytes_sent;
        sr.bytes_recv = stage >= 0 ? at.WorldIndexed(s.bytes_recv, stage) : s.bytes_recv;
        sr.messages = s.messages;
        sr.seconds = s.seconds;
        sr.layout_after = s.after.ToString();
        SHARDSCOPE_ASSIGN_OR_RETURN(sr.mesh_id, meshes.Id(s.after.mesh(), stage));
        sr.reason = s.reason;
        for (const RedistTransfer& t : s.transfers) {
          sr.transfers.Add(t.src, t.dst, t.offset,
                           std::vector<int64_t>(t.extent.begin(), t.extent.end()));
        }
        sr.zero_ranks.assign(s.zero_ranks.begin(), s.zero_ranks.end());
        r.steps.push_back(std::move(sr));
      }
      SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddRedistribution(r)));
      ir.kind = "redistribute";
      ir.redistribution_id = r.id;
      ir.tensor_id = r.tensor_id;
      ir.bytes = plan.planned_bytes;
      ir.text =
          p.values[in.outputs[0]].name + " = redistribute(" + p.values[in.inputs[0]].name + ")";
    }
    program.instructions.push_back(std::move(ir));
  }
  return Check(writer_->AddProgram(program));
}

Status Recorder::RecordPlacement(const Graph& g, const PlacedProgram& p, int micro_batches) {
  SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->Begin()));
  std::vector<bool> is_grad(g.num_values(), false);
  for (const Node& n : g.nodes()) {
    for (ValueId v : n.outputs) is_grad[v] = n.is_backward;
    store::OperatorRecord op = OperatorOf(n);
    op.provenance = n.annotations.worker >= 0 ? "user" : n.is_backward ? "derived" : "default";
    op.provenance_detail = n.annotations.worker >= 0
                               ? "place(\"worker\", " + std::to_string(n.annotations.worker) + ")"
                           : n.is_backward ? "runs with its forward operator"
                                           : "not placed: worker 0";
    if (n.is_backward) op.provenance_op = n.forward_node;
    op.worker = p.node_worker[n.id] >= 0 ? p.node_worker[n.id] : store::kNone;
    SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddOperator(op)));
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Value& v = g.value(n.inputs[k]);
      store::EdgeRecord e;
      e.tensor_id = v.id;
      e.src_op = v.producer == kNoNode ? store::kNone : v.producer;
      e.src_output = v.producer_output;
      e.dst_op = n.id;
      e.dst_input = static_cast<int64_t>(k);
      SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddEdge(e)));
    }
  }
  for (const Value& v : g.values()) {
    SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddTensor(TensorOf(v, is_grad[v.id]))));
  }
  for (int w = 0; w < p.workers; ++w) {
    store::ProgramRecord program;
    program.rank = w;
    program.role = "worker";
    program.text = p.WorkerText(g, w);
    const WorkerProgram& wp = p.programs[w];
    for (const auto* list : {&wp.forward, &wp.backward}) {
      for (const PlacedInstr& in : *list) {
        store::InstructionRecord ir;
        ir.ordinal = static_cast<int64_t>(program.instructions.size());
        if (in.kind == PlacedInstr::Kind::kCompute) {
          ir.kind = "compute";
          ir.op_id = in.node;
          ir.text = g.node(in.node).name + " = " + OpName(g.node(in.node).op);
        } else {
          const CutEdge& e = p.edges[in.edge];
          const bool send = in.kind == PlacedInstr::Kind::kSend;
          ir.kind = send ? "send" : "recv";
          ir.tensor_id = e.value;
          ir.peer = send ? e.dst_worker : e.src_worker;
          ir.bytes = e.bytes;
          ir.text = (send ? "send " : "recv ") + g.value(e.value).name +
                    (send ? " -> worker " : " <- worker ") + std::to_string(ir.peer);
        }
        program.instructions.push_back(std::move(ir));
      }
    }
    SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddProgram(program)));
  }
  for (const CutEdge& e : p.edges) {
    store::SendRecvRecord sr;
    sr.tensor_id = e.value;
    sr.src_rank = e.src_worker;
    sr.dst_rank = e.dst_worker;
    sr.src_op = e.src_node;
    sr.dst_op = e.dst_node;
    sr.bytes = e.bytes * micro_batches;  // per training step
    sr.is_backward = e.is_backward;
    SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddSendRecv(sr)));
  }
  return Check(writer_->Commit());
}

Status Recorder::RecordStep(int64_t step, int64_t epoch, double loss,
                            const std::vector<store::RankStepRecord>& ranks) {
  store::StepRecord s;
  s.step = step;
  s.epoch = epoch;
  s.loss = loss;
  for (const store::RankStepRecord& r : ranks) s.seconds = std::max(s.seconds, r.wall_seconds);
  s.time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  s.ranks = ranks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    if (stop_) return Status::Invalid(path() + ": step " + std::to_string(step) + " after Drain()");
    queue_.push_back(std::move(s));
  }
  wake_.notify_one();
  return Status::Ok();
}

Status Recorder::RecordPipelineSpans(const std::vector<store::PipelineSpanRecord>& spans) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    if (stop_) return Status::Invalid(path() + ": pipeline spans after Drain()");
    span_queue_.insert(span_queue_.end(), spans.begin(), spans.end());
  }
  wake_.notify_one();
  return Status::Ok();
}

Status Recorder::RecordInstructionSpans(std::vector<store::InstructionSpanRecord> spans) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    if (stop_) return Status::Invalid(path() + ": instruction spans after Drain()");
    if (instr_queue_.empty()) {
      instr_queue_ = std::move(spans);
    } else {
      instr_queue_.insert(instr_queue_.end(), spans.begin(), spans.end());
    }
  }
  wake_.notify_one();
  return Status::Ok();
}

Status Recorder::RecordEvaluation(int64_t step, int64_t epoch, const std::string& name,
                                  double accuracy, int64_t samples, double seconds) {
  store::EvaluationRecord e;
  e.step = step;
  e.epoch = epoch;
  e.name = name;
  e.accuracy = accuracy;
  e.samples = samples;
  e.seconds = seconds;
  e.time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddEvaluation(e)));
  return Check(writer_->Commit());
}

Status Recorder::RecordEvent(const std::string& level, const std::string& text) {
  SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddEvent(level, "train", text)));
  return Check(writer_->Commit());
}

Status Recorder::RecordCheckpoint(int64_t step, const std::string& json) {
  SHARDSCOPE_RETURN_IF_ERROR(Check(writer_->AddEvent("info", "checkpoint", json, step)));
  return Check(writer_->Commit());
}

Status Recorder::Finish(store::RunStatus status, const std::string& message) {
  const Status drained = Drain();
  const Status finished = Check(writer_->Finish(status, message));
  return drained.ok() ? finished : drained;
}

Status Recorder::Check(const Status& st) {
  if (st.ok()) return st;
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) {
    error_ = st;
    disk_full_ = st.code() == StatusCode::kDiskFull;
  }
  return st;
}

Status Recorder::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

bool Recorder::disk_full() const {
  std::lock_guard<std::mutex> lock(mu_);
  return disk_full_;
}

int64_t Recorder::last_recorded_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_step_;
}

Result<std::vector<store::RankStepRecord>> GatherRankStep(Communicator& comm,
                                                          const store::RankStepRecord& mine) {
  constexpr int kTag = 7301;
  std::vector<store::RankStepRecord> all;
  static_assert(std::is_trivially_copyable_v<store::RankStepRecord>);
  if (comm.rank() != 0) {
    std::vector<std::byte> bytes(sizeof mine);
    std::memcpy(bytes.data(), &mine, sizeof mine);
    SHARDSCOPE_RETURN_IF_ERROR(comm.SendBytes(bytes, 0, kTag));
    return all;
  }
  all.push_back(mine);
  for (int r = 1; r < comm.size(); ++r) {
    SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, comm.RecvBytes(r, kTag));
    if (bytes.size() != sizeof(store::RankStepRecord))
      return Status::Internal("bad per-rank record from rank " + std::to_string(r));
    store::RankStepRecord rec;
    std::memcpy(&rec, bytes.data(), sizeof rec);
    all.push_back(rec);
  }
  return all;
}

std::string DefaultRunPath(const std::string& name) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::string base = "runs/" + (name.empty() ? std::string("run") : name) + "-" + stamp;
  std::string path = base + ".db";
  for (int i = 1; std::filesystem::exists(path); ++i) path = base + "-" + std::to_string(i) + ".db";
  return path;
}

}  // namespace shardscope
