// The reproducers of issue 17 (../shared/repro) that overflowed, aborted or ran away, each
// run through the binary: a clear message naming the file's line (or the option) and the
// figure, exit 2, within seconds.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/limits.h"
#include "run_shardscope.h"

namespace {

using shardscope_cli_test::Output;

const std::string kRepro = std::string(SHARDSCOPE_SOURCE_DIR) + "/../shared/repro/";
const std::string kSamples = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/";

// Runs a shell command line: its exit code (-1 for a signal) and its output.
Output Shell(const std::string& cmd) {
  Output out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.text.append(buf, n);
  const int status = pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// AddressSanitizer reserves terabytes of address space for its shadow memory, so a build
// with it (make test-asan) cannot run under an address-space cap.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
constexpr bool kAddressSanitizer = false;
#endif

// `shardscope <args>` under a watchdog and a cap on address space, so that a regression
// fails the test instead of filling the machine.
Output Shardscope(const std::string& args) {
  return Shell(std::string(kAddressSanitizer ? "" : "ulimit -v 12000000; ") +
               "timeout -s KILL 60 " + SHARDSCOPE_BIN + " " + args + " 2>&1");
}

bool Has(const Output& o, const std::string& text) {
  return o.text.find(text) != std::string::npos;
}

TEST(Repro, ParameterOf2To64ElementsIsRefusedAtItsLine) {
  const Output o = Shardscope("plan " + kRepro + "overflow_param_2pow64.yaml --devices 8");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "overflow_param_2pow64.yaml:6:")) << o.text;
  EXPECT_TRUE(Has(o, "2^64 elements")) << o.text;
  EXPECT_FALSE(Has(o, "memory per device")) << o.text;
}

TEST(Repro, ShapeOf2To66BytesIsRefusedByPlanAndTrain) {
  for (const char* cmd : {"plan", "train"}) {
    const Output o = Shardscope(std::string(cmd) + " " + kRepro +
                                "overflow_param_2pow66_negative_memory.yaml --devices 8 " +
                                (cmd == std::string("train") ? "--steps 1 --no-record" : ""));
    EXPECT_EQ(o.code, 2) << cmd << ": " << o.text;
    EXPECT_TRUE(Has(o, "overflow_param_2pow66_negative_memory.yaml:5:")) << o.text;
    EXPECT_TRUE(Has(o, "2^66 elements, which does not fit in 63 bits")) << o.text;
  }
}

TEST(Repro, TrainingThatCannotFitInMemoryIsRefusedNamingTheFigure) {
  // More than 25 GB per device; the share is lowered where the machine could hold it.
  const int64_t need = 25'000'000'000;
  const int64_t available = shardscope::cli::AvailableMemoryBytes();
  const int percent = available > 0 && available * 0.9 > need ? 1 : 90;
  const Output o =
      Shardscope("train " + kRepro +
                 "big_tensor_2pow31_train_abort.yaml --steps 1 --no-record --resource-limit " +
                 "memory_percent=" + std::to_string(percent));
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "big_tensor_2pow31_train_abort.yaml:5:")) << o.text;
  EXPECT_TRUE(Has(o, "GiB per device x 1 device(s)")) << o.text;
  EXPECT_TRUE(Has(o, "dense1.weight")) << o.text;
}

// `plan` prints the memory per device that `train` checks: one function computes both.
TEST(Repro, PlanAndTrainGiveTheSameMemoryPerDevice) {
  const std::string model = kRepro + "big_tensor_2pow31_train_abort.yaml";
  const Output plan = Shardscope("plan " + model);
  ASSERT_EQ(plan.code, 0) << plan.text;
  const std::string key = "memory per device:   ";
  const size_t at = plan.text.find(key);
  ASSERT_NE(at, std::string::npos) << plan.text;
  const size_t from = at + key.size();
  const std::string figure = plan.text.substr(from, plan.text.find(" (", from) - from);
  const Output train =
      Shardscope("train " + model + " --steps 1 --no-record --resource-limit memory_percent=1");
  EXPECT_EQ(train.code, 2) << train.text;
  EXPECT_TRUE(Has(train, "training needs " + figure + " per device")) << figure << "\n"
                                                                      << train.text;
}

// A placed run (place: workers, pipelined) is checked like an SPMD run, before any worker
// allocates its share.
TEST(Repro, PlacedTrainingThatCannotFitInMemoryIsRefused) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "shardscope_repro_big_placed.yaml").string();
  std::ofstream(path) << "name: big_placed\n"
                         "input: {shape: [65536]}\n"
                         "classes: 10\n"
                         "layers:\n"
                         "  - dense1: {type: Dense, in_channels: 65536, out_channels: 32768}\n"
                         "  - dense2: {type: Dense, in_channels: 32768, out_channels: 10}\n"
                         "training: {batch: 32, steps: 1, seed: 1}\n"
                         "data: {dataset: synthetic, synthetic_size: 64}\n"
                         "parallel: {devices: 2, place: {dense1: 0, dense2: 1}}\n";
  for (const char* micro : {"1", "4"}) {
    const Output o = Shardscope("train " + path + " --steps 1 --no-record --micro-batches " +
                                micro + " --resource-limit memory_percent=1");
    EXPECT_EQ(o.code, 2) << o.text;
    EXPECT_TRUE(Has(o, "shardscope_repro_big_placed.yaml:9:")) << o.text;  // dense1's place
    EXPECT_TRUE(Has(o, "GiB for 2 worker(s) on this machine (worker 0 alone")) << o.text;
    EXPECT_TRUE(Has(o, "dense1.weight")) << o.text;
  }
  std::filesystem::remove(path);
}

