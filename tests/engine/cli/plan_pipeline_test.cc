// `plan --pipeline` and `train --pipeline` as a user runs them (issue 20): the stages in text
// and JSON, auto's choice agreeing with its own figures and with memory, the refusals, and
// training on the planner's stages printing the single-device losses, in-process and under
// mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_shardscope.h"
#include "shardscope/store/reader.h"

namespace {

using shardscope_cli_test::RunCommand;
using shardscope_cli_test::Shardscope;

const std::string kMlp = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/mlp_pipeline.yaml";
const std::string kFfn = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/ffn.yaml";
const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

nlohmann::json PlanJson(const std::string& args) {
  auto out = Shardscope("plan " + args + " --json", /*merge_stderr=*/false);
  EXPECT_EQ(out.code, 0) << out.text;
  return out.code == 0 ? nlohmann::json::parse(out.text) : nlohmann::json::object();
}

TEST(PlanPipeline, StagesInJsonAndText) {
  const nlohmann::json j = PlanJson(kMlp + " --pipeline 4");
  ASSERT_TRUE(j.contains("pipeline")) << j.dump(2);
  const nlohmann::json& p = j["pipeline"];
  EXPECT_EQ(j["parallelism"], "pipeline");
  ASSERT_EQ(p["stages"], 4);
  ASSERT_EQ(p["stage"].size(), 4u);
  const int m = p["micro_batches"];
  EXPECT_EQ(64 % m, 0);
  EXPECT_EQ(p["micro_batch"].get<int>() * m, 64);
  EXPECT_DOUBLE_EQ(p["bubble_fraction"].get<double>(), 3.0 / (m + 3));
  EXPECT_EQ(p["stage"][0]["first"], "flatten");
  EXPECT_EQ(p["stage"][3]["last"], "loss");
  double slowest = 0;
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(p["stage"][s]["devices"], nlohmann::json::array({s}));
    EXPECT_GT(p["stage"][s]["memory_bytes"].get<int64_t>(), 0);
    EXPECT_GT(p["stage"][s]["transfer_seconds"].get<double>(), 0);
    slowest = std::max(slowest, p["stage"][s]["compute_seconds"].get<double>() +
                                    p["stage"][s]["transfer_seconds"].get<double>());
  }
  EXPECT_DOUBLE_EQ(p["slowest_stage_seconds"].get<double>(), slowest);
  // The step is (M + p - 1) slowest stages plus an optimizer update, and is what plan predicts.
  EXPECT_GE(p["step_seconds"].get<double>(), (m + 3) * slowest);
  EXPECT_DOUBLE_EQ(j["predicted_step_seconds"].get<double>(), p["step_seconds"].get<double>());
  EXPECT_GT(j["operator_level_step_seconds"].get<double>(), 0);

  auto text = Shardscope("plan " + kMlp + " --pipeline 4");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_NE(text.text.find("pipeline: 4 stages (one device each), " + std::to_string(m) +
                           " micro-batches"),
            std::string::npos)
      << text.text;
  EXPECT_NE(text.text.find("chosen: the pipeline stages"), std::string::npos) << text.text;
}

