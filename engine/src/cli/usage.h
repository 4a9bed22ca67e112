// Internal: how `shardscope` talks about its own command line: the top-level --help that
// fits one screen (a line per command; each command's --help has the rest), and parse errors
// with did-you-mean for misspelt flags and commands.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace shardscope::cli {

// Lists each subcommand with the first sentence of its description only.
std::shared_ptr<CLI::Formatter> CommandListFormatter();

// While alive, what the command prints to stdout goes to stderr, so that stdout carries
// one JSON document (--json); Restore() (or the destructor) brings stdout back.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr() { Restore(); }
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;
  void Restore();

 private:
  int saved_ = -1;
};

// Prints `error` as CLI11 would, adding "(did you mean ...)" for an unknown flag or command
// close to a known one; returns the exit code (0 for --help and --version, else 2).
int ReportParseError(CLI::App& root, const CLI::ParseError& error);

}  // namespace shardscope::cli
