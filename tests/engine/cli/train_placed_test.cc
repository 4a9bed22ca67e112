// `shardscope train` on placed models (seed 001) and `shardscope launch`, as a user runs
// them: the losses of the single-device run, the run file's per-worker programs, cut edges
// and pipeline timeline, and the errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shardscope/store/reader.h"

namespace {

struct Output {
  int code = -1;
  std::string text;
};

Output Run(const std::string& cmd) {
  Output out;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.text.append(buf, n);
  const int status = pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

Output Shardscope(const std::string& args) { return Run(std::string(SHARDSCOPE_BIN) + " " + args); }

const std::string kModel = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/lenet5_place.yaml";
const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

std::vector<std::string> Losses(const std::string& text) {
  std::vector<std::string> out;
  for (size_t p = text.find("loss "); p != std::string::npos; p = text.find("loss ", p + 1))
    out.push_back(text.substr(p, 11));
  return out;
}

// Seed 001 from the command line: 5 workers print the single-device losses, with and
// without micro-batches.
TEST(TrainPlaced, Seed001PrintsTheSingleDeviceLosses) {
  const std::string args =
      "train " + kModel + " --data " + kMnist + " --steps 6 --limit 256 --log-every 1 --no-record";
  Output one = Shardscope(args + " --ignore-parallel --devices 1");
  Output placed = Shardscope(args);
  Output piped = Shardscope(args + " --micro-batches 4");
  Output one_f_one_b = Shardscope(args + " --micro-batches 4 --schedule 1f1b --unplaced producer");
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(placed.code, 0) << placed.text;
  ASSERT_EQ(piped.code, 0) << piped.text;
  EXPECT_NE(placed.text.find("5 worker(s)"), std::string::npos) << placed.text;
  EXPECT_EQ(Losses(one.text), Losses(placed.text)) << one.text << "\n----\n" << placed.text;
  EXPECT_EQ(Losses(one.text), Losses(piped.text)) << one.text << "\n----\n" << piped.text;
  ASSERT_EQ(one_f_one_b.code, 0) << one_f_one_b.text;
  EXPECT_EQ(Losses(one.text), Losses(one_f_one_b.text)) << one_f_one_b.text;
  EXPECT_GE(Losses(one.text).size(), 6u);
}

TEST(TrainPlaced, RecordsProgramsCutEdgesAndTheTimeline) {
  const std::string path = ::testing::TempDir() + "/train_placed_test.db";
  std::remove(path.c_str());
  Output o = Shardscope("train " + kModel + " --data " + kMnist +
                        " --steps 3 --limit 128 --micro-batches 2 --record " + path);
  ASSERT_EQ(o.code, 0) << o.text;
  auto reader = shardscope::store::RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto programs = (*reader)->Programs();
  ASSERT_TRUE(programs.ok());
  ASSERT_EQ(programs->size(), 5u);
  int sends = 0, recvs = 0;
  for (const auto& p : *programs) {
    EXPECT_EQ(p.role, "worker");
    for (const auto& in : p.instructions) {
      sends += in.kind == "send";
      recvs += in.kind == "recv";
    }
  }
  auto pairs = (*reader)->SendRecvs();
  ASSERT_TRUE(pairs.ok());
  EXPECT_EQ(static_cast<int>(pairs->size()), sends);
  EXPECT_EQ(sends, recvs);
  bool backward = false;
  for (const auto& p : *pairs) {
    EXPECT_NE(p.src_rank, p.dst_rank);
    EXPECT_GT(p.bytes, 0);
    backward = backward || p.is_backward;
  }
  EXPECT_TRUE(backward);
  // conv1 runs on worker 3 (the file's place), its gradient too.
  auto conv1 = (*reader)->OperatorsNamed("conv1.conv2d");
  ASSERT_TRUE(conv1.ok() && conv1->size() == 1);
  EXPECT_EQ((*conv1)[0].worker, 3);
  // Timeline: every worker, both phases of both micro-batches, every step.
  auto spans = (*reader)->PipelineSpans();
  ASSERT_TRUE(spans.ok()) << spans.status().message();
  EXPECT_EQ(spans->size(), 3u * 5u * 2u * 2u);
  for (const auto& s : *spans) EXPECT_LE(s.start_seconds, s.end_seconds);
  auto steps = (*reader)->Steps(1, 3, /*with_ranks=*/true);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 3u);
  ASSERT_EQ((*steps)[0].ranks.size(), 5u);
  EXPECT_GT((*steps)[0].ranks[3].bytes_sent, 0);
}

TEST(TrainPlaced, ErrorsNameTheProblem) {
  Output batch = Shardscope("train " + kModel + " --data " + kMnist +
                            " --steps 1 --limit 64 --micro-batches 5 --no-record");
  EXPECT_EQ(batch.code, 2);
  EXPECT_NE(batch.text.find("--micro-batches 5 must divide the batch of 32"), std::string::npos)
      << batch.text;
  Output sched = Shardscope("train " + kModel + " --data " + kMnist +
                            " --steps 1 --limit 64 --micro-batches 4 --schedule 1f1b --no-record");
  EXPECT_EQ(sched.code, 2);
  EXPECT_NE(sched.text.find("deadlocks"), std::string::npos) << sched.text;
  Output unplaced = Shardscope("train " + std::string(SHARDSCOPE_SOURCE_DIR) +
                               "/samples/models/lenet5.yaml --data " + kMnist +
                               " --steps 1 --micro-batches 2 --no-record");
  EXPECT_EQ(unplaced.code, 2);
  EXPECT_NE(unplaced.text.find("needs a placed model"), std::string::npos) << unplaced.text;
}

// seed 001 under MPI from one command: 5 processes, one log per rank, the same losses.
TEST(Launch, TrainsSeed001OnFiveMpiProcesses) {
  const std::string logs = ::testing::TempDir() + "/launch_ok";
  std::filesystem::remove_all(logs);
  const std::string train =
      "train " + kModel + " --data " + kMnist + " --steps 4 --limit 128 --log-every 1 --no-record";
  Output o = Shardscope("launch -n 5 --logs " + logs + " -- " + train);
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("5 worker(s) (MPI, placed)"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("all 5 ranks finished"), std::string::npos) << o.text;
  for (int r = 0; r < 5; ++r)
    EXPECT_TRUE(std::filesystem::exists(logs + "/rank-" + std::to_string(r) + ".log")) << r;
  Output one = Shardscope(train + " --ignore-parallel --devices 1");
  ASSERT_EQ(one.code, 0) << one.text;
  EXPECT_EQ(Losses(one.text), Losses(o.text)) << one.text << "\n----\n" << o.text;
}

TEST(Launch, AFailingRankFailsTheLaunchNamingItsLog) {
  const std::string logs = ::testing::TempDir() + "/launch_fail";
  std::filesystem::remove_all(logs);
  Output o = Shardscope("launch -n 3 --logs " + logs +
                        " --program bash -- -c 'echo rank $OMPI_COMM_WORLD_RANK; "
                        "[ $OMPI_COMM_WORLD_RANK != 2 ] || exit 3'");
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("rank 2 exited with 3 (log: " + logs + "/rank-2.log)"), std::string::npos)
      << o.text;
  std::ifstream log(logs + "/rank-2.log");
  std::string line;
  std::getline(log, line);
  EXPECT_EQ(line, "rank 2");
  Output help = Shardscope("launch --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.text.find("Example"), std::string::npos) << help.text;
}

}  // namespace