TEST(PlanPipeline, AutoPicksByItsOwnFiguresAndByMemory) {
  const nlohmann::json j = PlanJson(kMlp + " --pipeline auto");
  const double pipe = j["pipeline"]["step_seconds"], flat = j["operator_level_step_seconds"];
  EXPECT_EQ(j["parallelism"], pipe < flat ? "pipeline" : "operator") << j.dump(2);
  // A budget the pipeline's stages fit and the whole model only with a memory option (ZeRO):
  // auto weighs the pipeline against that operator-level plan, by their figures.
  const double stage = j["pipeline"]["max_memory_bytes"];
  const double whole = j["operator_level_memory_per_device_bytes"];
  ASSERT_GT(whole, stage);  // every parameter on each device, against a quarter of them
  {
    const double budget_mb = (stage + (whole - stage) / 2) / 1e6;
    const nlohmann::json b =
        PlanJson(kMlp + " --pipeline auto --memory-budget " + std::to_string(budget_mb));
    EXPECT_TRUE(b["pipeline"]["fits"].get<bool>());
    EXPECT_TRUE(b["memory"]["fits"].get<bool>());
    EXPECT_GT(b["memory"]["optimizer_sharding"].get<int>(), 0);
    const double pipe_b = b["pipeline"]["step_seconds"], flat_b = b["operator_level_step_seconds"];
    EXPECT_GT(flat_b, flat);  // the memory option costs time
    EXPECT_EQ(b["parallelism"], pipe_b < flat_b ? "pipeline" : "operator") << b.dump(2);
    EXPECT_DOUBLE_EQ(b["predicted_step_seconds"].get<double>(), std::min(pipe_b, flat_b));
  }
  // The model file's parallel.pipeline: auto asks the same without the flag.
  const nlohmann::json file = PlanJson(kMlp);
  EXPECT_EQ(file["parallelism"], j["parallelism"]);
  EXPECT_EQ(file["pipeline"]["micro_batches"], j["pipeline"]["micro_batches"]);
  // Too few layers for a stage per device: the operator-level plan, with the reason.
  const nlohmann::json f = PlanJson(kFfn + " --devices 8 --pipeline auto");
  EXPECT_EQ(f["parallelism"], "operator");
  EXPECT_NE(f["pipeline"]["not_possible"].get<std::string>().find("the model has 5"),
            std::string::npos)
      << f.dump(2);
}

// Four equal layers under SGD on 4 devices: data-parallel under ZeRO 1, every device keeps
// every gradient whole, a stage only its own layer's.
std::string DeepModel() {
  const std::string path =
      (std::filesystem::temp_directory_path() / "shardscope_pipeline_deep.yaml").string();
  std::ofstream out(path);
  out << "name: deep\ninput: {shape: [1, 16, 32]}\nclasses: 10\nlayers:\n  - flatten: Flatten\n";
  for (int i = 1; i <= 4; ++i)
    out << "  - fc" << i << ": {type: Dense, in_channels: 512, out_channels: 512}\n"
        << (i == 1 ? "  - relu: ReLU\n" : "  - relu\n");
  out << "  - fc5: {type: Dense, in_channels: 512, out_channels: 10}\n"
         "loss: softmax_cross_entropy\noptimizer: {type: sgd, lr: 0.01}\n"
         "training: {batch: 8, epochs: 1, seed: 1}\n"
         "data: {dataset: synthetic, synthetic_size: 64}\nparallel:\n  devices: 4\n";
  return path;
}

TEST(PlanPipeline, AutoRescuesAModelOnlyThePipelineFits) {
  // The user asks for ZeRO 1 (ZeRO 3 would shard every layer as well as the stages do).
  const std::string model = DeepModel() + " --search semi_auto --optimizer-sharding 1";
  const nlohmann::json least = PlanJson(model + " --pipeline auto --recompute");
  const double flat = least["operator_level_memory_per_device_bytes"];
  const double stage = least["pipeline"]["max_memory_bytes"];
  ASSERT_LT(stage, flat) << least.dump(2);
  const std::string budget = " --memory-budget " + std::to_string((stage + flat) / 2 / 1e6);
  // Without stages no recomputation fits: exit 2 naming the largest consumer.
  const auto refused = Shardscope("plan " + model + budget);
  EXPECT_EQ(refused.code, 2) << refused.text;
  EXPECT_NE(refused.text.find("the largest consumer is "), std::string::npos) << refused.text;
  // auto prices the stages and takes them.
  const nlohmann::json j = PlanJson(model + " --pipeline auto" + budget);
  EXPECT_EQ(j["parallelism"], "pipeline") << j.dump(2);
  EXPECT_TRUE(j["pipeline"]["fits"].get<bool>());
  EXPECT_FALSE(j["memory"]["fits"].get<bool>());
  EXPECT_LE(j["memory_per_device_bytes"].get<double>(), (stage + flat) / 2);
}

