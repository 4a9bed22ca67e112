// SettleRunFile (writer.h): a finished run left in WAL mode made one file again.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lock.h"
#include "shardscope/store/writer.h"
#include "sqlite_util.h"

namespace shardscope::store {

Status SettleRunFile(const std::string& path) {
  char header[20] = {};
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(StatusCode::kIoError, path + ": cannot open: " + std::strerror(errno));
  const bool wal = pread(fd, header, sizeof header, 0) == sizeof header && header[18] == 2;
  close(fd);
  if (!wal) return Status::Ok();  // not in WAL mode (or not an SQLite file: the reader says)
  const internal::LockProbe probe = internal::ProbeLock(path);
  if (probe.state != internal::LockProbe::kNoLockFile) {  // a writer, alive or dead
    return Status(StatusCode::kLocked, path + ": left in WAL mode: a writer's lock is present");
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  Status st = rc == SQLITE_OK ? Status::Ok() : internal::SqliteError(db, rc, path, "opening");
  if (st.ok()) {
    Result<int64_t> running = internal::QueryInt(
        db, "SELECT count(*) FROM run WHERE status = 'running'", path, "settling the journal");
    if (!running.ok()) {
      st = running.status();
    } else if (*running == 0) {
      st = internal::LeaveWalMode(db, path, /*seconds=*/0);
    }
  }
  sqlite3_close(db);
  return st;
}

}  // namespace shardscope::store
