// Every error of the model-file parser: "file:line:column: message" naming the rule broken.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shardscope/model_file.h"

namespace shardscope {
namespace {

// Lines joined with '\n': line i of the file is lines[i - 1], so positions are easy to read.
std::string Lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

// The parse fails with kInvalidInput, its message starts with "<where>: " and holds every
// fragment.
void ExpectError(const std::string& text, const std::string& where,
                 const std::vector<std::string>& fragments) {
  Result<ModelFile> file = ParseModelText(text, "m.yaml");
  ASSERT_FALSE(file.ok()) << "parsed without error:\n" << text;
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidInput);
  const std::string& msg = file.status().message();
  EXPECT_EQ(msg.rfind(where + ": ", 0), 0u) << "expected at " << where << ", got: " << msg;
  for (const std::string& f : fragments) {
    EXPECT_NE(msg.find(f), std::string::npos) << "message lacks '" << f << "': " << msg;
  }
}

// A valid network to break one line at a time.
std::vector<std::string> Base() {
  return {
      "name: t",                                                        // 1
      "input: {shape: [1, 28, 28]}",                                    // 2
      "layers:",                                                        // 3
      "  - flatten: Flatten",                                           // 4
      "  - dense1: {type: Dense, in_channels: 784, out_channels: 32}",  // 5
      "  - relu: ReLU",                                                 // 6
      "  - dense2: {type: Dense, in_channels: 32, out_channels: 10}",   // 7
  };
}

std::string With(std::vector<std::string> lines, const std::vector<std::string>& more) {
  lines.insert(lines.end(), more.begin(), more.end());
  return Lines(lines);
}

std::string Replace(std::vector<std::string> lines, int line, const std::string& text) {
  lines[line - 1] = text;
  return Lines(lines);
}

TEST(ModelFileErrorsTest, BaseIsValid) {
  Result<ModelFile> file = ParseModelText(Lines(Base()), "m.yaml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->num_classes(), 10);
}

// ---- keys ----

TEST(ModelFileErrorsTest, UnknownTopLevelKeySuggestsAndListsAllowed) {
  ExpectError(With(Base(), {"optimzer: {type: sgd}"}), "m.yaml:8:1",
              {"unknown key 'optimzer' in the top level", "did you mean 'optimizer'?",
               "allowed keys: name, description, input, classes, layers"});
}

TEST(ModelFileErrorsTest, UnknownLayerKey) {
  ExpectError(Replace(Base(), 5, "  - dense1: {type: Dense, in_channel: 784, out_channels: 32}"),
              "m.yaml:5:27",
              {"unknown key 'in_channel' in layer 'dense1' (Dense)", "did you mean 'in_channels'?",
               "allowed keys: type, repeat, shard, in_channels"});
}

TEST(ModelFileErrorsTest, UnquotedStrategyInsideBracesHints) {
  ExpectError(Replace(Base(), 6, "  - relu: {type: ReLU, shard: ((8, 1),)}"), "m.yaml:6:36",
              {"unknown key '1)' in layer 'relu' (ReLU)", "quote a value that has commas"});
}

TEST(ModelFileErrorsTest, DuplicateYamlKey) {
  ExpectError(With(Base(), {"training: {batch: 32, batch: 64}"}), "m.yaml:8:23",
              {"duplicate key 'batch' in the training section", "first given at m.yaml:8:12"});
}

TEST(ModelFileErrorsTest, MissingRequiredKeys) {
  ExpectError(Replace(Base(), 5, "  - dense1: {type: Dense, in_channels: 784}"), "m.yaml:5:13",
              {"layer 'dense1' (Dense) is missing the required key 'out_channels'"});
  ExpectError(Lines({"layers:", "  - relu: ReLU"}), "m.yaml:1:1",
              {"the top level is missing the required key 'input'"});
  ExpectError(Replace(Base(), 2, "input: {}"), "m.yaml:2:8",
              {"the input section is missing the required key 'shape'"});
  ExpectError(Replace(Base(), 5, "  - dense1: Dense"), "m.yaml:5:13",
              {"layer 'dense1' (Dense) needs settings: in_channels, out_channels"});
}

TEST(ModelFileErrorsTest, NoNetworkOrBoth) {
  ExpectError(Lines({"input: {shape: [1, 28, 28]}"}), "m.yaml:1:1",
              {"the file has no network: give layers:"});
  ExpectError(With(Base(), {"operators:", "  - relu2: ReLU"}), "m.yaml:8:1",
              {"either as layers: or as operators:, not both", "layers at m.yaml:3:1"});
  ExpectError(With(Base(), {"parameters: {w: {shape: [2], init: zeros}}"}), "m.yaml:8:1",
              {"parameters: belongs to operators: networks"});
}

// ---- types and values ----

TEST(ModelFileErrorsTest, WrongTypes) {
  ExpectError(Replace(Base(), 5, "  - dense1: {type: Dense, in_channels: abc, out_channels: 32}"),
              "m.yaml:5:40",
              {"'in_channels' of layer 'dense1' (Dense) must be an integer", "found 'abc'"});
  ExpectError(Replace(Base(), 2, "input: {shape: 784}"), "m.yaml:2:16",
              {"must be a list of sizes such as [1, 28, 28], found '784'"});
  ExpectError(With(Base(), {"training: {batch: [32]}"}), "m.yaml:8:19",
              {"training.batch must be an integer, found a list"});
  ExpectError(With(Base(), {"data: {dataset: mnist, normalize: maybe}"}), "m.yaml:8:35",
              {"data.normalize must be true or false, found 'maybe'"});
  ExpectError(With(Base(), {"optimizer: {type: sgd, lr: fast}"}), "m.yaml:8:28",
              {"optimizer.lr must be a number, found 'fast'"});
  ExpectError(Lines({"input: {shape: [1, 28, 28]}", "layers: {flatten: Flatten}"}), "m.yaml:2:9",
              {"layers must be a list of layers ('- name: Type' lines), found a mapping"});
  ExpectError(Lines({"- input", "- layers"}), "m.yaml:1:1", {"a model file is a YAML mapping"});
}

TEST(ModelFileErrorsTest, NegativeAndZeroSizes) {
  ExpectError(Replace(Base(), 5, "  - dense1: {type: Dense, in_channels: 784, out_channels: -32}"),
              "m.yaml:5:59",
              {"'out_channels' of layer 'dense1' (Dense) must be a positive integer, found -32"});
  ExpectError(Replace(Base(), 2, "input: {shape: [1, -28, 28]}"), "m.yaml:2:20",
              {"size -28 (entry 2) must be positive"});
  ExpectError(With(Base(), {"training: {batch: 0}"}), "m.yaml:8:19",
              {"training.batch must be a positive integer, found 0"});
  ExpectError(With(Base(), {"classes: -1"}), "m.yaml:8:10",
              {"classes must be a positive integer, found -1"});
}

TEST(ModelFileErrorsTest, ProductsOfIntegersAreAllowed) {
  Result<ModelFile> file = ParseModelText(Replace(Base(), 5,
                                                  "  - dense1: {type: Dense, in_channels: 28*28, "
                                                  "out_channels: 32}"),
                                          "m.yaml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  ExpectError(Replace(Base(), 5, "  - dense1: {type: Dense, in_channels: 28*, out_channels: 32}"),
              "m.yaml:5:40", {"must be an integer (or a product such as 16 * 5 * 5)"});
}

TEST(ModelFileErrorsTest, UnknownLayerType) {
  ExpectError(Replace(Base(), 5, "  - dense1: {type: Dens, in_channels: 784, out_channels: 32}"),
              "m.yaml:5:20",
              {"unknown layer type 'Dens' for layer 'dense1'", "did you mean 'Dense'?",
               "known types: Dense, Conv2d, MaxPool2d, Flatten, ReLU, GELU, Dropout, Embedding, "
               "LayerNorm"});
  ExpectError(
      Replace(Base(), 6, "  - relu: MatMul"), "m.yaml:6:11",
      {"unknown layer type 'MatMul'", "MatMul is an operator: write '- relu: {op: MatMul}'"});
}

TEST(ModelFileErrorsTest, UnknownInitializer) {
  ExpectError(Replace(Base(), 5,
                      "  - dense1: {type: Dense, in_channels: 784, out_channels: 32, "
                      "weight_init: gaussian}"),
              "m.yaml:5:76", {"unknown initializer 'gaussian'", "known: normal"});
  ExpectError(Replace(Base(), 5,
                      "  - dense1: {type: Dense, in_channels: 784, out_channels: 32, "
                      "weight_init: normal(-1)}"),
              "m.yaml:5:76", {"the argument of 'normal' must be a positive number, found '-1'"});
}

TEST(ModelFileErrorsTest, UnknownOperator) {
  ExpectError(Lines({"input: {shape: [4]}", "classes: 2",
                     "parameters:", "  w: {shape: [4, 2], init: zeros}",
                     "operators:", "  - mm: {op: Matmul, inputs: [x, w]}",
                     "data: {dataset: synthetic, "
                     "synthetic_size: 8}"}),
              "m.yaml:6:14",
              {"unknown operator 'Matmul' for operator 'mm'", "did you mean 'MatMul'?",
               "known: MatMul, BatchMatMul"});
}

TEST(ModelFileErrorsTest, LayerListMistakes) {
  ExpectError(Replace(Base(), 7, "  - relux"), "m.yaml:7:5",
              {"'relux' in layers is not a layer defined above", "did you mean 'relu'?",
               "a bare name calls an earlier layer again"});
  ExpectError(Replace(Base(), 4, "  - Flatten"), "m.yaml:4:5",
              {"'Flatten' in layers is a layer type, but a layer needs a name: "
               "'- flatten: Flatten'"});
  ExpectError(Replace(Base(), 6, "  - relu:\n    type: ReLU"), "m.yaml:6:5",
              {"has one key, the layer's name, but this one has 2: 'relu', 'type'"});
  ExpectError(Replace(Base(), 6, "  - relu:"), "m.yaml:6:5",
              {"layer 'relu' has no type; write '- relu: ReLU'"});
  ExpectError(Replace(Base(), 6, "  - re.lu: ReLU"), "m.yaml:6:5",
              {"layer name 're.lu' must be an identifier"});
  ExpectError(Replace(Base(), 6, "  - x: ReLU"), "m.yaml:6:5", {"layer name 'x' is reserved"});
  ExpectError(Replace(Base(), 6, "  - relu: {type: ReLU, op: ReLU}"), "m.yaml:6:11",
              {"has more than one of type, op and block"});
  ExpectError(Replace(Base(), 6, "  - relu: {op: Add}"), "m.yaml:6:16",
              {"operator Add takes 2 inputs, but a raw operator in a layer list takes the previous "
               "layer's output only"});
}

TEST(ModelFileErrorsTest, DuplicateLayerNames) {
  ExpectError(With(Base(), {"  - relu: ReLU"}), "m.yaml:8:5",
              {"duplicate layer name 'relu' in layers (first defined at m.yaml:6:5)",
               "to call the same layer again write just '- relu'"});
  ExpectError(With(Base(), {"  - fc: {type: Dense, in_channels: 10, out_channels: 10, repeat: 2}",
                            "  - fc2: ReLU"}),
              "m.yaml:9:5", {"duplicate layer name 'fc2' in layers (first defined at m.yaml:8:5)"});
}

TEST(ModelFileErrorsTest, LayersWithParametersAreNotCalledTwice) {
  ExpectError(
      With(Base(), {"  - dense2"}), "m.yaml:8:5",
      {"'dense2' (Dense) cannot be called again: it has parameters", "use repeat: for copies"});
  ExpectError(Lines({"input: {shape: [10]}", "blocks:", "  B:", "    - r: ReLU",
                     "layers:", "  - b: B", "  - b"}),
              "m.yaml:7:5", {"'b' (B) cannot be called again"});
}

// ---- building ----

TEST(ModelFileErrorsTest, ShapeErrorNamesTheLayerAndItsLine) {
  ExpectError(Replace(Base(), 7, "  - dense2: {type: Dense, in_channels: 64, out_channels: 10}"),
              "m.yaml:7:5", {"layer 'dense2' (Dense): ", "dense2.matmul"});
  ExpectError(Lines({"input: {shape: [1, 28, 28]}", "layers:",
                     "  - conv: {type: Conv2d, in_channels: 1, out_channels: 10, kernel_size: 3}"}),
              "m.yaml:3:5",
              {"the network ends with layer 'conv' (Conv2d)", "logits [batch, classes]"});
}

TEST(ModelFileErrorsTest, ShapeErrorInsideABlockNamesTheInnerLayer) {
  ExpectError(Lines({"input: {shape: [10]}",                                       // 1
                     "data: {dataset: synthetic, synthetic_size: 8}",              // 2
                     "blocks:",                                                    // 3
                     "  B:",                                                       // 4
                     "    - a: {type: Dense, in_channels: 10, out_channels: 10}",  // 5
                     "    - b: {type: Dense, in_channels: 11, out_channels: 10}",  // 6
                     "layers:",                                                    // 7
                     "  - block1: B"}),                                            // 8
              "m.yaml:6:7", {"layer 'block1.b' (Dense): ", "block1.b.matmul"});
}

TEST(ModelFileErrorsTest, ClassesAndData) {
  ExpectError(With(Base(), {"classes: 12"}), "m.yaml:7:5",
              {"the network ends with layer 'dense2' (Dense) giving 10 logits per example, but "
               "classes is 12 (at m.yaml:8:10)"});
  ExpectError(Replace(Base(), 7, "  - dense2: {type: Dense, in_channels: 32, out_channels: 3}"),
              "m.yaml:7:5", {"mnist has 10 classes, but the network gives 3 logits per example"});
  ExpectError(Replace(Base(), 2, "input: {shape: [1, 32, 32]}"), "m.yaml:2:16",
              {"input.shape [1, 32, 32] does not fit the data: mnist images are [1, 28, 28]",
               "data.pad_to: 32"});
  ExpectError(With(Base(), {"data: {dataset: synthetic}"}), "m.yaml:8:7",
              {"missing the required key 'synthetic_size'"});
  ExpectError(With(Base(), {"data: {dataset: cifar10}"}), "m.yaml:8:17",
              {"data.dataset 'cifar10' is not a data set", "mnist, fashion-mnist, synthetic"});
  ExpectError(With(Base(), {"data: {dataset: mnist, pad_to: 20}"}), "m.yaml:8:32",
              {"it must be 28 or more"});
  ExpectError(With(Base(), {"data: {dataset: synthetic, synthetic_size: 8, pad_to: 32}"}),
              "m.yaml:8:47", {"data.pad_to applies to mnist and fashion-mnist, not synthetic"});
}

TEST(ModelFileErrorsTest, LossAndOptimizer) {
  ExpectError(With(Base(), {"loss: MAELoss"}), "m.yaml:8:7",
              {"loss 'MAELoss' is not implemented; the losses are softmax_cross_entropy"});
  ExpectError(With(Base(), {"optimizer: {type: rmsprop}"}), "m.yaml:8:19", {"optimizer.type: "});
  ExpectError(With(Base(), {"optimizer: {type: sgd, momentum: 0.9}"}), "m.yaml:8:24",
              {"optimizer.momentum applies to type momentum, not sgd"});
  ExpectError(With(Base(), {"optimizer: {type: momentum, lr: -0.1}"}), "m.yaml:8:33",
              {"optimizer.lr must be positive, found -0.1"});
  ExpectError(With(Base(), {"optimizer: {type: momentum, momentum: 1.5}"}), "m.yaml:8:39",
              {"optimizer.momentum must be in [0, 1)"});
  ExpectError(With(Base(), {"optimizer: {lr: 0.1}"}), "m.yaml:8:12",
              {"the optimizer section is missing the required key 'type'"});
}

// ---- blocks ----

TEST(ModelFileErrorsTest, Blocks) {
  ExpectError(Lines({"input: {shape: [10]}", "data: {dataset: synthetic, synthetic_size: 8}",
                     "blocks:", "  A:", "    - b: B", "  B:", "    - a: A", "layers:", "  - a: A"}),
              "m.yaml:7:7", {"block 'A' uses itself: A -> B -> A"});
  ExpectError(Lines({"input: {shape: [10]}", "blocks:", "  Dense:", "    - r: ReLU",
                     "layers:", "  - a: Dense"}),
              "m.yaml:3:3", {"block type name 'Dense' is a built-in layer type"});
  ExpectError(Lines({"input: {shape: [10]}", "blocks:", "  Basic:", "    - r: ReLU",
                     "layers:", "  - a: Basik"}),
              "m.yaml:6:8",
              {"unknown layer type 'Basik'", "did you mean 'Basic'?", "blocks: Basic"});
  ExpectError(Lines({"input: {shape: [10]}", "blocks:", "  Basic:", "    - r: ReLU",
                     "layers:", "  - a: {type: Basic, shard: ((8,),)}"}),
              "m.yaml:6:22",
              {"unknown key 'shard' in layer 'a' (Basic)", "allowed keys: type, repeat"});
}

// ---- operators networks ----

std::vector<std::string> OpsBase() {
  return {
      "input: {shape: [4]}",                            // 1
      "classes: 2",                                     // 2
      "data: {dataset: synthetic, synthetic_size: 8}",  // 3
      "parameters:",                                    // 4
      "  w: {shape: [4, 2], init: zeros}",              // 5
      "operators:",                                     // 6
      "  - mm: {op: MatMul, inputs: [x, w]}",           // 7
      "  - act: {op: ReLU}",                            // 8
  };
}

TEST(ModelFileErrorsTest, OperatorsBaseIsValid) {
  Result<ModelFile> file = ParseModelText(Lines(OpsBase()), "m.yaml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  Result<ModelGraph> g = file->Build(3);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->graph.node(g->graph.FindNode("act")).inputs[0], g->graph.FindValue("mm"));
}

// The operators of ONNX exports in a model file: MatMul of rank 3, Split's outputs by
// number, Concat of several inputs, Slice and Squeeze attributes.
std::vector<std::string> ExportOpsBase() {
  return {
      "input: {shape: [4, 6]}",                                              // 1
      "classes: 4",                                                          // 2
      "data: {dataset: synthetic, synthetic_size: 8}",                       // 3
      "parameters:",                                                         // 4
      "  w: {shape: [6, 4], init: normal}",                                  // 5
      "operators:",                                                          // 6
      "  - mm: {op: MatMul, inputs: [x, w]}",                                // 7
      "  - parts: {op: Split, axis: 2, sizes: [1, 3]}",                      // 8
      "  - joined: {op: Concat, inputs: ['parts:1', 'parts:0'], axis: -1}",  // 9
      "  - cut: {op: Slice, axes: [1], starts: [-1], ends: [100]}",          // 10
      "  - flat: {op: Squeeze, axes: [1]}",                                  // 11
      "  - ids: {op: Cast, to: i32}",                                        // 12
      "  - back: {op: Cast, to: f32}",                                       // 13
  };
}

TEST(ModelFileErrorsTest, OperatorsOfOnnxExportsBuild) {
  Result<ModelFile> file = ParseModelText(Lines(ExportOpsBase()), "m.yaml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  Result<ModelGraph> g = file->Build(3);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Graph& graph = g->graph;
  EXPECT_EQ(graph.value(graph.FindValue("mm")).shape, (Shape{3, 4, 4}));
  EXPECT_EQ(graph.value(graph.FindValue("parts:1")).shape, (Shape{3, 4, 3}));
  EXPECT_EQ(graph.value(graph.FindValue("cut")).shape, (Shape{3, 1, 4}));
  EXPECT_EQ(graph.value(graph.FindValue("ids")).dtype, DType::kI32);
  EXPECT_EQ(graph.value(g->logits).shape, (Shape{3, 4}));
  const Node& joined = graph.node(graph.FindNode("joined"));
  ASSERT_EQ(joined.inputs.size(), 2u);
  EXPECT_EQ(joined.inputs[0], graph.FindValue("parts:1"));
}

TEST(ModelFileErrorsTest, OperatorsOfOnnxExportsErrors) {
  ExpectError(Replace(ExportOpsBase(), 9, "  - joined: {op: Concat, inputs: ['parts:2'], axis: 1}"),
              "m.yaml:9:35", {"'parts' has 2 outputs"});
  ExpectError(Replace(ExportOpsBase(), 12, "  - ids: {op: Cast, to: f64}"), "m.yaml:12:25",
              {"'to' of operator 'ids' must be f32 or i32, got f64"});
  ExpectError(Replace(ExportOpsBase(), 8, "  - parts: {op: Split, axis: 2, sizes: [1, 2]}"),
              "m.yaml:8:5",
              {"operator 'parts'", "sizes must be non-negative and sum to dimension 2 of ["});
}

TEST(ModelFileErrorsTest, Operators) {
  ExpectError(Replace(OpsBase(), 7, "  - mm: {op: MatMul, inputs: [x, ww]}"), "m.yaml:7:34",
              {"input 'ww' of operator 'mm' is not defined above", "did you mean 'w'?"});
  ExpectError(Replace(OpsBase(), 7, "  - mm: {op: MatMul}"), "m.yaml:7:5",
              {"operator 'mm' (MatMul) takes 2 inputs; list them, e.g. inputs: [x, ...]"});
  ExpectError(Replace(OpsBase(), 7, "  - mm: {op: MatMul, inputs: [x]}"), "m.yaml:7:30",
              {"operator 'mm' (MatMul) takes 2 inputs, found 1"});
  ExpectError(Replace(OpsBase(), 8, "  - w: {op: ReLU}"), "m.yaml:8:5",
              {"duplicate name 'w' (already a parameter at m.yaml:5:3)"});
  ExpectError(With(OpsBase(), {"  - mm: {op: ReLU}"}), "m.yaml:9:5",
              {"duplicate name 'mm' (already an operator at m.yaml:7:5)"});
  ExpectError(With(OpsBase(), {"output: mn"}), "m.yaml:9:9",
              {"output 'mn' is not an operator", "did you mean 'mm'?"});
  ExpectError(
      Replace(OpsBase(), 5, "  w: {shape: [4, 2], init: zeros}\n  v: {shape: [2], init: ones}"),
      "m.yaml:6:3", {"parameter 'v' is declared but no operator uses it"});
  ExpectError(Replace(OpsBase(), 5, "  w: {shape: [4, 2]}"), "m.yaml:5:6",
              {"parameter 'w' is missing the required key 'init'"});
  ExpectError(Replace(OpsBase(), 7, "  - mm: {op: MatMul, inputs: [x, w], transpose: true}"),
              "m.yaml:7:38",
              {"unknown key 'transpose' in operator 'mm' (MatMul)", "transpose_a, transpose_b"});
  ExpectError(Replace(OpsBase(), 7, "  - mm: {op: MatMul, inputs: [w, x]}"), "m.yaml:7:5",
              {"operator 'mm' (MatMul): "});
  ExpectError(Replace(OpsBase(), 8, "  - act: {op: ReLU, inputs: [mm:1]}"), "m.yaml:8:30",
              {"input 'mm:1' of operator 'act': 'mm' has 1 output"});
}

// ---- parallel ----

TEST(ModelFileErrorsTest, StrategyOnAMissingOperatorListsCloseNames) {
  ExpectError(With(Base(), {"parallel:", "  strategies:", "    dense1.matmull: ((1, 8), (8, 1))"}),
              "m.yaml:10:5",
              {"parallel.strategies names 'dense1.matmull', but the network has no operator or "
               "module of that name (did you mean 'dense1.matmul' or 'dense2.matmul'?)",
               "its operators: flatten, dense1.matmul"});
  ExpectError(With(Base(), {"parallel:", "  strategies:", "    matmul: ((1, 8), (8, 1))"}),
              "m.yaml:10:5", {"did you mean 'dense1.matmul' or 'dense2.matmul'?"});
}

TEST(ModelFileErrorsTest, StrategyOnAModuleOfSeveralOperators) {
  ExpectError(With(Base(), {"parallel:", "  strategies:", "    dense1: ((1, 8), (8, 1))"}),
              "m.yaml:10:5",
              {"'dense1' is a Dense module with the operators dense1.matmul, dense1.bias_add",
               "name one of them (e.g. 'dense1.matmul')"});
}

TEST(ModelFileErrorsTest, StrategySyntax) {
  auto strategy = [](const std::string& s) {
    return With(Base(), {"parallel:", "  strategies:", "    dense1.matmul: " + s});
  };
  // "    dense1.matmul: " is 19 characters: the strategy starts at column 20.
  ExpectError(strategy("((2, 4), (4, 1)"), "m.yaml:10:20", {"has an unclosed '(' (expected ')')"});
  ExpectError(strategy("((2, 4), (4, 1)))"), "m.yaml:10:36",
              {"unexpected ')' after the closing ')'"});
  ExpectError(strategy("((2, x), (4, 1))"), "m.yaml:10:25",
              {"entry 1: expected a part count (a positive integer) or ')', found 'x'"});
  ExpectError(strategy("((2, 0), (4, 1))"), "m.yaml:10:25",
              {"a part count must be a positive integer, found '0'"});
  ExpectError(strategy("(2, 4)"), "m.yaml:10:21",
              {"entry 1: expected a tuple such as (2, 4), a layout call or None, found '2'"});
  ExpectError(strategy("2"), "m.yaml:10:20", {"must start with '('"});
  ExpectError(strategy("((2, 4), None)"), "m.yaml:10:29",
              {"None (data-parallel) is only for shard blocks"});
  ExpectError(strategy("\"((2, 4) (4, 1))\""), "m.yaml:10:29",
              {"expected ',' or ')' after entry 1, found '('"});
  ExpectError(strategy("((2, 4),)"), "m.yaml:10:20",
              {"the strategy of 'dense1.matmul' has 1 entry but operator 'dense1.matmul' (MatMul) "
               "has 2 inputs: flatten [32, 784], dense1.weight [784, 32]"});
  ExpectError(strategy("((2, 4, 1), (4, 1))"), "m.yaml:10:21",
              {"entry 1 describes 3 dimensions but input 1 of 'dense1.matmul' (flatten [32, 784]) "
               "has 2"});
}

TEST(ModelFileErrorsTest, LayoutStrategies) {
  auto file = [](const std::string& mesh, const std::string& s) {
    return With(Base(), {"parallel:",                  // 8
                         "  devices: 8",               // 9
                         "  meshes:",                  // 10
                         "    layout: " + mesh,        // 11
                         "  strategies:",              // 12
                         "    dense1.matmul: " + s});  // 13
  };
  const std::string mesh = "Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))";
  Result<ModelFile> ok = ParseModelText(
      file(mesh, "(layout(\"mp\", (\"sp\", \"dp\")), layout((\"sp\", \"dp\"), \"None\"))"),
      "m.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ExpectError(file(mesh, "(layuot(\"mp\", \"None\"), layout(\"mp\", \"None\"))"), "m.yaml:13:21",
              {"calls 'layuot', which is not a mesh declared in parallel.meshes",
               "did you mean 'layout'?", "declared: layout"});
  // The unknown axis "mq" is at column 28 of the line.
  ExpectError(file(mesh, "(layout(\"mq\", \"None\"), layout(\"mp\", \"None\"))"), "m.yaml:13:28",
              {"entry 1: ", "mq"});
  ExpectError(file(mesh, "(layout(\"mp\", \"None\"), layout(\"mp\", \"None\", \"None\"))"),
              "m.yaml:13:43",
              {"entry 2 describes 3 dimensions but input 2 of 'dense1.matmul' (dense1.weight "
               "[784, 32]) has 2"});
  ExpectError(
      With(Base(), {"parallel:", "  strategies:",
                    "    dense1.matmul: (layout(\"mp\", \"None\"), layout(\"mp\", \"None\"))"}),
      "m.yaml:10:21", {"calls 'layout', but no mesh is declared"});
  // Mesh expressions are checked where they are written.
  ExpectError(file("Layout((2, 2, 2), (\"dp\", \"sp\"))", "((1, 1), (1, 1))"), "m.yaml:11:13",
              {"mesh 'layout': "});
  ExpectError(file("Layout((2, 2, 2) (\"dp\", \"sp\", \"mp\"))", "((1, 1), (1, 1))"),
              "m.yaml:11:30", {"mesh 'layout': expected"});
  ExpectError(file("Layout((4, 4), (\"a\", \"b\"))", "((1, 1), (1, 1))"), "m.yaml:11:13",
              {"mesh 'layout' has 16 devices but parallel.devices is 8"});
}

TEST(ModelFileErrorsTest, ParallelModeConflicts) {
  ExpectError(
      With(Base(), {"parallel:", "  mode: data_parallel",
                    "  strategies:", "    dense1.matmul: ((1, 8), (8, 1))"}),
      "m.yaml:11:5",
      {"the strategy of 'dense1.matmul' needs parallel.mode semi_auto or auto, but the mode "
       "is data_parallel (at m.yaml:9:9)"});
  ExpectError(With(Base(), {"parallel:", "  mode: semi_auto", "  search: sharding_propagation"}),
              "m.yaml:10:11", {"parallel.search chooses the strategies of mode auto"});
  ExpectError(With(Base(), {"parallel:", "  mode: fully_auto"}), "m.yaml:9:9",
              {"parallel.mode 'fully_auto' is not a mode",
               "modes: stand_alone, data_parallel, semi_auto, auto"});
  ExpectError(With(Base(), {"parallel:", "  search: sharding_propagaton"}), "m.yaml:9:11",
              {"did you mean 'sharding_propagation'?"});
  ExpectError(With(Base(), {"parallel:", "  mode: semi_auto", "  shard:", "    - block: dense1",
                            "      in_strategy: ((8, 1),)"}),
              "m.yaml:11:14",
              {"a shard block searches the strategies inside it and needs "
               "parallel.mode auto"});
}

TEST(ModelFileErrorsTest, TwoStrategiesForOneOperator) {
  ExpectError(
      Lines({"input: {shape: [4]}", "classes: 2", "data: {dataset: synthetic, synthetic_size: 8}",
             "parameters:", "  w: {shape: [4, 2], init: zeros}", "operators:", "  - mm:",
             "      op: MatMul", "      inputs: [x, w]", "      shard: ((2, 1), (1, 1))",
             "parallel:", "  strategies:", "    mm: ((1, 1), (1, 2))"}),
      "m.yaml:13:5",
      {"operator 'mm' is given two strategies: here (parallel.strategies) and at "
       "m.yaml:10:7 (the shard key of operator 'mm')"});
}

TEST(ModelFileErrorsTest, Place) {
  ExpectError(With(Base(), {"parallel:", "  devices: 4", "  place: {dense1: 4}"}), "m.yaml:10:19",
              {"worker 4 of 'dense1' is out of range: parallel.devices is 4 (workers 0..3)"});
  ExpectError(With(Base(), {"parallel:", "  place: {dense3: 1}"}), "m.yaml:9:11",
              {"parallel.place names 'dense3', but the network has no operator or module",
               "did you mean 'dense1' or 'dense2'?"});
  ExpectError(With(Base(), {"parallel:", "  place: {dense1: -1}"}), "m.yaml:9:19",
              {"the worker of 'dense1' must not be negative"});
}

TEST(ModelFileErrorsTest, ShardBlocks) {
  auto shard = [](const std::vector<std::string>& entry) {
    std::vector<std::string> lines = {
        "input: {shape: [10]}",                           // 1
        "data: {dataset: synthetic, synthetic_size: 8}",  // 2
        "layers:",                                        // 3
        "  - block1:",                                    // 4
        "      block:",                                   // 5
        "        - d: {type: Dense, in_channels: 10, out_channels: 10}",
        "parallel:",     // 7
        "  mode: auto",  // 8
        "  shard:"};     // 9
    lines.insert(lines.end(), entry.begin(), entry.end());
    return Lines(lines);
  };
  Result<ModelFile> ok = ParseModelText(
      shard({"    - block: block1", "      in_strategy: ((1, 8),)", "      out_strategy: (None,)"}),
      "m.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ExpectError(shard({"    - block: blok1", "      in_strategy: ((1, 8),)"}), "m.yaml:10:14",
              {"parallel.shard names 'blok1'", "did you mean 'block1'?"});
  ExpectError(shard({"    - block: block1.d.matmul", "      in_strategy: ((1, 8),)"}),
              "m.yaml:10:14", {"'block1.d.matmul' is an operator; shard wraps a block"});
  ExpectError(shard({"    - block: block1", "      in_strategy: ((1, 8), (1, 8))"}), "m.yaml:11:20",
              {"the in_strategy of shard block 'block1' has 2 entries but the block has one input "
               "([32, 10])"});
  ExpectError(shard({"    - block: block1", "      in_strategy: ((1, 1, 8),)"}), "m.yaml:11:21",
              {"describes 3 dimensions but the block's input [32, 10] has 2"});
  ExpectError(shard({"    - block: block1", "      in_strategy: ((1, 8),)", "      level: 3"}),
              "m.yaml:12:14",
              {"must be 0 (most computation per communication), 1 (least memory) "
               "or 2 (fastest), found 3"});
  ExpectError(shard({"    - block: block1"}), "m.yaml:10:7",
              {"parallel.shard entry 1 is missing the required key 'in_strategy'"});
  ExpectError(shard({"    - block: block1", "      in_strategy: ((1, 8),)", "      device: GPU"}),
              "m.yaml:12:7", {"unknown key 'device' in parallel.shard entry 1"});
}

// ---- YAML and files ----

TEST(ModelFileErrorsTest, YamlSyntaxErrorHasItsPosition) {
  Result<ModelFile> file =
      ParseModelText(Lines({"input: {shape: [1, 28, 28]}", "layers:", "  - flatten: Flatten",
                            "  - dense1: {type: Dense, in_channels: 784", "classes: 10"}),
                     "m.yaml");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(file.status().message().rfind("m.yaml:5:", 0), 0u) << file.status().message();
  EXPECT_NE(file.status().message().find("YAML syntax error: "), std::string::npos);

  ExpectError(
      Lines({"input: {shape: [1, 28, 28]}", "layers:", "  - flatten: Flatten", " bad: [1, 2"}),
      "m.yaml:4:2", {"YAML syntax error"});
  ExpectError(Lines({"input: {shape: [1, 28, 28]}", "layers:", "\t- flatten: Flatten"}),
              "m.yaml:3:2", {"YAML syntax error"});
}

TEST(ModelFileErrorsTest, EmptyAndSeveralDocuments) {
  ExpectError("", "m.yaml:1:1", {"the file is empty"});
  ExpectError("# only a comment\n", "m.yaml:1:1", {"the file is empty"});
  ExpectError(With(Base(), {"---", "name: second"}), "m.yaml:8:1",
              {"a model file holds one YAML document; a second one starts here"});
}

// yaml-cpp's LoadAll() never returns on these (it allocates until memory runs out).
TEST(ModelFileErrorsTest, StrayCommaAtTheStartOfADocument) {
  ExpectError(",", "m.yaml:1:1", {"YAML syntax error: unexpected ','"});
  ExpectError("# a comment\n, (1, 4)))\nname: x\n", "m.yaml:2:1",
              {"YAML syntax error: unexpected ','"});
  ExpectError(With(Base(), {"---", ","}), "m.yaml:9:1", {"YAML syntax error: unexpected ','"});
}

TEST(ModelFileErrorsTest, MissingFileNamesThePath) {
  Result<ModelFile> file = LoadModelFile("/nonexistent/dir/model.yaml");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(file.status().message(),
            "/nonexistent/dir/model.yaml: cannot read the model file: no such file");
}

TEST(ModelFileErrorsTest, UnreadableFile) {
  const std::string dir = ::testing::TempDir();
  Result<ModelFile> file = LoadModelFile(dir);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kIoError);
  EXPECT_NE(file.status().message().find("it is a directory"), std::string::npos);

  if (geteuid() == 0) GTEST_SKIP() << "root reads files without read permission";
  const std::string path = dir + "/shardscope_unreadable_model.yaml";
  { std::ofstream(path) << Lines(Base()); }
  std::filesystem::permissions(path, std::filesystem::perms::none);
  file = LoadModelFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kIoError);
  EXPECT_EQ(file.status().message().rfind(path + ": cannot read the model file: ", 0), 0u)
      << file.status().message();
}

TEST(ModelFileErrorsTest, LoadedFileErrorsNameThePath) {
  const std::string path = ::testing::TempDir() + "/shardscope_bad_model.yaml";
  { std::ofstream(path) << With(Base(), {"optimzer: {type: sgd}"}); }
  Result<ModelFile> file = LoadModelFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message().rfind(path + ":8:1: unknown key 'optimzer'", 0), 0u)
      << file.status().message();
}

TEST(ModelFileErrorsTest, BuildRefusesABadBatch) {
  Result<ModelFile> file = ParseModelText(Lines(Base()), "m.yaml");
  ASSERT_TRUE(file.ok());
  Result<ModelGraph> g = file->Build(0);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "m.yaml: the batch size must be positive, got 0");
}

// Token models: input.dtype, constants, the sequence loss and text data.
std::vector<std::string> TokenBase() {
  return {
      "input: {shape: [8], dtype: i32}",                                             // 1
      "parameters:",                                                                 // 2
      "  table: {shape: [20, 4], init: normal}",                                     // 3
      "constants:",                                                                  // 4
      "  mask: {shape: [8, 8], init: causal_mask}",                                  // 5
      "operators:",                                                                  // 6
      "  - gather: {op: Gather, inputs: [table, x]}",                                // 7
      "  - scores: {op: BatchMatMul, inputs: [gather, gather], transpose_b: true}",  // 8
      "  - masked: {op: Add, inputs: [scores, mask]}",                               // 9
      "  - logits: {op: Reshape, shape: [-1, 8, 8]}",                                // 10
      "loss: sequence_cross_entropy",                                                // 11
      "data: {dataset: text}",                                                       // 12
  };
}

TEST(ModelFileErrorsTest, TokenBaseIsValid) {
  Result<ModelFile> file = ParseModelText(Lines(TokenBase()), "m.yaml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->input_dtype(), DType::kI32);
  EXPECT_TRUE(file->sequence_loss());
  Result<ModelGraph> g = file->Build(2);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->graph.value(g->labels).shape, (Shape{2, 8}));
  const Value& mask = g->graph.value(g->graph.FindValue("mask"));
  EXPECT_EQ(mask.kind, ValueKind::kConstant);
  ASSERT_NE(mask.init.data, nullptr);
  EXPECT_EQ((*mask.init.data)[0 * 8 + 1], -1e9f);  // position 0 does not see position 1
  EXPECT_EQ((*mask.init.data)[1 * 8 + 0], 0.0f);
}

TEST(ModelFileErrorsTest, TokenErrors) {
  ExpectError(Replace(TokenBase(), 1, "input: {shape: [8], dtype: f16}"), "m.yaml:1:28",
              {"input.dtype 'f16' is not f32 or i32"});
  ExpectError(Replace(TokenBase(), 5, "  mask: {shape: [8, 4], init: causal_mask}"), "m.yaml:5:31",
              {"causal_mask is square"});
  ExpectError(Replace(TokenBase(), 9, "  - masked: {op: Add, inputs: [scores, scores]}"),
              "m.yaml:5:3", {"constant 'mask' is declared but no operator uses it"});
  ExpectError(Replace(TokenBase(), 11, "loss: softmax_cross_entropy"), "m.yaml:11:7",
              {"dataset: text labels every position", "sequence_cross_entropy"});
  ExpectError(Replace(TokenBase(), 10, "  - logits: {op: Reshape, shape: [-1, 64]}"), "m.yaml:10:5",
              {"a sequence loss needs logits [batch, positions..., classes] = [32, 8, 64]"});
  ExpectError(Replace(TokenBase(), 12, "data: {dataset: mnist, file: a.txt}"), "m.yaml:12:24",
              {"data.file applies to dataset: text"});
}

// training.dtype: the element type `plan` prices bytes at (training stays f32).
TEST(ModelFileErrorsTest, TrainingDtype) {
  Result<ModelFile> file = ParseModelText(With(Base(), {"training: {dtype: bf16}"}), "m.yaml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->training().dtype, Precision::kBF16);
  ExpectError(With(Base(), {"training: {dtype: bf17}"}), "m.yaml:8:19",
              {"training.dtype: unknown dtype 'bf17' (did you mean 'bf16'?)"});
}

}  // namespace
}  // namespace shardscope
