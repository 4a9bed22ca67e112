// Running part of a test in a forked process (a crash, another user) and reading what it says.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace shardscope::store::testing {

// Runs `child` in a forked process; returns what it wrote to the pipe (fd passed to it).
inline std::string InChild(const std::function<void(int fd)>& child) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
    close(fds[1]);
    _exit(0);  // no destructors, no Finish(): like a crash as far as the run file knows
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

inline void Say(int fd, const std::string& text) { (void)!write(fd, text.data(), text.size()); }

}  // namespace shardscope::store::testing
