// Ctrl-C (SIGINT) and SIGTERM during `train`: every rank stops after the same step, the run
// file says "interrupted: SIGINT at step N" and is one checked file again (no -wal, -shm or
// .lock left); a second Ctrl-C exits at once. In-process, without recording, under mpirun.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "shardscope/store/reader.h"

namespace {

using shardscope_cli_test::KillAll;
using shardscope_cli_test::Start;
using shardscope_cli_test::WaitFor;
using shardscope_cli_test::WaitForSteps;
namespace store = shardscope::store;

const std::string kSource = SHARDSCOPE_SOURCE_DIR;
const std::string kModel = kSource + "/samples/models/matmul_relu.yaml";

std::string Temp(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/signal_test_" + name;
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::remove((path + suffix).c_str());
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The run file was closed cleanly as interrupted by `signal_re` ("SIGINT", "SIG(INT|TERM)")
// after its last step, with every step 1..N in it.
void ExpectInterruptedFile(const std::string& path, const std::string& signal_re) {
  for (const char* side : {"-wal", "-shm", ".lock"})
    EXPECT_FALSE(std::filesystem::exists(path + side)) << path + side << " was left behind";
  auto reader = store::RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto run = (*reader)->Run();
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->stored_status, store::RunStatus::kInterrupted);  // recorded, not inferred
  std::smatch m;
  ASSERT_TRUE(std::regex_match(run->status_message, m, std::regex(signal_re + " at step (\\d+)")))
      << run->status_message;
  auto steps = (*reader)->Steps();
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  ASSERT_FALSE(steps->empty());
  EXPECT_EQ(steps->back().step, std::stoll(m[1].str()));  // it stopped after the step it names
  for (size_t i = 0; i < steps->size(); ++i) EXPECT_EQ((*steps)[i].step, int64_t(i + 1));
  EXPECT_TRUE((*reader)->Check().ok());
}

// Sends `signal` to `pid`; expects it to exit by itself within 30 s with `code` (else kills
// every process whose command line mentions `marker`) and to say "interrupted: <name> at step".
void ExpectCleanExit(pid_t pid, int signal, const std::string& marker, int code,
                     const std::string& out) {
  kill(pid, signal);
  const auto status = WaitFor(pid, 30);
  if (!status) KillAll(pid, marker);
  ASSERT_TRUE(status) << "still running 30 s after signal " << signal;
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << WTERMSIG(*status);
  EXPECT_EQ(WEXITSTATUS(*status), code);
  const std::string said =
      std::string("interrupted: ") + (signal == SIGINT ? "SIGINT" : "SIGTERM") + " at step ";
  EXPECT_NE(ReadAll(out).find(said), std::string::npos) << ReadAll(out);
}

TEST(Signal, SigintStopsAnInProcessRunAfterTheStepInFlight) {
  const std::string path = Temp("inprocess.db"), out = Temp("inprocess.out");
  const pid_t pid =
      Start({SHARDSCOPE_BIN, "train", kModel, "--steps", "1000000", "--record", path}, out);
  ASSERT_GE(WaitForSteps(path, 5), 5) << ReadAll(out);
  ExpectCleanExit(pid, SIGINT, path, 130, out);
  ExpectInterruptedFile(path, "SIGINT");
}

TEST(Signal, SigtermStopsARunWithoutRecording) {
  const std::string out = Temp("norecord.out");
  const pid_t pid = Start(
      {SHARDSCOPE_BIN, "train", kModel, "--steps", "1000000", "--no-record", "--log-every", "10"},
      out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ReadAll(out).find(" step ") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ExpectCleanExit(pid, SIGTERM, out, 143, out);
}

// mpirun passes SIGINT on to the ranks as SIGTERM: all four stop after the same step.
TEST(Signal, SigintToMpirunStopsEveryRankTogether) {
  const std::string path = Temp("mpi.db"), out = Temp("mpi.out");
  const pid_t pid =
      Start({MPIEXEC, "-np", "4", "--allow-run-as-root", "--oversubscribe", SHARDSCOPE_BIN, "train",
             kModel, "--ignore-parallel", "--steps", "1000000", "--record", path},
            out);
  ASSERT_GE(WaitForSteps(path, 5), 5) << ReadAll(out);
  kill(pid, SIGINT);
  const auto status = WaitFor(pid, 30);
  KillAll(pid, path);
  ASSERT_TRUE(status) << "mpirun still running 30 s after SIGINT";
  EXPECT_NE(ReadAll(out).find("interrupted: SIG"), std::string::npos) << ReadAll(out);
  ExpectInterruptedFile(path, "SIG(?:INT|TERM)");
}

// LeNet-5 on batches of 1024: steps of a few hundred milliseconds, so the second SIGINT comes
// while the first still waits for the step in flight.
TEST(Signal, ASecondSigintExitsAtOnce) {
  const std::string path = Temp("twice.db"), out = Temp("twice.out");
  const pid_t pid =
      Start({SHARDSCOPE_BIN, "train", kSource + "/samples/models/lenet5.yaml", "--data",
             std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist", "--limit", "2048", "--batch", "1024",
             "--devices", "1", "--steps", "1000", "--record", path},
            out);
  ASSERT_GE(WaitForSteps(path, 1), 1) << ReadAll(out);
  kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGINT);
  const auto status = WaitFor(pid, 5);
  if (!status) KillAll(pid, path);
  ASSERT_TRUE(status) << "still running 5 s after the second SIGINT";
  ASSERT_TRUE(WIFSIGNALED(*status)) << "exited with " << WEXITSTATUS(*status) << ":\n"
                                    << ReadAll(out);
  EXPECT_EQ(WTERMSIG(*status), SIGINT);
  // Like any killed run: every committed step, read as interrupted.
  auto reader = store::RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ((*reader)->Run()->status, store::RunStatus::kInterrupted);
  EXPECT_TRUE((*reader)->Check().ok());
}

}  // namespace
