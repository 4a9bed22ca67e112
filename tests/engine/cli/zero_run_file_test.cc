// ZeRO 2 and 3 as `train` runs them, in-process and under mpirun: the run file's planned
// memory per device (config.memory) is the busiest rank's measured peak plus the whole
// largest parameter initialisation draws, the measured gradients are slices, and every
// rank's timed steps hold its buckets' reduce-scatters (stage 3: its parameter gathers) as
// spans, which `trace` and `inspect --rank` show.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "run_shardscope.h"
#include "shardscope/store/reader.h"

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::RunCommand;
using shardscope_cli_test::Shardscope;

std::string Temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("shardscope_zero_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Data parallel over whatever device count runs it; a 10-wide bias no group of 4 tiles.
std::string ModelFile() {
  const std::string path = Temp("model.yaml");
  std::ofstream(path) << "name: zero\n"
                         "input: {shape: [1, 6, 8]}\n"
                         "classes: 10\n"
                         "layers:\n"
                         "  - flatten: Flatten\n"
                         "  - dense1: {type: Dense, in_channels: 48, out_channels: 64}\n"
                         "  - gelu: GELU\n"
                         "  - dense2: {type: Dense, in_channels: 64, out_channels: 10}\n"
                         "loss: softmax_cross_entropy\n"
                         "optimizer: {type: adam, lr: 0.001}\n"
                         "training: {batch: 64, epochs: 1, seed: 1}\n"
                         "data: {dataset: synthetic, synthetic_size: 256}\n"
                         "parallel:\n"
                         "  mode: data_parallel\n";
  return path;
}

struct Recorded {
  int64_t planned = 0, initialisation = 0;
  int64_t peak = 0, grads = 0;  // the busiest rank's, at the last step
  // Spans of a timed step, per rank: ZeRO's reduce-scatters and gathers.
  std::vector<int64_t> scatters, gathers;
};

// What `trace` and `inspect --rank 1` make of the run's ZeRO spans.
void ExpectShown(const std::string& run, const Recorded& r) {
  const std::string json = run + ".json";
  const Output trace = Shardscope("trace " + run + " --out " + json);
  ASSERT_EQ(trace.code, 0) << trace.text;
  std::ifstream in(json);
  const nlohmann::json events = nlohmann::json::parse(in).at("traceEvents");
  std::vector<int64_t> scatters(r.scatters.size()), gathers(r.gathers.size());
  for (const nlohmann::json& e : events) {
    if (e.value("cat", "") == "grad_scatter") {
      EXPECT_EQ(e.at("name"), "reduce-scatter (ZeRO bucket)");
      ++scatters.at(e.at("tid").get<size_t>());
    }
    if (e.value("cat", "") == "param_gather") ++gathers.at(e.at("tid").get<size_t>());
  }
  std::filesystem::remove(json);
  for (size_t rank = 0; rank < r.scatters.size(); ++rank) {  // the two timed steps
    EXPECT_EQ(scatters[rank], 2 * r.scatters[rank]) << "rank " << rank;
    EXPECT_EQ(gathers[rank], 2 * r.gathers[rank]) << "rank " << rank;
  }
  const Output inspect = Shardscope("inspect " + run + " --rank 1");
  ASSERT_EQ(inspect.code, 0) << inspect.text;
  EXPECT_NE(inspect.text.find("reduce-scatter (ZeRO bucket)"), std::string::npos) << inspect.text;
}

// Trains with `stage` by `launcher` ("" in-process, else an mpirun prefix) and reads the run.
// `flags`: more of train's (--no-overlap).
Recorded Train(const std::string& launcher, const std::string& devices, int stage,
               const std::string& flags = "") {
  Recorded r;
  const std::string run = Temp("s" + std::to_string(stage) + (launcher.empty() ? "" : "m") + ".db");
  // Buckets of 2 KiB: two of two gradients each.
  const std::string args = "train " + ModelFile() + devices + " --steps 3 --optimizer-sharding " +
                           std::to_string(stage) + " --bucket-mb 0.002 --record " + run +
                           " --overwrite" + flags;
  const Output o = launcher.empty() ? Shardscope(args) : RunCommand(launcher + " " + args);
  EXPECT_EQ(o.code, 0) << o.text;
  if (o.code != 0) return r;
  auto reader = shardscope::store::RunReader::Open(run);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return r;
  const auto info = (*reader)->Run();
  EXPECT_TRUE(info.ok());
  if (!info.ok()) return r;
  const nlohmann::json memory = nlohmann::json::parse(info->config_json).at("memory");
  r.planned = memory.at("per_device_bytes").get<int64_t>();
  r.initialisation = memory.at("initialisation_bytes").get<int64_t>();
  for (int64_t rank = 0; rank < info->devices; ++rank) {
    const auto series = (*reader)->RankSeries(rank);
    EXPECT_TRUE(series.ok() && !series->empty());
    if (!series.ok() || series->empty()) continue;
    r.peak = std::max(r.peak, series->back().second.peak_bytes);
    r.grads = std::max(r.grads, series->back().second.grad_bytes);
    const auto spans = (*reader)->InstructionSpans(2, 2, rank);
    EXPECT_TRUE(spans.ok());
    r.scatters.push_back(0);
    r.gathers.push_back(0);
    for (const auto& s : spans.ok() ? *spans : decltype(*spans){}) {
      r.scatters.back() += s.kind == "grad_scatter";
      r.gathers.back() += s.kind == "param_gather";
    }
  }
  if (stage >= 2) ExpectShown(run, r);
  std::filesystem::remove(run);
  return r;
}

// `dp` devices, all data-parallel: a gradient slice is 1/dp of a gradient, rounded up.
void ExpectPlannedIsMeasured(const std::string& launcher, const std::string& devices, int dp) {
  const Recorded whole = Train(launcher, devices, 1);
  EXPECT_EQ(whole.planned, whole.peak + whole.initialisation);
  for (int64_t n : whole.scatters) EXPECT_EQ(n, 0);
  for (int stage : {2, 3}) {
    const Recorded blocking = Train(launcher, devices, stage, " --no-overlap");
    for (const bool overlap : {false, true}) {
      const Recorded r = overlap ? Train(launcher, devices, stage) : blocking;
      SCOPED_TRACE(std::string(overlap ? "overlapped" : "blocking") + " stage " +
                   std::to_string(stage) + " " + launcher);
      ASSERT_EQ(r.scatters.size(), static_cast<size_t>(dp));
      for (size_t rank = 0; rank < r.scatters.size(); ++rank) {
        // 4 gradients in 2 buckets (overlapped: each started, then waited for); stage 3
        // gathers each parameter before forward and backward (a bias, read once, for one).
        EXPECT_EQ(r.scatters[rank], overlap ? 4 : 2) << "rank " << rank;
        EXPECT_EQ(r.gathers[rank] > 0, stage == 3) << "rank " << rank;
      }
      EXPECT_EQ(r.planned, r.peak + r.initialisation);
      // Blocking stage 3, below stage 1 (stage 2 keeps each gradient whole until its bucket
      // is reduce-scattered, stage 1 reduces each once complete: either may be lower);
      // overlapped, a bucket more at most (less than every gradient).
      if (overlap)
        EXPECT_LT(r.planned, blocking.planned + whole.grads);
      else if (stage == 3)
        EXPECT_LT(r.planned, whole.planned);
      EXPECT_LT(r.grads, whole.grads);
      EXPECT_LE(r.grads * dp, whole.grads + 4 * 4 * dp);  // 4 parameters
    }
  }
}

TEST(ZeroRunFile, PlannedMemoryIsTheMeasuredPeakInProcess) {
  ExpectPlannedIsMeasured("", " --devices 4", 4);
}

// Recomputation replays forward instructions, which then run twice in a step (and gather
// their stage-3 parameters again): every span is still recorded, each under its own key.
TEST(ZeroRunFile, RecomputedStepsRecordEverySpan) {
  const std::string run = Temp("recompute.db");
  const Output o = Shardscope(
      "train " + ModelFile() +
      " --devices 4 --steps 2 --optimizer-sharding 3 --recompute --record " + run + " --overwrite");
  ASSERT_EQ(o.code, 0) << o.text;
  auto reader = shardscope::store::RunReader::Open(run);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const auto spans = (*reader)->InstructionSpans(2, 2, 0);
  ASSERT_TRUE(spans.ok());
  std::map<int64_t, int64_t> computes;  // per instruction
  int64_t gathers = 0;
  for (const auto& s : *spans) {
    computes[s.ordinal] += s.kind == "compute";
    gathers += s.kind == "param_gather";
  }
  int64_t replayed = 0;
  for (const auto& [ordinal, n] : computes) replayed += n == 2;
  EXPECT_GT(replayed, 0);
  EXPECT_GT(gathers, 0);
  std::filesystem::remove(run);
}

TEST(ZeroRunFile, PlannedMemoryIsTheMeasuredPeakUnderMpirun) {
  ExpectPlannedIsMeasured(
      std::string(MPIEXEC) + " -np 2 --allow-run-as-root --oversubscribe " + SHARDSCOPE_BIN, "", 2);
}

// Each rank's spans of timed step 2 of a ZeRO 2 run by `launcher` with `flags`.
std::vector<std::vector<shardscope::store::InstructionSpanRecord>> StepSpans(
    const std::string& launcher, const std::string& flags) {
  std::vector<std::vector<shardscope::store::InstructionSpanRecord>> out;
  const std::string run = Temp("spans.db");
  const Output o = RunCommand(launcher + " train " + ModelFile() +
                              " --steps 3 --optimizer-sharding 2 --bucket-mb 0.002 --record " +
                              run + " --overwrite" + flags);
  EXPECT_EQ(o.code, 0) << o.text;
  auto reader = shardscope::store::RunReader::Open(run);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (o.code != 0 || !reader.ok()) return out;
  for (int64_t rank = 0; rank < 2; ++rank) {
    auto spans = (*reader)->InstructionSpans(2, 2, rank);
    EXPECT_TRUE(spans.ok());
    out.push_back(spans.ok() ? *spans : decltype(out)::value_type{});
  }
  std::filesystem::remove(run);
  return out;
}

// Overlapped (the default), a bucket's reduce-scatter starts during the backward and the
// backward's next instructions run before its wait; with --no-overlap each blocks: one span,
// during which nothing else runs.
TEST(ZeroRunFile, ReduceScattersOverlapTheBackwardUnderMpirun) {
  const std::string mpirun =
      std::string(MPIEXEC) + " -np 2 --allow-run-as-root --oversubscribe " + SHARDSCOPE_BIN;
  for (const std::string& flags : {std::string(), std::string(" --no-overlap")}) {
    SCOPED_TRACE("flags '" + flags + "'");
    const bool overlap = flags.empty();
    const auto ranks = StepSpans(mpirun, flags);
    ASSERT_EQ(ranks.size(), 2u);
    for (size_t rank = 0; rank < ranks.size(); ++rank) {
      std::map<int64_t, std::vector<shardscope::store::InstructionSpanRecord>> scatters;
      std::vector<shardscope::store::InstructionSpanRecord> computes;
      for (const auto& s : ranks[rank]) {
        if (s.kind == "grad_scatter") scatters[s.ordinal].push_back(s);
        if (s.kind == "compute") computes.push_back(s);
      }
      ASSERT_EQ(scatters.size(), 2u) << "rank " << rank;  // two buckets
      ASSERT_FALSE(computes.empty());
      double backward_end = 0;
      for (const auto& c : computes) backward_end = std::max(backward_end, c.end_seconds);
      double first_start = backward_end;
      int beside = 0;  // buckets with computation run while in flight
      for (auto& [ordinal, spans] : scatters) {
        std::sort(spans.begin(), spans.end(),
                  [](const auto& a, const auto& b) { return a.start_seconds < b.start_seconds; });
        ASSERT_EQ(spans.size(), overlap ? 2u : 1u) << "rank " << rank << " at " << ordinal;
        first_start = std::min(first_start, spans.front().start_seconds);
        const double started = spans.front().end_seconds, done = spans.back().start_seconds;
        int during = 0;
        for (const auto& c : computes)
          during += c.start_seconds >= started && c.end_seconds <= done;
        beside += during > 0;
      }
      EXPECT_LT(first_start, backward_end) << "rank " << rank;
      if (overlap)
        EXPECT_GE(beside, 1) << "rank " << rank;
      else
        EXPECT_EQ(beside, 0) << "rank " << rank;
    }
  }
}

}  // namespace
