// Attention split by heads in the decoders of samples/onnx (`plan --json`). The sharding
// rules carry a split of the projections' merged heads x head-size dimension onto the heads
// (Reshape, Transpose, the rotary slices, grouped-query attention's repeat of key/value
// groups), so Megatron's projections leave nothing to move inside attention; and every
// search splits attention by heads when one sequence leaves no batch to split.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "run_shardscope.h"

namespace {

using nlohmann::json;
using shardscope_cli_test::Shardscope;

struct Decoder {
  std::string file;   // in samples/onnx
  std::string scope;  // layer 0's attention, as the plan names operators
  std::string onnx;   // the same as ONNX names nodes
  int heads;          // heads split of 8 devices (GPT-2's 12 heads: 4; Llama's 8 groups: 8)
};

const Decoder kGpt2{"gpt2.onnx", "h.0.attn", "/h.0/attn", 4};
const Decoder kLlama{"llama_small.onnx", "layers.0.self_attn", "/layers.0/self_attn", 8};

std::string Sample(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/onnx/" + name;
}

// The plan's operator -> strategy, and its redistributions; empty on failure (asserted).
struct Plan {
  std::map<std::string, std::string> strategy;
  std::vector<std::string> redistributed;  // the values a redistribution moves
  std::string Of(const std::string& op) const {
    auto it = strategy.find(op);
    return it == strategy.end() ? "(none)" : it->second;
  }
};

Plan PlanJson(const std::string& args) {
  auto out = Shardscope("plan " + args + " --json");
  EXPECT_EQ(out.code, 0) << out.text;
  Plan p;
  if (out.code != 0) return p;
  const json j = json::parse(out.text.substr(out.text.find('{')));
  for (const json& op : j["operators"]) p.strategy[op["name"]] = op["strategy"];
  for (const json& r : j["redistributions"]) p.redistributed.push_back(r["value"]);
  return p;
}

// The second factor of a strategy's first operand: "((1,8,1,1),(1,8,1,1))" -> 8, the heads
// of [batch, heads, tokens, head size].
int HeadsSplit(const std::string& strategy) {
  int b = 0, h = 0;
  return std::sscanf(strategy.c_str(), "((%d,%d", &b, &h) == 2 ? h : 0;
}

// q, k, v by columns and the output projection by rows, given by ONNX node name; the
// search (propagation) chooses everything between them.
TEST(OnnxHeads, MegatronProjectionsSplitAttentionByHeadsWithNothingMovedInside) {
  for (const Decoder& d : {kGpt2, kLlama}) {
    SCOPED_TRACE(d.file);
    const int batch = 8 / d.heads, h = d.heads;
    const std::string col = "((" + std::to_string(batch) + ",1),(1," + std::to_string(h) + "))";
    const std::string row =
        "((" + std::to_string(batch) + "," + std::to_string(h) + "),(" + std::to_string(h) + ",1))";
    std::string text = "import: " + Sample(d.file) +
                       "\nparallel:\n  search: sharding_propagation\n  strategies:\n";
    for (const char* p : {"q_proj", "k_proj", "v_proj"})
      text += "    " + d.onnx + "/" + p + "/MatMul: " + col + "\n";
    text += "    " + d.onnx + "/o_proj/MatMul: " + row + "\n";
    const auto path = std::filesystem::temp_directory_path() / ("shardscope_heads_" + d.file);
    std::ofstream(path.string() + ".yaml") << text;
    const Plan p = PlanJson(path.string() + ".yaml --devices 8 --batch " + std::to_string(batch));
    const std::string heads = "((" + std::to_string(batch) + "," + std::to_string(h) + ",1,1),";
    for (const char* op : {"MatMul", "MatMul_1", "Softmax"})
      EXPECT_EQ(p.Of(d.scope + "." + op).rfind(heads, 0), 0u)
          << op << " " << p.Of(d.scope + "." + op);
    // Data moves only into the projections (their input, gathered once per reader) and out
    // of the row-split one (its partial sums, its result into the layout the search chose for
    // the residual stream): never between the heads' operators.
    int moved = 0;
    for (const std::string& v : p.redistributed) {
      if (v.rfind(d.scope + ".", 0) != 0) continue;
      ++moved;
      const bool input = v.size() > 10 && v.compare(v.size() - 10, 10, ".MatMul_in") == 0;
      const bool out = v == d.scope + ".o_proj.MatMul" || v == d.scope + ".o_proj.Add";
      EXPECT_TRUE(input || out) << v;
    }
    EXPECT_GE(moved, 1);  // the check above saw this layer's redistributions
  }
}

// Megatron over 8 devices on one sequence of the Llama-style decoder, the rest searched:
// q, k and v read one rows view of their input, their partial input gradients add up and are
// reduced once (likewise gate and up), and the search prices that plan as its program.
TEST(OnnxHeads, MegatronInputGradientsAreReducedOnceAndPricedAsTheProgram) {
  std::string text = "import: " + Sample(kLlama.file) +
                     "\nparallel:\n  search: dynamic_programming\n  strategies:\n";
  for (const char* l : {"layers.0", "layers.1"}) {
    const std::string at = std::string("    ") + l;
    for (const char* p : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                          "mlp.gate_proj", "mlp.up_proj"})
      text += at + "." + p + ".MatMul: ((1, 1), (1, 8))\n";
    for (const char* p : {"self_attn.o_proj", "mlp.down_proj"})
      text += at + "." + p + ".MatMul: ((1, 8), (8, 1))\n";
  }
  const auto path = std::filesystem::temp_directory_path() / "shardscope_megatron_llama.yaml";
  std::ofstream(path) << text;
  auto out =
      Shardscope("plan " + path.string() + " --devices 8 --batch 1 --cluster dgx-h100 --json");
  ASSERT_EQ(out.code, 0) << out.text;
  const json j = json::parse(out.text.substr(out.text.find('{')));
  std::map<std::string, int> ops;
  for (const json& op : j["operators"]) ops[op["name"]] = 1;
  EXPECT_EQ(ops.count("layers.0.self_attn.q_proj.MatMul_in"), 1u);
  EXPECT_EQ(ops.count("layers.0.self_attn.k_proj.MatMul_in"), 0u);  // q's rows view serves k
  EXPECT_EQ(ops.count("layers.0.mlp.up_proj.MatMul_in"), 0u);
  // Backward reductions of layer 0's activation gradients: one for q, k, v, one for gate, up.
  std::map<std::string, int> reduced;
  for (const json& r : j["redistributions"]) {
    const std::string v = r["value"], from = r["from"];
    if (from.find("P(") == std::string::npos) continue;
    for (const char* block : {"self_attn", "mlp"})
      reduced[block] += v.rfind(std::string("grad.layers.0.") + block + ".", 0) == 0;
  }
  EXPECT_EQ(reduced["self_attn"], 1) << out.text;
  EXPECT_EQ(reduced["mlp"], 1) << out.text;
  // The objective prices those collectives as the program does (within a tenth of them).
  const double objective = j["search_objective_seconds"], step = j["predicted_step_seconds"],
               communication = j["predicted_communication_seconds"];
  EXPECT_LT(std::abs(objective - step), 0.1 * communication) << objective << " vs " << step;
}

