// Issue 21's CLI answers on recorded runs: per-instruction timing in the run file (train
// --timing-every), `trace` (Chrome/Perfetto trace-event JSON), `diff A B` and
// `inspect --rank R`, each checked against what the run file holds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "run_shardscope.h"
#include "shardscope/store/reader.h"

namespace {

using nlohmann::json;
using shardscope::store::InstructionSpanRecord;
using shardscope::store::RunReader;
using shardscope_cli_test::Output;
using shardscope_cli_test::Shardscope;

const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";
const std::string kFfn = std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/ffn.yaml";

// Two 8-device FFN runs recorded once for the whole suite: the model file's strategies
// (timed at steps 1, 2, 3) and data-parallel (--ignore-parallel).
class TraceDiff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        std::filesystem::temp_directory_path() / ("shardscope-trace-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string common = " --devices 8 --steps 4 --limit 512 --data " + kMnist;
    // Without gradient buckets: a bucketed all-reduce is not yet a span of its own.
    train_a_ = Shardscope("train " + kFfn + common + " --bucket-mb 0 --timing-every 3 --record " +
                          File("a.db"));
    train_b_ = Shardscope("train " + kFfn + common + " --ignore-parallel --timing-every 0 " +
                          "--record " + File("b.db"));
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string File(const std::string& name) { return (dir_ / name).string(); }
  static std::unique_ptr<RunReader> Open(const std::string& name) {
    auto r = RunReader::Open(File(name));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(train_a_.code, 0) << train_a_.text;
    ASSERT_EQ(train_b_.code, 0) << train_b_.text;
  }
  static inline std::filesystem::path dir_;
  static inline Output train_a_, train_b_;
};

std::vector<shardscope::store::InstructionRecord> SpmdProgram(const RunReader& r) {
  const auto all1 = r.Programs().value();
  for (const auto& p : all1)
    if (p.rank == shardscope::store::kNone) return p.instructions;
  return {};
}

// Steps 1, 2 and every 3rd are timed; on every rank the compute and redistribution spans
// tile the program in order, each redistribution's collectives lie inside it, one per
// planned step, and the spans fit in the rank's wall time of the step.
TEST_F(TraceDiff, TrainTimesEveryInstructionOfTheSampledSteps) {
  auto run = Open("a.db");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->TimedSteps().value(), (std::vector<int64_t>{1, 2, 3}));
  const auto program = SpmdProgram(*run);
  ASSERT_FALSE(program.empty());
  const auto redists = run->Redistributions().value();
  const auto steps = run->Steps(1, 3, true).value();
  for (int64_t step = 1; step <= 3; ++step) {
    for (int64_t rank = 0; rank < 8; ++rank) {
      const auto spans = run->InstructionSpans(step, step, rank).value();
      std::vector<const InstructionSpanRecord*> whole;
      std::map<int64_t, std::vector<const InstructionSpanRecord*>> parts;
      for (const auto& s : spans) {
        EXPECT_LE(s.start_seconds, s.end_seconds);
        if (s.part < 0)
          whole.push_back(&s);
        else
          parts[s.ordinal].push_back(&s);
      }
      ASSERT_EQ(whole.size(), program.size()) << "step " << step << " rank " << rank;
      double last_end = 0;
      for (size_t i = 0; i < whole.size(); ++i) {
        const auto& s = *whole[i];
        EXPECT_EQ(s.ordinal, static_cast<int64_t>(i));
        EXPECT_EQ(s.kind, program[i].kind == "compute" ? "compute" : "redistribution");
        EXPECT_GE(s.start_seconds, last_end);
        last_end = s.end_seconds;
        if (program[i].kind != "compute") {
          const auto& r = redists.at(program[i].redistribution_id);
          ASSERT_EQ(parts[s.ordinal].size(), r.steps.size());
          for (const auto* p : parts[s.ordinal]) {
            EXPECT_EQ(p->kind, "collective");
            EXPECT_GE(p->start_seconds, s.start_seconds);
            EXPECT_LE(p->end_seconds, s.end_seconds);
          }
        } else {
          EXPECT_TRUE(parts[s.ordinal].empty());
        }
      }
      EXPECT_LE(last_end, steps[step - 1].ranks[rank].wall_seconds + 1e-6);
    }
  }
  EXPECT_TRUE(run->InstructionSpans(4, 4).value().empty());
  EXPECT_TRUE(Open("b.db")->TimedSteps().value().empty());  // --timing-every 0
}

