// shardscope: the command-line front end (RunShardscope). Subcommands register in their own
// files.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

#include "cli/command.h"
#include "cli/limits.h"
#include "cli/usage.h"
#include "shardscope/store/display_text.h"

namespace shardscope::cli {

namespace {
std::string command_line;
const std::string kLimitsHint =
    "the run needs more than this machine has (see `shardscope --help`, Limits)";
}  // namespace

const std::string& CommandLine() { return command_line; }

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return code;
}

int FailStore(const Status& status) {
  return Fail(store::IsBadInput(status.code()) ? kExitBadInput : kExitRunFailure,
              store::EscapeControls(status.message()));
}

int RunShardscope(int argc, char** argv) {
  // `shardscope render ...` execs the Qt renderer beside this binary (this one links no Qt).
  if (argc >= 2 && std::string(argv[1]) == "render") {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    std::string render = n > 0 ? std::string(self, n) : std::string(argv[0]);
    render = render.substr(0, render.rfind('/') + 1) + "shardscope-render";
    argv[1] = render.data();
    execv(render.c_str(), argv + 1);
    return Fail(kExitBadInput, "cannot run " + render + " (" + std::strerror(errno) +
                                   "): it is built with the GUI (cmake -DSHARDSCOPE_BUILD_GUI=ON; "
                                   "target shardscope-render)");
  }
  command_line.clear();
  ResetLimits();
  for (int i = 0; i < argc; ++i) command_line += std::string(i ? " " : "") + argv[i];
  CLI::App app{
      "Shardscope: automatic parallel training of neural networks, recorded for the debugger.\n"
      "\n"
      "Start with `shardscope train samples/models/lenet5.yaml --epochs 1`, then read\n"
      "docs/model-format.md to write your own model file. Each subcommand has --help.\n"
      "`shardscope render RUN --view graph --out g.svg` draws a run (shardscope-render).\n"
      "Exit codes: 0 ok, 1 run failure, 2 bad input.",
      "shardscope"};
  app.require_subcommand(1);
  app.fallthrough();  // --resource-limit also after the subcommand
  app.footer(LimitsHelp());
  app.add_option_function<std::vector<std::string>>(
         "--resource-limit",
         [](const std::vector<std::string>& all) {
           for (const std::string& a : all) {
             Status st = SetLimit(a);
             if (!st.ok()) throw CLI::ValidationError(st.message());
           }
         },
         "Change a resource limit, NAME=VALUE (see Limits below)")
      ->type_name("NAME=VALUE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.set_version_flag("--version", "shardscope 0.1.0");
  Commands commands;
  AddTrainCommand(app, commands);
  AddEvalCommand(app, commands);
  AddLayoutCommand(app, commands);
  AddRedistributeCommand(app, commands);
  AddInspectCommand(app, commands);
  AddLaunchCommand(app, commands);
  AddPlanCommand(app, commands);
  AddClustersCommand(app, commands);
  AddTraceCommand(app, commands);
  AddDiffCommand(app, commands);
  AddCalibrateCommand(app, commands);
  app.formatter(CommandListFormatter());  // one line per command; `CMD --help` has the rest
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }
  // The last line of defence: the commands check sizes and resources before they start, so
  // what arrives here is a defect or an exhausted machine; say so and exit as a run failure.
  try {
    for (const Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
  } catch (const std::bad_alloc&) {
    return Fail(kExitRunFailure, "out of memory (std::bad_alloc); " + kLimitsHint);
  } catch (const std::length_error& e) {
    return Fail(kExitRunFailure, std::string("a size beyond what this machine can hold (") +
                                     e.what() + "); " + kLimitsHint);
  } catch (const std::exception& e) {
    return Fail(kExitRunFailure, std::string("internal error: ") + e.what());
  }
  return kExitBadInput;
}

}  // namespace shardscope::cli
