// `shardscope plan --export dtensor|jax|mindspore FILE` on the seeds' samples (002, 003, 004):
// each expected layout is derived by hand from the seed's strategy (comments say how).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "run_shardscope.h"

namespace {

namespace fs = std::filesystem;
using shardscope_cli_test::Shardscope;

std::string Model(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + name + ".yaml";
}

struct Exported {
  std::string text;    // the file
  std::string output;  // what plan printed
};

Exported Export(const std::string& model, const std::string& format) {
  const fs::path dir = fs::temp_directory_path() / ("plan_export_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / (model + "_" + format + (format == "mindspore" ? ".json" : ".py"));
  auto out = Shardscope("plan " + Model(model) + " --export " + format + " " + file.string());
  EXPECT_EQ(out.code, 0) << out.text;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (format != "mindspore") {  // the Python modules must be valid Python
    const std::string cmd = "python3 -m py_compile " + file.string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << text.str();
  }
  fs::remove_all(dir);
  return {text.str(), out.text};
}

// The PLAN entry of `tensor` with its mesh name replaced by that mesh's MESHES entry:
// "(ranks, shape, names) | rest of the entry".
std::string Entry(const std::string& text, const std::string& tensor) {
  std::smatch m;
  const std::regex entry("\n    \"" + std::regex_replace(tensor, std::regex("\\."), "\\.") +
                         "\": \\(\"(\\w+)\", \"(mesh\\d+)\", (.*)\\),\n");
  if (!std::regex_search(text, m, entry)) return "no entry for " + tensor;
  const std::string kind = m[1], mesh = m[2], rest = m[3];
  std::smatch mm;
  if (!std::regex_search(text, mm, std::regex("\n    \"" + mesh + "\": \\((.*)\\),\n")))
    return "no mesh " + mesh;
  return kind + " on (" + std::string(mm[1]) + ") " + rest;
}

nlohmann::json Json(const std::string& text) { return nlohmann::json::parse(text); }

// Seed 002, 8 devices: MatMul ((2,4),(4,1)) makes mesh (m=2, k=4); w1 [32,16] is split by
// rows over k; the MatMul's output is a partial sum over k (k is summed); ReLU ((8,1),).
TEST(PlanExport, Seed002MatMulReluDTensor) {
  const Exported e = Export("matmul_relu", "dtensor");
  const std::string mesh = "([0, 1, 2, 3, 4, 5, 6, 7], (2, 4), (\"m\", \"k\"))";
  EXPECT_EQ(Entry(e.text, "w1"), "parameter on " + mesh + " (Replicate(), Shard(0)), (32, 16)");
  EXPECT_EQ(Entry(e.text, "matmul"), "activation on " + mesh + " (Shard(0), Partial()), (32, 16)");
  EXPECT_NE(Entry(e.text, "relu").find(" (8,), "), std::string::npos) << e.text;
  EXPECT_NE(Entry(e.text, "relu").find("(Shard(0),), (32, 16)"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("UNSUPPORTED = [\n]"), std::string::npos) << e.text;
}

TEST(PlanExport, Seed002MatMulReluJaxListsThePartialSum) {
  const Exported e = Export("matmul_relu", "jax");
  EXPECT_NE(Entry(e.text, "w1").find("P(\"k\", None), (32, 16)"), std::string::npos) << e.text;
  // A PartitionSpec has no partial sums: the entry is the summed tensor's, and it is listed.
  EXPECT_NE(Entry(e.text, "matmul").find("P(\"m\", None)"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("\"matmul: a partial sum over k"), std::string::npos) << e.text;
  EXPECT_NE(e.output.find("matmul: a partial sum over k"), std::string::npos) << e.output;
}

TEST(PlanExport, Seed002MatMulReluMindSpore) {
  const nlohmann::json j = Json(Export("matmul_relu", "mindspore").text);
  EXPECT_EQ(j["current_stage"], 0);
  EXPECT_EQ(j["parallel_strategy_item"]["matmul"]["parallel_strategy"],
            nlohmann::json::parse("[[2,4],[4,1]]"));
  EXPECT_EQ(j["parallel_strategy_item"]["relu"]["parallel_strategy"],
            nlohmann::json::parse("[[8,1]]"));
  // Device matrix (m=2, k=4); w1's rows on k, the rightmost device dimension (index 0).
  const nlohmann::json& w1 = j["parallel_layout_item"]["w1"];
  EXPECT_EQ(w1["dev_matrix"], nlohmann::json::parse("[2,4]"));
  EXPECT_EQ(w1["tensor_map"], nlohmann::json::parse("[0,-1]"));
  EXPECT_EQ(w1["tensor_shape"], nlohmann::json::parse("[32,16]"));
  // Activations have no place in a strategy checkpoint: listed, not dropped.
  const std::string unsupported = j["shardscope"]["unsupported"].dump();
  EXPECT_NE(unsupported.find("matmul, relu"), std::string::npos) << unsupported;
}

// Seed 002, 4 devices: matmul2 ((1,1),(1,4)) splits V [32,8] by columns over 4 devices.
TEST(PlanExport, Seed002AllGatherColumnSplitWeight) {
  const nlohmann::json j = Json(Export("matmul_allgather", "mindspore").text);
  EXPECT_EQ(j["parallel_strategy_item"]["matmul1"]["parallel_strategy"],
            nlohmann::json::parse("[[4,1],[1,1]]"));
  EXPECT_EQ(j["parallel_layout_item"]["v"]["dev_matrix"], nlohmann::json::parse("[4]"));
  EXPECT_EQ(j["parallel_layout_item"]["v"]["tensor_map"], nlohmann::json::parse("[-1,0]"));
  EXPECT_EQ(j["parallel_layout_item"]["w"]["tensor_map"], nlohmann::json::parse("[-1,-1]"));
  const Exported jax = Export("matmul_allgather", "jax");
  EXPECT_NE(Entry(jax.text, "v").find("P(None, \"n\"), (32, 8)"), std::string::npos) << jax.text;
  const Exported dt = Export("matmul_allgather", "dtensor");
  EXPECT_NE(Entry(dt.text, "v").find("(Shard(1),), (32, 8)"), std::string::npos) << dt.text;
}

// Seed 003: dense1.matmul ((2,4),(4,1)), dense3.matmul ((1,8),(8,1)); the rest propagated.
TEST(PlanExport, Seed003FfnConfiguredWeights) {
  const nlohmann::json j = Json(Export("ffn", "mindspore").text);
  EXPECT_EQ(j["parallel_strategy_item"]["dense1.matmul"]["parallel_strategy"],
            nlohmann::json::parse("[[2,4],[4,1]]"));
  EXPECT_EQ(j["parallel_strategy_item"]["dense3.matmul"]["parallel_strategy"],
            nlohmann::json::parse("[[1,8],[8,1]]"));
  EXPECT_EQ(j["parallel_layout_item"]["dense1.weight"]["dev_matrix"],
            nlohmann::json::parse("[2,4]"));
  EXPECT_EQ(j["parallel_layout_item"]["dense1.weight"]["tensor_map"],
            nlohmann::json::parse("[0,-1]"));
  // ((1,8),(8,1)): weight rows over all 8 devices.
  EXPECT_EQ(j["parallel_layout_item"]["dense3.weight"]["dev_matrix"].back(), 8);
  EXPECT_EQ(j["parallel_layout_item"]["dense3.weight"]["tensor_map"],
            nlohmann::json::parse("[0,-1]"));
  const Exported dt = Export("ffn", "dtensor");
  EXPECT_EQ(Entry(dt.text, "dense1.weight"),
            "parameter on ([0, 1, 2, 3, 4, 5, 6, 7], (2, 4), (\"m\", \"k\")) "
            "(Replicate(), Shard(0)), (784, 512)");
  const Exported jax = Export("ffn", "jax");
  EXPECT_NE(Entry(jax.text, "dense3.weight").find("P(\"k\", None), (256, 128)"), std::string::npos)
      << jax.text;
}

// Seed 004: Layout((2,2,2), (dp,sp,mp)); x = layout("mp", ("sp","dp")) puts the column blocks
// of row block 0 on ranks 0, 4, 2, 6 (sp major, then dp); w = layout(("sp","dp"), "None").
TEST(PlanExport, Seed004MultiAxisDimensions) {
  const Exported jax = Export("dense_matmul_net", "jax");
  EXPECT_NE(Entry(jax.text, "x").find("P(\"mp\", (\"sp\", \"dp\")), (32, 32)"), std::string::npos)
      << jax.text;
  EXPECT_NE(Entry(jax.text, "w").find("P((\"sp\", \"dp\"), None), (32, 16)"), std::string::npos)
      << jax.text;
  EXPECT_NE(Entry(jax.text, "matmul1").find("P((\"mp\", \"sp\", \"dp\"), None)"), std::string::npos)
      << jax.text;
  // DTensor splits a dimension major-first in mesh order: x gets the mesh (mp, sp, dp).
  const Exported dt = Export("dense_matmul_net", "dtensor");
  EXPECT_EQ(Entry(dt.text, "x"),
            "input on ([0, 4, 2, 6, 1, 5, 3, 7], (2, 2, 2), (\"mp\", \"sp\", \"dp\")) "
            "(Shard(0), Shard(1), Shard(1)), (32, 32)");
  // A tensor map gives a dimension one device-matrix dimension: w cannot be written, and says so.
  const nlohmann::json j = Json(Export("dense_matmul_net", "mindspore").text);
  EXPECT_FALSE(j["parallel_layout_item"].contains("w"));
  EXPECT_EQ(j["parallel_strategy_item"]["matmul1"]["parallel_strategy"],
            nlohmann::json::parse("[[2,4],[4,1]]"));
  const std::string unsupported = j["shardscope"]["unsupported"].dump();
  EXPECT_NE(unsupported.find("parameter w: no strategy-checkpoint layout"), std::string::npos)
      << unsupported;
}

TEST(PlanExport, UnknownFormatIsRefused) {
  auto out = Shardscope("plan " + Model("matmul_relu") + " --export onnx /dev/null");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("expected dtensor"), std::string::npos) << out.text;
}

}  // namespace

namespace {

// The operators' strategies of `plan --json`, spaces removed, by name.
std::map<std::string, std::string> Strategies(const std::string& json_text) {
  std::map<std::string, std::string> out;
  const nlohmann::json plan = nlohmann::json::parse(json_text);  // outlives the loop
  for (const auto& op : plan["operators"]) {
    std::string s = op["strategy"];
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    out[op["name"]] = s;
  }
  return out;
}

// A plan exported for MindSpore and loaded back gives the same strategies and the same step.
TEST(PlanExport, MindSporeStrategiesLoadBack) {
  const fs::path file =
      fs::temp_directory_path() / ("ffn_ms_" + std::to_string(getpid()) + ".json");
  auto searched =
      Shardscope("plan " + Model("ffn") + " --json --export mindspore " + file.string(), false);
  ASSERT_EQ(searched.code, 0) << searched.text;
  auto loaded = Shardscope(
      "plan " + Model("ffn") + " --json --search semi_auto --load-strategy " + file.string(),
      false);
  ASSERT_EQ(loaded.code, 0) << loaded.text;
  EXPECT_EQ(Strategies(loaded.text), Strategies(searched.text));
  EXPECT_EQ(nlohmann::json::parse(loaded.text)["predicted_step_seconds"],
            nlohmann::json::parse(searched.text)["predicted_step_seconds"]);
  // A MindSpore network path instead of the model's operator name is refused, naming it.
  std::ofstream(file) << R"({"current_stage": 0, "parallel_strategy_item": {
      "Default/network-FFN/MatMul-op0": {"stage": 0, "parallel_strategy": [[2, 4], [4, 1]]}},
      "parallel_layout_item": {}})";
  auto bad = Shardscope("plan " + Model("ffn") + " --load-strategy " + file.string());
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_NE(bad.text.find("no operator 'Default/network-FFN/MatMul-op0'"), std::string::npos)
      << bad.text;
  fs::remove(file);
}

}  // namespace
