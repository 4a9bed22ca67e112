// Checkpoints: the resume law (N steps, save, resume for M steps under the same or another
// strategy or device count = N + M uninterrupted steps), damaged checkpoints refused, and a
// failed save leaving the previous checkpoint intact.
#include "shardscope/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "shardscope/dist_trainer.h"
#include "small_net.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatch = 16;

using Net = testing_nets::SmallNet;

// How one phase runs: devices and the strategies of the net's operators.
struct Setup {
  int devices = 1;
  std::function<void(Net&)> strategies = [](Net&) {};
};

Dataset Data() { return MakeSyntheticDataset(kBatch * 4, {1, 4, 4}, 8, 7); }

TrainConfig Config(OptimizerConfig::Kind kind) {
  TrainConfig c;
  c.seed = 13;
  c.optimizer.kind = kind;
  c.optimizer.lr = kind == OptimizerConfig::kAdam ? 0.01f : 0.05f;
  return c;
}

// Trains steps [first, first + steps) of the seeded shuffled order (epochs of 4 batches) on
// `setup`, starting from `resume` (null: fresh parameters); returns the final checkpoint as
// gathered on rank 0 and the losses.
Status Train(const Setup& setup, OptimizerConfig::Kind kind, const Checkpoint* resume,
             int64_t first, int64_t steps, Checkpoint* saved, std::vector<float>* losses) {
  const Dataset data = Data();
  std::mutex mu;
  PartitionOptions options;
  options.devices = setup.devices;
  return RunOnDevices(setup.devices, [&](Communicator& comm) -> Status {
    Net net(24, /*with_dropout=*/true);  // dropout: resuming must restore the step count
    setup.strategies(net);
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, nn::BuildClassifier(net, {1, 4, 4}, kBatch));
    SHARDSCOPE_ASSIGN_OR_RETURN(
        auto trainer, DistTrainer::Create(std::move(model), Config(kind), options, comm.rank()));
    if (resume != nullptr) SHARDSCOPE_RETURN_IF_ERROR(RestoreCheckpoint(*resume, *trainer));
    BatchIterator batches(data, kBatch, 13, /*shuffle=*/true);
    const int64_t per_epoch = batches.batches_per_epoch();
    Tensor x, y;
    for (int64_t s = first; s < first + steps; ++s) {
      if (s == first || s % per_epoch == 0) {
        batches.Reset(static_cast<int>(s / per_epoch));
        batches.Skip(s % per_epoch);
      }
      if (!batches.Next(&x, &y)) return Status::Internal("ran out of batches");
      SHARDSCOPE_ASSIGN_OR_RETURN(float loss, trainer->Step(comm, x, y));
      if (comm.rank() == 0) losses->push_back(loss);
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(Checkpoint c, GatherCheckpoint(comm, *trainer));
    if (comm.rank() == 0) {
      std::lock_guard<std::mutex> lock(mu);
      *saved = std::move(c);
    }
    return Status::Ok();
  });
}

bool Close(float a, float b) { return std::abs(a - b) <= 1e-4f * std::max(1.0f, std::abs(b)); }

// N steps on `before`, saved to disk and read back, M steps on `after` = N + M on `before`.
void ExpectResumeLaw(const Setup& before, const Setup& after, OptimizerConfig::Kind kind) {
  constexpr int64_t kN = 3, kM = 4;  // M crosses an epoch boundary (4 batches per epoch)
  Checkpoint whole, half, resumed;
  std::vector<float> whole_losses, half_losses, resumed_losses;
  ASSERT_TRUE(Train(before, kind, nullptr, 0, kN + kM, &whole, &whole_losses).ok());
  ASSERT_TRUE(Train(before, kind, nullptr, 0, kN, &half, &half_losses).ok());
  const std::string dir = ::testing::TempDir() + "/ckpt_law_" + std::to_string(::getpid());
  ASSERT_TRUE(WriteCheckpoint(dir, half).ok());
  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->step, kN);
  Status st = Train(after, kind, &*read, kN, kM, &resumed, &resumed_losses);
  ASSERT_TRUE(st.ok()) << st.message();
  fs::remove_all(dir);
  EXPECT_EQ(resumed.step, kN + kM);
  ASSERT_EQ(resumed_losses.size(), static_cast<size_t>(kM));
  for (int64_t s = 0; s < kM; ++s)
    EXPECT_TRUE(Close(resumed_losses[s], whole_losses[kN + s]))
        << "step " << kN + s + 1 << ": " << resumed_losses[s] << " vs " << whole_losses[kN + s];
  ASSERT_EQ(resumed.tensors.size(), whole.tensors.size());
  for (const CheckpointTensor& want : whole.tensors) {
    const CheckpointTensor* got = resumed.Find(want.name, want.role);
    ASSERT_NE(got, nullptr) << want.name << " " << want.role;
    ASSERT_EQ(got->value.shape(), want.value.shape());
    for (int64_t i = 0; i < want.value.size(); ++i) {
      ASSERT_TRUE(Close(got->value[i], want.value[i]))
          << want.name << " " << want.role << "[" << i << "]: " << got->value[i] << " vs "
          << want.value[i];
    }
  }
}

