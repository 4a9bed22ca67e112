// The correctness law (DESIGN.md §4): a distributed run equals the single-device run of the
// same model and seed — losses over several steps and the final parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/nn.h"

namespace shardscope {
namespace {

constexpr int kSteps = 5;
constexpr int64_t kBatch = 16;

class Mlp : public nn::Module {
 public:
  Mlp() : nn::Module("") {}
  nn::Flatten flatten{"flatten"};
  nn::Dense dense1{"dense1", 16, 32};
  nn::Dense dense2{"dense2", 32, 16};
  nn::Dense dense3{"dense3", 16, 8};
  nn::ReLU relu{"relu"};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    x = flatten(b, x);
    x = relu(b, dense1(b, x));
    x = relu(b, dense2(b, x));
    return dense3(b, x);
  }
};

struct Run {
  std::vector<float> losses;
  std::map<std::string, Tensor> params;  // whole (single device) or this rank's shard
};

Dataset Data() { return MakeSyntheticDataset(kBatch * kSteps, {1, 4, 4}, 8, 3); }

TrainConfig Config() {
  TrainConfig c;
  c.seed = 11;
  c.optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.05f, .momentum = 0.9f};
  return c;
}

Run SingleDevice(const std::function<void(Mlp&)>& configure) {
  Mlp net;
  configure(net);
  auto model = nn::BuildClassifier(net, {1, 4, 4}, kBatch);
  EXPECT_TRUE(model.ok()) << model.status().message();
  auto trainer = Trainer::Create(std::move(*model), Config());
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  Dataset data = Data();
  BatchIterator it(data, kBatch, 1, false);
  Tensor x, y;
  Run run;
  while (it.Next(&x, &y)) run.losses.push_back((*trainer)->Step(x, y));
  for (ValueId p : (*trainer)->parameters()) {
    run.params[(*trainer)->graph().value(p).name] = (*trainer)->executor().value(p);
  }
  return run;
}

// Runs the distributed trainer on `devices` in-process devices and checks every rank
// against the single-device run.
void ExpectLaw(int devices, const std::function<void(Mlp&)>& configure) {
  SCOPED_TRACE(testing::Message() << devices << " devices");
  const Run single = SingleDevice(configure);
  Dataset data = Data();
  std::mutex mu;
  Status st = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    Mlp net;
    configure(net);
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, nn::BuildClassifier(net, {1, 4, 4}, kBatch));
    PartitionOptions options;
    options.devices = devices;
    SHARDSCOPE_ASSIGN_OR_RETURN(auto trainer, DistTrainer::Create(std::move(model), Config(), options, comm.rank()));
    BatchIterator it(data, kBatch, 1, false);
    Tensor x, y;
    std::vector<float> losses;
    while (it.Next(&x, &y)) {
      SHARDSCOPE_ASSIGN_OR_RETURN(float loss, trainer->Step(comm, x, y));
      losses.push_back(loss);
    }
    std::lock_guard<std::mutex> lock(mu);
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_NEAR(losses[s], single.losses[s], 1e-4 * std::max(1.0f, std::abs(single.losses[s])))
          << "rank " << comm.rank() << " step " << s;
    }
    for (ValueId p : trainer->parameters()) {
      const std::string& name = trainer->graph().value(p).name;
      const Tensor expect = ExtractShard(single.params.at(name), trainer->ParameterLayout(p), comm.rank());
      const Tensor& got = trainer->ParameterShard(p);
      EXPECT_EQ(got.shape(), expect.shape()) << name;
      int64_t bad = 0;
      for (int64_t i = 0; i < got.size() && i < expect.size(); ++i) {
        if (std::abs(got[i] - expect[i]) > 1e-4 * std::max(1.0f, std::abs(expect[i])) && bad++ == 0) {
          ADD_FAILURE() << name << "[" << i << "] on rank " << comm.rank() << ": " << got[i] << " vs "
                        << expect[i];
        }
      }
    }
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message();
}

TEST(CorrectnessLaw, DataParallel) {
  for (int devices : {1, 2, 4, 8}) ExpectLaw(devices, [](Mlp&) {});
}

TEST(CorrectnessLaw, ModelParallelMatMulStrategies) {
  ExpectLaw(8, [](Mlp& n) { n.dense1.matmul.shard("((2,4),(4,1))"); });
  ExpectLaw(4, [](Mlp& n) { n.dense2.matmul.shard("((1,1),(1,4))"); });
  ExpectLaw(4, [](Mlp& n) {
    n.dense1.matmul.shard("((1,1),(1,4))");
    n.dense2.matmul.shard("((1,4),(4,1))");
  });
  ExpectLaw(8, [](Mlp& n) {
    n.dense1.matmul.shard("((2,2),(2,2))");
    n.dense3.matmul.shard("((1,8),(8,1))");
  });
}

}  // namespace
}  // namespace shardscope
