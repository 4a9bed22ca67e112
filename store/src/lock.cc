#include "lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

namespace shardscope::store::internal {
namespace {

std::string DirOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string ReadSmall(int fd) {
  char buf[512];
  const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

void ParseHolder(const std::string& text, int64_t* pid, std::string* host) {
  std::istringstream in(text);
  long long p = 0;
  if (in >> p) *pid = p;
  in >> *host;
}

Status OpenError(int err, const std::string& run_path) {
  const std::string dir = DirOf(run_path);
  const std::string reason = std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR: {
      // Some file systems (/proc, /sys) answer ENOENT for a directory that exists.
      struct stat st {};
      if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        return Status(StatusCode::kReadOnly, run_path +
                                                 ": cannot create the run file: directory '" + dir +
                                                 "' does not accept new files (" + reason + ")");
      }
      return Status(StatusCode::kNotFound, run_path + ": cannot create the run file: directory '" +
                                               dir + "' does not exist (" + reason + ")");
    }
    case EACCES:
    case EPERM:
    case EROFS:
      return Status(StatusCode::kReadOnly, run_path + ": cannot create the run file: directory '" +
                                               dir + "' is not writable (" + reason + ")");
    case ENOSPC:
    case EDQUOT:
      return Status(StatusCode::kDiskFull, run_path +
                                               ": cannot create the run file: no space "
                                               "left on the file system of '" +
                                               dir + "' (" + reason + ")");
    default:
      return Status(StatusCode::kIoError, run_path + ": cannot create the lock file '" +
                                              LockPathOf(run_path) + "': " + reason);
  }
}

}  // namespace

std::string LockPathOf(const std::string& run_path) { return run_path + ".lock"; }

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

WriterLock::WriterLock(WriterLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      lock_path_(std::move(other.lock_path_)),
      reserved_(std::exchange(other.reserved_, 0)) {}

WriterLock& WriterLock::operator=(WriterLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = std::exchange(other.fd_, -1);
    lock_path_ = std::move(other.lock_path_);
    reserved_ = std::exchange(other.reserved_, 0);
  }
  return *this;
}

Result<WriterLock> WriterLock::Acquire(const std::string& run_path, double wait_seconds) {
  const std::string lock_path = LockPathOf(run_path);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(wait_seconds > 0 ? wait_seconds : 0);
  for (int attempt = 0;; ++attempt) {
    const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return OpenError(errno, run_path);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK || err == EINTR) {
        if (std::chrono::steady_clock::now() < deadline) {
          close(fd);
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          continue;
        }
        int64_t pid = 0;
        std::string host;
        ParseHolder(ReadSmall(fd), &pid, &host);
        close(fd);
        return Status(StatusCode::kLocked,
                      run_path + ": another run is writing this file (pid " + std::to_string(pid) +
                          " on host " + (host.empty() ? "?" : host) + ", lock " + lock_path +
                          "); two runs never write the same file: choose another path");
      }
      close(fd);
      return Status(StatusCode::kIoError,
                    run_path + ": cannot lock '" + lock_path + "': " + std::strerror(err));
    }
    // A writer that finished removes its lock file before releasing the lock: make sure the
    // file we locked is still the one at lock_path.
    struct stat held {};
    struct stat named {};
    if (fstat(fd, &held) != 0 || stat(lock_path.c_str(), &named) != 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
      close(fd);
      if (attempt > 1000) {
        return Status(StatusCode::kIoError,
                      run_path + ": cannot lock '" + lock_path + "': it keeps being replaced");
      }
      continue;
    }
    const std::string content = std::to_string(getpid()) + " " + HostName() + "\n";
    if (ftruncate(fd, 0) != 0 ||
        pwrite(fd, content.data(), content.size(), 0) != static_cast<ssize_t>(content.size())) {
      const int err = errno;
      unlink(lock_path.c_str());
      close(fd);
      return OpenError(err, run_path);
    }
    WriterLock lock;
    lock.fd_ = fd;
    lock.lock_path_ = lock_path;
    return lock;
  }
}

void WriterLock::Release() {
  if (fd_ < 0) return;
  unlink(lock_path_.c_str());
  close(fd_);  // releases the flock
  fd_ = -1;
  reserved_ = 0;
}

// The reserve starts at kReserveOffset, beyond the holder's text, and keeps the file's size
// (FALLOC_FL_KEEP_SIZE), so readers of the lock see only the text.
constexpr off_t kReserveOffset = 4096;

void WriterLock::Reserve(int64_t bytes) {
  if (fd_ < 0 || bytes <= 0 || reserved_ > 0) return;
  if (fallocate(fd_, FALLOC_FL_KEEP_SIZE, kReserveOffset, static_cast<off_t>(bytes)) == 0) {
    reserved_ = bytes;
  }
}

void WriterLock::FreeReserve() {
  if (fd_ < 0 || reserved_ == 0) return;
  if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kReserveOffset,
                static_cast<off_t>(reserved_)) != 0) {
    // No hole punching here: growing the file over the reserve and cutting it back frees it.
    struct stat st {};
    if (fstat(fd_, &st) == 0 && ftruncate(fd_, kReserveOffset + reserved_) == 0) {
      (void)ftruncate(fd_, st.st_size);
    }
  }
  reserved_ = 0;
}

LockProbe ProbeLock(const std::string& run_path) {
  LockProbe probe;
  const int fd = open(LockPathOf(run_path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    probe.state = errno == ENOENT ? LockProbe::kNoLockFile : LockProbe::kUnknown;
    return probe;
  }
  ParseHolder(ReadSmall(fd), &probe.pid, &probe.host);
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    flock(fd, LOCK_UN);
    probe.state = LockProbe::kFree;
  } else if (errno == EWOULDBLOCK) {
    probe.state = LockProbe::kHeld;
  } else if (probe.pid > 0 && probe.host == HostName() &&
             kill(static_cast<pid_t>(probe.pid), 0) != 0 && errno == ESRCH) {
    probe.state = LockProbe::kDeadPid;  // flock unsupported here: fall back to the pid
  } else {
    probe.state = LockProbe::kUnknown;
  }
  close(fd);
  return probe;
}

}  // namespace shardscope::store::internal