Setup Megatron(int devices) {
  return {devices, [devices](Net& n) {
            const std::string d = std::to_string(devices);
            n.a.matmul.shard("((1,1),(1," + d + "))");
            n.b.matmul.shard("((1," + d + "),(" + d + ",1))");
          }};
}

TEST(Checkpoint, ResumeSameStrategy) {
  ExpectResumeLaw({4}, {4}, OptimizerConfig::kMomentum);
  ExpectResumeLaw(Megatron(2), Megatron(2), OptimizerConfig::kAdam);
}

TEST(Checkpoint, ResumeOtherStrategy) {
  ExpectResumeLaw({4}, Megatron(4), OptimizerConfig::kMomentum);
  ExpectResumeLaw(Megatron(4), {4}, OptimizerConfig::kAdam);
}

TEST(Checkpoint, ResumeOtherDeviceCount) {
  ExpectResumeLaw({1}, {8}, OptimizerConfig::kAdam);
  ExpectResumeLaw(Megatron(2), {1}, OptimizerConfig::kMomentum);
  ExpectResumeLaw({2}, Megatron(4), OptimizerConfig::kSGD);
}

Checkpoint Small() {
  Checkpoint c;
  c.model = "small";
  c.step = 2;
  c.batch = 4;
  c.optimizer = "momentum";
  c.tensors.push_back({"w", "parameter", Tensor::FromVector({2, 2}, {1, 2, 3, 4})});
  c.tensors.push_back({"w", "velocity", Tensor::FromVector({2, 2}, {0.5f, 0, 0, -1})});
  return c;
}

TEST(Checkpoint, RoundTripsExactly) {
  const std::string dir = ::testing::TempDir() + "/ckpt_rt_" + std::to_string(::getpid());
  std::string sha;
  int64_t bytes = 0;
  ASSERT_TRUE(WriteCheckpoint(dir, Small(), &sha, &bytes).ok());
  EXPECT_EQ(sha.size(), 64u);
  EXPECT_GT(bytes, 32);
  auto c = ReadCheckpoint(dir);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->step, 2);
  ASSERT_EQ(c->tensors.size(), 2u);
  const Tensor want = Small().tensors[1].value;
  EXPECT_EQ(c->tensors[1].value.shape(), want.shape());
  for (int64_t i = 0; i < want.size(); ++i) EXPECT_EQ(c->tensors[1].value[i], want[i]);
  fs::remove_all(dir);
}

TEST(Checkpoint, DamagedFileRefusedNamingFileAndChecksum) {
  const std::string dir = ::testing::TempDir() + "/ckpt_bad_" + std::to_string(::getpid());
  ASSERT_TRUE(WriteCheckpoint(dir, Small()).ok());
  const std::string file = dir + "/tensors/0001.f32";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('\x7f');
  }
  auto c = ReadCheckpoint(dir);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(c.status().message().find(file), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("sha256"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("velocity"), std::string::npos) << c.status().message();
  // A truncated file is refused by its size.
  fs::resize_file(file, 4);
  c = ReadCheckpoint(dir);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expected 16 bytes"), std::string::npos)
      << c.status().message();
  fs::remove_all(dir);
  EXPECT_EQ(ReadCheckpoint(dir).status().code(), StatusCode::kInvalidInput);
}

TEST(Checkpoint, FailedSaveKeepsThePreviousOne) {
  const std::string dir = ::testing::TempDir() + "/ckpt_keep_" + std::to_string(::getpid());
  ASSERT_TRUE(WriteCheckpoint(dir, Small()).ok());
  Checkpoint bad = Small();
  bad.step = 9;
  bad.tensors.push_back({"ids", "parameter", Tensor::FromInts({2}, {1, 2})});  // not f32
  EXPECT_FALSE(WriteCheckpoint(dir, bad).ok());
  auto c = ReadCheckpoint(dir);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->step, 2);
  // Replacing a checkpoint with a complete one works, and leaves no temporary directory.
  bad.tensors.pop_back();
  ASSERT_TRUE(WriteCheckpoint(dir, bad).ok());
  EXPECT_EQ(ReadCheckpoint(dir)->step, 9);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir).parent_path()))
    entries += e.path().filename().string().find("ckpt_keep_") != std::string::npos;
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

TEST(Checkpoint, RestoreRefusesAnotherOptimizer) {
  Checkpoint c;
  std::vector<float> losses;
  ASSERT_TRUE(Train({1}, OptimizerConfig::kMomentum, nullptr, 0, 1, &c, &losses).ok());
  Checkpoint unused;
  Status st = Train({2}, OptimizerConfig::kAdam, &c, 1, 1, &unused, &losses);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("saved with optimizer momentum"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace shardscope
