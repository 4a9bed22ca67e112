// `plan --cluster`, `--dtype` and `shardscope clusters` as a user runs them.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_shardscope.h"
#include "shardscope/base/format.h"

namespace {

using shardscope_cli_test::Output;

const std::string kSamples = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/";

Output Shard(const std::string& args, bool merge_stderr = true) {
  return shardscope_cli_test::Shardscope(args, merge_stderr);
}

// The number after `label` in `text` (e.g. "predicted step time: 1.234 ms").
double NumberAfter(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + label.size()));
}

TEST(PlanCluster, TextAndJsonAgreeOnDgxH100) {
  const std::string args = "plan " + kSamples +
                           "ffn.yaml --devices 16 --batch 256 --search dynamic_programming "
                           "--cluster dgx-h100 --dtype bf16";
  Output text = Shard(args);
  ASSERT_EQ(text.code, 0) << text.text;
  Output json = Shard(args + " --json", false);
  ASSERT_EQ(json.code, 0) << json.text;
  const auto j = nlohmann::json::parse(json.text);
  EXPECT_EQ(j["dtype"], "bf16");
  EXPECT_EQ(j["device_mesh"], "mesh(node=2,local=8)");
  EXPECT_NE(text.text.find("cluster dgx-h100, devices as mesh(node=2,local=8)"), std::string::npos)
      << text.text;
  // The printed figures are the JSON's, rounded as printed.
  const double step_ms = NumberAfter(text.text, "predicted step time: ");
  EXPECT_NEAR(step_ms, j["predicted_step_seconds"].get<double>() * 1e3, 0.0005 + 1e-9);
  const std::string memory = shardscope::FormatBytes(j["memory_per_device_bytes"].get<double>());
  EXPECT_NE(text.text.find("memory per device:   " + memory), std::string::npos) << text.text;
  const std::string recv = shardscope::FormatBytes(j["max_recv_bytes_per_step"].get<double>());
  EXPECT_NE(text.text.find("received per step:   " + recv), std::string::npos) << text.text;
  // A cluster's links are far faster than the built-in figures: a cheaper step.
  Output builtin = Shard(
      "plan " + kSamples + "ffn.yaml --devices 16 --batch 256 --search dynamic_programming --json",
      false);
  ASSERT_EQ(builtin.code, 0) << builtin.text;
  EXPECT_LT(j["predicted_step_seconds"].get<double>(),
            nlohmann::json::parse(builtin.text)["predicted_step_seconds"].get<double>());
}

// bf16 halves tensors and activations; parameters keep an fp32 master copy and fp32 states.
TEST(PlanCluster, DtypeChangesEveryByteFigure) {
  const std::string args = "plan " + kSamples +
                           "ffn.yaml --devices 8 --search semi_auto --cluster dgx-a100-80gb "
                           "--json --dtype ";
  Output f32 = Shard(args + "f32", false), bf16 = Shard(args + "bf16", false);
  ASSERT_EQ(f32.code, 0) << f32.text;
  ASSERT_EQ(bf16.code, 0) << bf16.text;
  const auto a = nlohmann::json::parse(f32.text), b = nlohmann::json::parse(bf16.text);
  ASSERT_GT(a["max_recv_bytes_per_step"].get<double>(), 0);
  EXPECT_EQ(b["max_recv_bytes_per_step"].get<double>() * 2,
            a["max_recv_bytes_per_step"].get<double>());
  for (size_t i = 0; i < a["redistributions"].size(); ++i) {
    EXPECT_EQ(b["redistributions"][i]["bytes"].get<double>() * 2,
              a["redistributions"][i]["bytes"].get<double>());
  }
  const double mem_a = a["memory_per_device_bytes"], mem_b = b["memory_per_device_bytes"];
  EXPECT_LT(mem_b, mem_a);
  EXPECT_GT(mem_b, mem_a / 2);  // the fp32 master copy and states do not halve
  Output tpu = Shard("plan " + kSamples + "ffn.yaml --devices 8 --cluster tpu-v4-4x4x4");
  EXPECT_EQ(tpu.code, 2) << tpu.text;  // f32 by default; the profile has bf16 only
  EXPECT_NE(tpu.text.find("no compute rate for f32"), std::string::npos) << tpu.text;
  Output bad = Shard("plan " + kSamples + "ffn.yaml --dtype bf17");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("did you mean 'bf16'"), std::string::npos) << bad.text;
}

