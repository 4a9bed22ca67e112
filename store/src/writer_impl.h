// Internal: the state behind a RunWriter (its connection, prepared statements and the
// background checkpointer). Creating the file: writer_file.cc; recording: writer.cc; the
// checkpointer: writer_checkpoint.cc.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

#include "lock.h"
#include "shardscope/store/writer.h"
#include "sqlite_util.h"

namespace shardscope::store {
namespace internal {

inline double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Binds the run's own fields (columns::kRun's first kRunFields) as parameters 1, 2, ...
inline void BindRunFields(Stmt& s, const RunInfo& run) {
  s.BindRow(run.name, run.mode, run.search, run.devices, run.backend, run.model_path,
            run.model_text, run.config_json, run.command_line, run.shardscope_version,
            run.versions_json);
}

}  // namespace internal

struct RunWriter::Impl {
  std::string path;
  RunWriterOptions options;
  internal::WriterLock lock;
  mutable std::mutex mu;
  sqlite3* db = nullptr;
  bool finished = false;
  double last_touch = 0;  // when run.updated_at was last written

  internal::Stmt begin, commit, rollback, touch, update_run, finish_run;
  internal::Stmt undo_candidates, undo_op, undo_redist_steps, undo_redist, undo_instructions,
      undo_program;
  internal::Stmt undo_rank_steps, undo_step;
  internal::Stmt mesh, op, candidate, tensor, edge, redist, redist_step, program, instruction,
      send_recv;
  internal::Stmt step, rank_step, evaluation, event, pipeline_span, instruction_span;

  // Background checkpoints (a connection of their own).
  sqlite3* ckpt_db = nullptr;
  std::thread ckpt_thread;
  std::mutex ckpt_mu;
  std::condition_variable ckpt_cv;
  bool ckpt_wanted = false;
  bool ckpt_stop = false;

  ~Impl() {
    StopCheckpointer();
    CloseDb();
  }

  Status Error(int rc, std::string_view what) const {
    return internal::SqliteError(db, rc, path, what);
  }
  Status Usable() const {
    if (finished || db == nullptr) {
      return Status(StatusCode::kInvalidInput,
                    path + ": the run was already finished; nothing more can be recorded");
    }
    return Status::Ok();
  }
  // Steps a write statement once and resets it. `what` (text, or a callable returning it,
  // called only on failure) names what was being recorded.
  template <typename W>
  Status Run(internal::Stmt& s, W&& what) {
    const int rc = s.Step();
    Status st = Status::Ok();
    if (rc != SQLITE_DONE) {
      if constexpr (std::is_invocable_v<W>) {
        st = Error(rc, what());
      } else {
        st = Error(rc, what);
      }
    }
    s.Reset();
    return st;
  }
  // Usable, and in a transaction (opened when none is).
  Status Ready() {
    if (Status st = Usable(); !st.ok()) return st;
    if (sqlite3_get_autocommit(db) == 0) return Status::Ok();
    return Run(begin, "beginning a transaction");
  }
  // A record of several rows is all or nothing: when a child row fails, the rows of the
  // record already added are deleted again (cheaper than a savepoint per record, which
  // copies every page it changes). Nothing to undo when the failure ended the transaction.
  void Undo(std::initializer_list<internal::Stmt*> deletes, int64_t key) {
    if (sqlite3_get_autocommit(db) != 0) return;
    for (internal::Stmt* d : deletes) {
      d->BindInt(1, key);
      (void)Run(*d, "undoing a partial record");
    }
  }
  Status Invalid(const std::string& what, const std::string& why) const {
    return Status(StatusCode::kInvalidInput, path + ": " + what + ": " + why);
  }

  Status Prepare(internal::Stmt& s, std::string_view sql) {
    const int rc = s.Prepare(db, sql);
    return rc == SQLITE_OK ? Status::Ok() : Error(rc, "preparing statements");
  }
  Status Open();
  Status PrepareAll();
  Status CommitLocked();
  std::string DescribeForeignKeyViolations();
  Status FinishLocked(RunStatus status, std::string_view message);
  void StartCheckpointer();
  void StopCheckpointer();
  void CatchUp();
  // After each commit, on the writer's thread (mu held), with the log's size in pages. A
  // checkpoint is asked for when the log reaches kCheckpointPages, and again only when it has
  // grown by as much since: between the two, the writer's transactions find the log copied
  // and restart it (a checkpoint running at that moment would prevent the restart).
  int last_trigger_pages = 0;
  int last_commit_pages = 0;
  static int WalHook(void* arg, sqlite3* db, const char*, int pages);
  void FinalizeStatements();
  void CloseDb() {
    FinalizeStatements();
    if (db != nullptr) {
      sqlite3_close(db);
      db = nullptr;
    }
  }
};

}  // namespace shardscope::store
