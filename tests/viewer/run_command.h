// Running the built binaries from viewer tests: a command's exit status and its output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace shardscope::viewer::testing {

// Runs `command` through the shell; its stdout and stderr go to `output`. Returns the exit
// status, or -1 when it could not run or was killed.
inline int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  output->clear();
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace shardscope::viewer::testing
