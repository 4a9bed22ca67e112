// RunWriter::Create: the run file made under a temporary name with its schema and run row,
// renamed into place, then opened for recording.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "columns.h"
#include "schema.h"
#include "shardscope/base/format.h"
#include "writer_impl.h"

namespace shardscope::store {

using internal::Stmt;

namespace {

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
    rc = insert.Prepare(db, internal::InsertSql(internal::kRunTable));
    if (rc == SQLITE_OK) {
      // The fields, then the state in columns::kRun's order: running since now, no end yet.
      internal::BindRunFields(insert, run);
      int i = internal::columns::kRunFields;
      const double now = internal::Now();
      const std::string host = internal::HostName();
      insert.BindText(++i, RunStatusName(RunStatus::kRunning));
      insert.BindText(++i, "");
      insert.BindDouble(++i, now);
      insert.BindDouble(++i, now);
      insert.BindNull(++i);
      insert.BindInt(++i, getpid());
      insert.BindText(++i, host);
      insert.BindInt(++i, 1);
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
      st = Status(errno == ENOSPC ? StatusCode::kDiskFull : StatusCode::kIoError,
                  path + ": " + what + ": " + std::strerror(errno));
    }
    if (fd >= 0) close(fd);
  }
  return st;
}

}  // namespace

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

Result<std::unique_ptr<RunWriter>> RunWriter::Create(const std::string& path, const RunInfo& run,
                                                     const RunWriterOptions& options) {
  if (path.empty()) return Status(StatusCode::kInvalidInput, "run file: the path is empty");
  if (options.page_size != 0 && (options.page_size < 512 || options.page_size > 65536 ||
                                 (options.page_size & (options.page_size - 1)) != 0)) {
    return Status(StatusCode::kInvalidInput, path + ": page size " +
                                                 std::to_string(options.page_size) +
                                                 " is not a power of two from 512 to 65536");
  }
  const std::string dir = DirOf(path);
  struct stat dir_stat {};
  if (stat(dir.c_str(), &dir_stat) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return Status(StatusCode::kNotFound,
                    path + ": cannot create the run file: directory '" + dir + "' does not exist");
    }
    return Status(err == EACCES ? StatusCode::kReadOnly : StatusCode::kIoError,
                  path + ": cannot create the run file: directory '" + dir +
                      "' cannot be accessed (" + std::strerror(err) + ")");
  }
  if (!S_ISDIR(dir_stat.st_mode)) {
    return Status(StatusCode::kNotFound,
                  path + ": cannot create the run file: '" + dir + "' is not a directory");
  }
  // Less free space than a run needs: the message names it (Ok otherwise, or unknown).
  auto check_space = [&]() -> Status {
    struct statvfs vfs {};
    if (statvfs(dir.c_str(), &vfs) != 0) return Status::Ok();
    const auto free_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (free_bytes >= options.min_free_bytes) return Status::Ok();
    return Status(StatusCode::kDiskFull,
                  path + ": cannot start recording: only " + FormatBytes(free_bytes) +
                      " free on the file system of '" + dir + "', a run needs at least " +
                      FormatBytes(options.min_free_bytes));
  };
  Result<internal::WriterLock> lock =
      internal::WriterLock::Acquire(path, options.lock_wait_seconds);
  if (!lock.ok()) {  // a disk too full for the lock file: say how much a run needs
    Status space = lock.status().code() == StatusCode::kDiskFull ? check_space() : Status::Ok();
    return space.ok() ? lock.status() : space;
  }
  if (Status space = check_space(); !space.ok()) return space;

  struct stat file_stat {};
  if (lstat(path.c_str(), &file_stat) == 0) {
    if (S_ISDIR(file_stat.st_mode)) {
      return Status(StatusCode::kAlreadyExists, path +
                                                    ": cannot create the run file: a directory "
                                                    "of that name exists");
    }
    if (!options.overwrite) {
      return Status(StatusCode::kAlreadyExists,
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
    return Status(StatusCode::kIoError, path + ": cannot create the run file: rename from '" + tmp +
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

}  // namespace shardscope::store
