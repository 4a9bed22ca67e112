#include <map>
#include <mutex>

#include "columns.h"
#include "json_text.h"
#include "writer_impl.h"

namespace shardscope::store {

using internal::Now;
using internal::RefId;
using internal::Stmt;

namespace {

constexpr double kLeaveWalSeconds = 5;  // Finish() retries the switch back this long

}  // namespace

Status RunWriter::Impl::PrepareAll() {
  using internal::InsertSql;
  const std::span<const std::string_view> run_fields =
      std::span(internal::columns::kRun).first(internal::columns::kRunFields);
  const std::pair<Stmt*, std::string> statements[] = {
      {&begin, "BEGIN IMMEDIATE"},
      {&commit, "COMMIT"},
      {&rollback, "ROLLBACK"},
      {&undo_candidates, "DELETE FROM candidate WHERE op_id = ?1"},
      {&undo_op, "DELETE FROM operator WHERE id = ?1"},
      {&undo_redist_steps, "DELETE FROM redist_step WHERE redistribution_id = ?1"},
      {&undo_redist, "DELETE FROM redistribution WHERE id = ?1"},
      {&undo_instructions, "DELETE FROM instruction WHERE rank = ?1"},
      {&undo_program, "DELETE FROM program WHERE rank = ?1"},
      {&undo_rank_steps, "DELETE FROM rank_step WHERE step = ?1"},
      {&undo_step, "DELETE FROM step WHERE step = ?1"},
      {&touch, "UPDATE run SET updated_at = ?1 WHERE id = 1"},
      {&update_run, "UPDATE run SET " + internal::AssignmentList(run_fields) + " WHERE id = 1"},
      {&finish_run,
       "UPDATE run SET status = ?1, status_message = ?2, ended_at = ?3, updated_at = ?3 "
       "WHERE id = 1"},
      {&mesh, InsertSql(internal::kMeshTable)},
      {&op, InsertSql(internal::kOperatorTable)},
      {&candidate, InsertSql(internal::kCandidateTable)},
      {&tensor, InsertSql(internal::kTensorTable)},
      {&edge, InsertSql(internal::kEdgeTable)},
      {&redist, InsertSql(internal::kRedistributionTable)},
      {&redist_step, InsertSql(internal::kRedistStepTable)},
      {&program, InsertSql(internal::kProgramTable)},
      {&instruction, InsertSql(internal::kInstructionTable)},
      {&send_recv, InsertSql(internal::kSendRecvTable)},
      {&step, InsertSql(internal::kStepTable)},
      {&rank_step, InsertSql(internal::kRankStepTable)},
      {&evaluation, InsertSql(internal::kEvaluationTable)},
      {&event, InsertSql(internal::kEventTable)},
      {&pipeline_span, InsertSql(internal::kPipelineSpanTable)},
      {&instruction_span, InsertSql(internal::kInstructionSpanTable)},
  };
  for (const auto& [stmt, sql] : statements) {
    if (Status st = Prepare(*stmt, sql); !st.ok()) return st;
  }
  return Status::Ok();
}

void RunWriter::Impl::FinalizeStatements() {
  for (Stmt* s : {&begin,        &commit,
                  &rollback,     &undo_candidates,
                  &undo_op,      &undo_redist_steps,
                  &undo_redist,  &undo_instructions,
                  &undo_program, &undo_rank_steps,
                  &undo_step,    &touch,
                  &update_run,   &finish_run,
                  &mesh,         &op,
                  &candidate,    &tensor,
                  &edge,         &redist,
                  &redist_step,  &program,
                  &instruction,  &send_recv,
                  &step,         &rank_step,
                  &evaluation,   &event,
                  &pipeline_span}) {
    *s = Stmt();
  }
  instruction_span = Stmt();
}

std::string RunWriter::Impl::DescribeForeignKeyViolations() {
  Stmt check;
  if (check.Prepare(db, "PRAGMA foreign_key_check") != SQLITE_OK) return {};
  std::map<std::pair<std::string, std::string>, int64_t> counts;  // (table, parent) -> rows
  while (check.Step() == SQLITE_ROW) ++counts[{check.Text(0), check.Text(2)}];
  std::string text;
  for (const auto& [key, count] : counts) {
    text += text.empty() ? "" : "; ";
    text += std::to_string(count) + " row" + (count == 1 ? "" : "s") + " of '" + key.first +
            "' refer" + (count == 1 ? "s" : "") + " to a missing '" + key.second + "'";
  }
  return text;
}

Status RunWriter::Impl::CommitLocked() {
  if (db == nullptr || sqlite3_get_autocommit(db) != 0) return Status::Ok();
  // The run's heartbeat, at most once a second: it costs a page of log per commit.
  Status st = Status::Ok();
  const double now = Now();
  if (now - last_touch >= 1.0) {
    touch.BindDouble(1, now);
    st = Run(touch, "committing");
    last_touch = now;
  }
  if (st.ok()) {
    const int rc = commit.Step();
    if (rc != SQLITE_DONE) {
      st = Error(rc, "committing");
      if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        const std::string detail = DescribeForeignKeyViolations();
        if (!detail.empty()) {
          st = Status(StatusCode::kInvalidInput, path + ": committing: dangling references (" +
                                                     detail + "); the transaction was rolled back");
        }
      }
    }
    commit.Reset();
  }
  if (!st.ok() && sqlite3_get_autocommit(db) == 0) (void)Run(rollback, "rolling back");
  return st;
}

