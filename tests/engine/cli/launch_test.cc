// `shardscope launch` across hosts (issue 22), on a hostfile that names only this host: the
// ranks' output and exit codes come back through mpirun, not through files the ranks write.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "run_shardscope.h"

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::Shardscope;

const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";
const std::string kFfn = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/ffn.yaml";

std::string Fresh(const std::string& name) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / ("launch22_" + name)).lexically_normal();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Hostfile(const std::string& dir) {
  const std::string path = dir + "/hosts";
  std::ofstream(path) << "# this host only\nlocalhost slots=4\n";
  return path;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Four ranks from a hostfile train data-parallel; rank 0 writes the run file and the launcher
// says where; every rank's log is on the launcher's side.
TEST(LaunchHosts, TrainsFourRanksFromAHostfile) {
  const std::string dir = Fresh("train");
  const std::string logs = dir + "/logs", run = dir + "/run.db";
  Output o = Shardscope("launch -n 4 --hostfile " + Hostfile(dir) + " --logs " + logs +
                        " -- train " + kFfn + " --ignore-parallel --data " + kMnist +
                        " --steps 2 --limit 128 --log-every 1 --record " + run);
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("4 device(s) (MPI, data_parallel)"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("launch: all 4 ranks finished"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("rank 0 recorded " + run + " on host "), std::string::npos) << o.text;
  EXPECT_TRUE(std::filesystem::exists(run));
  EXPECT_NE(Read(logs + "/rank-0.log").find("test accuracy"), std::string::npos);
  for (int r = 1; r < 4; ++r)
    EXPECT_TRUE(std::filesystem::exists(logs + "/rank-" + std::to_string(r) + ".log")) << r;
  // Nothing but the logs in the log directory: no per-rank exit files to share.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(logs)) {
    EXPECT_EQ(entry.path().extension(), ".log") << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 4);
}

// A failing rank's exit code reaches the launcher through mpirun, with its log; options
// between the two -- go to mpirun (-x exports a variable to every rank).
TEST(LaunchHosts, ReportsAFailingRanksExitCodeAndPassesMpirunOptions) {
  const std::string dir = Fresh("fail");
  const std::string logs = dir + "/logs";
  Output o = Shardscope(
      "launch -n 4 --hostfile " + Hostfile(dir) + " --logs " + logs +
      " --program bash -- -x LAUNCH22_MARK=passed -- -c 'echo rank $OMPI_COMM_WORLD_RANK "
      "$LAUNCH22_MARK; printf partial; [ $OMPI_COMM_WORLD_RANK != 3 ] || exit 5'");
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("rank 3 exited with 5 (log: " + logs + "/rank-3.log)"), std::string::npos)
      << o.text;
  const std::string log = Read(logs + "/rank-3.log");
  EXPECT_EQ(log, "rank 3 passed\npartial\n");  // the exit marker is not part of the log
  EXPECT_EQ(Read(logs + "/rank-0.log").rfind("rank 0 passed\n", 0), 0u);
}

TEST(LaunchHosts, RefusesBothHostfileAndHost) {
  const std::string dir = Fresh("both");
  Output o = Shardscope("launch -n 2 --hostfile " + Hostfile(dir) +
                        " --host localhost:2 -- train " + kFfn);
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("--hostfile or --host, not both"), std::string::npos) << o.text;
}

}  // namespace