TEST(Repro, SyntheticDataSetTooLargeIsRefusedAtSyntheticSize) {
  const Output o =
      Shardscope("train " + kRepro + "model_matmul_relu_213_train.yaml --steps 1 --no-record");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "model_matmul_relu_213_train.yaml:33:")) << o.text;
  EXPECT_TRUE(Has(o, "data.synthetic_size 8589934592 examples")) << o.text;
}

TEST(Repro, MillionInProcessDevicesAreRefusedAtOnce) {
  const Output o = Shardscope("train " + kRepro + "million_devices.yaml --steps 1 --no-record");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "million_devices.yaml:27:")) << o.text;
  EXPECT_TRUE(Has(o, "parallel.devices 1000000")) << o.text;
  EXPECT_TRUE(Has(o, "in_process_devices")) << o.text;
  // The same count from the flag names the flag.
  const Output flag =
      Shardscope("train " + kSamples + "ffn.yaml --devices 5000 --steps 1 --no-record");
  EXPECT_EQ(flag.code, 2) << flag.text;
  EXPECT_TRUE(Has(flag, "--devices 5000")) << flag.text;
}

TEST(Repro, RedistributionOf2To64ElementsIsRefusedNotPlannedAsZeroBytes) {
  const Output o = Shardscope(
      "redistribute --mesh 2,2 --shape 4611686018427387904,4 --from a0,- --to -,a1 "
      "--element-bytes 8");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "--shape")) << o.text;
  EXPECT_TRUE(Has(o, "2^64 elements")) << o.text;
  EXPECT_FALSE(Has(o, "planned 0 B")) << o.text;
  // Bytes x ranks beyond 2^56: refused by the planner itself, not wrapped.
  const Output wide = Shardscope(
      "redistribute --mesh 1024 --shape 70368744177664 --from a0 --to - --element-bytes 8");
  EXPECT_EQ(wide.code, 2) << wide.text;
  EXPECT_TRUE(Has(wide, "over 1024 ranks")) << wide.text;
}

TEST(Repro, LayoutOfTwoBillionRanksIsRefusedAtOnce) {
  const Output o = Shardscope("layout --mesh 46340,46340 --shape 2 --layout -");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "2147395600 ranks")) << o.text;
  EXPECT_TRUE(Has(o, "mesh_ranks")) << o.text;
  // Raised on the command line (after the subcommand too), the limit lets a mesh through.
  const Output raised =
      Shardscope("layout --mesh 2048 --shape 2048 --layout a0 --resource-limit mesh_ranks=4096");
  EXPECT_EQ(raised.code, 0) << raised.text.substr(0, 400);
  const Output lowered =
      Shardscope("layout --mesh 2048 --shape 2048 --layout a0 --resource-limit mesh_ranks=1024");
  EXPECT_EQ(lowered.code, 2) << lowered.text.substr(0, 400);
  const Output unknown =
      Shardscope("--resource-limit nonsense=1 layout --mesh 2 --shape 2 --layout -");
  EXPECT_EQ(unknown.code, 2) << unknown.text;
  EXPECT_TRUE(Has(unknown, "in_process_devices")) << unknown.text;
}

TEST(Repro, PlanRecordTooLargeIsRefusedBeforeWriting) {
  const std::string db =
      (std::filesystem::temp_directory_path() / "shardscope_repro_record.db").string();
  std::filesystem::remove(db);
  const Output o = Shardscope("plan " + kSamples + "network3.yaml --devices 1024 --batch 1024 " +
                              "--record " + db + " --resource-limit record_entries=100000");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "record_entries")) << o.text;
  EXPECT_TRUE(Has(o, "per-rank entries")) << o.text;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(Repro, PartitionerErrorsNameTheStrategysLine) {
  // matmul_relu's strategies use 8 devices.
  const Output o = Shardscope("plan " + kSamples + "matmul_relu.yaml --devices 4");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_TRUE(Has(o, "matmul_relu.yaml:25:")) << o.text;  // the operator's shard: key
  EXPECT_TRUE(Has(o, "operator 'matmul'")) << o.text;
  const Output t =
      Shardscope("train " + kSamples + "matmul_relu.yaml --devices 4 --steps 1 --no-record");
  EXPECT_EQ(t.code, 2) << t.text;
  EXPECT_TRUE(Has(t, "matmul_relu.yaml:25:")) << t.text;
}

TEST(Repro, OutOfMemoryThatSlipsThroughEndsWithAMessageAndExit1) {
  if (kAddressSanitizer) GTEST_SKIP() << "needs an address-space cap, which ASan cannot run under";
  // Too little address space for the MNIST arrays: what the checks cannot foresee.
  const Output o =
      Shell("ulimit -v 250000; " + std::string(SHARDSCOPE_BIN) + " train " + kSamples +
            "lenet5.yaml --data " + SHARDSCOPE_DATASETS_DIR + "/mnist --steps 1 --no-record 2>&1");
  EXPECT_EQ(o.code, 1) << o.text;  // not a signal
  EXPECT_TRUE(Has(o, "error: ")) << o.text;
  EXPECT_TRUE(Has(o, "bad_alloc")) << o.text;
  EXPECT_FALSE(Has(o, "terminate called")) << o.text;
}

TEST(Repro, RootHelpListsTheLimits) {
  const Output o = Shardscope("--help");
  EXPECT_EQ(o.code, 0);
  for (const char* name : {"in_process_devices", "memory_percent", "mesh_ranks", "record_entries"})
    EXPECT_TRUE(Has(o, name)) << o.text;
}

}  // namespace
