// RunReader: opening a run file (a read-only connection, the fallback for read-only
// directories, older schemas through a migrated copy) and telling a live run from a dead one.
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "lock.h"
#include "reader_impl.h"
#include "schema.h"

namespace shardscope::store {

using internal::Stmt;

namespace {

// `path` in a file: URI (RFC 3986 path characters kept, the rest percent-encoded).
std::string UriPath(const std::string& path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string uri;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/-._~!$&'()*+,;=:@", c) != nullptr) {
      uri.push_back(static_cast<char>(c));
    } else {
      uri += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return uri;
}

// Opens `path` read-only with the reader's settings. immutable: as a file that nobody
// writes (no locks, no -shm, the write-ahead log ignored).
Status OpenConnection(const std::string& path, bool immutable, sqlite3** db) {
  const std::string name = immutable ? "file:" + UriPath(path) + "?immutable=1" : path;
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | (immutable ? SQLITE_OPEN_URI : 0);
  const int rc = sqlite3_open_v2(name.c_str(), db, flags, nullptr);
  if (rc != SQLITE_OK) return internal::SqliteError(*db, rc, path, "opening");
  sqlite3_extended_result_codes(*db, 1);
  sqlite3_busy_timeout(*db, 5000);
  sqlite3_db_config(*db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(*db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  for (const char* pragma : {"PRAGMA query_only = ON", "PRAGMA cell_size_check = ON"}) {
    if (Status s = internal::Exec(*db, pragma, path, "opening"); !s.ok()) return s;
  }
  return Status::Ok();
}

// A file left in WAL mode needs `<path>-shm` to be read, which a reader cannot create in a
// read-only directory or beside a read-only file (the first read fails: SQLITE_READONLY or
// SQLITE_CANTOPEN). With an empty or absent log the file alone holds the run: it is read as
// immutable. A log with commits in it cannot be read here, and the error says so.
Status FallBackToImmutable(const std::string& path, sqlite3** db) {
  Stmt probe;
  int rc = probe.Prepare(*db, "PRAGMA schema_version");
  if (rc == SQLITE_OK) rc = probe.Step();
  probe = Stmt();
  if ((rc & 0xff) != SQLITE_READONLY && (rc & 0xff) != SQLITE_CANTOPEN) return Status::Ok();
  struct stat log {};
  const std::string wal = path + "-wal";
  if (stat(wal.c_str(), &log) == 0 && log.st_size > 0) {
    return Status(StatusCode::kReadOnly,
                  path + ": cannot read: its write-ahead log " + wal +
                      " holds commits not yet copied into the file, and SQLite cannot create " +
                      path +
                      "-shm to read it (read-only directory or file); copy the run file "
                      "with its -wal to a writable directory");
  }
  sqlite3_close(*db);
  *db = nullptr;
  return OpenConnection(path, /*immutable=*/true, db);
}

}  // namespace

RunReader::RunReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunReader::~RunReader() = default;

Result<std::unique_ptr<RunReader>> RunReader::Open(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return Status(StatusCode::kNotFound, path + ": no such run file");
    }
    return Status(StatusCode::kIoError, path + ": cannot open: " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    return Status(StatusCode::kNotARunFile, path + ": not a Shardscope run file (a directory)");
  }
  if (st.st_size == 0) {
    return Status(StatusCode::kNotARunFile, path + ": not a Shardscope run file (an empty file)");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (Status s = OpenConnection(path, /*immutable=*/false, &impl->db); !s.ok()) return s;
  if (Status s = FallBackToImmutable(path, &impl->db); !s.ok()) return s;
  sqlite3* db = impl->db;
  Result<int> version = internal::CheckRunFile(db, path, kSchemaVersion);
  if (!version.ok()) return version.status();
  impl->version = *version;
  if (impl->version < kSchemaVersion) {
    Result<sqlite3*> copy = internal::MigratedCopy(db, impl->version, internal::Migrations(), path);
    if (!copy.ok()) return copy.status();
    sqlite3_close(impl->db);
    impl->db = *copy;
    impl->migrated = true;
    sqlite3_extended_result_codes(impl->db, 1);
  }
  if (Status s = internal::CheckTables(impl->db, internal::RequiredTables(), path); !s.ok()) {
    return s;
  }
  if (Status s = impl->PrepareAll(); !s.ok()) return s;
  RunInfo run;
  if (Status s = impl->ReadRun(&run); !s.ok()) return s;
  return std::unique_ptr<RunReader>(new RunReader(std::move(impl)));
}

const std::string& RunReader::path() const { return impl_->path; }
int RunReader::schema_version() const { return impl_->version; }
bool RunReader::migrated() const { return impl_->migrated; }

bool RunReader::IsLive() const {
  return internal::ProbeLock(impl_->path).state == internal::LockProbe::kHeld;
}

Result<RunInfo> RunReader::Run() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  RunInfo run;
  if (Status st = impl_->ReadRun(&run); !st.ok()) return st;
  if (run.stored_status != RunStatus::kRunning || impl_->migrated) return run;
  const internal::LockProbe probe = internal::ProbeLock(impl_->path);
  if (probe.state == internal::LockProbe::kHeld || probe.state == internal::LockProbe::kUnknown) {
    return run;
  }
  // The writer records its final status before it releases the lock: read again, so a run
  // that finished between the two reads is not taken for an interrupted one.
  if (Status st = impl_->ReadRun(&run); !st.ok()) return st;
  if (run.stored_status == RunStatus::kRunning) {
    run.status = RunStatus::kInterrupted;
    if (run.status_message.empty()) {
      run.status_message =
          probe.state == internal::LockProbe::kNoLockFile
              ? "the run stopped without recording a final status (no writer lock file)"
              : "the writer (pid " + std::to_string(probe.pid) + " on " + probe.host +
                    ") stopped without recording a final status";
    }
  }
  return run;
}

Status RunReader::Check() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Stmt s;
  int rc = s.Prepare(impl_->db, "PRAGMA quick_check(10)");
  if (rc != SQLITE_OK) return impl_->Error(rc, "checking the file");
  std::string problems;
  while ((rc = s.Step()) == SQLITE_ROW) {
    const std::string line = s.Text(0);
    if (line == "ok") continue;
    problems += problems.empty() ? "" : "; ";
    problems += line;
  }
  if (rc != SQLITE_DONE) return impl_->Error(rc, "checking the file");
  if (!problems.empty()) return impl_->Damaged(problems);
  return Status::Ok();
}

}  // namespace shardscope::store
