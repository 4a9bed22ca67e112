// Checkpoints from the command line: `train --save-checkpoint/--resume` keeps the resume law
// across device counts, strategies and mpirun, for SPMD and placed runs alike; `eval` reads a
// checkpoint; a damaged one is refused naming the file and the checksum; the run file records
// saves and resumes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "run_shardscope.h"
#include "shardscope/checkpoint.h"
#include "shardscope/store/reader.h"

namespace {

namespace fs = std::filesystem;
using shardscope_cli_test::RunCommand;
using shardscope_cli_test::Shardscope;

const std::string kFfn = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/ffn.yaml";
// 6 batches of 32 per epoch: 4 + 4 steps cross an epoch boundary.
const std::string kEvalData =
    " --data " + std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist --limit 192";
const std::string kData = kEvalData + " --lr 0.05 --no-record";

std::string Dir(const std::string& name) {
  return (fs::temp_directory_path() /
          ("shardscope_ckpt_cli_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Every tensor of `got` within 1e-4 (relative) of `want`'s.
void ExpectSameTensors(const std::string& want_dir, const std::string& got_dir) {
  auto want = shardscope::ReadCheckpoint(want_dir);
  auto got = shardscope::ReadCheckpoint(got_dir);
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->step, want->step);
  ASSERT_EQ(got->tensors.size(), want->tensors.size());
  for (const auto& w : want->tensors) {
    const auto* g = got->Find(w.name, w.role);
    ASSERT_NE(g, nullptr) << w.name << " " << w.role;
    ASSERT_EQ(g->value.size(), w.value.size());
    for (int64_t i = 0; i < w.value.size(); ++i) {
      ASSERT_LE(std::abs(g->value[i] - w.value[i]), 1e-4f * std::max(1.0f, std::abs(w.value[i])))
          << w.name << " " << w.role << "[" << i << "]";
    }
  }
}

class CheckpointCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);  // more ranks than cores
    // The reference: 8 uninterrupted steps on 4 devices, data parallel.
    const auto whole =
        Shardscope("train " + kFfn + kData +
                   " --devices 4 --ignore-parallel --steps 8 --save-checkpoint " + Dir("whole"));
    ASSERT_EQ(whole.code, 0) << whole.text;
    // The first 4 steps on 2 devices, data parallel.
    const auto half =
        Shardscope("train " + kFfn + kData +
                   " --devices 2 --ignore-parallel --steps 4 --save-checkpoint " + Dir("half"));
    ASSERT_EQ(half.code, 0) << half.text;
  }
  static void TearDownTestSuite() {
    for (const char* d : {"whole", "half"}) fs::remove_all(Dir(d));
  }
};

TEST_F(CheckpointCli, ResumesUnderTheFilesSearchedPlanOnEightDevices) {
  // The model file's parallel section: auto (sharding propagation) on 8 devices.
  const auto out = Shardscope("train " + kFfn + kData + " --resume " + Dir("half") +
                              " --steps 4 --save-checkpoint " + Dir("auto8"));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("resumed from " + Dir("half") + " at step 4"), std::string::npos)
      << out.text;
  ExpectSameTensors(Dir("whole"), Dir("auto8"));
  // eval reads it on any device count: the accuracy the run reported, the same loss.
  const auto one = Shardscope("eval " + kFfn + " --checkpoint " + Dir("auto8") + kEvalData +
                              " --devices 1 --ignore-parallel");
  const auto four = Shardscope("eval " + kFfn + " --checkpoint " + Dir("auto8") + kEvalData +
                               " --devices 4 --ignore-parallel");
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(four.code, 0) << four.text;
  EXPECT_NE(one.text.find("(step 8)"), std::string::npos) << one.text;
  double loss1 = 0, acc1 = 0, loss4 = 0, acc4 = 0;
  ASSERT_EQ(std::sscanf(one.text.c_str() + one.text.find("test loss "),
                        "test loss %lf, accuracy %lf", &loss1, &acc1),
            2)
      << one.text;
  ASSERT_EQ(std::sscanf(four.text.c_str() + four.text.find("test loss "),
                        "test loss %lf, accuracy %lf", &loss4, &acc4),
            2)
      << four.text;
  EXPECT_GT(loss1, 0.0);
  double trained = -1;  // what the run that saved it reported at its end
  ASSERT_EQ(std::sscanf(out.text.c_str() + out.text.find("test accuracy: "), "test accuracy: %lf",
                        &trained),
            1)
      << out.text;
  EXPECT_NEAR(acc1, trained, 1e-4);
  EXPECT_NEAR(loss1, loss4, 1e-3);
  EXPECT_NEAR(acc1, acc4, 1e-9);
  fs::remove_all(Dir("auto8"));
}