TEST(PlanPipeline, RefusesWhatIsNotBuilt) {
  auto uneven = Shardscope("plan " + kMlp + " --devices 6 --pipeline 4");
  EXPECT_EQ(uneven.code, 2) << uneven.text;
  EXPECT_NE(uneven.text.find("must divide the devices"), std::string::npos) << uneven.text;
  auto bad = Shardscope("plan " + kMlp + " --pipeline often");
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_NE(bad.text.find("auto, or a number of stages"), std::string::npos) << bad.text;
  auto train = Shardscope("train " + kMlp + " --pipeline 4 --micro-batches 2 --steps 1");
  EXPECT_EQ(train.code, 2) << train.text;
}

std::vector<std::string> Losses(const std::string& text) {
  std::vector<std::string> out;
  for (size_t p = text.find("loss "); p != std::string::npos; p = text.find("loss ", p + 1)) {
    if (p + 5 < text.size() && std::isdigit(static_cast<unsigned char>(text[p + 5])))
      out.push_back(text.substr(p, 11));  // a step's loss, not the loss operator in a table
  }
  return out;
}

// The model file's `pipeline: auto` or --pipeline 4: trained on the planner's stages, the
// single-device losses.
TEST(TrainPipeline, PrintsTheSingleDeviceLosses) {
  const std::string args =
      "train " + kMlp + " --data " + kMnist + " --steps 5 --limit 640 --log-every 1 --no-record";
  auto one = Shardscope(args + " --ignore-parallel --devices 1");
  auto staged = Shardscope(args + " --pipeline 4");
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(staged.code, 0) << staged.text;
  EXPECT_NE(staged.text.find("4 worker(s)"), std::string::npos) << staged.text;
  EXPECT_NE(staged.text.find("(1f1b)"), std::string::npos) << staged.text;
  EXPECT_GE(Losses(one.text).size(), 5u);
  EXPECT_EQ(Losses(one.text), Losses(staged.text)) << one.text << "\n----\n" << staged.text;
  auto mpi = RunCommand(std::string(MPIEXEC) + " --allow-run-as-root --oversubscribe -np 4 " +
                        SHARDSCOPE_BIN + " " + args + " --pipeline 4");
  ASSERT_EQ(mpi.code, 0) << mpi.text;
  EXPECT_NE(mpi.text.find("(MPI, placed)"), std::string::npos) << mpi.text;
  EXPECT_EQ(Losses(one.text), Losses(mpi.text)) << one.text << "\n----\n" << mpi.text;
}

