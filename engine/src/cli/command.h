// Internal: how subcommands plug into `shardscope`.
//
// Each subcommand lives in its own file and registers itself with AddXCommand(root,
// commands): it adds a CLI11 sub-app with its options and --help text, and the function
// that runs it. Exit codes: 0 ok, 1 run failure, 2 bad input (main maps parse errors to 2).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "shardscope/store/status.h"

namespace shardscope::cli {

enum ExitCode { kExitOk = 0, kExitRunFailure = 1, kExitBadInput = 2 };

struct Command {
  CLI::App* app;
  std::function<int()> run;
};
using Commands = std::vector<Command>;

void AddTrainCommand(CLI::App& root, Commands& commands);
void AddEvalCommand(CLI::App& root, Commands& commands);  // in train_command.cc
void AddLayoutCommand(CLI::App& root, Commands& commands);
void AddRedistributeCommand(CLI::App& root, Commands& commands);
void AddInspectCommand(CLI::App& root, Commands& commands);
void AddLaunchCommand(CLI::App& root, Commands& commands);
void AddPlanCommand(CLI::App& root, Commands& commands);
void AddCalibrateCommand(CLI::App& root, Commands& commands);
void AddClustersCommand(CLI::App& root, Commands& commands);
void AddTraceCommand(CLI::App& root, Commands& commands);
void AddDiffCommand(CLI::App& root, Commands& commands);

// The whole program: parses argv, runs the subcommand, returns the exit code. Re-entrant
// (limits and the recorded command line are reset), so tests call it in-process.
int RunShardscope(int argc, char** argv);

// The command line as typed (recorded in run files).
const std::string& CommandLine();

// Prints "error: <message>" to stderr and returns `code`.
int Fail(int code, const std::string& message);
// The same for a store error: exit 2 when the input was at fault (store::IsBadInput), else 1.
int FailStore(const Status& status);

}  // namespace shardscope::cli
