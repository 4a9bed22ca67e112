#include "sqlite_util.h"

#include <chrono>
#include <cstring>
#include <thread>

namespace shardscope::store::internal {
namespace {

StatusCode CodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return StatusCode::kDiskFull;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return StatusCode::kReadOnly;
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
    case SQLITE_RANGE:
    case SQLITE_SCHEMA:
    case SQLITE_MISMATCH:
      return StatusCode::kCorrupt;
    case SQLITE_NOTADB:
      return StatusCode::kNotARunFile;
    case SQLITE_CONSTRAINT:
      return StatusCode::kInvalidInput;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StatusCode::kLocked;
    case SQLITE_MISUSE:
    case SQLITE_INTERNAL:
      return StatusCode::kInternal;
    case SQLITE_ERROR:
      // "no such table/column", malformed schema text: the file is not what we expect.
      return StatusCode::kCorrupt;
    default:
      return StatusCode::kIoError;
  }
}

std::string Describe(int rc, const char* sqlite_message, int system_errno) {
  std::string text = sqlite_message != nullptr ? sqlite_message : sqlite3_errstr(rc);
  if ((rc & 0xff) == SQLITE_NOTADB) text = "not an SQLite database";
  if ((rc & 0xff) == SQLITE_CORRUPT) text = "the database is damaged or truncated (" + text + ")";
  if ((rc & 0xff) == SQLITE_FULL) text = "disk full (" + text + ")";
  if (system_errno != 0 && ((rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_CANTOPEN ||
                            (rc & 0xff) == SQLITE_FULL)) {
    text += std::string(": ") + std::strerror(system_errno);
  }
  return text;
}

}  // namespace

Status SqliteError(sqlite3* db, int rc, const std::string& path, std::string_view what) {
  const char* message = db != nullptr ? sqlite3_errmsg(db) : nullptr;
  const int system_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
  return Status(CodeOf(rc),
                path + ": " + std::string(what) + ": " + Describe(rc, message, system_errno));
}

Status SqliteCodeError(int rc, const std::string& path, std::string_view what) {
  return Status(CodeOf(rc), path + ": " + std::string(what) + ": " + Describe(rc, nullptr, 0));
}

Status Exec(sqlite3* db, std::string_view sql, const std::string& path, std::string_view what) {
  // The schema holds several statements: prepare and run them one by one.
  const char* p = sql.data();
  const char* end = sql.data() + sql.size();
  while (p < end) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(db, p, static_cast<int>(end - p), &stmt, &tail);
    if (rc != SQLITE_OK) return SqliteError(db, rc, path, what);
    if (stmt == nullptr) break;  // only whitespace or comments left
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE) {
      Status st = SqliteError(db, rc, path, what);
      sqlite3_finalize(stmt);
      return st;
    }
    sqlite3_finalize(stmt);
    p = tail;
  }
  return Status::Ok();
}

Result<int64_t> QueryInt(sqlite3* db, std::string_view sql, const std::string& path,
                         std::string_view what) {
  Stmt stmt;
  int rc = stmt.Prepare(db, sql);
  if (rc != SQLITE_OK) return SqliteError(db, rc, path, what);
  rc = stmt.Step();
  if (rc == SQLITE_ROW) return stmt.Int(0);
  if (rc == SQLITE_DONE)
    return Status(StatusCode::kCorrupt, path + ": " + std::string(what) + ": no result");
  return SqliteError(db, rc, path, what);
}

Status LeaveWalMode(sqlite3* db, const std::string& path, double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  sqlite3_busy_timeout(db, 100);
  while (true) {
    sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    Stmt stmt;
    // Fails (SQLITE_BUSY) or answers "wal" while another connection has the file open.
    if (stmt.Prepare(db, "PRAGMA journal_mode = DELETE") == SQLITE_OK &&
        stmt.Step() == SQLITE_ROW) {
      if (stmt.Text(0) == "delete") return Status::Ok();
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status(StatusCode::kLocked,
                path + ": still in WAL mode: other connections kept it open for " +
                    std::to_string(static_cast<int>(seconds)) + " s after the run ended");
}

}  // namespace shardscope::store::internal
