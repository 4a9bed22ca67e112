// Runs the `shardscope` program (SHARDSCOPE_BIN) as a user would, for the CLI tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace shardscope_cli_test {

struct Output {
  int code = -1;
  std::string text;  // stdout, and stderr unless dropped
};

// A shell command line (e.g. mpirun ... shardscope ...); stderr merged unless `merge_stderr`
// is false.
inline Output RunCommand(const std::string& command, bool merge_stderr = true) {
  Output out;
  const std::string cmd = command + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.text.append(buf, n);
  const int status = pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// `shardscope <args>`; stderr is merged into the text unless `merge_stderr` is false.
inline Output Shardscope(const std::string& args, bool merge_stderr = true) {
  return RunCommand(std::string(SHARDSCOPE_BIN) + " " + args, merge_stderr);
}

}  // namespace shardscope_cli_test
