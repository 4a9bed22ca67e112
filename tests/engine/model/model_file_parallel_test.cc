// The parallel section: strategies, layouts, place and shard blocks land on the operators
// they name, as written, with their positions; modules spread to their operators.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardscope/model_file.h"

namespace shardscope {
namespace {

std::string Lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

ModelFile Parse(const std::string& text) {
  Result<ModelFile> file = ParseModelText(text, "p.yaml");
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) std::abort();
  return std::move(file).value();
}

ModelGraph Build(const ModelFile& file, int64_t batch = 32) {
  Result<ModelGraph> g = file.Build(batch);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) std::abort();
  return std::move(g).value();
}

const OpAnnotations& On(const ModelGraph& m, const std::string& op) {
  const NodeId n = m.graph.FindNode(op);
  EXPECT_NE(n, kNoNode) << op;
  if (n == kNoNode) std::abort();
  return m.graph.node(n).annotations;
}

const AnnotationEntry* Entry(const ModelFile& file, const std::string& op) {
  for (const AnnotationEntry& e : file.parallel().annotations) {
    if (e.op == op) return &e;
  }
  return nullptr;
}

TEST(ModelFileParallelTest, Seed004LayoutsLandOnMatmul1AndMatmul2) {
  Result<ModelFile> loaded =
      LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/matmul3.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const ModelFile& file = *loaded;
  const ParallelConfig& p = file.parallel();
  EXPECT_EQ(p.mode, "semi_auto");
  EXPECT_EQ(p.devices, 8);
  ASSERT_EQ(p.meshes.size(), 2u);
  EXPECT_EQ(p.meshes[0], (std::pair<std::string, std::string>{
                             "layout", "Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))"}));
  EXPECT_EQ(p.meshes[1],
            (std::pair<std::string, std::string>{"layout2", "Layout((8,), (\"tp\",))"}));

  const ModelGraph m = Build(file);
  EXPECT_EQ(On(m, "matmul1").in_strategy,
            "(layout(\"mp\", (\"sp\", \"dp\")), layout((\"sp\", \"dp\"), \"None\"))");
  EXPECT_EQ(On(m, "matmul1").out_strategy, "");
  EXPECT_EQ(On(m, "matmul2").in_strategy, "(layout2(\"None\", \"tp\"), layout2(\"tp\", \"None\"))");
  EXPECT_EQ(On(m, "relu1").in_strategy, "((4, 1),)");
  EXPECT_EQ(On(m, "relu2").in_strategy, "((8, 1),)");
  EXPECT_TRUE(On(m, "matmul3").empty());
  EXPECT_TRUE(On(m, "flatten").empty());
  EXPECT_TRUE(On(m, "loss").empty());
  EXPECT_EQ(On(m, "matmul1").worker, -1);

  // Entries in graph order, each where it was written.
  ASSERT_EQ(p.annotations.size(), 4u);
  EXPECT_EQ(p.annotations[0].op, "matmul1");
  EXPECT_EQ(p.annotations[1].op, "relu1");
  EXPECT_EQ(p.annotations[2].op, "matmul2");
  EXPECT_EQ(p.annotations[3].op, "relu2");
  const SourceLocation& at = p.annotations[2].location;
  EXPECT_EQ(at.file, file.path());
  EXPECT_GT(at.line, 0);
  EXPECT_EQ(at.column, 5);
  EXPECT_EQ(p.annotations[2].place_location.line, 0);
}

TEST(ModelFileParallelTest, Seed003StrategiesOnDenseMatmuls) {
  Result<ModelFile> loaded =
      LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/ffn.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->parallel().mode, "auto");
  EXPECT_EQ(loaded->parallel().search, "sharding_propagation");
  EXPECT_EQ(loaded->parallel().devices, 8);
  const ModelGraph m = Build(*loaded);
  EXPECT_EQ(On(m, "dense1.matmul").in_strategy, "((2, 4), (4, 1))");
  EXPECT_EQ(On(m, "dense3.matmul").in_strategy, "((1, 8), (8, 1))");
  int annotated = 0;
  for (const Node& n : m.graph.nodes()) annotated += n.annotations.empty() ? 0 : 1;
  EXPECT_EQ(annotated, 2);
}