// --pipeline 2 on 4 devices: 2 stages of 2 devices, each stage's operators sharded over its
// own pair; priced as 1F1B and trained with the single-device losses, in-process and under mpirun.
TEST(PlanPipeline, StagesOfSeveralDevices) {
  const nlohmann::json j = PlanJson(kMlp + " --devices 4 --pipeline 2");
  ASSERT_TRUE(j.contains("pipeline")) << j.dump(2);
  const nlohmann::json& p = j["pipeline"];
  EXPECT_EQ(j["parallelism"], "pipeline");
  ASSERT_EQ(p["stages"], 2);
  EXPECT_EQ(p["stage_devices"], 2);
  ASSERT_EQ(p["stage"].size(), 2u);
  EXPECT_EQ(p["stage"][0]["devices"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(p["stage"][1]["devices"], nlohmann::json::array({2, 3}));
  const int m = p["micro_batches"];
  EXPECT_DOUBLE_EQ(p["bubble_fraction"].get<double>(), 1.0 / (m + 1));
  double slowest = 0;
  for (int s = 0; s < 2; ++s) {
    EXPECT_GT(p["stage"][s]["compute_seconds"].get<double>(), 0);
    EXPECT_GT(p["stage"][s]["transfer_seconds"].get<double>(), 0);
    EXPECT_GT(p["stage"][s]["memory_bytes"].get<int64_t>(), 0);
    slowest = std::max(slowest, p["stage"][s]["compute_seconds"].get<double>() +
                                    p["stage"][s]["transfer_seconds"].get<double>());
  }
  EXPECT_DOUBLE_EQ(p["slowest_stage_seconds"].get<double>(), slowest);
  EXPECT_GE(p["step_seconds"].get<double>(), (m + 1) * slowest);
  // auto weighs every stage count dividing the devices: at least as cheap as --pipeline 2 and 4.
  const nlohmann::json any = PlanJson(kMlp + " --devices 4 --pipeline auto");
  const nlohmann::json four = PlanJson(kMlp + " --devices 4 --pipeline 4");
  EXPECT_LE(any["pipeline"]["step_seconds"].get<double>(), p["step_seconds"].get<double>());
  EXPECT_LE(any["pipeline"]["step_seconds"].get<double>(),
            four["pipeline"]["step_seconds"].get<double>());
  auto text = Shardscope("plan " + kMlp + " --devices 4 --pipeline 2");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_NE(text.text.find("pipeline: 2 stages (2 devices each)"), std::string::npos) << text.text;
}

TEST(TrainPipeline, StagesOfSeveralDevicesPrintTheSingleDeviceLosses) {
  const std::string args =
      "train " + kMlp + " --data " + kMnist + " --steps 4 --limit 640 --log-every 1 --no-record";
  auto one = Shardscope(args + " --ignore-parallel --devices 1");
  auto staged = Shardscope(args + " --devices 4 --pipeline 2");
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(staged.code, 0) << staged.text;
  EXPECT_NE(staged.text.find("2 stages x 2 devices (in-process)"), std::string::npos)
      << staged.text;
  EXPECT_GE(Losses(one.text).size(), 4u);
  EXPECT_EQ(Losses(one.text), Losses(staged.text)) << one.text << "\n----\n" << staged.text;
}

// ZeRO 1 and recomputation inside stages of 2 devices: basic_blocks.yaml's blocks replay their
// forward in the backward (gelu's gradient reads dense1's dropped output); the same losses.
TEST(TrainPipeline, ZeroOneAndRecomputeInsideStagesOfSeveralDevices) {
  const std::string args = "train " + std::string(SHARDSCOPE_SOURCE_DIR) +
                           "/samples/models/basic_blocks.yaml --steps 4 --log-every 1 "
                           "--no-record --ignore-parallel";
  auto one = Shardscope(args + " --devices 1");
  auto staged = Shardscope(args + " --devices 4 --pipeline 2 --optimizer-sharding 1 --recompute");
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(staged.code, 0) << staged.text;
  EXPECT_NE(staged.text.find("2 stages x 2 devices (in-process)"), std::string::npos)
      << staged.text;
  EXPECT_GE(Losses(one.text).size(), 4u);
  EXPECT_EQ(Losses(one.text), Losses(staged.text)) << one.text << "\n----\n" << staged.text;
  // Priced as run: ZeRO 1 slices the momentum of the data-parallel stages' parameters.
  const nlohmann::json zero = PlanJson(kMlp + " --devices 4 --pipeline 2 --optimizer-sharding 1");
  const nlohmann::json plain = PlanJson(kMlp + " --devices 4 --pipeline 2 --optimizer-sharding 0");
  EXPECT_LT(zero["pipeline"]["max_memory_bytes"].get<int64_t>(),
            plain["pipeline"]["max_memory_bytes"].get<int64_t>());
}

TEST(TrainPipeline, StagesOfSeveralDevicesUnderMpirun) {
  const std::string args =
      "train " + kMlp + " --data " + kMnist + " --steps 4 --limit 640 --log-every 1 --no-record";
  auto one = Shardscope(args + " --ignore-parallel --devices 1");
  ASSERT_EQ(one.code, 0) << one.text;
  auto mpi = RunCommand(std::string(MPIEXEC) + " --allow-run-as-root --oversubscribe -np 4 " +
                        SHARDSCOPE_BIN + " " + args + " --pipeline 2");
  ASSERT_EQ(mpi.code, 0) << mpi.text;
  EXPECT_NE(mpi.text.find("2 stages x 2 devices (MPI)"), std::string::npos) << mpi.text;
  EXPECT_EQ(Losses(one.text), Losses(mpi.text)) << one.text << "\n----\n" << mpi.text;
}

// place() combined with strategies: each worker a stage of 2 devices sharded by the model's
// strategies; the single-device losses, and the refusals naming what to change.
const std::string kPlacedSharded =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/mlp_place_sharded.yaml";

TEST(TrainPlacedSharded, PrintsTheSingleDeviceLosses) {
  const std::string args = "train " + kPlacedSharded + " --data " + kMnist +
                           " --steps 4 --limit 640 --log-every 1 --no-record";
  auto one = Shardscope(args + " --ignore-parallel --devices 1");
  auto placed = Shardscope(args + " --micro-batches 2");
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(placed.code, 0) << placed.text;
  EXPECT_NE(placed.text.find("2 stages x 2 devices (in-process)"), std::string::npos)
      << placed.text;
  EXPECT_GE(Losses(one.text).size(), 4u);
  EXPECT_EQ(Losses(one.text), Losses(placed.text)) << one.text << "\n----\n" << placed.text;
  auto producer = Shardscope(args + " --unplaced producer");  // the same stages
  ASSERT_EQ(producer.code, 0) << producer.text;
  EXPECT_EQ(Losses(one.text), Losses(producer.text)) << producer.text;
  auto one_each = Shardscope(args + " --unplaced producer --devices 2");
  EXPECT_EQ(one_each.code, 2) << one_each.text;
  EXPECT_NE(one_each.text.find("--devices 4"), std::string::npos) << one_each.text;
}

// `plan` prices place with strategies as --pipeline prices stages: 1F1B over the workers'
// stages, each sharded over its own pair; the same figures in --json, text and --record.
TEST(PlanPlacedSharded, PricesTheStagesAsTrainRunsThem) {
  const nlohmann::json j = PlanJson(kPlacedSharded + " --micro-batches 2");
  ASSERT_TRUE(j.contains("pipeline")) << j.dump(2);
  const nlohmann::json& p = j["pipeline"];
  EXPECT_EQ(j["parallelism"], "pipeline");
  EXPECT_EQ(p["stages"], 2);
  EXPECT_EQ(p["stage_devices"], 2);
  EXPECT_EQ(p["micro_batches"], 2);
  EXPECT_EQ(p["stage"][0]["first"], "flatten");
  EXPECT_EQ(p["stage"][1]["first"], "fc3.matmul");
  EXPECT_EQ(p["stage"][1]["devices"], nlohmann::json::array({2, 3}));
  double slowest = 0;
  int64_t memory = 0;
  for (int s = 0; s < 2; ++s) {
    EXPECT_GT(p["stage"][s]["compute_seconds"].get<double>(), 0);
    EXPECT_GT(p["stage"][s]["transfer_seconds"].get<double>(), 0);  // the activation crosses
    slowest = std::max(slowest, p["stage"][s]["compute_seconds"].get<double>() +
                                    p["stage"][s]["transfer_seconds"].get<double>());
    memory = std::max(memory, p["stage"][s]["memory_bytes"].get<int64_t>());
  }
  EXPECT_DOUBLE_EQ(p["slowest_stage_seconds"].get<double>(), slowest);
  EXPECT_GE(p["step_seconds"].get<double>(), 3 * slowest);  // (M + p - 1) slowest + update
  EXPECT_DOUBLE_EQ(j["predicted_step_seconds"].get<double>(), p["step_seconds"].get<double>());
  EXPECT_EQ(j["memory_per_device_bytes"].get<int64_t>(), memory);
  // Without --micro-batches the cheapest count up to 4 x 2 that divides the batch of 32.
  const nlohmann::json best = PlanJson(kPlacedSharded);
  EXPECT_LE(best["predicted_step_seconds"].get<double>(), p["step_seconds"].get<double>());
  EXPECT_LE(best["pipeline"]["micro_batches"].get<int>(), 8);
  // ZeRO 1 inside the stages: less memory on the data-parallel stage 0.
  const nlohmann::json zero =
      PlanJson(kPlacedSharded + " --micro-batches 2 --optimizer-sharding 1");
  EXPECT_LT(zero["pipeline"]["stage"][0]["memory_bytes"].get<int64_t>(),
            p["stage"][0]["memory_bytes"].get<int64_t>());
  auto text = Shardscope("plan " + kPlacedSharded + " --micro-batches 2");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_NE(text.text.find("pipeline: 2 stages (2 devices each), 2 micro-batches"),
            std::string::npos)
      << text.text;
  const std::string run =
      (std::filesystem::temp_directory_path() / "plan_placed_sharded_test.db").string();
  auto recorded =
      Shardscope("plan " + kPlacedSharded + " --micro-batches 2 --record " + run + " --overwrite");
  ASSERT_EQ(recorded.code, 0) << recorded.text;
  auto reader = shardscope::store::RunReader::Open(run);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const auto info = (*reader)->Run();
  ASSERT_TRUE(info.ok());
  const nlohmann::json config = nlohmann::json::parse(info->config_json);
  EXPECT_DOUBLE_EQ(config["predicted_step_seconds"].get<double>(),
                   j["predicted_step_seconds"].get<double>());
  EXPECT_EQ(config["pipeline"], j["pipeline"]);
  std::filesystem::remove(run);
  auto bad = Shardscope("plan " + kPlacedSharded + " --devices 2");
  EXPECT_EQ(bad.code, 2) << bad.text;
  const size_t at = bad.text.find("mlp_place_sharded.yaml:");  // names the place line
  ASSERT_NE(at, std::string::npos) << bad.text;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(bad.text[at + 23]))) << bad.text;
  EXPECT_NE(bad.text.find("--devices 4"), std::string::npos) << bad.text;
}