// The trace: a named track per rank, a step slice per timed step and rank, one slice per span
// named by its operator (compute) or collective, collectives inside their redistribution.
TEST_F(TraceDiff, TraceHasATrackPerRankAndASlicePerTimedInstruction) {
  const Output out = Shardscope("trace " + File("a.db") + " --out " + File("a.json"));
  ASSERT_EQ(out.code, 0) << out.text;
  std::ifstream in(File("a.json"));
  const json trace = json::parse(in);
  auto run = Open("a.db");
  const auto spans = run->InstructionSpans().value();
  const auto program = SpmdProgram(*run);
  std::map<int64_t, std::string> op_names;
  const auto all2 = run->Operators(false).value();
  for (const auto& o : all2) op_names[o.id] = o.name;
  std::map<int64_t, std::string> thread_names;
  std::map<int64_t, std::vector<json>> slices;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      thread_names[e.at("tid")] = e.at("args").at("name");
    if (e.at("ph") == "X") slices[e.at("tid")].push_back(e);
  }
  ASSERT_EQ(thread_names.size(), 8u);
  for (int64_t rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(thread_names[rank], "rank " + std::to_string(rank));
    size_t expected = 3;  // a step slice per timed step
    for (const auto& s : spans) expected += s.rank == rank;
    EXPECT_EQ(slices[rank].size(), expected) << "rank " << rank;
  }
  // Rank 3's slices against its spans, in file order after the step slices.
  std::vector<json> compute, redistributions, collectives;
  for (const json& e : slices[3]) {
    if (e.at("cat") == "compute") compute.push_back(e);
    if (e.at("cat") == "redistribution") redistributions.push_back(e);
    if (e.at("cat") == "collective") collectives.push_back(e);
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
  }
  size_t k = 0;
  for (const auto& s : spans) {
    if (s.rank != 3 || s.kind != "compute") continue;
    ASSERT_LT(k, compute.size());
    EXPECT_EQ(compute[k].at("name"), op_names.at(program.at(s.ordinal).op_id));
    EXPECT_NEAR(compute[k].at("dur").get<double>(), (s.end_seconds - s.start_seconds) * 1e6, 1e-3);
    ++k;
  }
  EXPECT_EQ(k, compute.size());
  ASSERT_FALSE(collectives.empty());
  for (const json& c : collectives) {
    bool inside = false;
    for (const json& r : redistributions) {
      const double ts = r.at("ts"), end = ts + r.at("dur").get<double>();
      inside = inside || (c.at("ts").get<double>() >= ts - 1e-3 &&
                          c.at("ts").get<double>() + c.at("dur").get<double>() <= end + 1e-3 &&
                          c.at("args").at("redistribution") == r.at("args").at("redistribution"));
    }
    EXPECT_TRUE(inside) << c.dump();
  }
  // One rank only; a run without timing is refused, naming the flag.
  ASSERT_EQ(Shardscope("trace " + File("a.db") + " --rank 5 --out " + File("r5.json")).code, 0);
  std::ifstream in5(File("r5.json"));
  const json rank5 = json::parse(in5);  // kept: a range-for over a temporary's member dangles
  for (const json& e : rank5.at("traceEvents"))
    if (e.contains("tid")) {
      EXPECT_EQ(e.at("tid"), 5);
    }
  const Output none = Shardscope("trace " + File("b.db") + " --out " + File("b.json"));
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.text.find("--timing-every"), std::string::npos) << none.text;
}

