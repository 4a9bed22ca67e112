#include "shardscope/store/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>

#include "json_text.h"
#include "lock.h"
#include "schema.h"
#include "shardscope/base/format.h"
#include "sqlite_util.h"

namespace shardscope::store {

using internal::RefId;
using internal::Stmt;

namespace {

constexpr double kLeaveWalSeconds = 5;  // Finish() retries the switch back this long
constexpr int kCheckpointPages = 1000;  // SQLite's default auto-checkpoint threshold
constexpr int kCatchUpPages = 256;      // copied with the writer held (see CatchUp)
constexpr int kMaxLogPages = 8 * kCheckpointPages;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string DirOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// The database and its side files.
void RemoveDatabaseFiles(const std::string& base) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    unlink((base + suffix).c_str());
  }
}

void FsyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

void BindRunFields(Stmt& s, const RunInfo& run) {
  s.BindRow(run.name, run.mode, run.search, run.devices, run.backend, run.model_path,
            run.model_text, run.config_json, run.command_line, run.shardscope_version,
            run.versions_json);
}

constexpr std::string_view kInsertRun =
    "INSERT INTO run (name, mode, search, devices, backend, model_path, model_text, config, "
    "command_line, shardscope_version, versions, id, status, status_message, started_at, "
    "updated_at, writer_pid, writer_host) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 1, 'running', '', ?12, ?12, ?13, ?14)";

// Makes the file at `tmp` with the whole schema and the run row, in WAL mode, and closes it.
Status CreateSchema(const std::string& tmp, const std::string& path, const RunInfo& run,
                    const RunWriterOptions& options) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      tmp.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status st = internal::SqliteError(db, rc, path, "creating the run file");
    sqlite3_close(db);
    return st;
  }
  sqlite3_extended_result_codes(db, 1);
  const std::string what = "creating the run file";
  Status st = Status::Ok();
  if (options.page_size > 0) {
    st = internal::Exec(db, "PRAGMA page_size = " + std::to_string(options.page_size), path, what);
  }
  if (st.ok()) st = internal::Exec(db, "PRAGMA journal_mode = WAL", path, what);
  // No syncs while the file has no name yet: one fsync before the rename does it.
  if (st.ok()) st = internal::Exec(db, "PRAGMA synchronous = OFF", path, what);
  if (st.ok()) {
    st =
        internal::Exec(db, "PRAGMA application_id = " + std::to_string(kApplicationId), path, what);
  }
  if (st.ok()) st = internal::ApplyMigrations(db, 0, internal::Migrations(), path);
  if (st.ok()) {
    Stmt insert;
    rc = insert.Prepare(db, kInsertRun);
    if (rc == SQLITE_OK) {
      BindRunFields(insert, run);
      insert.BindDouble(12, Now());
      insert.BindInt(13, getpid());
      const std::string host = internal::HostName();
      insert.BindText(14, host);
      rc = insert.Step();
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK) st = internal::SqliteError(db, rc, path, what);
  }
  rc = sqlite3_close(db);  // checkpoints the log into the file and removes it
  if (st.ok() && rc != SQLITE_OK) st = internal::SqliteCodeError(rc, path, what);
  if (st.ok()) {
    const int fd = open(tmp.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
      st = Status(errno == ENOSPC ? ErrorCode::kDiskFull : ErrorCode::kIo,
                  path + ": " + what + ": " + std::strerror(errno));
    }
    if (fd >= 0) close(fd);
  }
  return st;
}

}  // namespace

struct RunWriter::Impl {
  std::string path;
  RunWriterOptions options;
  internal::WriterLock lock;
  mutable std::mutex mu;
  sqlite3* db = nullptr;
  bool finished = false;
  double last_touch = 0;  // when run.updated_at was last written