// ZeRO 1-3 and recomputation inside the stages keep the single-device losses.
TEST(TrainPlacedSharded, ZeroAndRecomputeInsideStages) {
  const std::string args = "train " + kPlacedSharded + " --data " + kMnist +
                           " --steps 4 --limit 640 --log-every 1 --no-record";
  auto one = Shardscope(args + " --ignore-parallel --devices 1");
  ASSERT_EQ(one.code, 0) << one.text;
  EXPECT_GE(Losses(one.text).size(), 4u);
  for (const char* options : {" --micro-batches 2 --optimizer-sharding 1 --recompute",
                              " --micro-batches 2 --optimizer-sharding 2",
                              " --micro-batches 4 --optimizer-sharding 3 --recompute"}) {
    auto zero = Shardscope(args + options);
    ASSERT_EQ(zero.code, 0) << options << "\n" << zero.text;
    EXPECT_EQ(Losses(one.text), Losses(zero.text)) << options << "\n" << zero.text;
  }
}

TEST(TrainPlacedSharded, ZeroTwoAndThreeInsideStagesUnderMpirun) {
  const std::string args = "train " + kPlacedSharded + " --data " + kMnist +
                           " --steps 4 --limit 640 --log-every 1 --no-record";
  auto one = Shardscope(args + " --ignore-parallel --devices 1");
  ASSERT_EQ(one.code, 0) << one.text;
  for (const char* options :
       {" --micro-batches 2 --optimizer-sharding 2", " --optimizer-sharding 3 --recompute"}) {
    auto mpi = RunCommand(std::string(MPIEXEC) + " --allow-run-as-root --oversubscribe -np 4 " +
                          SHARDSCOPE_BIN + " " + args + options);
    ASSERT_EQ(mpi.code, 0) << options << "\n" << mpi.text;
    EXPECT_NE(mpi.text.find("2 stages x 2 devices (MPI)"), std::string::npos) << mpi.text;
    EXPECT_EQ(Losses(one.text), Losses(mpi.text)) << options << "\n" << mpi.text;
  }
}

