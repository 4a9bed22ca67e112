// A run killed with SIGKILL leaves a run file that opens, holds every committed step and
// reads as interrupted: on in-process devices and under mpirun.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <string>

#include <fstream>
#include <iterator>
#include <thread>

#include "shardscope/store/reader.h"

namespace {

const std::string kModel = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/matmul_relu.yaml";

// Starts `argv` in its own process group; returns its pid.
pid_t Start(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Waits until the run file holds at least `steps` committed steps (or 180 s pass: 8 MPI ranks
// start slowly on 2 busy cores; the wait ends as soon as the steps are there).
int64_t WaitForSteps(const std::string& path, int64_t steps) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (std::chrono::steady_clock::now() < deadline) {
    auto reader = shardscope::store::RunReader::Open(path);
    if (reader.ok()) {
      auto counts = (*reader)->Counts();
      if (counts.ok() && counts->steps >= steps) return counts->steps;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

// Sends `signal` (0: none) to every process whose command line mentions `marker`; returns
// how many there were.
int SignalMatching(const std::string& marker, int signal) {
  int found = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    const std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmd.find(marker) == std::string::npos) continue;
    ++found;
    if (signal != 0) kill(pid, signal);
  }
  closedir(proc);
  return found;
}

// SIGKILLs every process whose command line mentions `marker` (MPI ranks live outside the
// launcher's process group) and the launcher's group, then waits (up to 30 s) until they are
// gone: a killed writer holds its lock until the kernel has closed its files, and until then
// the run rightly reads as running.
void KillAll(pid_t group, const std::string& marker) {
  kill(-group, SIGKILL);
  SignalMatching(marker, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (SignalMatching(marker, 0) > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void KillAndCheck(const std::vector<std::string>& command, const std::string& path) {
  std::remove(path.c_str());
  const pid_t pid = Start(command);
  ASSERT_GT(pid, 0);
  const int64_t seen = WaitForSteps(path, 5);
  ASSERT_GE(seen, 5) << "the run never committed 5 steps";
  KillAll(pid, path);  // every rank
  int status = 0;
  waitpid(pid, &status, 0);
  KillAll(pid, path);  // ranks a dying launcher may have left behind
  auto reader = shardscope::store::RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto run = (*reader)->Run();
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->status, shardscope::store::RunStatus::kInterrupted);
  auto steps = (*reader)->Steps(std::numeric_limits<int64_t>::min(),
                                std::numeric_limits<int64_t>::max(), true);
  ASSERT_TRUE(steps.ok());
  ASSERT_GE(static_cast<int64_t>(steps->size()), seen);
  for (size_t i = 0; i < steps->size(); ++i) {
    EXPECT_EQ((*steps)[i].step, static_cast<int64_t>(i + 1));  // every committed step, in order
    EXPECT_EQ((*steps)[i].ranks.size(), 8u);
  }
  EXPECT_TRUE((*reader)->Check().ok());
}

TEST(Kill, InProcessRunLeavesAnInterruptedReadableFile) {
  KillAndCheck({SHARDSCOPE_BIN, "train", kModel, "--steps", "100000", "--record",
                ::testing::TempDir() + "/kill_inprocess.db"},
               ::testing::TempDir() + "/kill_inprocess.db");
}

TEST(Kill, MpiRunLeavesAnInterruptedReadableFile) {
  KillAndCheck(
      {MPIEXEC, "-np", "8", "--allow-run-as-root", "--oversubscribe", SHARDSCOPE_BIN, "train",
       kModel, "--steps", "100000", "--record", ::testing::TempDir() + "/kill_mpi.db"},
      ::testing::TempDir() + "/kill_mpi.db");
}

}  // namespace
