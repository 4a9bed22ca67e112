#include "cli/usage.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "shardscope/base/names.h"

namespace shardscope::cli {
namespace {

// "Plan the collectives that turn a tensor from one layout into another, with ..." -> its
// first clause (up to '.', ':', ';', ", " or " ("), so each command takes one line.
std::string FirstClause(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : ' ';
    if ((c == '\n' && next == '\n') || c == ':' || c == ';') break;
    if ((c == '.' || c == ',') && (next == ' ' || next == '\n')) break;
    if ((c == ' ' || c == '\n') && next == '(') break;
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

class CommandList : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), FirstClause(sub->get_description()),
                             column_width_);
    return out.str();
  }
};

// The flags `app` takes ("--search", "-n"), with those of the apps it falls through to.
std::vector<std::string> FlagNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* opt : app->get_options()) {
      for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
    }
    if (!app->get_fallthrough()) break;
  }
  return names;
}

// The innermost subcommand the parse reached (the root when none).
const CLI::App* Innermost(const CLI::App& root) {
  const CLI::App* app = &root;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : app->get_subcommands()) {
      app = sub;
      deeper = true;
      break;
    }
  }
  return app;
}

std::string CommandName(const CLI::App* app) {
  std::string name = app->get_name();
  for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent())
    name = p->get_name() + " " + name;
  return name;
}

// "unknown flag '--serach' for `shardscope train` (did you mean '--search'?)" per extra
// argument that looks like a flag or a misspelt command; empty when none does.
std::string Suggestions(const CLI::App& root) {
  const CLI::App* app = Innermost(root);
  std::vector<std::string> commands;
  for (const CLI::App* sub : root.get_subcommands({})) commands.push_back(sub->get_name());
  std::string out;
  for (const std::string& arg : root.remaining(true)) {
    std::string hint;
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string flag = arg.substr(0, arg.find('='));
      hint = "unknown flag '" + flag + "' for `" + CommandName(app) + "`" +
             DidYouMean(flag, FlagNames(app));
    } else if (app == &root) {
      const std::string mean = DidYouMean(arg, commands);
      if (!mean.empty()) hint = "unknown command '" + arg + "'" + mean;
    }
    if (!hint.empty()) out += (out.empty() ? "" : "\n") + std::string("error: ") + hint;
  }
  return out;
}

}  // namespace

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  saved_ = dup(STDOUT_FILENO);
  if (saved_ >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
}

void StdoutToStderr::Restore() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  dup2(saved_, STDOUT_FILENO);
  close(saved_);
  saved_ = -1;
}

std::shared_ptr<CLI::Formatter> CommandListFormatter() { return std::make_shared<CommandList>(); }

int ReportParseError(CLI::App& root, const CLI::ParseError& error) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    root.exit(error);  // --help, --version
    return kExitOk;
  }
  // Misspelt flags and commands come back as extras (or, for a command, as "A subcommand
  // is required"): name each with its suggestion; other errors keep CLI11's words too.
  const std::string hints = Suggestions(root);
  if (!hints.empty()) std::fprintf(stderr, "%s\n", hints.c_str());
  if (hints.empty() || dynamic_cast<const CLI::ExtrasError*>(&error) == nullptr) {
    root.exit(error);
  } else {
    std::fprintf(stderr, "Run with --help for more information.\n");
  }
  return kExitBadInput;
}

}  // namespace shardscope::cli
