// The sample model files (samples/models/*.yaml): each parses and builds, and the FFN and
// LeNet5 files build exactly the graphs of the C++ models in samples/cpp/models.h.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpt.h"
#include "models.h"
#include "shardscope/model_file.h"

namespace shardscope {
namespace {

std::string SamplePath(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + name;
}

ModelFile LoadSample(const std::string& name) {
  Result<ModelFile> file = LoadModelFile(SamplePath(name));
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) std::abort();
  return std::move(file).value();
}

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes()) names.push_back(n.name);
  return names;
}

// Same text, same parameters (names, shapes, init specs) in the same order.
void ExpectSameGraph(const ModelGraph& a, const ModelGraph& b) {
  EXPECT_EQ(a.graph.ToText(), b.graph.ToText());
  const std::vector<ValueId> pa = a.graph.Parameters(), pb = b.graph.Parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    const Value& va = a.graph.value(pa[i]);
    const Value& vb = b.graph.value(pb[i]);
    EXPECT_EQ(va.name, vb.name);
    EXPECT_EQ(va.shape, vb.shape) << va.name;
    EXPECT_EQ(va.init, vb.init) << va.name << ": kind " << int(va.init.kind) << " scale "
                                << va.init.scale << " vs kind " << int(vb.init.kind) << " scale "
                                << vb.init.scale;
  }
  for (int n = 0; n < a.graph.num_nodes(); ++n) {
    EXPECT_EQ(a.graph.node(n).attrs, b.graph.node(n).attrs) << a.graph.node(n).name;
  }
  EXPECT_EQ(a.graph.value(a.input).name, "x");
  EXPECT_EQ(a.graph.value(a.labels).name, "label");
  EXPECT_EQ(a.graph.value(a.loss).name, "loss");
  EXPECT_EQ(a.graph.value(a.logits).name, b.graph.value(b.logits).name);
}

