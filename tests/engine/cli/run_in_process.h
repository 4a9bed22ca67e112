// Runs `shardscope <args>` in this process through RunShardscope (the CLI's entry point):
// the exit code and what it wrote to stderr, stdout discarded. For tests that run many
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
  std::string err;
  double seconds = 0;
};

inline InProcessOutput RunInProcess(const std::vector<std::string>& args) {
  std::vector<std::string> owned = {"shardscope"};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  char err_path[] = "/tmp/shardscope_in_process_XXXXXX";
  const int err_fd = mkstemp(err_path);
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = dup(1), saved_err = dup(2);
  const int null_fd = open("/dev/null", O_WRONLY);
  dup2(null_fd, 1);
  dup2(err_fd, 2);
  InProcessOutput out;
  const auto start = std::chrono::steady_clock::now();
  out.code = shardscope::cli::RunShardscope(static_cast<int>(owned.size()), argv.data());
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  for (int fd : {saved_out, saved_err, null_fd, err_fd}) close(fd);
  std::ifstream in(err_path);
  std::stringstream text;
  text << in.rdbuf();
  out.err = text.str();
  unlink(err_path);
  return out;
}

}  // namespace shardscope_cli_test