// ZeRO inside the stages priced as SubMeshTrainer runs it. Stage 0 is data-parallel: ZeRO 2
// drops its per-micro-batch gradient all-reduces for one reduce-scatter a step (after the
// update's all-gathers), ZeRO 3 gathers the weights per micro-batch instead of after the update.
TEST(PlanPlacedSharded, PricesZeroInsideStagesAsTrainRunsIt) {
  std::vector<nlohmann::json> stage0;
  for (int zero = 0; zero <= 3; ++zero) {
    const nlohmann::json j = PlanJson(kPlacedSharded + " --micro-batches 4 --optimizer-sharding " +
                                      std::to_string(zero));
    ASSERT_TRUE(j.contains("pipeline")) << j.dump(2);
    const nlohmann::json& p = j["pipeline"];
    EXPECT_EQ(p["optimizer_sharding"], zero);
    double slowest = 0, update = 0;
    for (const auto& s : p["stage"]) {
      slowest = std::max(slowest,
                         s["compute_seconds"].get<double>() + s["transfer_seconds"].get<double>());
      update = std::max(update, s["update_seconds"].get<double>());
      EXPECT_GT(s["update_seconds"].get<double>(), 0);
    }
    EXPECT_NEAR(p["step_seconds"].get<double>(), (4 + 2 - 1) * slowest + update,
                1e-12 + 1e-9 * update);
    stage0.push_back(p["stage"][0]);
  }
  const auto at = [&](int zero, const char* key) { return stage0[zero][key].get<double>(); };
  EXPECT_LT(at(1, "memory_bytes"), at(0, "memory_bytes"));
  EXPECT_LT(at(2, "memory_bytes"), at(1, "memory_bytes"));
  EXPECT_LT(at(2, "compute_seconds"), at(1, "compute_seconds"));  // no all-reduce per micro-batch
  EXPECT_GT(at(2, "update_seconds"), at(1, "update_seconds"));    // its reduce-scatter
  EXPECT_GT(at(3, "compute_seconds"), at(2, "compute_seconds"));  // gathers per micro-batch
  EXPECT_LT(at(3, "update_seconds"), at(2, "update_seconds"));    // no all-gather after it
  auto text = Shardscope("plan " + kPlacedSharded + " --micro-batches 4 --optimizer-sharding 3");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_NE(text.text.find("inside each stage: ZeRO 3"), std::string::npos) << text.text;
  EXPECT_NE(text.text.find("update us"), std::string::npos) << text.text;
}

TEST(TrainPlacedSharded, PrintsTheSingleDeviceLossesUnderMpirun) {
  const std::string args = "train " + kPlacedSharded + " --data " + kMnist +
                           " --steps 4 --limit 640 --log-every 1 --no-record";
  auto one = Shardscope(args + " --ignore-parallel --devices 1");
  ASSERT_EQ(one.code, 0) << one.text;
  auto mpi = RunCommand(std::string(MPIEXEC) + " --allow-run-as-root --oversubscribe -np 4 " +
                        SHARDSCOPE_BIN + " " + args);
  ASSERT_EQ(mpi.code, 0) << mpi.text;
  EXPECT_NE(mpi.text.find("2 stages x 2 devices (MPI)"), std::string::npos) << mpi.text;
  EXPECT_EQ(Losses(one.text), Losses(mpi.text)) << one.text << "\n----\n" << mpi.text;
}

}  // namespace
