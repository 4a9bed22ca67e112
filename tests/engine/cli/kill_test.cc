// A run killed with SIGKILL leaves a run file that opens, holds every committed step and
// reads as interrupted: on in-process devices and under mpirun.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <thread>

#include "child_process.h"
#include "shardscope/store/reader.h"

namespace {

using shardscope_cli_test::KillAll;
using shardscope_cli_test::Start;
using shardscope_cli_test::WaitForSteps;

const std::string kModel = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/matmul_relu.yaml";

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
  // A killed rank may take a moment to exit and free the run file's lock (slowly under load
  // or a sanitizer): until then the reader rightly sees the run as running.
  auto reader = shardscope::store::RunReader::Open(path);
  for (int tries = 0; tries < 100; ++tries) {
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    auto now = (*reader)->Run();
    if (now.ok() && now->status != shardscope::store::RunStatus::kRunning) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    reader = shardscope::store::RunReader::Open(path);
  }
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
