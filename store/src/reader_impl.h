// Internal: the state behind a RunReader (one connection, its prepared statements) and the
// row readers its queries share. Opening lives in reader_open.cc, the queries in reader.cc.
#pragma once

#include <sqlite3.h>

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/store/reader.h"
#include "sqlite_util.h"

namespace shardscope::store {

struct RunReader::Impl {
  std::string path;
  sqlite3* db = nullptr;
  int version = 0;
  bool migrated = false;
  mutable std::mutex mu;

  internal::Stmt run, counts, meshes;
  internal::Stmt ops_all, op_by_id, ops_by_name, ops_in_scope, cands_all, cands_of_op;
  internal::Stmt tensors_all, tensor_by_id, edges_all, edges_into, edges_from, edges_of_tensor;
  internal::Stmt redists_all, redist_by_id, redists_of_op, redists_of_tensor, rsteps_all, rsteps_of;
  internal::Stmt programs, instructions, send_recvs;
  internal::Stmt steps, rank_steps, rank_series, rank_totals, evaluations, events, pipeline_spans;
  internal::Stmt instruction_spans, timed_steps;

  ~Impl() {
    for (internal::Stmt* s : AllStatements()) *s = internal::Stmt();
    instruction_spans = internal::Stmt();
    timed_steps = internal::Stmt();
    if (db != nullptr) sqlite3_close(db);
  }

  std::vector<internal::Stmt*> AllStatements() {
    return {&run,           &counts,       &meshes,        &ops_all,           &op_by_id,
            &ops_by_name,   &ops_in_scope, &cands_all,     &cands_of_op,       &tensors_all,
            &tensor_by_id,  &edges_all,    &edges_into,    &edges_from,        &edges_of_tensor,
            &redists_all,   &redist_by_id, &redists_of_op, &redists_of_tensor, &rsteps_all,
            &rsteps_of,     &programs,     &instructions,  &send_recvs,        &steps,
            &rank_steps,    &rank_series,  &rank_totals,   &evaluations,       &events,
            &pipeline_spans};
  }

  Status Error(int rc, std::string_view what) const {
    return internal::SqliteError(db, rc, path, what);
  }
  Status Damaged(std::string_view what) const {
    return Status(StatusCode::kCorrupt, path + ": damaged run file: " + std::string(what));
  }

  Status PrepareAll();

  // Steps `s` to the end, calling row() on each row; resets `s` whatever happens.
  template <typename F>
  Status ForEach(internal::Stmt& s, std::string_view what, F&& row) {
    internal::StmtUse use(s);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      if (Status st = row(); !st.ok()) return st;
      if (s.mistyped_column() >= 0) {
        return Damaged("column '" + s.ColumnName(s.mistyped_column()) +
                       "' holds text where a number belongs (" + std::string(what) + ")");
      }
    }
    return rc == SQLITE_DONE ? Status::Ok() : Error(rc, what);
  }

  Status ReadRun(RunInfo* out);
  Status ReadOperators(internal::Stmt& s, std::vector<OperatorRecord>* out);
  Status AttachCandidates(std::vector<OperatorRecord>* ops);
  Status ReadOperatorRow(internal::Stmt& s, OperatorRecord* o);
  Status ReadTensorRow(internal::Stmt& s, TensorRecord* t);
  void ReadEdgeRow(internal::Stmt& s, EdgeRecord* e);
  Status ReadEdges(internal::Stmt& s, std::vector<EdgeRecord>* out);
  // per_rank false: the per-rank columns and transfers are left empty (not parsed).
  Status ReadRedistRow(internal::Stmt& s, RedistributionRecord* r, bool per_rank = true);
  Status ReadRedistStepRow(internal::Stmt& s, RedistStepRecord* x, bool per_rank = true);
  Status ReadRedists(internal::Stmt& s, bool with_steps, std::vector<RedistributionRecord>* out,
                     bool per_rank = true);
  static void ReadRankStepRow(internal::Stmt& s, RankStepRecord* k);

  Status Json(bool ok, std::string_view table, int64_t id, std::string_view column) const {
    if (ok) return Status::Ok();
    return Damaged("table '" + std::string(table) + "' row " + std::to_string(id) + ": column '" +
                   std::string(column) + "' does not hold the expected JSON");
  }
};

}  // namespace shardscope::store
