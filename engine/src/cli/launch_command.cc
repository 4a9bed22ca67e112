// `shardscope launch -n N -- train MODEL ...`: starts N MPI processes and waits for all.
//
// Like seed 001's run.sh: one command starts every worker, keeps one log per rank, and
// fails when any worker fails, naming its rank and its log. mpirun runs each rank through
// bash, which sends the rank's output to <logs>/rank-<r>.log (rank 0's also to this
// terminal) and writes its exit code to <logs>/rank-<r>.exit.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/option_checks.h"

namespace shardscope::cli {
namespace {

struct LaunchOptions {
  int processes = 0;
  std::string logs;  // empty: runs/launch-<time>
  std::string mpirun = "mpirun";
  std::string program;  // empty: this shardscope
  std::vector<std::string> args;
};

std::string SelfPath() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("shardscope") : p.string();
}

std::string DefaultLogDir() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::string base = std::string("runs/launch-") + stamp, dir = base;
  for (int i = 1; std::filesystem::exists(dir); ++i) dir = base + "-" + std::to_string(i);
  return dir;
}

// Each rank: run the program, log its output (rank 0: also to the terminal), keep its exit code.
constexpr const char* kRankScript =
    "r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}; log=\"$SHARDSCOPE_LAUNCH_LOGS/rank-$r.log\"; "
    "if [ \"$r\" = 0 ]; then \"$@\" 2>&1 | tee \"$log\"; code=${PIPESTATUS[0]}; "
    "else \"$@\" > \"$log\" 2>&1; code=$?; fi; "
    "echo $code > \"$SHARDSCOPE_LAUNCH_LOGS/rank-$r.exit\"; exit $code";

// Runs argv and waits; returns its exit status (-1 when it could not start).
int Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> c;
  for (const std::string& a : argv) c.push_back(const_cast<char*>(a.c_str()));
  c.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execvp(c[0], c.data());
    std::fprintf(stderr, "error: cannot run %s: %s\n", c[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int RunLaunch(const LaunchOptions& o) {
  if (o.args.empty()) return Fail(kExitBadInput, "launch: give the command after --");
  const std::string logs = o.logs.empty() ? DefaultLogDir() : o.logs;
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  if (ec) return Fail(kExitBadInput, "launch: cannot create the log directory " + logs);
  for (int r = 0; r < o.processes; ++r)
    std::filesystem::remove(logs + "/rank-" + std::to_string(r) + ".exit", ec);
  const std::string abs_logs = std::filesystem::absolute(logs).string();
  std::vector<std::string> argv = {o.mpirun};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  for (const char* a : {"--oversubscribe", "-x", "SHARDSCOPE_LAUNCH_LOGS", "-np"})
    argv.push_back(a);
  argv.push_back(std::to_string(o.processes));
  for (const char* a : {"bash", "-c", kRankScript, "shardscope-rank"}) argv.push_back(a);
  argv.push_back(o.program.empty() ? SelfPath() : o.program);
  argv.insert(argv.end(), o.args.begin(), o.args.end());
  setenv("SHARDSCOPE_LAUNCH_LOGS", abs_logs.c_str(), 1);
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);  // oversubscribed ranks: do not spin
  const int code = Spawn(argv);
  if (code == -1 || code == 127) return Fail(kExitRunFailure, "launch: cannot run " + o.mpirun);
  // Every rank's verdict: the failed ones first, then those stopped before finishing.
  std::vector<std::string> failed, unfinished;
  int first_code = 0;
  for (int r = 0; r < o.processes; ++r) {
    const std::string base = logs + "/rank-" + std::to_string(r);
    std::ifstream in(base + ".exit");
    int rank_code = -1;
    if (!(in >> rank_code)) {
      unfinished.push_back(std::to_string(r));
      continue;
    }
    if (rank_code != 0) {
      failed.push_back("rank " + std::to_string(r) + " exited with " + std::to_string(rank_code) +
                       " (log: " + base + ".log)");
      if (first_code == 0) first_code = rank_code;
    }
  }
  if (failed.empty() && unfinished.empty() && code == 0) {
    std::printf("launch: all %d ranks finished; logs in %s/rank-<r>.log\n", o.processes,
                logs.c_str());
    return kExitOk;
  }
  std::string msg = "launch: ";
  for (size_t i = 0; i < failed.size(); ++i) msg += (i ? "; " : "") + failed[i];
  if (!unfinished.empty()) {
    msg += std::string(failed.empty() ? "" : "; ") + "stopped before finishing: rank";
    for (size_t i = 0; i < unfinished.size(); ++i) msg += (i ? ", " : " ") + unfinished[i];
    msg += " (logs in " + logs + ")";
  }
  if (failed.empty() && unfinished.empty())
    msg += o.mpirun + " exited with " + std::to_string(code) + " (logs in " + logs + ")";
  return Fail(first_code == kExitBadInput ? kExitBadInput : kExitRunFailure, msg);
}

}  // namespace

void AddLaunchCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<LaunchOptions>();
  CLI::App* app = root.add_subcommand(
      "launch",
      "Start N processes of a shardscope command under MPI and wait for all of them.\n"
      "\n"
      "Examples:\n"
      "  shardscope launch -n 5 -- train samples/models/lenet5_place.yaml --epochs 1\n"
      "  shardscope launch -n 8 --logs runs/ffn-logs -- train samples/models/ffn.yaml\n"
      "  shardscope launch -n 2 --program ./my_test -- --gtest_brief=1\n"
      "Runs mpirun -np N (with --allow-run-as-root when run as root, and --oversubscribe so N\n"
      "may exceed the cores). Each rank's output goes to LOGS/rank-<r>.log (rank 0's also to\n"
      "this terminal). When a rank fails, launch fails (exit 1, or 2 for bad input) naming\n"
      "the rank, its exit code and its log.");
  app->add_option("-n,--processes", o->processes, "Number of processes (MPI ranks)")
      ->required()
      ->check(AtLeast(1));
  app->add_option("--logs", o->logs, "Directory for per-rank logs (default: runs/launch-<time>)");
  app->add_option("--mpirun", o->mpirun, "The MPI launcher (default: mpirun from PATH)");
  app->add_option("--program", o->program,
                  "Run this program on every rank instead of shardscope (arguments after --)");
  app->add_option("command", o->args, "After --: the command each rank runs (e.g. train MODEL)")
      ->required();
  commands.push_back({app, [o] { return RunLaunch(*o); }});
}

}  // namespace shardscope::cli