Status RunWriter::Impl::FinishLocked(RunStatus status, std::string_view message) {
  if (Status st = Usable(); !st.ok()) return st;
  lock.FreeReserve();  // room for the status and the checkpoint, should the disk be full
  Status first = CommitLocked();
  finish_run.BindRow(RunStatusName(status), message, Now());
  if (Status st = Run(finish_run, "recording the final status"); !st.ok() && first.ok()) {
    first = st;
  }
  StopCheckpointer();
  FinalizeStatements();
  // Leave one self-contained file: log copied in and removed, back to a rollback journal.
  // A reader connected meanwhile blocks the switch: it is retried while readers come and go
  // (the viewer connects only while it loads); one that stays connected leaves WAL mode on.
  (void)internal::LeaveWalMode(db, path, kLeaveWalSeconds);
  CloseDb();
  lock.Release();
  finished = true;
  return first;
}

RunWriter::RunWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RunWriter::~RunWriter() {
  if (impl_ && !impl_->finished) {
    (void)Finish(RunStatus::kInterrupted,
                 "recording stopped without a final status (the writer was destroyed before "
                 "Finish())");
  }
}

const std::string& RunWriter::path() const { return impl_->path; }

bool RunWriter::finished() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->finished;
}

bool RunWriter::in_transaction() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->db != nullptr && sqlite3_get_autocommit(impl_->db) == 0;
}

Status RunWriter::Begin() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Ready();
}

Status RunWriter::Commit() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (Status st = impl_->Usable(); !st.ok()) return st;
  return impl_->CommitLocked();
}

Status RunWriter::Finish(RunStatus status, std::string_view message) {
  if (status != RunStatus::kRunning) impl_->StopCheckpointer();  // it may wait for mu
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (status == RunStatus::kRunning) {
    return Status(StatusCode::kInvalidInput,
                  impl_->path + ": Finish() needs a final status, not 'running'");
  }
  return impl_->FinishLocked(status, message);
}

Status RunWriter::UpdateRun(const RunInfo& run) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  internal::BindRunFields(d.update_run, run);
  return d.Run(d.update_run, "updating the run");
}

Status RunWriter::AddMesh(const MeshRecord& m) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  const auto what = [&] { return "recording mesh " + std::to_string(m.id) + " '" + m.name + "'"; };
  if (m.id < 0) return d.Invalid(what(), "negative id");
  if (Status st = d.Ready(); !st.ok()) return st;
  const std::string shape = internal::JsonInts(m.shape);
  const std::string names = internal::JsonStrings(m.axis_names);
  const std::string ranks = internal::JsonInts(m.ranks);
  Stmt& s = d.mesh;
  s.BindRow(m.id, m.name, shape, names, ranks);
  return d.Run(s, what);
}