TEST_F(CheckpointCli, ResumeLawUnderMpirun) {
  // Saved in-process on 2 devices, resumed on 4 MPI ranks; saved on 4 ranks, resumed on 1.
  const std::string mpirun =
      std::string(MPIEXEC) + " -np 4 --allow-run-as-root --oversubscribe " SHARDSCOPE_BIN " train ";
  const auto mpi = RunCommand(mpirun + kFfn + kData + " --ignore-parallel --resume " + Dir("half") +
                              " --steps 4 --save-checkpoint " + Dir("mpi"));
  ASSERT_EQ(mpi.code, 0) << mpi.text;
  ExpectSameTensors(Dir("whole"), Dir("mpi"));
  const auto mpi_half = RunCommand(
      mpirun + kFfn + kData + " --ignore-parallel --steps 4 --save-checkpoint " + Dir("mpi_half"));
  ASSERT_EQ(mpi_half.code, 0) << mpi_half.text;
  const auto one = Shardscope("train " + kFfn + kData + " --ignore-parallel --devices 1 --resume " +
                              Dir("mpi_half") + " --steps 4 --save-checkpoint " + Dir("one"));
  ASSERT_EQ(one.code, 0) << one.text;
  ExpectSameTensors(Dir("whole"), Dir("one"));
  for (const char* d : {"mpi", "mpi_half", "one"}) fs::remove_all(Dir(d));
}

TEST_F(CheckpointCli, DamagedCheckpointRefusedNamingFileAndChecksum) {
  fs::copy(Dir("half"), Dir("bad"), fs::copy_options::recursive);
  const std::string file = Dir("bad") + "/tensors/0002.f32";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x55');
  }
  const auto out = Shardscope("train " + kFfn + kData + " --resume " + Dir("bad") + " --steps 1");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find(file), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("sha256"), std::string::npos) << out.text;
  const auto eval = Shardscope("eval " + kFfn + " --checkpoint " + Dir("bad") + kEvalData);
  EXPECT_EQ(eval.code, 2) << eval.text;
  fs::remove_all(Dir("bad"));
}

TEST_F(CheckpointCli, RefusesAnotherBatchOrSeed) {
  const auto batch =
      Shardscope("train " + kFfn + kData + " --resume " + Dir("half") + " --steps 1 --batch 16");
  EXPECT_EQ(batch.code, 2) << batch.text;
  EXPECT_NE(batch.text.find("global batch 32"), std::string::npos) << batch.text;
  const auto seed =
      Shardscope("train " + kFfn + kData + " --resume " + Dir("half") + " --steps 1 --seed 9");
  EXPECT_EQ(seed.code, 2) << seed.text;
  EXPECT_NE(seed.text.find("seed 1"), std::string::npos) << seed.text;
}