TEST(ModelFileParallelTest, Seed001PlacingAModulePlacesAllItsOperators) {
  Result<ModelFile> loaded =
      LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/lenet5_place.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const ModelGraph m = Build(*loaded);
  EXPECT_EQ(On(m, "conv1.conv2d").worker, 3);
  EXPECT_EQ(On(m, "conv2.conv2d").worker, 4);
  EXPECT_EQ(On(m, "fc1.matmul").worker, 0);
  EXPECT_EQ(On(m, "fc1.bias_add").worker, 0);
  EXPECT_EQ(On(m, "fc2.matmul").worker, 1);
  EXPECT_EQ(On(m, "fc2.bias_add").worker, 1);
  EXPECT_EQ(On(m, "fc3.matmul").worker, 2);
  EXPECT_EQ(On(m, "fc3.bias_add").worker, 2);
  for (const char* free : {"relu", "relu_1", "max_pool2d", "flatten", "loss"}) {
    EXPECT_EQ(On(m, free).worker, -1) << free;
  }
  const AnnotationEntry* e = Entry(*loaded, "fc1.bias_add");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->place_location.ToString(), e->location.ToString());
  EXPECT_GT(e->place_location.line, 0);
}

TEST(ModelFileParallelTest, Seed000ShardBlock) {
  Result<ModelFile> loaded =
      LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/basic_blocks.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const ParallelConfig& p = loaded->parallel();
  ASSERT_EQ(p.shard_blocks.size(), 1u);
  EXPECT_EQ(p.shard_blocks[0].block, "block1");
  EXPECT_EQ(p.shard_blocks[0].in_strategy, "((1, 8),)");
  EXPECT_EQ(p.shard_blocks[0].out_strategy, "(None,)");
  EXPECT_EQ(p.shard_blocks[0].level, 0);
  EXPECT_GT(p.shard_blocks[0].location.line, 0);
  EXPECT_FALSE(p.empty());
  EXPECT_TRUE(p.annotations.empty());
}

TEST(ModelFileParallelTest, Seed002InlineShards) {
  Result<ModelFile> loaded =
      LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/matmul_relu.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->parallel().mode, "semi_auto");
  const ModelGraph m = Build(*loaded);
  EXPECT_EQ(On(m, "matmul").in_strategy, "((2, 4), (4, 1))");
  EXPECT_EQ(On(m, "relu").in_strategy, "((8, 1),)");
}

std::vector<std::string> Ffn(const std::vector<std::string>& parallel) {
  std::vector<std::string> lines = {
      "input: {shape: [1, 28, 28]}",                                    // 1
      "layers:",                                                        // 2
      "  - flatten: Flatten",                                           // 3
      "  - dense1: {type: Dense, in_channels: 784, out_channels: 64}",  // 4
      "  - relu: ReLU",                                                 // 5
      "  - dense2: {type: Dense, in_channels: 64, out_channels: 32}",   // 6
      "  - relu",                                                       // 7
      "  - dense3: {type: Dense, in_channels: 32, out_channels: 10}",   // 8
      "  - relu",                                                       // 9
      "parallel:",                                                      // 10
  };
  lines.insert(lines.end(), parallel.begin(), parallel.end());
  return lines;
}

TEST(ModelFileParallelTest, StrategyOnASharedModuleReachesEveryCall) {
  const ModelFile file = Parse(Lines(Ffn({"  strategies:", "    relu: ((8, 1),)"})));
  const ModelGraph m = Build(file);
  for (const char* op : {"relu", "relu_1", "relu_2"}) {
    EXPECT_EQ(On(m, op).in_strategy, "((8, 1),)") << op;
  }
  EXPECT_EQ(file.parallel().annotations.size(), 3u);
  EXPECT_EQ(file.parallel().annotations[1].location.ToString(), "p.yaml:12:5");
}

TEST(ModelFileParallelTest, AnOperatorNameBeatsItsModule) {
  const ModelFile file =
      Parse(Lines(Ffn({"  strategies:", "    relu: ((8, 1),)", "    relu_1: ((2, 4),)"})));
  const ModelGraph m = Build(file);
  EXPECT_EQ(On(m, "relu").in_strategy, "((8, 1),)");
  EXPECT_EQ(On(m, "relu_1").in_strategy, "((2, 4),)");
  EXPECT_EQ(On(m, "relu_2").in_strategy, "((8, 1),)");
}