Status RunWriter::AddOperator(const OperatorRecord& o) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  const auto what = [&] {
    return "recording operator " + std::to_string(o.id) + " '" + o.name + "'";
  };
  if (o.id < 0) return d.Invalid(what(), "negative id");
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.op;
  s.BindRow(o.id, o.name, o.scope, o.kind, o.is_backward, RefId{o.forward_id}, RefId{o.mesh_id},
            o.strategy, o.provenance, o.provenance_detail, RefId{o.provenance_op},
            RefId{o.search_round}, o.cost, RefId{o.worker}, o.attrs);
  if (Status st = d.Run(s, what); !st.ok()) return st;
  for (size_t i = 0; i < o.candidates.size(); ++i) {
    const CandidateRecord& c = o.candidates[i];
    Stmt& cs = d.candidate;
    cs.BindRow(o.id, static_cast<int64_t>(i), c.strategy, c.cost, c.compute_seconds, c.comm_seconds,
               c.memory_bytes, c.note);
    if (Status st = d.Run(cs, what); !st.ok()) {
      d.Undo({&d.undo_candidates, &d.undo_op}, o.id);
      return st;
    }
  }
  return Status::Ok();
}

Status RunWriter::AddTensor(const TensorRecord& t) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  const auto what = [&] {
    return "recording tensor " + std::to_string(t.id) + " '" + t.name + "'";
  };
  if (t.id < 0) return d.Invalid(what(), "negative id");
  if (Status st = d.Ready(); !st.ok()) return st;
  const std::string shape = internal::JsonInts(t.shape);
  Stmt& s = d.tensor;
  s.BindRow(t.id, t.name, shape, t.dtype, t.kind, RefId{t.producer_op}, t.producer_output, t.layout,
            RefId{t.mesh_id});
  return d.Run(s, what);
}

Status RunWriter::AddEdge(const EdgeRecord& e) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.edge;
  s.BindRow(e.dst_op, e.dst_input, e.tensor_id, RefId{e.src_op}, e.src_output, e.layout,
            RefId{e.mesh_id});
  return d.Run(s, [&] {
    return "recording the edge of tensor " + std::to_string(e.tensor_id) + " into operator " +
           std::to_string(e.dst_op) + " input " + std::to_string(e.dst_input);
  });
}

Status RunWriter::AddRedistribution(const RedistributionRecord& r) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  const auto what = [&] { return "recording redistribution " + std::to_string(r.id); };
  if (r.id < 0) return d.Invalid(what(), "negative id");
  if (Status st = d.Ready(); !st.ok()) return st;
  const std::string lower_bound = internal::JsonInts(r.lower_bound_per_rank);
  Stmt& s = d.redist;
  s.BindRow(r.id, RefId{r.tensor_id}, RefId{r.consumer_op}, RefId{r.consumer_input}, r.is_backward,
            r.from_layout, RefId{r.from_mesh_id}, r.to_layout, RefId{r.to_mesh_id},
            RefId{r.plan_mesh_id}, r.reason, r.bytes, r.lower_bound_bytes, r.bytes_total,
            r.lower_bound_total, lower_bound, r.byte_optimal, r.predicted_seconds);
  if (Status st = d.Run(s, what); !st.ok()) return st;
  for (const RedistStepRecord& x : r.steps) {
    const std::string axes = internal::JsonInts(x.axes);
    const std::string names = internal::JsonStrings(x.axis_names);
    const std::string groups = internal::JsonRankGroups(x.groups);
    const std::string sent = internal::JsonInts(x.bytes_sent);
    const std::string recv = internal::JsonInts(x.bytes_recv);
    const std::string transfers = internal::JsonTransferList(x.transfers);
    const std::string zeros = internal::JsonInts(x.zero_ranks);
    Stmt& t = d.redist_step;
    t.BindRow(r.id, x.ordinal, x.kind, axes, names, x.dim, x.dim_to, groups, x.bytes_sent_max,
              x.bytes_recv_max, sent, recv, x.messages, x.seconds, x.layout_after, x.reason,
              transfers, zeros, RefId{x.mesh_id});
    if (Status st = d.Run(t, [&] { return what() + " step " + std::to_string(x.ordinal); });
        !st.ok()) {
      d.Undo({&d.undo_redist_steps, &d.undo_redist}, r.id);
      return st;
    }
  }
  return Status::Ok();
}

