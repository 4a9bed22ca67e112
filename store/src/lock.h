// Internal: the writer's lock on a run file, and the reader's test of whether a writer is
// alive (docs/run-format.md, "Failure behaviour").
//
// The lock is `<run file>.lock`, held with flock(LOCK_EX) by the writer for the whole run and
// holding "<pid> <host>\n". The kernel releases an flock when its holder dies, however it
// dies, so "the lock file exists and its flock can be taken" means the writer is gone.
#pragma once

#include <cstdint>
#include <string>

#include "shardscope/store/status.h"

namespace shardscope::store::internal {

std::string LockPathOf(const std::string& run_path);
std::string HostName();

class WriterLock {
 public:
  WriterLock() = default;
  ~WriterLock() { Release(); }
  WriterLock(WriterLock&& other) noexcept;
  WriterLock& operator=(WriterLock&& other) noexcept;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

  // Takes the lock of `run_path`, retrying for `wait_seconds` while it is busy. Errors:
  // kLocked (naming the holder's pid and host), kReadOnly, kNotFound, kDiskFull, kIoError.
  static Result<WriterLock> Acquire(const std::string& run_path, double wait_seconds);
  // Removes the lock file and releases the lock (no-op when not held).
  void Release();
  // Sets `bytes` of disk space aside in the lock file's blocks (its size and text stay as
  // they are), best effort; FreeReserve() gives them back, so that a writer that filled its
  // disk still has room to record its final status and checkpoint.
  void Reserve(int64_t bytes);
  void FreeReserve();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::string lock_path_;
  int64_t reserved_ = 0;
};

struct LockProbe {
  enum State {
    kNoLockFile,  // no writer (it finished, or the file was copied without its lock)
    kFree,        // the lock file exists but nobody holds its flock: the writer died
    kHeld,        // a writer holds it
    kDeadPid,     // the flock could not be tested; the pid it names is dead on this host
    kUnknown,     // could not tell (unreadable lock file of a writer on another host)
  };
  State state = kUnknown;
  int64_t pid = 0;
  std::string host;
};

// Tests the lock of `run_path` without waiting; never blocks a writer for longer than the
// test itself.
LockProbe ProbeLock(const std::string& run_path);

}  // namespace shardscope::store::internal