TEST(ModelFileSamplesTest, FfnMatchesTheCppModel) {
  ModelFile file = LoadSample("ffn.yaml");
  EXPECT_EQ(file.name(), "ffn");
  EXPECT_EQ(file.example_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(file.num_classes(), 10);
  EXPECT_EQ(file.training().batch, 32);
  EXPECT_EQ(file.training().epochs, 10);
  EXPECT_EQ(file.training().seed, 1u);
  EXPECT_EQ(file.training().optimizer.kind, OptimizerConfig::kMomentum);
  EXPECT_FLOAT_EQ(file.training().optimizer.lr, 0.001f);
  EXPECT_FLOAT_EQ(file.training().optimizer.momentum, 0.1f);
  EXPECT_EQ(file.data().dataset, "mnist");
  EXPECT_EQ(file.data().pad_to, 0);
  for (int64_t batch : {32, 7}) {
    Result<ModelGraph> built = file.Build(batch);
    ASSERT_TRUE(built.ok()) << built.status().message();
    samples::FFN net;
    Result<ModelGraph> cpp = nn::BuildClassifier(net, {1, 28, 28}, batch);
    ASSERT_TRUE(cpp.ok()) << cpp.status().message();
    ExpectSameGraph(*built, *cpp);
  }
  Result<ModelGraph> built = file.Build(32);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(
      NodeNames(built->graph),
      (std::vector<std::string>{"flatten", "dense1.matmul", "dense1.bias_add", "relu",
                                "dense2.matmul", "dense2.bias_add", "relu_1", "dense3.matmul",
                                "dense3.bias_add", "relu_2", "dense4.matmul", "dense4.bias_add",
                                "relu_3", "dense5.matmul", "dense5.bias_add", "loss"}));
}

TEST(ModelFileSamplesTest, Lenet5MatchesTheCppModel) {
  ModelFile file = LoadSample("lenet5.yaml");
  EXPECT_EQ(file.example_shape(), (Shape{1, 32, 32}));
  EXPECT_EQ(file.data().pad_to, 32);
  EXPECT_EQ(file.training().optimizer.kind, OptimizerConfig::kMomentum);
  EXPECT_FLOAT_EQ(file.training().optimizer.lr, 0.01f);
  EXPECT_FLOAT_EQ(file.training().optimizer.momentum, 0.9f);
  EXPECT_TRUE(file.parallel().empty());
  EXPECT_EQ(file.parallel().mode, "stand_alone");
  for (int64_t batch : {32, 5}) {
    Result<ModelGraph> built = file.Build(batch);
    ASSERT_TRUE(built.ok()) << built.status().message();
    samples::LeNet5 net;
    Result<ModelGraph> cpp = nn::BuildClassifier(net, {1, 32, 32}, batch);
    ASSERT_TRUE(cpp.ok()) << cpp.status().message();
    ExpectSameGraph(*built, *cpp);
    for (const Node& n : built->graph.nodes()) EXPECT_TRUE(n.annotations.empty()) << n.name;
  }
  Result<ModelGraph> built = file.Build(32);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(NodeNames(built->graph),
            (std::vector<std::string>{"conv1.conv2d", "relu", "max_pool2d", "conv2.conv2d",
                                      "relu_1", "max_pool2d_1", "flatten", "fc1.matmul",
                                      "fc1.bias_add", "relu_2", "fc2.matmul", "fc2.bias_add",
                                      "relu_3", "fc3.matmul", "fc3.bias_add", "loss"}));
}

TEST(ModelFileSamplesTest, Lenet5PlaceIsTheSameNetwork) {
  ModelFile plain = LoadSample("lenet5.yaml");
  ModelFile placed = LoadSample("lenet5_place.yaml");
  Result<ModelGraph> a = plain.Build(32);
  Result<ModelGraph> b = placed.Build(32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->graph.ToText(), b->graph.ToText());
  EXPECT_FALSE(placed.parallel().empty());
  EXPECT_EQ(placed.parallel().devices, 5);
}

TEST(ModelFileSamplesTest, Network3) {
  ModelFile file = LoadSample("network3.yaml");
  EXPECT_EQ(file.parallel().mode, "auto");
  EXPECT_EQ(file.parallel().search, "recursive_programming");
  EXPECT_EQ(file.parallel().devices, 8);
  EXPECT_TRUE(file.parallel().empty());
  Result<ModelGraph> built = file.Build(32);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(NodeNames(built->graph),
            (std::vector<std::string>{"flatten", "layer1.matmul", "layer1.bias_add", "relu",
                                      "layer2.matmul", "layer2.bias_add", "relu_1", "layer3.matmul",
                                      "layer3.bias_add", "loss"}));
  EXPECT_EQ(built->graph.value(built->logits).shape, (Shape{32, 10}));
}

TEST(ModelFileSamplesTest, Matmul3) {
  ModelFile file = LoadSample("matmul3.yaml");
  EXPECT_EQ(file.training().optimizer.kind, OptimizerConfig::kSGD);
  EXPECT_FLOAT_EQ(file.training().optimizer.lr, 0.01f);
  Result<ModelGraph> built = file.Build(32);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& g = built->graph;
  EXPECT_EQ(NodeNames(g), (std::vector<std::string>{"flatten", "matmul1", "relu1", "matmul2",
                                                    "relu2", "matmul3", "loss"}));
  std::vector<std::string> params;
  for (ValueId p : g.Parameters()) {
    params.push_back(g.value(p).name);
    EXPECT_EQ(g.value(p).init, (InitSpec{InitSpec::kNormal, 0.01f}));
  }
  EXPECT_EQ(params, (std::vector<std::string>{"fc1_weight", "fc2_weight", "fc3_weight"}));
  EXPECT_EQ(g.value(g.FindValue("fc1_weight")).shape, (Shape{784, 512}));
  EXPECT_EQ(g.value(built->logits).shape, (Shape{32, 10}));
  EXPECT_EQ(g.node(g.FindNode("matmul2")).inputs[0], g.FindValue("relu1"));
}

TEST(ModelFileSamplesTest, MatmulRelu) {
  ModelFile file = LoadSample("matmul_relu.yaml");
  EXPECT_EQ(file.data().dataset, "synthetic");
  EXPECT_EQ(file.data().synthetic_size, 4096);
  EXPECT_EQ(file.num_classes(), 16);
  Result<ModelGraph> built = file.Build(32);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& g = built->graph;
  EXPECT_EQ(NodeNames(g), (std::vector<std::string>{"matmul", "relu", "loss"}));
  EXPECT_EQ(g.value(g.FindValue("w1")).shape, (Shape{32, 16}));
  EXPECT_EQ(g.value(built->input).shape, (Shape{32, 32}));
}

TEST(ModelFileSamplesTest, BasicBlocks) {
  ModelFile file = LoadSample("basic_blocks.yaml");
  Result<ModelGraph> built = file.Build(32);
  ASSERT_TRUE(built.ok()) << built.status().message();
  std::vector<std::string> expected;
  for (const char* block : {"block1", "block2", "block3"}) {
    for (const char* op :
         {"dense1.matmul", "dense1.bias_add", "gelu", "dense2.matmul", "dense2.bias_add"}) {
      expected.push_back(std::string(block) + "." + op);
    }
  }
  expected.push_back("loss");
  EXPECT_EQ(NodeNames(built->graph), expected);
  EXPECT_EQ(built->graph.Parameters().size(), 12u);
  EXPECT_EQ(built->graph.value(built->graph.FindValue("block2.dense1.weight")).shape,
            (Shape{16, 16}));
}

TEST(ModelFileSamplesTest, EverySampleBuildsForAnyBatch) {
  for (const char* name : {"ffn.yaml", "network3.yaml", "matmul3.yaml", "matmul_relu.yaml",
                           "basic_blocks.yaml", "lenet5.yaml", "lenet5_place.yaml"}) {
    SCOPED_TRACE(name);
    ModelFile file = LoadSample(name);
    EXPECT_FALSE(file.text().empty());
    EXPECT_EQ(file.path(), SamplePath(name));
    for (int64_t batch : {1, 32, 64}) {
      Result<ModelGraph> built = file.Build(batch);
      ASSERT_TRUE(built.ok()) << built.status().message();
      EXPECT_TRUE(built->graph.Verify().ok());
      EXPECT_EQ(built->graph.value(built->input).shape[0], batch);
      EXPECT_EQ(built->graph.value(built->logits).shape, (Shape{batch, file.num_classes()}));
    }
  }
}

// gpt.yaml's blocks are gpt.h's TransformerBlock: the same parameters (names and shapes),
// and its attention and MLP operators under the same names.
TEST(ModelFileSamplesTest, GptBlocksAreTheCppBlocks) {
  const ModelFile file = LoadSample("gpt.yaml");
  Result<ModelGraph> yaml = file.Build(4);
  ASSERT_TRUE(yaml.ok()) << yaml.status().message();
  const int64_t tokens = file.example_shape()[0];
  const int64_t dim = yaml->graph.value(yaml->graph.FindValue("embedding.table")).shape[1];
  samples::Gpt net(2, file.num_classes(), tokens, dim, 4, 10);
  Result<ModelGraph> cpp = nn::BuildClassifier(net, {tokens}, 4, DType::kI32);
  ASSERT_TRUE(cpp.ok()) << cpp.status().message();
  int blocks = 0;
  for (ValueId p : cpp->graph.Parameters()) {
    const Value& v = cpp->graph.value(p);
    if (v.name.rfind("layer", 0) != 0 && v.name != "embedding.table") continue;
    const ValueId y = yaml->graph.FindValue(v.name);
    ASSERT_NE(y, kNoValue) << v.name;
    EXPECT_EQ(yaml->graph.value(y).shape, v.shape) << v.name;
    ++blocks;
  }
  EXPECT_EQ(blocks, 1 + 2 * 16);  // the table, and 16 parameters per block
  for (const Node& n : cpp->graph.nodes()) {
    if (n.name.rfind("layer", 0) == 0) {
      EXPECT_NE(yaml->graph.FindNode(n.name), kNoNode) << n.name;
    }
  }
}

}  // namespace
}  // namespace shardscope
