// Tests of the nn module API through the samples' FFN and LeNet5 (samples/cpp/models.h):
// operator names, parameter counts, and one LeNet5 step on real MNIST.
//
// Built by tests/engine/runtime/CMakeLists.txt (target engine_nn_test), because
// tests/engine/model/CMakeLists.txt belongs to the model-file tests.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models.h"
#include "shardscope/shardscope.h"

namespace shardscope {
namespace {

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes()) names.push_back(n.name);
  return names;
}

int64_t ParameterCount(const Graph& g) {
  int64_t n = 0;
  for (ValueId p : g.Parameters()) n += NumElements(g.value(p).shape);
  return n;
}

TEST(Nn, FfnOperatorNamesAndParameters) {
  samples::FFN net;
  auto model = nn::BuildClassifier(net, {1, 28, 28}, 32);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Graph& g = model->graph;
  EXPECT_EQ(NodeNames(g),
            (std::vector<std::string>{"flatten",                                     //
                                      "dense1.matmul", "dense1.bias_add", "relu",    //
                                      "dense2.matmul", "dense2.bias_add", "relu_1",  //
                                      "dense3.matmul", "dense3.bias_add", "relu_2",  //
                                      "dense4.matmul", "dense4.bias_add", "relu_3",  //
                                      "dense5.matmul", "dense5.bias_add", "loss"}));
  EXPECT_EQ(ParameterCount(g),
            784 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  EXPECT_EQ(g.value(g.FindValue("dense1.weight")).shape, (Shape{784, 512}));  // [in, out]
  EXPECT_EQ(g.value(g.FindValue("dense5.bias")).shape, (Shape{10}));
  EXPECT_EQ(g.value(model->input).shape, (Shape{32, 1, 28, 28}));
  EXPECT_EQ(g.value(model->labels).shape, (Shape{32}));
  EXPECT_EQ(g.value(model->labels).dtype, DType::kI32);
  EXPECT_EQ(g.value(model->logits).shape, (Shape{32, 10}));
  EXPECT_EQ(g.value(model->logits).name, "dense5.bias_add");
  EXPECT_TRUE(g.value(model->loss).shape.empty());
  EXPECT_EQ(g.node(g.FindNode("relu_2")).op, OpKind::kReLU);
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Nn, LeNet5OperatorNamesShapesAndParameters) {
  samples::LeNet5 net;
  auto model = nn::BuildClassifier(net, {1, 32, 32}, 16);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Graph& g = model->graph;
  EXPECT_EQ(NodeNames(g), (std::vector<std::string>{"conv1.conv2d", "relu", "max_pool2d",      //
                                                    "conv2.conv2d", "relu_1", "max_pool2d_1",  //
                                                    "flatten",                                 //
                                                    "fc1.matmul", "fc1.bias_add", "relu_2",    //
                                                    "fc2.matmul", "fc2.bias_add", "relu_3",    //
                                                    "fc3.matmul", "fc3.bias_add", "loss"}));
  EXPECT_EQ(ParameterCount(g),
            6 * 25 + 16 * 6 * 25 + 400 * 120 + 120 + 120 * 84 + 84 + 84 * 10 + 10);
  auto shape_of = [&](const char* name) { return g.value(g.FindValue(name)).shape; };
  EXPECT_EQ(shape_of("conv1.weight"), (Shape{6, 1, 5, 5}));
  EXPECT_EQ(shape_of("conv1.conv2d"), (Shape{16, 6, 28, 28}));
  EXPECT_EQ(shape_of("max_pool2d"), (Shape{16, 6, 14, 14}));
  EXPECT_EQ(shape_of("conv2.conv2d"), (Shape{16, 16, 10, 10}));
  EXPECT_EQ(shape_of("max_pool2d_1"), (Shape{16, 16, 5, 5}));
  EXPECT_EQ(shape_of("flatten"), (Shape{16, 400}));
  EXPECT_EQ(shape_of("fc3.bias_add"), (Shape{16, 10}));
  EXPECT_EQ(g.FindValue("conv1.bias"), kNoValue);  // convolutions without bias
  EXPECT_EQ(g.value(g.FindValue("fc1.weight")).init.kind, InitSpec::kTruncatedNormal);
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Nn, ShardAnnotationsReachTheirOperator) {
  samples::FFN net;
  net.dense1.matmul.shard("((2,4),(4,1))");
  net.relu.place("worker", 1);
  auto model = nn::BuildClassifier(net, {1, 28, 28}, 8);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Graph& g = model->graph;
  EXPECT_EQ(g.node(g.FindNode("dense1.matmul")).annotations.in_strategy, "((2,4),(4,1))");
  EXPECT_TRUE(g.node(g.FindNode("dense2.matmul")).annotations.in_strategy.empty());
  // The shared ReLU module is placed at every use.
  for (const char* relu : {"relu", "relu_1", "relu_2", "relu_3"}) {
    EXPECT_EQ(g.node(g.FindNode(relu)).annotations.worker, 1) << relu;
  }
  EXPECT_EQ(g.node(g.FindNode("dense1.matmul")).annotations.worker, -1);
}

TEST(Nn, BuildClassifierReportsTheFirstShapeError) {
  samples::FFN net;
  auto model = nn::BuildClassifier(net, {1, 32, 32}, 4);  // 1024 features, not 784
  ASSERT_FALSE(model.ok());
  const std::string& msg = model.status().message();
  EXPECT_NE(msg.find("dense1.matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 1024]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[784, 512]"), std::string::npos) << msg;
}

TEST(Nn, LeNet5OneStepOnMnistGivesLossNearLn10) {
  ImageOptions opts;
  opts.pad_to = 32;
  auto data = LoadIdxDataset(SHARDSCOPE_DATASETS_DIR "/mnist", Split::kTrain, opts, 64);
  ASSERT_TRUE(data.ok()) << data.status().message();
  ASSERT_EQ(data->images.shape(), (Shape{64, 1, 32, 32}));

  samples::LeNet5 net;
  auto model = nn::BuildClassifier(net, {1, 32, 32}, 64);
  ASSERT_TRUE(model.ok()) << model.status().message();
  TrainConfig config;
  config.seed = 1;
  config.optimizer.kind = OptimizerConfig::kMomentum;
  config.optimizer.lr = 0.01f;
  auto trainer = Trainer::Create(std::move(model).value(), config);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  Trainer& t = **trainer;
  // Every parameter of LeNet5 influences the loss.
  EXPECT_EQ(t.parameters().size(), 8u);

  const float loss = t.Step(data->images, data->labels);
  ASSERT_TRUE(std::isfinite(loss));
  // Weights of scale 0.02 give near-uniform predictions over 10 classes.
  EXPECT_NEAR(loss, std::log(10.0), 0.1);
  // The step changed the parameters, so the next loss on the same batch differs.
  const float again = t.Step(data->images, data->labels);
  ASSERT_TRUE(std::isfinite(again));
  EXPECT_NE(again, loss);
}

}  // namespace
}  // namespace shardscope