TEST(PlanCluster, BadProfileFileSaysFileLineAndField) {
  const std::string file =
      (std::filesystem::temp_directory_path() / "shardscope_bad_cluster.yaml").string();
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fputs(
        "name: bad\ndevices_per_node: 8\nlinks:\n  node: {bandwith: 1e9}\n"
        "device: {memory: 1e9, memory_bandwidth: 1e9, flops: {f32: 1e12}}\n",
        f);
    std::fclose(f);
  }
  Output o = Shard("plan " + kSamples + "ffn.yaml --cluster " + file);
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find(file + ":4:"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("links.node.bandwith"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("did you mean 'bandwidth'"), std::string::npos) << o.text;
  Output both = Shard("plan " + kSamples + "ffn.yaml --cluster dgx-h100 --profile " + file);
  EXPECT_EQ(both.code, 2) << both.text;
  std::filesystem::remove(file);
}

// --bucket-mb auto (the default on a cluster profile): plan prints, reports and saves the
// bucket it chose; an explicit size wins; train takes the saved one and refuses auto.
TEST(PlanCluster, TheChosenGradientBucketIsReportedAndSaved) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string saved = dir + "/shardscope_bucket_strategy.json";
  const std::string args =
      "plan " + kSamples + "ffn.yaml --devices 64 --batch 256 --cluster dgx-h100 --dtype bf16";
  Output json = Shard(args + " --json --save-strategy " + saved, false);
  ASSERT_EQ(json.code, 0) << json.text;
  const auto j = nlohmann::json::parse(json.text);
  EXPECT_TRUE(j["gradient_bucket_chosen"].get<bool>());
  const double bucket = j["gradient_bucket_bytes"].get<double>();
  EXPECT_GE(bucket, 25 << 20);
  std::ifstream in(saved);
  EXPECT_EQ(nlohmann::json::parse(in)["gradient_bucket_bytes"].get<double>(), bucket);
  Output text = Shard(args);
  EXPECT_NE(text.text.find("gradient buckets:    " + shardscope::FormatBytes(bucket)),
            std::string::npos)
      << text.text;
  Output fixed = Shard(args + " --json --bucket-mb 10", false);
  ASSERT_EQ(fixed.code, 0) << fixed.text;
  const auto f = nlohmann::json::parse(fixed.text);
  EXPECT_FALSE(f["gradient_bucket_chosen"].get<bool>());
  EXPECT_EQ(f["gradient_bucket_bytes"].get<double>(), 10 << 20);
  Output refused = Shard("train " + kSamples + "ffn.yaml --steps 1 --no-record --bucket-mb auto");
  EXPECT_EQ(refused.code, 2) << refused.text;
  EXPECT_NE(refused.text.find("plan --bucket-mb auto --save-strategy"), std::string::npos)
      << refused.text;
  // train reads the saved bucket: a file whose bucket is no size is refused, naming it.
  const std::string bad = dir + "/shardscope_bucket_bad.json";
  std::ofstream(bad) << R"({"operators": [], "gradient_bucket_bytes": "big"})";
  Output unread =
      Shard("train " + kSamples + "ffn.yaml --steps 1 --no-record --load-strategy " + bad);
  EXPECT_EQ(unread.code, 2) << unread.text;
  EXPECT_NE(unread.text.find(bad + ": gradient_bucket_bytes"), std::string::npos) << unread.text;
  std::filesystem::remove(saved);
  std::filesystem::remove(bad);
}

TEST(PlanCluster, ClustersListsTheShippedProfiles) {
  Output o = Shard("clusters", false);
  ASSERT_EQ(o.code, 0) << o.text;
  for (const char* name : {"dgx-a100-80gb", "dgx-h100", "tpu-v4-4x4x4", "this-machine"})
    EXPECT_NE(o.text.find(name), std::string::npos) << name << "\n" << o.text;
  Output one = Shard("clusters dgx-h100", false);
  ASSERT_EQ(one.code, 0);
  EXPECT_NE(one.text.find("https://"), std::string::npos);  // the sources travel with it
}

}  // namespace