TEST_F(CheckpointCli, RunFileRecordsSavesAndTheResume) {
  const std::string run = Dir("run.db");
  const std::string data = " --data " + std::string(SHARDSCOPE_DATASETS_DIR) +
                           "/mnist --limit 192 --lr 0.05 --record " + run;
  const auto out =
      Shardscope("train " + kFfn + data + " --ignore-parallel --devices 2 --resume " + Dir("half") +
                 " --steps 4 --every 2 --save-checkpoint " + Dir("every"));
  ASSERT_EQ(out.code, 0) << out.text;
  auto reader = shardscope::store::RunReader::Open(run);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto events = (*reader)->Events();
  ASSERT_TRUE(events.ok());
  std::vector<std::pair<int64_t, std::string>> seen;
  for (const auto& e : *events) {
    if (e.source != "checkpoint") continue;
    const bool saved = e.text.find("\"action\":\"saved\"") != std::string::npos;
    seen.emplace_back(e.step, saved ? "saved" : "resumed");
  }
  const std::vector<std::pair<int64_t, std::string>> want = {
      {4, "resumed"}, {6, "saved"}, {8, "saved"}};
  EXPECT_EQ(seen, want);
  fs::remove_all(Dir("every"));
  fs::remove(run);
}

// Placed (place: in the file, 5 workers): the resume law in-process and under mpirun, and the
// same checkpoint resumed and evaluated by an SPMD run.
TEST(PlacedCheckpointCli, ResumeLawAndSpmdResume) {
  const std::string placed =
      std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/lenet5_place.yaml" + kData;
  const auto whole = Shardscope("train " + placed + " --steps 8 --save-checkpoint " + Dir("pw"));
  ASSERT_EQ(whole.code, 0) << whole.text;
  const auto half =
      Shardscope("train " + placed + " --steps 4 --every 2 --save-checkpoint " + Dir("ph"));
  ASSERT_EQ(half.code, 0) << half.text;
  const auto resumed = Shardscope("train " + placed + " --resume " + Dir("ph") +
                                  " --steps 4 --save-checkpoint " + Dir("pr"));
  ASSERT_EQ(resumed.code, 0) << resumed.text;
  EXPECT_NE(resumed.text.find("resumed from " + Dir("ph") + " at step 4"), std::string::npos)
      << resumed.text;
  ExpectSameTensors(Dir("pw"), Dir("pr"));
  const auto mpi =
      RunCommand(std::string(MPIEXEC) +
                 " -np 5 --allow-run-as-root --oversubscribe " SHARDSCOPE_BIN " train " + placed +
                 " --resume " + Dir("ph") + " --steps 4 --save-checkpoint " + Dir("pm"));
  ASSERT_EQ(mpi.code, 0) << mpi.text;
  ExpectSameTensors(Dir("pw"), Dir("pm"));
  const auto spmd = Shardscope("train " + placed + " --ignore-parallel --devices 2 --resume " +
                               Dir("ph") + " --steps 4 --save-checkpoint " + Dir("ps"));
  ASSERT_EQ(spmd.code, 0) << spmd.text;
  ExpectSameTensors(Dir("pw"), Dir("ps"));
  // eval: the placed run and an SPMD run agree on the saved parameters' accuracy.
  const std::string eval = "eval " + std::string(SHARDSCOPE_SOURCE_DIR) +
                           "/samples/models/lenet5_place.yaml --checkpoint " + Dir("pw") +
                           kEvalData;
  const auto by_workers = Shardscope(eval);
  const auto by_spmd = Shardscope(eval + " --ignore-parallel");
  ASSERT_EQ(by_workers.code, 0) << by_workers.text;
  ASSERT_EQ(by_spmd.code, 0) << by_spmd.text;
  double placed_acc = -1, spmd_acc = -2;
  ASSERT_EQ(std::sscanf(by_workers.text.c_str() + by_workers.text.find("(step 8): test accuracy"),
                        "(step 8): test accuracy %lf", &placed_acc),
            1)
      << by_workers.text;
  ASSERT_EQ(
      std::sscanf(by_spmd.text.c_str() + by_spmd.text.find("accuracy "), "accuracy %lf", &spmd_acc),
      1)
      << by_spmd.text;
  EXPECT_NEAR(placed_acc, spmd_acc, 1e-9);
  for (const char* d : {"pw", "ph", "pr", "pm", "ps"}) fs::remove_all(Dir(d));
}

}  // namespace
