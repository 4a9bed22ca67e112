// Runs `shardscope <args>` in this process through RunShardscope (the CLI's entry point):
// the exit code and what it wrote to stdout and stderr. For tests that run many
// commands (the fuzzers): no process start-up, and a crash fails the test itself.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace shardscope_cli_test {

struct InProcessOutput {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

// Takes over file descriptor `fd` with a fresh temporary file; Restore() puts it back and
// returns what was written.
class Capture {
 public:
  explicit Capture(int fd) : fd_(fd), saved_(dup(fd)), file_(mkstemp(path_)) { dup2(file_, fd_); }
  std::string Restore() {
    dup2(saved_, fd_);
    close(saved_);
    close(file_);
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    unlink(path_);
    return text.str();
  }

 private:
  int fd_, saved_;
  char path_[40] = "/tmp/shardscope_in_process_XXXXXX";
  int file_;
};

inline InProcessOutput RunInProcess(const std::vector<std::string>& args) {
  std::vector<std::string> owned = {"shardscope"};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  Capture out_capture(1), err_capture(2);
  InProcessOutput out;
  const auto start = std::chrono::steady_clock::now();
  out.code = shardscope::cli::RunShardscope(static_cast<int>(owned.size()), argv.data());
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fflush(stdout);
  std::fflush(stderr);
  out.out = out_capture.Restore();
  out.err = err_capture.Restore();
  return out;
}

}  // namespace shardscope_cli_test
