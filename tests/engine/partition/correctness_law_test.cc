// The correctness law (DESIGN.md §4) on hand-written strategies and on the seeds' samples.
#include <gtest/gtest.h>

#include "law.h"
#include "shardscope/model_file.h"
#include "shardscope/nn.h"

namespace shardscope {
namespace {

using testing_law::CheckLaw;

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

testing_law::BuildFn MlpWith(std::function<void(Mlp&)> configure) {
  return [configure] {
    Mlp net;
    configure(net);
    return nn::BuildClassifier(net, {1, 4, 4}, kBatch);
  };
}

Dataset MlpData() { return MakeSyntheticDataset(kBatch * 5, {1, 4, 4}, 8, 3); }

TEST(CorrectnessLaw, DataParallel) {
  for (int devices : {1, 2, 4, 8}) {
    Status st = CheckLaw(MlpWith([](Mlp&) {}), MlpData(), kBatch, devices);
    EXPECT_TRUE(st.ok()) << devices << " devices: " << st.message();
  }
}

TEST(CorrectnessLaw, MatMulStrategies) {
  struct Case {
    int devices;
    std::function<void(Mlp&)> configure;
  };
  const std::vector<Case> cases = {
      {8, [](Mlp& n) { n.dense1.matmul.shard("((2,4),(4,1))"); }},
      {4, [](Mlp& n) { n.dense2.matmul.shard("((1,1),(1,4))"); }},
      {4,
       [](Mlp& n) {  // Megatron: columns, then rows
         n.dense1.matmul.shard("((1,1),(1,4))");
         n.dense2.matmul.shard("((1,4),(4,1))");
       }},
      {8,
       [](Mlp& n) {
         n.dense1.matmul.shard("((2,2),(2,2))");
         n.dense3.matmul.shard("((1,8),(8,1))");
       }},
      {2, [](Mlp& n) { n.relu.shard("((1,2),)"); }},
  };
  for (const Case& c : cases) {
    Status st = CheckLaw(MlpWith(c.configure), MlpData(), kBatch, c.devices);
    EXPECT_TRUE(st.ok()) << st.message();
  }
}

// The seeds' samples as model files, on the devices their parallel sections name.
class SampleLaw : public ::testing::TestWithParam<const char*> {};

TEST_P(SampleLaw, EqualsSingleDevice) {
  const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + GetParam();
  auto mf = LoadModelFile(path);
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  PartitionOptions options;
  for (const auto& [name, text] : mf->parallel().meshes) {
    auto mesh = ParseMeshExpr(text);
    ASSERT_TRUE(mesh.ok()) << mesh.status().message();
    options.meshes[name] = *mesh;
  }
  const int64_t batch = mf->training().batch;
  Dataset data = MakeSyntheticDataset(batch * 5, mf->example_shape(), mf->num_classes(), 5);
  const ModelFile& file = *mf;
  Status st = CheckLaw([&file, batch] { return file.Build(batch); }, data, batch,
                       mf->parallel().devices, options);
  EXPECT_TRUE(st.ok()) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Seeds, SampleLaw,
                         ::testing::Values("matmul_relu.yaml",       // seed 002, 8 devices
                                           "matmul_allgather.yaml",  // seed 002, 4 devices
                                           "dense_matmul_net.yaml",  // seed 004, out_strategy
                                           "matmul3.yaml"));         // seed 004, layout + layout2

}  // namespace
}  // namespace shardscope