TEST(ModelFileParallelTest, OutStrategyAndSequenceForms) {
  const ModelFile file = Parse(Lines(Ffn(
      {"  strategies:", "    dense1.matmul:", "      in: ((2, 4), (4, 1))", "      out: ((8, 1),)",
       "    dense2.matmul: [[2, 4], [4, 1]]", "    dense3.bias_add: {in: [[8, 1], [1]]}"})));
  const ModelGraph m = Build(file);
  EXPECT_EQ(On(m, "dense1.matmul").in_strategy, "((2, 4), (4, 1))");
  EXPECT_EQ(On(m, "dense1.matmul").out_strategy, "((8, 1),)");
  EXPECT_EQ(On(m, "dense2.matmul").in_strategy, "((2, 4), (4, 1))");
  EXPECT_EQ(On(m, "dense2.matmul").out_strategy, "");
  EXPECT_EQ(On(m, "dense3.bias_add").in_strategy, "((8, 1), (1,))");
  EXPECT_EQ(file.parallel().mode, "semi_auto");  // inferred from the strategies
}

TEST(ModelFileParallelTest, LayoutOutStrategyOfTheSeed) {
  const ModelFile file = Parse(Lines(Ffn({
      "  devices: 8",
      "  meshes:",
      "    layout: Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))",
      "  strategies:",
      "    dense1.matmul:",
      "      in: (layout(\"mp\", (\"sp\", \"dp\")), layout((\"sp\", \"dp\"), \"None\"))",
      "      out: (layout((\"mp\", \"sp\", \"dp\"), \"None\"),)",
  })));
  const ModelGraph m = Build(file);
  EXPECT_EQ(On(m, "dense1.matmul").out_strategy, "(layout((\"mp\", \"sp\", \"dp\"), \"None\"),)");
}

TEST(ModelFileParallelTest, NestedPlacesTheMostSpecificWins) {
  const ModelFile file = Parse(Lines({
      "input: {shape: [10]}",
      "data: {dataset: synthetic, synthetic_size: 8}",
      "blocks:",
      "  Basic:",
      "    - dense1: {type: Dense, in_channels: 10, out_channels: 10}",
      "    - gelu: GELU",
      "    - dense2: {type: Dense, in_channels: 10, out_channels: 10}",
      "layers:",
      "  - block: {type: Basic, repeat: 2}",
      "parallel:",
      "  devices: 8",
      "  place:",
      "    block1.dense2.bias_add: 7",
      "    block1: 2",
      "    block1.dense1: 5",
  }));
  const ModelGraph m = Build(file);
  EXPECT_EQ(On(m, "block1.dense1.matmul").worker, 5);
  EXPECT_EQ(On(m, "block1.dense1.bias_add").worker, 5);
  EXPECT_EQ(On(m, "block1.gelu").worker, 2);
  EXPECT_EQ(On(m, "block1.dense2.matmul").worker, 2);
  EXPECT_EQ(On(m, "block1.dense2.bias_add").worker, 7);
  EXPECT_EQ(On(m, "block2.dense1.matmul").worker, -1);
  EXPECT_EQ(file.parallel().mode, "stand_alone");  // place alone does not pick a mode
  const AnnotationEntry* e = Entry(file, "block1.gelu");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->place_location.ToString(), "p.yaml:14:5");
}

TEST(ModelFileParallelTest, PlaceAndStrategyOnOneOperatorMerge) {
  const ModelFile file =
      Parse(Lines(Ffn({"  devices: 8", "  place: {dense1: 1}",
                       "  strategies:", "    dense1.matmul: ((2, 4), (4, 1))"})));
  const ModelGraph m = Build(file);
  EXPECT_EQ(On(m, "dense1.matmul"), (OpAnnotations{"((2, 4), (4, 1))", "", 1}));
  EXPECT_EQ(On(m, "dense1.bias_add"), (OpAnnotations{"", "", 1}));
  const AnnotationEntry* e = Entry(file, "dense1.matmul");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->location.ToString(), "p.yaml:14:5");
  EXPECT_EQ(e->place_location.ToString(), "p.yaml:12:11");
}

TEST(ModelFileParallelTest, InlineShardInABlockReachesEveryInstance) {
  const ModelFile file = Parse(Lines({
      "input: {shape: [10]}",
      "data: {dataset: synthetic, synthetic_size: 8}",
      "blocks:",
      "  Basic:",
      "    - dense1: {type: Dense, in_channels: 10, out_channels: 10}",
      "    - gelu:",
      "        type: GELU",
      "        shard: ((8, 1),)",
      "layers:",
      "  - block1: Basic",
      "  - block2: Basic",
  }));
  const ModelGraph m = Build(file);
  EXPECT_EQ(On(m, "block1.gelu").in_strategy, "((8, 1),)");
  EXPECT_EQ(On(m, "block2.gelu").in_strategy, "((8, 1),)");
  EXPECT_EQ(file.parallel().annotations[0].location.ToString(), "p.yaml:8:9");
}