Status RunWriter::AddProgram(const ProgramRecord& p) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  const auto what = [&] { return "recording the program of rank " + std::to_string(p.rank); };
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.program;
  s.BindRow(p.rank, p.role, p.text);
  if (Status st = d.Run(s, what); !st.ok()) return st;
  for (const InstructionRecord& in : p.instructions) {
    Stmt& t = d.instruction;
    t.BindRow(p.rank, in.ordinal, in.kind, RefId{in.op_id}, RefId{in.redistribution_id},
              RefId{in.tensor_id}, RefId{in.peer}, in.bytes, in.text);
    if (Status st = d.Run(t, [&] { return what() + " instruction " + std::to_string(in.ordinal); });
        !st.ok()) {
      d.Undo({&d.undo_instructions, &d.undo_program}, p.rank);
      return st;
    }
  }
  return Status::Ok();
}

Status RunWriter::AddSendRecv(const SendRecvRecord& p) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.send_recv;
  s.BindRow(RefId{p.tensor_id}, p.src_rank, p.dst_rank, RefId{p.src_op}, RefId{p.dst_op}, p.bytes,
            p.is_backward);
  return d.Run(s, "recording a send/receive pair");
}

Status RunWriter::AddPipelineSpan(const PipelineSpanRecord& p) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.pipeline_span;
  s.BindRow(p.step, p.rank, p.micro_batch, p.phase, p.start_seconds, p.end_seconds,
            p.compute_seconds, p.idle_seconds);
  return d.Run(s, "recording a pipeline span");
}

Status RunWriter::AddInstructionSpan(const InstructionSpanRecord& p) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.instruction_span;
  s.BindRow(p.step, p.rank, p.ordinal, p.part, p.kind, p.start_seconds, p.end_seconds);
  return d.Run(s, "recording an instruction span");
}

Status RunWriter::AddStep(const StepRecord& r) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  const auto what = [&] { return "recording step " + std::to_string(r.step); };
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.step;
  s.BindRow(r.step, r.epoch, r.loss, r.seconds, r.time != 0 ? r.time : Now());
  if (Status st = d.Run(s, what); !st.ok()) return st;
  for (const RankStepRecord& k : r.ranks) {
    Stmt& t = d.rank_step;
    t.BindRow(r.step, k.rank, k.compute_seconds, k.comm_seconds, k.bytes_sent, k.bytes_recv,
              k.param_bytes, k.grad_bytes, k.optimizer_bytes, k.activation_bytes, k.peak_bytes,
              k.wall_seconds);
    if (Status st = d.Run(t, [&] { return what() + " rank " + std::to_string(k.rank); });
        !st.ok()) {
      d.Undo({&d.undo_rank_steps, &d.undo_step}, r.step);
      return st;
    }
  }
  return Status::Ok();
}

Status RunWriter::AddEvaluation(const EvaluationRecord& e) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.evaluation;
  s.BindRow(e.step, e.epoch, e.name, e.loss, e.accuracy, e.samples, e.seconds,
            e.time != 0 ? e.time : Now());
  return d.Run(s, "recording an evaluation");
}

Status RunWriter::AddEvent(const EventRecord& e) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  Stmt& s = d.event;
  s.BindRow(e.time != 0 ? e.time : Now(), e.level, RefId{e.step}, RefId{e.rank}, e.source, e.text);
  return d.Run(s, "recording an event");
}

Status RunWriter::AddEvent(std::string_view level, std::string_view source, std::string_view text,
                           int64_t step, int64_t rank) {
  EventRecord e;
  e.level = std::string(level);
  e.source = std::string(source);
  e.text = std::string(text);
  e.step = step;
  e.rank = rank;
  return AddEvent(e);
}

}  // namespace shardscope::store
