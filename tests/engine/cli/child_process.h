// Starting `shardscope` runs as child processes, signalling them and waiting for their run
// files, for the tests of killed and interrupted runs.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "shardscope/store/reader.h"

namespace shardscope_cli_test {

// Starts `args` in its own process group with stdout and stderr to `output` (empty:
// /dev/null); returns its pid.
inline pid_t Start(const std::vector<std::string>& args, const std::string& output = "") {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int fd = open(output.empty() ? "/dev/null" : output.c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dup2(fd, STDOUT_FILENO);
    if (!output.empty()) dup2(fd, STDERR_FILENO);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Waits until the run file holds at least `steps` committed steps (or 180 s pass: 8 MPI ranks
// start slowly on 2 busy cores; the wait ends as soon as the steps are there).
inline int64_t WaitForSteps(const std::string& path, int64_t steps) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (std::chrono::steady_clock::now() < deadline) {
    auto reader = shardscope::store::RunReader::Open(path);
    if (reader.ok()) {
      auto counts = (*reader)->Counts();
      if (counts.ok() && counts->steps >= steps) return counts->steps;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

// The wait status of `pid` once it ends, or nothing if it still runs after `seconds`.
inline std::optional<int> WaitFor(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

// Sends `signal` (0: none) to every process whose command line mentions `marker`; returns
// how many there were.
inline int SignalMatching(const std::string& marker, int signal) {
  int found = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    const std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmd.find(marker) == std::string::npos) continue;
    ++found;
    if (signal != 0) kill(pid, signal);
  }
  closedir(proc);
  return found;
}

// SIGKILLs every process whose command line mentions `marker` (MPI ranks live outside the
// launcher's process group) and the launcher's group, then waits (up to 30 s) until they are
// gone: a killed writer holds its lock until the kernel has closed its files, and until then
// the run rightly reads as running.
inline void KillAll(pid_t group, const std::string& marker) {
  kill(-group, SIGKILL);
  SignalMatching(marker, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (SignalMatching(marker, 0) > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace shardscope_cli_test