// diff: strategies that differ by name, redistributions matched across the runs so that
// same + changed + removed counts A's and same + changed + added counts B's; a run against
// itself differs in nothing.
TEST_F(TraceDiff, DiffListsStrategiesAndRedistributionsThatDiffer) {
  const Output out = Shardscope("diff " + File("a.db") + " " + File("b.db") + " --json", false);
  ASSERT_EQ(out.code, 0) << out.text;
  const json d = json::parse(out.text);
  auto a = Open("a.db");
  auto b = Open("b.db");
  std::map<std::string, std::string> sa, sb;
  const auto all3 = a->Operators(false).value();
  for (const auto& o : all3)
    if (!o.is_backward) sa[o.name] = o.strategy;
  const auto all4 = b->Operators(false).value();
  for (const auto& o : all4)
    if (!o.is_backward) sb[o.name] = o.strategy;
  std::set<std::string> differ;
  for (const auto& [name, s] : sa)
    if (!sb.count(name) || sb[name] != s) differ.insert(name);
  ASSERT_FALSE(differ.empty());
  std::set<std::string> listed;
  for (const json& s : d.at("strategies")) {
    listed.insert(s.at("op"));
    EXPECT_EQ(s.at("a"), sa[s.at("op")]);
    EXPECT_EQ(s.at("b"), sb[s.at("op")]);
  }
  EXPECT_EQ(listed, differ);
  std::map<std::string, int64_t> changes;
  for (const json& r : d.at("redistributions")) ++changes[r.at("change")];
  const int64_t same = d.at("same_redistributions");
  EXPECT_EQ(same + changes["changed"] + changes["removed"],
            static_cast<int64_t>(a->Redistributions(false).value().size()));
  EXPECT_EQ(same + changes["changed"] + changes["added"],
            static_cast<int64_t>(b->Redistributions(false).value().size()));
  EXPECT_EQ(d.at("a").at("steps"), 4);
  EXPECT_EQ(d.at("a").at("last_loss").get<double>(), a->Steps().value().back().loss);
  const Output text = Shardscope("diff " + File("a.db") + " " + File("b.db"));
  EXPECT_NE(text.text.find("A: ffn"), std::string::npos) << text.text;
  EXPECT_NE(text.text.find("B: ffn"), std::string::npos) << text.text;
  const json self =
      json::parse(Shardscope("diff " + File("a.db") + " " + File("a.db") + " --json", false).text);
  EXPECT_TRUE(self.at("strategies").empty());
  EXPECT_TRUE(self.at("redistributions").empty());
  EXPECT_EQ(self.at("same_redistributions"),
            static_cast<int64_t>(a->Redistributions(false).value().size()));
}

// inspect --rank: the rank's memory by kind at the last step, its parameters, and its timed
// step's compute and redistribution time as the spans sum them.
TEST_F(TraceDiff, InspectRankShowsWhatTheRankHoldsAndWhereItsTimeWent) {
  const Output out = Shardscope("inspect " + File("a.db") + " --rank 6 --json", false);
  ASSERT_EQ(out.code, 0) << out.text;
  const json j = json::parse(out.text);
  auto run = Open("a.db");
  const auto last = run->RankSeries(6).value().back().second;
  EXPECT_EQ(j.at("memory").at("param_bytes"), last.param_bytes);
  EXPECT_EQ(j.at("memory").at("grad_bytes"), last.grad_bytes);
  EXPECT_EQ(j.at("memory").at("optimizer_bytes"), last.optimizer_bytes);
  EXPECT_EQ(j.at("memory").at("activation_bytes"), last.activation_bytes);
  EXPECT_EQ(j.at("memory").at("peak_bytes"), last.peak_bytes);
  EXPECT_GT(last.param_bytes, 0);
  size_t params = 0;
  const auto all5 = run->Tensors().value();
  for (const auto& t : all5) params += t.kind == "parameter";
  EXPECT_EQ(j.at("parameters").size(), params);
  double compute = 0, comm = 0;
  const auto all6 = run->InstructionSpans(3, 3, 6).value();
  for (const auto& s : all6) {
    if (s.kind == "compute") compute += s.end_seconds - s.start_seconds;
    if (s.kind == "redistribution") comm += s.end_seconds - s.start_seconds;
  }
  EXPECT_EQ(j.at("timing").at("step"), 3);
  EXPECT_NEAR(j.at("timing").at("compute_seconds").get<double>(), compute, 1e-9);
  EXPECT_NEAR(j.at("timing").at("comm_seconds").get<double>(), comm, 1e-9);
  const Output text = Shardscope("inspect " + File("a.db") + " --rank 6");
  EXPECT_NE(text.text.find("memory at step 4"), std::string::npos) << text.text;
  EXPECT_NE(text.text.find("slowest instructions"), std::string::npos) << text.text;
  const Output bad = Shardscope("inspect " + File("a.db") + " --rank 8");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("ranks 0 to 7"), std::string::npos) << bad.text;
}

}  // namespace
