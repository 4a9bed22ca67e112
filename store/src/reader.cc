#include <mutex>

#include "columns.h"
#include "json_text.h"
#include "reader_impl.h"

namespace shardscope::store {

using internal::RefId;
using internal::Stmt;

Status RunReader::Impl::PrepareAll() {
  using internal::SelectSql;
  const std::pair<Stmt*, std::string> statements[] = {
      {&run, SelectSql(internal::kRunTable, "WHERE id = 1")},
      {&counts,
       "SELECT (SELECT count(*) FROM mesh), (SELECT count(*) FROM operator), "
       "(SELECT count(*) FROM operator WHERE is_backward), (SELECT count(*) FROM candidate), "
       "(SELECT count(*) FROM tensor), (SELECT count(*) FROM edge), "
       "(SELECT count(*) FROM redistribution), (SELECT count(*) FROM redist_step), "
       "(SELECT count(*) FROM program), (SELECT count(*) FROM instruction), "
       "(SELECT count(*) FROM send_recv), (SELECT count(*) FROM step), "
       "(SELECT count(*) FROM rank_step), (SELECT count(*) FROM evaluation), "
       "(SELECT count(*) FROM event)"},
      {&meshes, SelectSql(internal::kMeshTable, "ORDER BY id")},
      {&ops_all, SelectSql(internal::kOperatorTable, "ORDER BY id")},
      {&op_by_id, SelectSql(internal::kOperatorTable, "WHERE id = ?1")},
      {&ops_by_name, SelectSql(internal::kOperatorTable, "WHERE name = ?1 ORDER BY id")},
      {&ops_in_scope, SelectSql(internal::kOperatorTable,
                                "WHERE scope = ?1 OR (scope >= ?2 AND scope < ?3) ORDER BY id")},
      {&cands_all, SelectSql(internal::kCandidateTable, "ORDER BY op_id, ordinal")},
      {&cands_of_op, SelectSql(internal::kCandidateTable, "WHERE op_id = ?1 ORDER BY ordinal")},
      {&tensors_all, SelectSql(internal::kTensorTable, "ORDER BY id")},
      {&tensor_by_id, SelectSql(internal::kTensorTable, "WHERE id = ?1")},
      {&edges_all, SelectSql(internal::kEdgeTable, "ORDER BY dst_op, dst_input")},
      {&edges_into, SelectSql(internal::kEdgeTable, "WHERE dst_op = ?1 ORDER BY dst_input")},
      {&edges_from,
       SelectSql(internal::kEdgeTable, "WHERE src_op = ?1 ORDER BY dst_op, dst_input")},
      {&edges_of_tensor,
       SelectSql(internal::kEdgeTable, "WHERE tensor_id = ?1 ORDER BY dst_op, dst_input")},
      {&redists_all, SelectSql(internal::kRedistributionTable, "ORDER BY id")},
      {&redist_by_id, SelectSql(internal::kRedistributionTable, "WHERE id = ?1")},
      {&redists_of_op,
       SelectSql(internal::kRedistributionTable, "WHERE consumer_op = ?1 ORDER BY id")},
      {&redists_of_tensor,
       SelectSql(internal::kRedistributionTable, "WHERE tensor_id = ?1 ORDER BY id")},
      {&rsteps_all, SelectSql(internal::kRedistStepTable, "ORDER BY redistribution_id, ordinal")},
      {&rsteps_of,
       SelectSql(internal::kRedistStepTable, "WHERE redistribution_id = ?1 ORDER BY ordinal")},
      {&programs, SelectSql(internal::kProgramTable, "ORDER BY rank")},
      {&instructions, SelectSql(internal::kInstructionTable, "ORDER BY rank, ordinal")},
      {&send_recvs, SelectSql(internal::kSendRecvTable, "ORDER BY id")},
      {&steps, SelectSql(internal::kStepTable, "WHERE step BETWEEN ?1 AND ?2 ORDER BY step")},
      {&rank_steps,
       SelectSql(internal::kRankStepTable, "WHERE step BETWEEN ?1 AND ?2 ORDER BY step, rank")},
      {&rank_series, SelectSql(internal::kRankStepTable, "WHERE rank = ?1 ORDER BY step")},
      {&rank_totals,
       "SELECT rank, count(*), total(compute_seconds), total(comm_seconds), sum(bytes_sent), "
       "sum(bytes_recv), max(peak_bytes), max(param_bytes), max(grad_bytes), "
       "max(optimizer_bytes), max(activation_bytes) FROM rank_step GROUP BY rank ORDER BY rank"},
      {&evaluations, SelectSql(internal::kEvaluationTable, "ORDER BY id")},
      {&events, SelectSql(internal::kEventTable, "WHERE id > ?1 ORDER BY id LIMIT ?2")},
      {&pipeline_spans,
       SelectSql(internal::kPipelineSpanTable,
                 "WHERE step BETWEEN ?1 AND ?2 ORDER BY step, rank, start_seconds")},
      {&instruction_spans, SelectSql(internal::kInstructionSpanTable,
                                     "WHERE step BETWEEN ?1 AND ?2 AND (?3 < 0 OR rank = ?3) "
                                     "ORDER BY step, rank, ordinal, part")},
      {&timed_steps, "SELECT DISTINCT step FROM instruction_span ORDER BY step"},
  };
  for (const auto& [stmt, sql] : statements) {
    const int rc = stmt->Prepare(db, sql);
    if (rc != SQLITE_OK) {
      return Damaged("its tables do not match schema version " + std::to_string(version) + " (" +
                     sqlite3_errmsg(db) + ")");
    }
  }
  return Status::Ok();
}

Status RunReader::Impl::ReadRun(RunInfo* out) {
  bool found = false;
  Status st = ForEach(run, "reading the run", [&] {
    found = true;
    RunInfo& r = *out;
    run.ReadRow(0, r.name, r.mode, r.search, r.devices, r.backend, r.model_path, r.model_text,
                r.config_json, r.command_line, r.shardscope_version, r.versions_json);
    const std::string status = run.Text(11);
    if (!ParseRunStatus(status, &r.stored_status)) {
      return Damaged("unknown run status '" + status + "'");
    }
    r.status = r.stored_status;
    r.status_message = run.Text(12);
    r.started_at = run.IsNull(13) ? 0 : run.Double(13);
    r.updated_at = run.IsNull(14) ? 0 : run.Double(14);
    r.ended_at = run.IsNull(15) ? 0 : run.Double(15);
    r.writer_pid = run.IsNull(16) ? 0 : run.Int(16);
    r.writer_host = run.Text(17);
    r.schema_version = version;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (!found) return Damaged("the run table is empty");
  return Status::Ok();
}

Status RunReader::Impl::ReadOperatorRow(Stmt& s, OperatorRecord* o) {
  s.ReadRow(0, o->id, o->name, o->scope, o->kind, o->is_backward, RefId{o->forward_id},
            RefId{o->mesh_id}, o->strategy, o->provenance, o->provenance_detail,
            RefId{o->provenance_op}, RefId{o->search_round}, o->cost, RefId{o->worker}, o->attrs);
  return Status::Ok();
}

Status RunReader::Impl::ReadOperators(Stmt& s, std::vector<OperatorRecord>* out) {
  return ForEach(s, "reading operators", [&] {
    out->emplace_back();
    return ReadOperatorRow(s, &out->back());
  });
}

// Candidates of operators sorted by id: one ordered scan for all of them.
Status RunReader::Impl::AttachCandidates(std::vector<OperatorRecord>* ops) {
  size_t i = 0;
  return ForEach(cands_all, "reading candidates", [&] {
    const int64_t op_id = cands_all.Int(0);
    while (i < ops->size() && (*ops)[i].id < op_id) ++i;
    if (i == ops->size() || (*ops)[i].id != op_id) return Status::Ok();  // no such operator
    CandidateRecord c;
    cands_all.ReadRow(2, c.strategy, c.cost, c.compute_seconds, c.comm_seconds, c.memory_bytes,
                      c.note);
    (*ops)[i].candidates.push_back(std::move(c));
    return Status::Ok();
  });
}

Status RunReader::Impl::ReadTensorRow(Stmt& s, TensorRecord* t) {
  t->id = s.Int(0);
  t->name = s.Text(1);
  if (Status st = Json(internal::ParseInts(s.Text(2), &t->shape), "tensor", t->id, "shape");
      !st.ok()) {
    return st;
  }
  s.ReadRow(3, t->dtype, t->kind, RefId{t->producer_op}, t->producer_output, t->layout,
            RefId{t->mesh_id});
  return Status::Ok();
}

void RunReader::Impl::ReadEdgeRow(Stmt& s, EdgeRecord* e) {
  s.ReadRow(0, e->dst_op, e->dst_input, e->tensor_id, RefId{e->src_op}, e->src_output, e->layout,
            RefId{e->mesh_id});
}

Status RunReader::Impl::ReadEdges(Stmt& s, std::vector<EdgeRecord>* out) {
  return ForEach(s, "reading edges", [&] {
    out->emplace_back();
    ReadEdgeRow(s, &out->back());
    return Status::Ok();
  });
}

Status RunReader::Impl::ReadRedistRow(Stmt& s, RedistributionRecord* r, bool per_rank) {
  s.ReadRow(0, r->id, RefId{r->tensor_id}, RefId{r->consumer_op}, RefId{r->consumer_input},
            r->is_backward, r->from_layout, RefId{r->from_mesh_id}, r->to_layout,
            RefId{r->to_mesh_id}, RefId{r->plan_mesh_id}, r->reason, r->bytes, r->lower_bound_bytes,
            r->bytes_total, r->lower_bound_total);
  if (Status st = Json(!per_rank || internal::ParseInts(s.Text(15), &r->lower_bound_per_rank),
                       "redistribution", r->id, "lower_bound_per_rank");
      !st.ok()) {
    return st;
  }
  r->byte_optimal = s.Bool(16);
  r->predicted_seconds = s.Double(17);
  return Status::Ok();
}

Status RunReader::Impl::ReadRedistStepRow(Stmt& s, RedistStepRecord* x, bool per_rank) {
  const int64_t id = s.Int(0);
  x->ordinal = s.Int(1);
  x->kind = s.Text(2);
  const auto check = [&](bool ok, std::string_view column) {
    return Json(ok, "redist_step", id, column);
  };
  if (Status st = check(internal::ParseInts(s.Text(3), &x->axes), "axes"); !st.ok()) return st;
  if (Status st = check(internal::ParseStrings(s.Text(4), &x->axis_names), "axis_names");
      !st.ok()) {
    return st;
  }
  x->dim = s.Int(5);
  x->dim_to = s.Int(6);
  if (Status st = check(internal::ParseRankGroups(s.Text(7), &x->groups), "rank_groups");
      !st.ok()) {
    return st;
  }
  x->bytes_sent_max = s.Int(8);
  x->bytes_recv_max = s.Int(9);
  s.ReadRow(12, x->messages, x->seconds, x->layout_after, x->reason);
  x->mesh_id = s.Ref(18);
  if (!per_rank) return check(internal::ParseInts(s.Text(17), &x->zero_ranks), "zero_ranks");
  if (Status st = check(internal::ParseInts(s.Text(10), &x->bytes_sent), "bytes_sent"); !st.ok()) {
    return st;
  }
  if (Status st = check(internal::ParseInts(s.Text(11), &x->bytes_recv), "bytes_recv"); !st.ok()) {
    return st;
  }
  if (Status st = check(internal::ParseTransferList(s.Text(16), &x->transfers), "transfers");
      !st.ok()) {
    return st;
  }
  return check(internal::ParseInts(s.Text(17), &x->zero_ranks), "zero_ranks");
}

Status RunReader::Impl::ReadRedists(Stmt& s, bool with_steps,
                                    std::vector<RedistributionRecord>* out, bool per_rank) {
  Status st = ForEach(s, "reading redistributions", [&] {
    out->emplace_back();
    return ReadRedistRow(s, &out->back(), per_rank);
  });
  if (!st.ok() || !with_steps) return st;
  if (out->size() == 1) {  // one lookup: use the index
    rsteps_of.BindInt(1, out->front().id);
    return ForEach(rsteps_of, "reading redistribution steps", [&] {
      out->front().steps.emplace_back();
      return ReadRedistStepRow(rsteps_of, &out->front().steps.back(), per_rank);
    });
  }
  // Several, sorted by id: one ordered scan of every step.
  size_t i = 0;
  return ForEach(rsteps_all, "reading redistribution steps", [&] {
    const int64_t id = rsteps_all.Int(0);
    while (i < out->size() && (*out)[i].id < id) ++i;
    if (i == out->size() || (*out)[i].id != id) return Status::Ok();
    (*out)[i].steps.emplace_back();
    return ReadRedistStepRow(rsteps_all, &(*out)[i].steps.back(), per_rank);
  });
}

void RunReader::Impl::ReadRankStepRow(Stmt& s, RankStepRecord* k) {
  s.ReadRow(1, k->rank, k->compute_seconds, k->comm_seconds, k->bytes_sent, k->bytes_recv,
            k->param_bytes, k->grad_bytes, k->optimizer_bytes, k->activation_bytes, k->peak_bytes,
            k->wall_seconds);
}

Result<RunCounts> RunReader::Counts() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->counts;
  RunCounts c;
  Status st = impl_->ForEach(s, "counting rows", [&] {
    int64_t* fields[] = {
        &c.meshes,     &c.operators,       &c.backward_operators, &c.candidates,  &c.tensors,
        &c.edges,      &c.redistributions, &c.redist_steps,       &c.programs,    &c.instructions,
        &c.send_recvs, &c.steps,           &c.rank_steps,         &c.evaluations, &c.events};
    for (int i = 0; i < 15; ++i) *fields[i] = s.Int(i);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return c;
}

Result<std::vector<MeshRecord>> RunReader::Meshes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  Stmt& s = d.meshes;
  std::vector<MeshRecord> out;
  Status st = d.ForEach(s, "reading meshes", [&] {
    MeshRecord m;
    m.id = s.Int(0);
    m.name = s.Text(1);
    if (Status j = d.Json(internal::ParseInts(s.Text(2), &m.shape), "mesh", m.id, "shape");
        !j.ok()) {
      return j;
    }
    if (Status j =
            d.Json(internal::ParseStrings(s.Text(3), &m.axis_names), "mesh", m.id, "axis_names");
        !j.ok()) {
      return j;
    }
    if (Status j = d.Json(internal::ParseInts(s.Text(4), &m.ranks), "mesh", m.id, "ranks");
        !j.ok()) {
      return j;
    }
    out.push_back(std::move(m));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<OperatorRecord>> RunReader::Operators(bool with_candidates) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<OperatorRecord> out;
  if (Status st = impl_->ReadOperators(impl_->ops_all, &out); !st.ok()) return st;
  if (with_candidates) {
    if (Status st = impl_->AttachCandidates(&out); !st.ok()) return st;
  }
  return out;
}

namespace {
// Fills the candidates of each operator with one indexed lookup per operator.
template <typename Impl>
Status CandidatesByLookup(Impl& d, std::vector<OperatorRecord>* ops) {
  for (OperatorRecord& o : *ops) {
    Stmt& s = d.cands_of_op;
    s.BindInt(1, o.id);
    Status st = d.ForEach(s, "reading candidates", [&] {
      CandidateRecord c;
      s.ReadRow(2, c.strategy, c.cost, c.compute_seconds, c.comm_seconds, c.memory_bytes, c.note);
      o.candidates.push_back(std::move(c));
      return Status::Ok();
    });
    if (!st.ok()) return st;
  }
  return Status::Ok();
}
}  // namespace

Result<OperatorRecord> RunReader::Operator(int64_t id) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<OperatorRecord> out;
  impl_->op_by_id.BindInt(1, id);
  if (Status st = impl_->ReadOperators(impl_->op_by_id, &out); !st.ok()) return st;
  if (out.empty()) {
    return Status(StatusCode::kNotFound,
                  impl_->path + ": no operator " + std::to_string(id) + " in this run");
  }
  out.resize(1);
  if (Status st = CandidatesByLookup(*impl_, &out); !st.ok()) return st;
  return std::move(out.front());
}

Result<std::vector<OperatorRecord>> RunReader::OperatorsNamed(std::string_view name) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<OperatorRecord> out;
  const std::string key(name);
  impl_->ops_by_name.BindText(1, key);
  if (Status st = impl_->ReadOperators(impl_->ops_by_name, &out); !st.ok()) return st;
  if (Status st = CandidatesByLookup(*impl_, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<OperatorRecord>> RunReader::OperatorsInScope(std::string_view scope) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<OperatorRecord> out;
  // Scopes under "a.b" are the strings from "a.b." (inclusive) to "a.b/" ('/' follows '.').
  const std::string exact(scope);
  const std::string low = exact + ".";
  const std::string high = exact + "/";
  Stmt& s = impl_->ops_in_scope;
  s.BindText(1, exact);
  s.BindText(2, low);
  s.BindText(3, high);
  if (Status st = impl_->ReadOperators(s, &out); !st.ok()) return st;
  if (Status st = CandidatesByLookup(*impl_, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<TensorRecord>> RunReader::Tensors() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->tensors_all;
  std::vector<TensorRecord> out;
  Status st = impl_->ForEach(s, "reading tensors", [&] {
    out.emplace_back();
    return impl_->ReadTensorRow(s, &out.back());
  });
  if (!st.ok()) return st;
  return out;
}

Result<TensorRecord> RunReader::Tensor(int64_t id) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->tensor_by_id;
  s.BindInt(1, id);
  std::vector<TensorRecord> out;
  Status st = impl_->ForEach(s, "reading a tensor", [&] {
    out.emplace_back();
    return impl_->ReadTensorRow(s, &out.back());
  });
  if (!st.ok()) return st;
  if (out.empty()) {
    return Status(StatusCode::kNotFound,
                  impl_->path + ": no tensor " + std::to_string(id) + " in this run");
  }
  return std::move(out.front());
}

Result<std::vector<EdgeRecord>> RunReader::Edges() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<EdgeRecord> out;
  if (Status st = impl_->ReadEdges(impl_->edges_all, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<EdgeRecord>> RunReader::EdgesInto(int64_t op) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<EdgeRecord> out;
  impl_->edges_into.BindInt(1, op);
  if (Status st = impl_->ReadEdges(impl_->edges_into, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<EdgeRecord>> RunReader::EdgesFrom(int64_t op) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<EdgeRecord> out;
  impl_->edges_from.BindInt(1, op);
  if (Status st = impl_->ReadEdges(impl_->edges_from, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<EdgeRecord>> RunReader::EdgesOfTensor(int64_t tensor) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<EdgeRecord> out;
  impl_->edges_of_tensor.BindInt(1, tensor);
  if (Status st = impl_->ReadEdges(impl_->edges_of_tensor, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<RedistributionRecord>> RunReader::Redistributions(bool with_steps,
                                                                     bool per_rank) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<RedistributionRecord> out;
  if (Status st = impl_->ReadRedists(impl_->redists_all, with_steps, &out, per_rank); !st.ok())
    return st;
  return out;
}

Result<RedistributionRecord> RunReader::Redistribution(int64_t id) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<RedistributionRecord> out;
  impl_->redist_by_id.BindInt(1, id);
  if (Status st = impl_->ReadRedists(impl_->redist_by_id, true, &out); !st.ok()) return st;
  if (out.empty()) {
    return Status(StatusCode::kNotFound,
                  impl_->path + ": no redistribution " + std::to_string(id) + " in this run");
  }
  return std::move(out.front());
}

namespace {
template <typename Impl>
Status StepsByLookup(Impl& d, std::vector<RedistributionRecord>* out) {
  for (RedistributionRecord& r : *out) {
    d.rsteps_of.BindInt(1, r.id);
    Status st = d.ForEach(d.rsteps_of, "reading redistribution steps", [&] {
      r.steps.emplace_back();
      return d.ReadRedistStepRow(d.rsteps_of, &r.steps.back());
    });
    if (!st.ok()) return st;
  }
  return Status::Ok();
}
}  // namespace

Result<std::vector<RedistributionRecord>> RunReader::RedistributionsForOperator(int64_t op) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<RedistributionRecord> out;
  impl_->redists_of_op.BindInt(1, op);
  if (Status st = impl_->ReadRedists(impl_->redists_of_op, false, &out); !st.ok()) return st;
  if (Status st = StepsByLookup(*impl_, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<RedistributionRecord>> RunReader::RedistributionsOfTensor(int64_t tensor) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<RedistributionRecord> out;
  impl_->redists_of_tensor.BindInt(1, tensor);
  if (Status st = impl_->ReadRedists(impl_->redists_of_tensor, false, &out); !st.ok()) return st;
  if (Status st = StepsByLookup(*impl_, &out); !st.ok()) return st;
  return out;
}

Result<std::vector<ProgramRecord>> RunReader::Programs(bool with_instructions) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  std::vector<ProgramRecord> out;
  Status st = d.ForEach(d.programs, "reading programs", [&] {
    ProgramRecord p;
    p.rank = d.programs.Int(0);
    p.role = d.programs.Text(1);
    p.text = d.programs.Text(2);
    out.push_back(std::move(p));
    return Status::Ok();
  });
  if (!st.ok() || !with_instructions) {
    if (!st.ok()) return st;
    return out;
  }
  size_t i = 0;
  Stmt& s = d.instructions;
  st = d.ForEach(s, "reading instructions", [&] {
    const int64_t rank = s.Int(0);
    while (i < out.size() && out[i].rank < rank) ++i;
    if (i == out.size() || out[i].rank != rank) return Status::Ok();
    InstructionRecord in;
    s.ReadRow(1, in.ordinal, in.kind, RefId{in.op_id}, RefId{in.redistribution_id},
              RefId{in.tensor_id}, RefId{in.peer}, in.bytes, in.text);
    out[i].instructions.push_back(std::move(in));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<SendRecvRecord>> RunReader::SendRecvs() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->send_recvs;
  std::vector<SendRecvRecord> out;
  Status st = impl_->ForEach(s, "reading send/receive pairs", [&] {
    SendRecvRecord p;
    s.ReadRow(0, p.id, RefId{p.tensor_id}, p.src_rank, p.dst_rank, RefId{p.src_op}, RefId{p.dst_op},
              p.bytes, p.is_backward);
    out.push_back(std::move(p));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<PipelineSpanRecord>> RunReader::PipelineSpans(int64_t first,
                                                                 int64_t last) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->pipeline_spans;
  s.BindInt(1, first);
  s.BindInt(2, last);
  std::vector<PipelineSpanRecord> out;
  Status st = impl_->ForEach(s, "reading the pipeline timeline", [&] {
    PipelineSpanRecord p;
    s.ReadRow(0, p.step, p.rank, p.micro_batch, p.phase, p.start_seconds, p.end_seconds,
              p.compute_seconds, p.idle_seconds);
    out.push_back(std::move(p));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<InstructionSpanRecord>> RunReader::InstructionSpans(int64_t first, int64_t last,
                                                                       int64_t rank) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->instruction_spans;
  s.BindInt(1, first);
  s.BindInt(2, last);
  s.BindInt(3, rank);
  std::vector<InstructionSpanRecord> out;
  Status st = impl_->ForEach(s, "reading the instruction timing", [&] {
    InstructionSpanRecord p;
    s.ReadRow(0, p.step, p.rank, p.ordinal, p.part, p.kind, p.start_seconds, p.end_seconds);
    out.push_back(std::move(p));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<int64_t>> RunReader::TimedSteps() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->timed_steps;
  std::vector<int64_t> out;
  Status st = impl_->ForEach(s, "reading the timed steps", [&] {
    out.push_back(s.Int(0));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<StepRecord>> RunReader::Steps(int64_t first, int64_t last,
                                                 bool with_ranks) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  std::vector<StepRecord> out;
  Stmt& s = d.steps;
  s.BindInt(1, first);
  s.BindInt(2, last);
  Status st = d.ForEach(s, "reading steps", [&] {
    StepRecord r;
    s.ReadRow(0, r.step, r.epoch, r.loss, r.seconds, r.time);
    out.push_back(std::move(r));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (!with_ranks || out.empty()) return out;
  Stmt& k = d.rank_steps;
  k.BindInt(1, first);
  k.BindInt(2, last);
  size_t i = 0;
  st = d.ForEach(k, "reading per-rank figures", [&] {
    const int64_t step = k.Int(0);
    while (i < out.size() && out[i].step < step) ++i;
    if (i == out.size() || out[i].step != step) return Status::Ok();
    out[i].ranks.emplace_back();
    Impl::ReadRankStepRow(k, &out[i].ranks.back());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<std::pair<int64_t, RankStepRecord>>> RunReader::RankSeries(int64_t rank) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->rank_series;
  s.BindInt(1, rank);
  std::vector<std::pair<int64_t, RankStepRecord>> out;
  Status st = impl_->ForEach(s, "reading per-rank figures", [&] {
    out.emplace_back(s.Int(0), RankStepRecord{});
    Impl::ReadRankStepRow(s, &out.back().second);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<RankTotalsRecord>> RunReader::RankTotals() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->rank_totals;
  std::vector<RankTotalsRecord> out;
  Status st = impl_->ForEach(s, "summing per-rank figures", [&] {
    RankTotalsRecord t;
    s.ReadRow(0, t.rank, t.steps, t.compute_seconds, t.comm_seconds, t.bytes_sent, t.bytes_recv,
              t.peak_bytes, t.param_bytes, t.grad_bytes, t.optimizer_bytes, t.activation_bytes);
    out.push_back(t);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<EvaluationRecord>> RunReader::Evaluations() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->evaluations;
  std::vector<EvaluationRecord> out;
  Status st = impl_->ForEach(s, "reading evaluations", [&] {
    EvaluationRecord e;
    s.ReadRow(0, e.id, e.step, e.epoch, e.name, e.loss, e.accuracy, e.samples, e.seconds, e.time);
    out.push_back(std::move(e));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<EventRecord>> RunReader::Events(int64_t after_id, int64_t limit) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt& s = impl_->events;
  s.BindInt(1, after_id);
  s.BindInt(2, limit < 0 ? -1 : limit);
  std::vector<EventRecord> out;
  Status st = impl_->ForEach(s, "reading events", [&] {
    EventRecord e;
    s.ReadRow(0, e.id, e.time, e.level, RefId{e.step}, RefId{e.rank}, e.source, e.text);
    out.push_back(std::move(e));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace shardscope::store