// `plan ARGS` of the strategies saved in `saved` against the same with `megatron` (those
// strategies edited to Megatron's splits): the searched plan prices no higher. Removes both.
void ExpectPricedAtMostAsMegatron(const std::string& args, const std::string& saved,
                                  const json& megatron) {
  const std::string megatron_file = saved + ".megatron.json";
  std::ofstream(megatron_file) << megatron.dump();
  const auto priced = [&](const std::string& file) {
    auto out =
        Shardscope("plan " + args + " --search semi_auto --load-strategy " + file + " --json");
    EXPECT_EQ(out.code, 0) << out.text;
    return out.code != 0
               ? 0.0
               : json::parse(out.text.substr(out.text.find('{')))["predicted_step_seconds"]
                     .get<double>();
  };
  const double searched = priced(saved);
  const double megatron_price = priced(megatron_file);
  EXPECT_GT(searched, 0);
  EXPECT_LE(searched, megatron_price * (1 + 1e-9))
      << searched << " vs Megatron's " << megatron_price;
  std::filesystem::remove(saved);
  std::filesystem::remove(megatron_file);
}

// One sequence of GPT-2 on the 8 GPUs of an H100 node, its gradients reduced after the
// backward as Megatron-LM's published runs (--no-overlap): dynamic programming's plan (the
// sequence split over most devices: there is no batch to split) prices no higher than
// Megatron's in every layer — q, k, v and fc by columns, the MLP's output projection and
// o_proj by rows, 4 ways, the sequence over the other 2 — as `plan` prices both.
TEST(OnnxHeads, DynamicProgrammingPricesGpt2AtMostAsMegatronOnAnH100Node) {
  const std::string args =
      Sample(kGpt2.file) + " --devices 8 --batch 1 --cluster dgx-h100 --no-overlap";
  const std::string saved =
      (std::filesystem::temp_directory_path() / "shardscope_gpt2_dp_strategy.json").string();
  PlanJson(args + " --search dynamic_programming --save-strategy " + saved);
  json strategies;
  std::ifstream(saved) >> strategies;
  int changed = 0;
  for (json& op : strategies["operators"]) {
    const std::string name = op["name"];
    for (const char* col : {"attn.q_proj", "attn.k_proj", "attn.v_proj", "mlp.fc"}) {
      if (name.ends_with(std::string(col) + ".MatMul")) {
        op["strategy"] = "((2,1),(1,4))";
        ++changed;
      }
    }
    for (const char* row : {"attn.o_proj", "mlp.proj"}) {
      if (name.ends_with(std::string(row) + ".MatMul")) {
        op["strategy"] = "((2,4),(4,1))";
        ++changed;
      }
    }
  }
  EXPECT_EQ(changed, 12 * 6);
  ExpectPricedAtMostAsMegatron(args, saved, strategies);
}

