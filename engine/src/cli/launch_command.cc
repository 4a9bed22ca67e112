// `shardscope launch -n N [--hostfile F | --host H,...] [-- MPIRUN OPTIONS] -- train MODEL`:
// starts N MPI processes, on this host or several, and waits for all.
//
// Like seed 001's run.sh: one command starts every worker, keeps one log per rank, and
// fails when any worker fails, naming its rank, its exit code and its log. Nothing goes
// through files the ranks write: mpirun tags each rank's output lines and brings them here
// (launch_output.h); each rank's wrapper prints its exit code last. So the ranks' hosts need
// no shared file system, only this program at the same path.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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
#include "cli/launch_output.h"
#include "cli/option_checks.h"

namespace shardscope::cli {
namespace {

struct LaunchOptions {
  int processes = 0;
  std::string logs;  // empty: runs/launch-<time>
  std::string mpirun = "mpirun";
  std::string program;  // empty: this shardscope
  std::string hostfile;
  std::string hosts;
  std::vector<std::string> args;  // [MPIRUN OPTIONS --] COMMAND
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

// Each rank (through bash, on its host): run the program, then print the exit-code marker
// (launch_output.h) and exit with the program's code, so mpirun still ends the job when a
// rank fails.
const std::string kRankScript =
    std::string("\"$@\"; code=$?; echo \"") + kExitMarker + "$code\"; exit $code";

// Runs argv with its stdout and stderr read into `out`; returns its exit status (-1 when it
// could not start, 127 when the program was not found).
int SpawnReading(const std::vector<std::string>& argv, RankOutput& out) {
  std::vector<char*> c;
  for (const std::string& a : argv) c.push_back(const_cast<char*>(a.c_str()));
  c.push_back(nullptr);
  int pipes[2][2];
  if (pipe(pipes[0]) != 0) return -1;
  if (pipe(pipes[1]) != 0) {
    close(pipes[0][0]);
    close(pipes[0][1]);
    return -1;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(pipes[0][1], STDOUT_FILENO);
    dup2(pipes[1][1], STDERR_FILENO);
    for (auto& p : pipes) close(p[0]), close(p[1]);
    execvp(c[0], c.data());
    std::fprintf(stderr, "error: cannot run %s: %s\n", c[0], std::strerror(errno));
    _exit(127);
  }
  close(pipes[0][1]);
  close(pipes[1][1]);
  // Ctrl-C reaches mpirun too (one process group); keep reading until it has ended the job.
  struct sigaction ignore = {}, previous = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &previous);
  pollfd fds[2] = {{pipes[0][0], POLLIN, 0}, {pipes[1][0], POLLIN, 0}};
  for (int open = 2; open > 0;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int s = 0; s < 2; ++s) {
      if (fds[s].fd < 0 || fds[s].revents == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[s].fd, buf, sizeof buf);
      if (n > 0) {
        out.Feed(s + 1, std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        close(fds[s].fd);
        fds[s].fd = -1;
        --open;
      }
    }
  }
  out.Finish();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &previous, nullptr);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// mpirun's command line: its options (ours, then the user's), the rank wrapper, the command.
std::vector<std::string> MpirunCommand(const LaunchOptions& o,
                                       const std::vector<std::string>& user_options,
                                       const std::vector<std::string>& command) {
  std::vector<std::string> argv = {o.mpirun, "--tag-output"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  if (!o.hostfile.empty()) argv.insert(argv.end(), {"--hostfile", o.hostfile});
  if (!o.hosts.empty()) argv.insert(argv.end(), {"--host", o.hosts});
  // One host: N may exceed the cores. Across hosts the hostfile's slots say how many.
  if (o.hostfile.empty() && o.hosts.empty()) argv.push_back("--oversubscribe");
  for (const char* var : {"SHARDSCOPE_DATASETS", "SHARDSCOPE_DATA"})
    if (std::getenv(var) != nullptr) argv.insert(argv.end(), {"-x", var});
  argv.insert(argv.end(), user_options.begin(), user_options.end());
  argv.insert(argv.end(), {"-np", std::to_string(o.processes)});
  argv.insert(argv.end(), {"bash", "-c", kRankScript, "shardscope-rank"});
  argv.push_back(o.program.empty() ? SelfPath() : o.program);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

int RunLaunch(const LaunchOptions& o) {
  // "-- OPTS -- COMMAND": CLI11 keeps the second "--" among the positionals.
  std::vector<std::string> user_options, command = o.args;
  const auto split = std::find(o.args.begin(), o.args.end(), "--");
  if (split != o.args.end()) {
    user_options.assign(o.args.begin(), split);
    command.assign(split + 1, o.args.end());
  }
  if (command.empty()) return Fail(kExitBadInput, "launch: give the command after --");
  if (!o.hostfile.empty() && !o.hosts.empty())
    return Fail(kExitBadInput, "launch: give --hostfile or --host, not both");
  const std::string logs = o.logs.empty() ? DefaultLogDir() : o.logs;
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  if (ec) return Fail(kExitBadInput, "launch: cannot create the log directory " + logs);
  for (int r = 0; r < o.processes; ++r)  // one log per rank, empty when it prints nothing
    std::ofstream(logs + "/rank-" + std::to_string(r) + ".log", std::ios::trunc);
  // Waiting ranks yield the core (mpirun passes OMPI_MCA_* on to every host).
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  RankOutput output(logs, o.processes);
  const int code = SpawnReading(MpirunCommand(o, user_options, command), output);
  if (code == -1 || code == 127) return Fail(kExitRunFailure, "launch: cannot run " + o.mpirun);
  // Every rank's verdict: the failed ones first, then those stopped before finishing.
  std::vector<std::string> failed, unfinished;
  int first_code = 0;
  for (int r = 0; r < o.processes; ++r) {
    const std::optional<int> rank_code = output.ExitCode(r);
    if (!rank_code) {
      unfinished.push_back(std::to_string(r));
    } else if (*rank_code != 0) {
      failed.push_back("rank " + std::to_string(r) + " exited with " + std::to_string(*rank_code) +
                       " (log: " + logs + "/rank-" + std::to_string(r) + ".log)");
      if (first_code == 0) first_code = *rank_code;
    }
  }
  if (failed.empty() && unfinished.empty() && code == 0) {
    std::printf("launch: all %d ranks finished; logs in %s/rank-<r>.log%s%s\n", o.processes,
                logs.c_str(), output.RunFileLine().empty() ? "" : "; rank 0 ",
                output.RunFileLine().c_str());
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
      "Start N processes of a shardscope command under MPI, on this host or several, and\n"
      "wait for all of them.\n"
      "\n"
      "Examples:\n"
      "  shardscope launch -n 5 -- train samples/models/lenet5_place.yaml --epochs 1\n"
      "  shardscope launch -n 8 --logs runs/ffn-logs -- train samples/models/ffn.yaml\n"
      "  shardscope launch -n 8 --hostfile hosts -- train samples/models/ffn.yaml\n"
      "      (hosts: one line per host, e.g. `node1 slots=4`)\n"
      "  shardscope launch -n 8 --host node1:4,node2:4 -- --mca btl_tcp_if_include eth0 \\\n"
      "      --mca oob_tcp_if_include eth0 -- train samples/models/ffn.yaml\n"
      "  shardscope launch -n 2 --program ./my_test -- --gtest_brief=1\n"
      "Runs mpirun -np N --tag-output (with --allow-run-as-root when run as root, and\n"
      "--oversubscribe on one host so N may exceed the cores; across hosts the slots decide).\n"
      "Options between two -- go to mpirun as they are. Every rank's output comes back through\n"
      "mpirun to LOGS/rank-<r>.log on this host (rank 0's also to this terminal), and so do\n"
      "the exit codes: no shared file system is needed. Rank 0 writes the run file on its\n"
      "host; its path is printed. When a rank fails, launch fails (exit 1, or 2 for bad\n"
      "input) naming the rank, its exit code and its log. Several hosts: docs/multi-host.md.");
  app->add_option("-n,--processes", o->processes, "Number of processes (MPI ranks)")
      ->required()
      ->check(AtLeast(1));
  app->add_option("--hostfile", o->hostfile,
                  "Hosts to run on, one per line with its slots (`node1 slots=4`): mpirun's "
                  "--hostfile")
      ->check(CLI::ExistingFile);
  app->add_option("--host", o->hosts, "Hosts to run on, H[:SLOTS],...: mpirun's --host");
  app->add_option("--logs", o->logs,
                  "Directory on this host for per-rank logs (default: runs/launch-<time>)");
  app->add_option("--mpirun", o->mpirun, "The MPI launcher (default: mpirun from PATH)");
  app->add_option("--program", o->program,
                  "Run this program on every rank instead of shardscope (arguments after --)");
  app->add_option("command", o->args,
                  "After --: [MPIRUN OPTIONS --] the command each rank runs (e.g. train MODEL)")
      ->required();
  commands.push_back({app, [o] { return RunLaunch(*o); }});
}

}  // namespace shardscope::cli