  Stmt begin, commit, rollback, touch, update_run, finish_run;
  Stmt undo_candidates, undo_op, undo_redist_steps, undo_redist, undo_instructions, undo_program;
  Stmt undo_rank_steps, undo_step;
  Stmt mesh, op, candidate, tensor, edge, redist, redist_step, program, instruction, send_recv;
  Stmt step, rank_step, evaluation, event, pipeline_span;

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
      return Status(ErrorCode::kInvalidArgument,
                    path + ": the run was already finished; nothing more can be recorded");
    }
    return Status::Ok();
  }
  // Steps a write statement once and resets it. `what` (text, or a callable returning it,
  // called only on failure) names what was being recorded.
  template <typename W>
  Status Run(Stmt& s, W&& what) {
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
  void Undo(std::initializer_list<Stmt*> deletes, int64_t key) {
    if (sqlite3_get_autocommit(db) != 0) return;
    for (Stmt* d : deletes) {
      d->BindInt(1, key);
      (void)Run(*d, "undoing a partial record");
    }
  }
  Status Invalid(const std::string& what, const std::string& why) const {
    return Status(ErrorCode::kInvalidArgument, path + ": " + what + ": " + why);
  }

  Status Prepare(Stmt& s, std::string_view sql) {
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
  static int WalHook(void* arg, sqlite3* db, const char*, int pages) {
    auto* impl = static_cast<Impl*>(arg);
    impl->last_commit_pages = pages;
    if (pages >= kMaxLogPages) {
      // The checkpoints cannot keep up (a very fast writer on a slow disk): copy here.
      sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      impl->last_trigger_pages = 0;
    } else if (pages >= kCheckpointPages &&
               (pages < impl->last_trigger_pages ||
                pages >= impl->last_trigger_pages + kCheckpointPages)) {
      impl->last_trigger_pages = pages;
      {
        std::lock_guard<std::mutex> lock(impl->ckpt_mu);
        impl->ckpt_wanted = true;
      }
      impl->ckpt_cv.notify_one();
    }
    return SQLITE_OK;
  }
  void FinalizeStatements();
  void CloseDb() {
    FinalizeStatements();
    if (db != nullptr) {
      sqlite3_close(db);
      db = nullptr;
    }
  }
};

Status RunWriter::Impl::Open() {
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return Error(rc, "opening the run file");
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  const std::string what = "opening the run file";
  if (Status st = internal::Exec(db, "PRAGMA journal_mode = WAL", path, what); !st.ok()) return st;
  if (Status st = internal::Exec(
          db, options.durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", path,
          what);
      !st.ok()) {
    return st;
  }
  if (Status st = internal::Exec(db, "PRAGMA foreign_keys = ON", path, what); !st.ok()) return st;
  // A plan is one large transaction: with SQLite's default 2 MiB page cache it would spill
  // pages to the log before the commit and write them again and again. 64 MiB holds the plan
  // of some 80,000 operators; memory is taken only as pages are used.
  if (Status st = internal::Exec(db, "PRAGMA cache_size = -65536", path, what); !st.ok()) {
    return st;
  }
  // Savepoints (one per record of several rows) journal the pages they change: in memory,
  // not in a temporary file.
  if (Status st = internal::Exec(db, "PRAGMA temp_store = MEMORY", path, what); !st.ok()) {
    return st;
  }
  if (Status st = PrepareAll(); !st.ok()) return st;
  if (options.background_checkpoint) StartCheckpointer();
  return Status::Ok();
}

Status RunWriter::Impl::PrepareAll() {
  const std::pair<Stmt*, std::string_view> statements[] = {
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
      {&update_run,
       "UPDATE run SET name = ?1, mode = ?2, search = ?3, devices = ?4, backend = ?5, "
       "model_path = ?6, model_text = ?7, config = ?8, command_line = ?9, "
       "shardscope_version = ?10, versions = ?11 WHERE id = 1"},
      {&finish_run,
       "UPDATE run SET status = ?1, status_message = ?2, ended_at = ?3, updated_at = ?3 "
       "WHERE id = 1"},
      {&mesh, "INSERT INTO mesh (id, name, shape, axis_names, ranks) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&op,
       "INSERT INTO operator (id, name, scope, kind, is_backward, forward_id, mesh_id, strategy, "
       "provenance, provenance_detail, provenance_op, search_round, cost, worker, attrs) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"},
      {&candidate,
       "INSERT INTO candidate (op_id, ordinal, strategy, cost, compute_seconds, comm_seconds, "
       "memory_bytes, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
      {&tensor,
       "INSERT INTO tensor (id, name, shape, dtype, kind, producer_op, producer_output, layout, "
       "mesh_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
      {&edge,
       "INSERT INTO edge (dst_op, dst_input, tensor_id, src_op, src_output, layout, mesh_id) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
      {&redist,
       "INSERT INTO redistribution (id, tensor_id, consumer_op, consumer_input, is_backward, "
       "from_layout, from_mesh_id, to_layout, to_mesh_id, plan_mesh_id, reason, bytes, "
       "lower_bound_bytes, bytes_total, lower_bound_total, lower_bound_per_rank, byte_optimal, "
       "predicted_seconds) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
       "?15, ?16, ?17, ?18)"},
      {&redist_step,
       "INSERT INTO redist_step (redistribution_id, ordinal, kind, axes, axis_names, dim, "
       "dim_to, rank_groups, bytes_sent_max, bytes_recv_max, bytes_sent, bytes_recv, messages, "
       "seconds, layout_after, reason, transfers, zero_ranks, mesh_id) VALUES (?1, ?2, ?3, ?4, "
       "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"},
      {&program, "INSERT INTO program (rank, role, listing) VALUES (?1, ?2, ?3)"},
      {&instruction,
       "INSERT INTO instruction (rank, ordinal, kind, op_id, redistribution_id, tensor_id, "
       "peer, bytes, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
      {&send_recv,
       "INSERT INTO send_recv (tensor_id, src_rank, dst_rank, src_op, dst_op, bytes, "
       "is_backward) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
      {&step, "INSERT INTO step (step, epoch, loss, seconds, time) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&rank_step,
       "INSERT INTO rank_step (step, rank, compute_seconds, comm_seconds, bytes_sent, "
       "bytes_recv, param_bytes, grad_bytes, optimizer_bytes, activation_bytes, peak_bytes, "
       "wall_seconds) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"},
      {&evaluation,
       "INSERT INTO evaluation (step, epoch, name, loss, accuracy, samples, seconds, time) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
      {&event,
       "INSERT INTO event (time, level, step, rank, source, message) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
      {&pipeline_span,
       "INSERT INTO pipeline_span (step, rank, micro_batch, phase, start_seconds, end_seconds, "
       "compute_seconds, idle_seconds) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
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
}

// ---------------------------------------------------------------------------------------
// Background checkpoints: the writer's connection only appends to the log; when the log
// holds kCheckpointPages pages, a thread copies it into the main file and syncs it. SQLite
// restarts the log (writes it again from its start) at the first transaction that finds
// every frame copied — which a writer committing during the copy never does: so the bulk is
// copied while the writer goes on (PASSIVE checkpoints never block it), then what it added
// meanwhile with the writer's mutex held. A writer call made during that last pass waits for
// it: a few hundred page copies and two syncs, once per kCheckpointPages pages of log.

void RunWriter::Impl::CatchUp() {
  const auto stopping = [this] {
    std::lock_guard<std::mutex> lock(ckpt_mu);
    return ckpt_stop;
  };
  for (int round = 0; round < 3; ++round) {
    int log = 0, copied = 0;  // as of the checkpoint's start: the writer may be ahead
    if (sqlite3_wal_checkpoint_v2(ckpt_db, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied) !=
        SQLITE_OK) {
      return;  // busy or failing: the next trigger tries again
    }
    if (stopping()) return;
    int frames = 0;  // what the writer added meanwhile (sqlite3_wal_hook reports it)
    {
      std::lock_guard<std::mutex> writer(mu);
      frames = last_commit_pages - log;
    }
    if (frames <= kCatchUpPages) break;
  }
  std::lock_guard<std::mutex> writer(mu);  // Finish() stops this thread before taking mu
  sqlite3_wal_checkpoint_v2(ckpt_db, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
}

void RunWriter::Impl::StartCheckpointer() {
  if (sqlite3_open_v2(path.c_str(), &ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    sqlite3_close(ckpt_db);
    ckpt_db = nullptr;
    return;  // SQLite's own auto-checkpoint (in Commit) stays on
  }
  sqlite3_busy_timeout(ckpt_db, 1000);
  (void)internal::Exec(
      ckpt_db, options.durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", path,
      "checkpointing");
  sqlite3_wal_hook(db, WalHook, this);  // replaces the auto-checkpoint
  ckpt_thread = std::thread([this] {
    std::unique_lock<std::mutex> lock(ckpt_mu);
    while (true) {
      ckpt_cv.wait(lock, [this] { return ckpt_wanted || ckpt_stop; });
      if (ckpt_stop) break;
      ckpt_wanted = false;
      lock.unlock();
      CatchUp();
      lock.lock();
    }
  });
}

void RunWriter::Impl::StopCheckpointer() {
  if (ckpt_thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(ckpt_mu);
      ckpt_stop = true;
    }
    ckpt_cv.notify_one();
    ckpt_thread.join();
  }
  if (ckpt_db != nullptr) {
    sqlite3_close(ckpt_db);
    ckpt_db = nullptr;
  }
}

// ---------------------------------------------------------------------------------------

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
          st = Status(ErrorCode::kInvalidArgument, path + ": committing: dangling references (" +
                                                       detail +
                                                       "); the transaction was rolled back");
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

// ---------------------------------------------------------------------------------------

RunWriter::RunWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RunWriter::~RunWriter() {
  if (impl_ && !impl_->finished) {
    (void)Finish(RunStatus::kInterrupted,
                 "recording stopped without a final status (the writer was destroyed before "
                 "Finish())");
  }
}

Result<std::unique_ptr<RunWriter>> RunWriter::Create(const std::string& path, const RunInfo& run,
                                                     const RunWriterOptions& options) {
  if (path.empty()) return Status(ErrorCode::kInvalidArgument, "run file: the path is empty");
  if (options.page_size != 0 && (options.page_size < 512 || options.page_size > 65536 ||
                                 (options.page_size & (options.page_size - 1)) != 0)) {
    return Status(ErrorCode::kInvalidArgument, path + ": page size " +
                                                   std::to_string(options.page_size) +
                                                   " is not a power of two from 512 to 65536");
  }
  const std::string dir = DirOf(path);
  struct stat dir_stat {};
  if (stat(dir.c_str(), &dir_stat) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return Status(ErrorCode::kNotFound,
                    path + ": cannot create the run file: directory '" + dir + "' does not exist");
    }
    return Status(err == EACCES ? ErrorCode::kReadOnly : ErrorCode::kIo,
                  path + ": cannot create the run file: directory '" + dir +
                      "' cannot be accessed (" + std::strerror(err) + ")");
  }
  if (!S_ISDIR(dir_stat.st_mode)) {
    return Status(ErrorCode::kNotFound,
                  path + ": cannot create the run file: '" + dir + "' is not a directory");
  }
  // Less free space than a run needs: the message names it (Ok otherwise, or unknown).
  auto check_space = [&]() -> Status {
    struct statvfs vfs {};
    if (statvfs(dir.c_str(), &vfs) != 0) return Status::Ok();
    const auto free_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (free_bytes >= options.min_free_bytes) return Status::Ok();
    return Status(ErrorCode::kDiskFull,
                  path + ": cannot start recording: only " + FormatBytes(free_bytes) +
                      " free on the file system of '" + dir + "', a run needs at least " +
                      FormatBytes(options.min_free_bytes));
  };
  Result<internal::WriterLock> lock =
      internal::WriterLock::Acquire(path, options.lock_wait_seconds);
  if (!lock.ok()) {  // a disk too full for the lock file: say how much a run needs
    Status space = lock.status().code() == ErrorCode::kDiskFull ? check_space() : Status::Ok();
    return space.ok() ? lock.status() : space;
  }
  if (Status space = check_space(); !space.ok()) return space;

  struct stat file_stat {};
  if (lstat(path.c_str(), &file_stat) == 0) {
    if (S_ISDIR(file_stat.st_mode)) {
      return Status(ErrorCode::kAlreadyExists, path +
                                                   ": cannot create the run file: a directory "
                                                   "of that name exists");
    }
    if (!options.overwrite) {
      return Status(ErrorCode::kAlreadyExists,
                    path +
                        ": a run file of that name already exists; choose another path or "
                        "overwrite it");
    }
  }
  // We hold the lock: no writer uses these. A stale log of an older file must not be
  // replayed into the new one.
  RemoveDatabaseFiles(path);
  const std::string tmp = path + ".creating";
  RemoveDatabaseFiles(tmp);
  if (Status st = CreateSchema(tmp, path, run, options); !st.ok()) {
    RemoveDatabaseFiles(tmp);
    return st;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    RemoveDatabaseFiles(tmp);
    return Status(ErrorCode::kIo, path + ": cannot create the run file: rename from '" + tmp +
                                      "': " + std::strerror(err));
  }
  FsyncDir(dir);

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  impl->lock = std::move(*lock);
  impl->lock.Reserve(options.reserve_bytes);
  if (Status st = impl->Open(); !st.ok()) {
    impl->StopCheckpointer();
    impl->CloseDb();
    RemoveDatabaseFiles(path);
    return st;
  }
  return std::unique_ptr<RunWriter>(new RunWriter(std::move(impl)));
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
    return Status(ErrorCode::kInvalidArgument,
                  impl_->path + ": Finish() needs a final status, not 'running'");
  }
  return impl_->FinishLocked(status, message);
}

Status RunWriter::UpdateRun(const RunInfo& run) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  if (Status st = d.Ready(); !st.ok()) return st;
  BindRunFields(d.update_run, run);
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