TEST(ModelFileParallelTest, InlineBlocksRepeatAndReuse) {
  const ModelFile file = Parse(Lines({
      "input: {shape: [10]}",
      "data: {dataset: synthetic, synthetic_size: 8}",
      "layers:",
      "  - stage:",
      "      repeat: 2",
      "      block:",
      "        - fc: {type: Dense, in_channels: 10, out_channels: 10}",
      "        - act: GELU",
      "        - act",
      "  - drop: {type: Dropout, p: 0.1}",
      "  - norm: {type: LayerNorm, normalized_shape: [10]}",
      "  - scale: {op: Scale, scale: 0.5}",
      "  - drop",
  }));
  const ModelGraph m = Build(file);
  std::vector<std::string> names;
  for (const Node& n : m.graph.nodes()) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "stage1.fc.matmul", "stage1.fc.bias_add", "stage1.act", "stage1.act_1",
                       "stage2.fc.matmul", "stage2.fc.bias_add", "stage2.act", "stage2.act_1",
                       "drop", "norm.layer_norm", "scale", "drop_1", "loss"}));
  EXPECT_FLOAT_EQ(m.graph.node(m.graph.FindNode("drop")).attrs.rate, 0.1f);
  EXPECT_FLOAT_EQ(m.graph.node(m.graph.FindNode("scale")).attrs.scale, 0.5f);
  EXPECT_FLOAT_EQ(m.graph.node(m.graph.FindNode("norm.layer_norm")).attrs.epsilon, 1e-7f);
  // Each repeated copy has its own parameters: 2 Dense + LayerNorm = 2 * 2 + 2.
  EXPECT_EQ(m.graph.Parameters().size(), 6u);
  EXPECT_EQ(m.graph.value(m.graph.FindValue("stage2.fc.weight")).shape, (Shape{10, 10}));
}

TEST(ModelFileParallelTest, ModeInference) {
  auto mode = [](const std::vector<std::string>& parallel) {
    return Parse(Lines(Ffn(parallel))).parallel().mode;
  };
  EXPECT_EQ(mode({"  devices: 8"}), "data_parallel");
  EXPECT_EQ(mode({"  devices: 1"}), "stand_alone");
  EXPECT_EQ(mode({"  search: dynamic_programming"}), "auto");
  EXPECT_EQ(mode({"  mode: SEMI_AUTO_PARALLEL"}), "semi_auto");
  EXPECT_EQ(mode({"  mode: auto_parallel"}), "auto");
  EXPECT_EQ(mode({"  shard: [{block: dense1, in_strategy: \"((8, 1),)\"}]"}), "auto");
  const ModelFile none =
      Parse(Lines({"input: {shape: [1, 28, 28]}", "layers:", "  - flatten: Flatten",
                   "  - fc: {type: Dense, in_channels: 784, out_channels: 10}"}));
  EXPECT_EQ(none.parallel().mode, "stand_alone");
  EXPECT_EQ(none.parallel().devices, 0);
  EXPECT_TRUE(none.parallel().empty());
  EXPECT_EQ(none.name(), "p");
  EXPECT_EQ(none.data().dataset, "mnist");
}

TEST(ModelFileParallelTest, DefaultsFollowMindSpore) {
  const ModelFile file = Parse(Lines({
      "input: {shape: [1, 28, 28]}",
      "layers:",
      "  - conv: {type: Conv2d, in_channels: 1, out_channels: 2, kernel_size: 3}",
      "  - flatten: Flatten",
      "  - fc: {type: Dense, in_channels: 1568, out_channels: 10,",
      "         weight_init: TruncatedNormal, bias_init: zeros}",
  }));
  const ModelGraph m = Build(file);
  const Graph& g = m.graph;
  EXPECT_EQ(g.node(g.FindNode("conv.conv2d")).attrs.padding, Padding::kSame);  // pad_mode same
  EXPECT_EQ(g.FindValue("conv.bias"), kNoValue);                               // has_bias false
  EXPECT_EQ(g.value(g.FindValue("conv.weight")).init, (InitSpec{InitSpec::kFanInUniform, 1.0f}));
  EXPECT_EQ(g.value(g.FindValue("fc.weight")).init, (InitSpec{InitSpec::kTruncatedNormal, 0.01f}));
  EXPECT_EQ(g.value(g.FindValue("fc.bias")).init, (InitSpec{InitSpec::kZeros, 0.0f}));
}

}  // namespace
}  // namespace shardscope