// The Llama-style decoder on one H100 node, gradients reduced after the backward (as above):
// dynamic programming splits gate and up by
// columns, contracts down's intermediate dimension where they split it (its weight by rows),
// and attention by all 8 key/value groups; its plan prices no higher than Megatron's
// down_proj ((1,8),(8,1)) in every layer, as `plan` prices both.
TEST(OnnxHeads, DynamicProgrammingSplitsLlamaMlpColumnThenRowOnAnH100Node) {
  const std::string args =
      Sample(kLlama.file) + " --devices 8 --batch 1 --cluster dgx-h100 --no-overlap";
  const std::string saved =
      (std::filesystem::temp_directory_path() / "shardscope_llama_dp_strategy.json").string();
  const Plan p = PlanJson(args + " --search dynamic_programming --save-strategy " + saved);
  for (const char* col : {"mlp.gate_proj", "mlp.up_proj"})
    EXPECT_EQ(p.Of(std::string("layers.0.") + col + ".MatMul"), "((1,1),(1,8))") << col;
  int input_rows = 0, input_cols = 0, weight_rows = 0, weight_cols = 0;
  const std::string down = p.Of("layers.0.mlp.down_proj.MatMul");
  ASSERT_EQ(std::sscanf(down.c_str(), "((%d,%d),(%d,%d))", &input_rows, &input_cols, &weight_rows,
                        &weight_cols),
            4)
      << down;
  EXPECT_GT(weight_rows, 1) << down;
  EXPECT_EQ(input_cols, weight_rows) << down;
  for (const char* op : {"MatMul", "MatMul_1"})
    EXPECT_EQ(HeadsSplit(p.Of(kLlama.scope + "." + op)), kLlama.heads) << op;

  json strategies;
  std::ifstream(saved) >> strategies;
  int changed = 0;
  for (json& op : strategies["operators"]) {
    const std::string name = op["name"];
    if (name.size() > 20 && name.ends_with("mlp.down_proj.MatMul")) {
      op["strategy"] = "((1,8),(8,1))";
      ++changed;
    }
  }
  EXPECT_EQ(changed, 2);
  ExpectPricedAtMostAsMegatron(args, saved, strategies);
}

// One sequence at 8 devices: no batch to split, so each search must split the model; every
// one splits attention by heads (Llama-style: by all 8 key/value groups).
TEST(OnnxHeads, EverySearchSplitsAttentionOfOneSequenceByHeads) {
  for (const Decoder& d : {kGpt2, kLlama}) {
    for (const char* search :
         {"sharding_propagation", "recursive_programming", "dynamic_programming"}) {
      SCOPED_TRACE(d.file + " " + search);
      const Plan p =
          PlanJson(Sample(d.file) + " --devices 8 --batch 1 --search " + std::string(search));
      for (const char* op : {"MatMul", "MatMul_1"})
        EXPECT_GE(HeadsSplit(p.Of(d.scope + "." + op)), d.heads)
            << op << " " << p.Of(d.scope + "." + op);
    }
  }
}

}  // namespace
