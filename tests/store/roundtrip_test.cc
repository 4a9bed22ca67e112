// Every record type written by RunWriter reads back equal through RunReader; lookups by id,
// name, scope, consumer and step range; the summaries hold what `shardscope inspect` shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sample_run.h"
#include "shardscope/store/reader.h"
#include "shardscope/store/summary.h"
#include "shardscope/store/writer.h"
#include "temp_dir.h"

namespace shardscope::store {
namespace {

using testing::MakeSampleRun;
using testing::SampleRun;
using testing::TempDir;

class RoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sample_ = MakeSampleRun();
    path_ = dir_.File("run.db");
    auto writer = RunWriter::Create(path_, sample_.run);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(testing::WriteSample(**writer, sample_).ok());
    ASSERT_TRUE((*writer)->Finish(RunStatus::kCompleted, "done").ok());
    auto reader = RunReader::Open(path_);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    reader_ = std::move(*reader);
  }

  TempDir dir_;
  std::string path_;
  SampleRun sample_;
  std::unique_ptr<RunReader> reader_;
};

template <typename T>
T Get(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : T{};
}

TEST_F(RoundTripTest, Run) {
  RunInfo run = Get(reader_->Run());
  EXPECT_EQ(run.status, RunStatus::kCompleted);
  EXPECT_EQ(run.stored_status, RunStatus::kCompleted);
  EXPECT_EQ(run.status_message, "done");
  EXPECT_EQ(run.schema_version, kSchemaVersion);
  EXPECT_EQ(run.writer_pid, getpid());
  EXPECT_FALSE(run.writer_host.empty());
  EXPECT_GT(run.started_at, 1.6e9);
  EXPECT_GE(run.updated_at, run.started_at);
  EXPECT_GE(run.ended_at, run.started_at);
  // The descriptive fields are what was written.
  RunInfo expected = sample_.run;
  expected.status = expected.stored_status = RunStatus::kCompleted;
  expected.status_message = run.status_message;
  expected.started_at = run.started_at;
  expected.updated_at = run.updated_at;
  expected.ended_at = run.ended_at;
  expected.writer_pid = run.writer_pid;
  expected.writer_host = run.writer_host;
  expected.schema_version = run.schema_version;
  EXPECT_EQ(run, expected);
  EXPECT_FALSE(reader_->IsLive());
  EXPECT_FALSE(reader_->migrated());
}

TEST_F(RoundTripTest, Meshes) { EXPECT_EQ(Get(reader_->Meshes()), sample_.meshes); }

TEST_F(RoundTripTest, OperatorsWithCandidates) {
  EXPECT_EQ(Get(reader_->Operators()), sample_.operators);
  std::vector<OperatorRecord> bare = sample_.operators;
  for (auto& o : bare) o.candidates.clear();
  EXPECT_EQ(Get(reader_->Operators(/*with_candidates=*/false)), bare);
}

TEST_F(RoundTripTest, OperatorLookups) {
  EXPECT_EQ(Get(reader_->Operator(0)), sample_.operators[0]);
  EXPECT_EQ(Get(reader_->Operator(3)), sample_.operators[3]);
  Result<OperatorRecord> missing = reader_->Operator(99);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto named = Get(reader_->OperatorsNamed("dense2.matmul"));
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0], sample_.operators[2]);
  auto scope = Get(reader_->OperatorsInScope("dense1"));
  ASSERT_EQ(scope.size(), 2u);  // dense1.matmul, dense1.relu; not grad.dense1
  EXPECT_EQ(scope[0].id, 0);
  EXPECT_EQ(scope[1].id, 1);
  EXPECT_EQ(Get(reader_->OperatorsInScope("grad")).size(), 1u);  // "grad.dense1" is under it
  EXPECT_TRUE(Get(reader_->OperatorsInScope("dense")).empty());  // not a prefix of a scope name
}

TEST_F(RoundTripTest, TensorsAndEdges) {
  EXPECT_EQ(Get(reader_->Tensors()), sample_.tensors);
  EXPECT_EQ(Get(reader_->Tensor(3)), sample_.tensors[3]);
  EXPECT_EQ(reader_->Tensor(42).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Get(reader_->Edges()), sample_.edges);  // already in (dst_op, dst_input) order
  auto into = Get(reader_->EdgesInto(0));
  ASSERT_EQ(into.size(), 2u);
  EXPECT_EQ(into[1], sample_.edges[1]);
  auto from = Get(reader_->EdgesFrom(1));
  ASSERT_EQ(from.size(), 2u);
  EXPECT_EQ(from[0].dst_op, 2);
  EXPECT_EQ(from[1].dst_op, 3);
  // A tensor's layouts at its consumers.
  auto consumers = Get(reader_->EdgesOfTensor(3));
  ASSERT_EQ(consumers.size(), 2u);
  EXPECT_EQ(consumers[0].layout, "[dp.sp.mp | -]");
  EXPECT_EQ(consumers[1].layout, "[dp | mp]");
}

TEST_F(RoundTripTest, RedistributionsWithSteps) {
  EXPECT_EQ(Get(reader_->Redistributions()), sample_.redistributions);
  EXPECT_EQ(Get(reader_->Redistribution(0)), sample_.redistributions[0]);
  EXPECT_EQ(reader_->Redistribution(5).status().code(), StatusCode::kNotFound);
  auto of_op = Get(reader_->RedistributionsForOperator(1));
  ASSERT_EQ(of_op.size(), 1u);
  EXPECT_EQ(of_op[0], sample_.redistributions[0]);
  auto of_tensor = Get(reader_->RedistributionsOfTensor(4));
  ASSERT_EQ(of_tensor.size(), 1u);
  EXPECT_EQ(of_tensor[0], sample_.redistributions[1]);
  auto bare = Get(reader_->Redistributions(/*with_steps=*/false));
  ASSERT_EQ(bare.size(), 2u);
  EXPECT_TRUE(bare[0].steps.empty());
}

TEST_F(RoundTripTest, PartitionProgramsAndSendRecv) {
  // SPMD program (rank kNone) first: programs are in rank order.
  EXPECT_EQ(Get(reader_->Programs()), sample_.programs);
  EXPECT_EQ(Get(reader_->SendRecvs()), sample_.send_recvs);
}

TEST_F(RoundTripTest, StepsWithPerRankFigures) {
  auto steps = Get(reader_->Steps(std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max(), /*with_ranks=*/true));
  EXPECT_EQ(steps, sample_.steps);
  EXPECT_TRUE(std::isnan(steps[1].loss));  // NaN survives (stored as NULL)
  auto range = Get(reader_->Steps(1, 3));
  ASSERT_EQ(range.size(), 3u);
  EXPECT_EQ(range[0].step, 1);
  EXPECT_TRUE(range[0].ranks.empty());
  auto series = Get(reader_->RankSeries(5));
  ASSERT_EQ(series.size(), sample_.steps.size());
  EXPECT_EQ(series[2].first, 2);
  EXPECT_EQ(series[2].second, sample_.steps[2].ranks[5]);
  auto totals = Get(reader_->RankTotals());
  ASSERT_EQ(totals.size(), 8u);
  EXPECT_EQ(totals[3].rank, 3);
  EXPECT_EQ(totals[3].steps, 5);
  EXPECT_EQ(totals[3].bytes_sent, 5 * 1003);
  EXPECT_NEAR(totals[3].compute_seconds, 5 * 0.0053, 1e-12);
  EXPECT_EQ(totals[3].peak_bytes, 1700004);
}

TEST_F(RoundTripTest, EvaluationsAndEvents) {
  EXPECT_EQ(Get(reader_->Evaluations()), sample_.evaluations);
  EXPECT_EQ(Get(reader_->Events()), sample_.events);
  auto tail = Get(reader_->Events(/*after_id=*/1, /*limit=*/1));
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0], sample_.events[1]);
}

TEST_F(RoundTripTest, Counts) {
  RunCounts c = Get(reader_->Counts());
  EXPECT_EQ(c.meshes, 2);
  EXPECT_EQ(c.operators, 4);
  EXPECT_EQ(c.backward_operators, 1);
  EXPECT_EQ(c.candidates, 3);
  EXPECT_EQ(c.tensors, 5);
  EXPECT_EQ(c.edges, 5);
  EXPECT_EQ(c.redistributions, 2);
  EXPECT_EQ(c.redist_steps, 2);
  EXPECT_EQ(c.programs, 2);
  EXPECT_EQ(c.instructions, 5);
  EXPECT_EQ(c.send_recvs, 2);
  EXPECT_EQ(c.steps, 5);
  EXPECT_EQ(c.rank_steps, 40);
  EXPECT_EQ(c.evaluations, 2);
  EXPECT_EQ(c.events, 3);
  EXPECT_TRUE(reader_->Check().ok());
}

TEST_F(RoundTripTest, TextSummary) {
  auto text = Get(FormatRunSummary(*reader_));
  for (const char* expected : {"Run file",
                               "(schema version ",
                               "ffn: train, search sharding_propagation, 8 devices",
                               "completed: done",
                               "Meshes",
                               "(2,2,2)",
                               "dp,sp,mp",
                               "dense1.matmul",
                               "((2,4),(4,1))",
                               "user",
                               "propagated from dense1.matmul",
                               "((8,1),(1,1)) 2.50 ms",
                               "Redistributions: 2",
                               "P(sp)",
                               "reduce-scatter, all-to-all-v",
                               "1.33x",
                               "Loss (5 steps)",
                               "Evaluations",
                               "0.9100",
                               "Per rank",
                               "Events",
                               "slow step on rank 5"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\n" << text;
  }
}

TEST_F(RoundTripTest, JsonSummary) {
  auto text = Get(RunSummaryJson(*reader_));
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["run"]["status"], "completed");
  EXPECT_EQ(j["run"]["config"]["lr"], 0.05);
  EXPECT_EQ(j["meshes"].size(), 2u);
  EXPECT_EQ(j["operators"].size(), 4u);
  EXPECT_EQ(j["operators"][0]["candidates"].size(), 2u);
  EXPECT_EQ(j["operators"][1]["provenance_op"], 0);
  EXPECT_TRUE(j["operators"][0]["provenance_op"].is_null());
  EXPECT_EQ(j["redistributions"][1]["bytes"], 4000);
  EXPECT_EQ(j["redistributions"][1]["lower_bound_bytes"], 3000);
  EXPECT_DOUBLE_EQ(j["redistributions"][1]["ratio"].get<double>(), 4000.0 / 3000.0);
  EXPECT_EQ(j["redistribution_totals"]["above_bound"], 1);
  EXPECT_EQ(j["steps"].size(), 5u);
  EXPECT_TRUE(j["steps"][1]["loss"].is_null());  // NaN
  EXPECT_EQ(j["ranks"].size(), 8u);
  EXPECT_EQ(j["evaluations"].size(), 2u);
  EXPECT_EQ(j["events"].size(), 3u);
}

TEST(RoundTrip, SummaryRowLimits) {
  TempDir dir;
  SampleRun sample = MakeSampleRun(/*steps=*/100);
  auto writer = RunWriter::Create(dir.File("run.db"), sample.run);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_TRUE(testing::WriteSample(**writer, sample).ok());
  ASSERT_TRUE((*writer)->Finish(RunStatus::kCompleted).ok());
  auto reader = RunReader::Open(dir.File("run.db"));
  ASSERT_TRUE(reader.ok());
  SummaryOptions options;
  options.max_steps = 5;
  options.max_operators = 2;
  options.max_events = 1;
  auto text = Get(FormatRunSummary(**reader, options));
  EXPECT_NE(text.find("(2 of 4 operators shown)"), std::string::npos) << text;
  EXPECT_NE(text.find("Events (last 1 of 3)"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    99     33 "), std::string::npos) << text;  // the last step is shown
  auto j = nlohmann::json::parse(Get(RunSummaryJson(**reader, options)));
  EXPECT_EQ(j["steps"].size(), 100u);  // JSON: every step
  EXPECT_EQ(j["events"].size(), 1u);
}

TEST(RoundTrip, EmptyRunAndStrings) {
  // A plan-only run with nothing but the run row, and strings SQLite must keep byte for byte.
  TempDir dir;
  RunInfo run;
  run.name = "ünïcödé \"quoted\" 'single' ; DROP TABLE run; --";
  run.mode = "plan";
  run.model_text = std::string("a\0b", 3);
  run.config_json = "not json at all";
  auto writer = RunWriter::Create(dir.File("plan.db"), run);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  MeshRecord m{7, "m", {}, {}, {}};
  ASSERT_TRUE((*writer)->AddMesh(m).ok());
  ASSERT_TRUE((*writer)->Finish(RunStatus::kFailed, "search found no strategy").ok());
  auto reader = RunReader::Open(dir.File("plan.db"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  RunInfo back = Get((*reader)->Run());
  EXPECT_EQ(back.name, run.name);
  EXPECT_EQ(back.model_text, run.model_text);
  EXPECT_EQ(back.status, RunStatus::kFailed);
  EXPECT_EQ(Get((*reader)->Meshes()), std::vector<MeshRecord>{m});
  EXPECT_TRUE(Get((*reader)->Operators()).empty());
  EXPECT_TRUE(Get((*reader)->Steps()).empty());
  auto j = nlohmann::json::parse(Get(RunSummaryJson(**reader)));
  EXPECT_EQ(j["run"]["config"], "not json at all");  // kept as a string
  EXPECT_TRUE(FormatRunSummary(**reader).ok());
}

TEST(RoundTrip, UpdateRun) {
  TempDir dir;
  auto writer = RunWriter::Create(dir.File("run.db"), testing::SampleRunInfo());
  ASSERT_TRUE(writer.ok());
  RunInfo changed = testing::SampleRunInfo();
  changed.search = "dynamic_programming";
  changed.devices = 1024;
  ASSERT_TRUE((*writer)->UpdateRun(changed).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  auto reader = RunReader::Open(dir.File("run.db"));
  ASSERT_TRUE(reader.ok());
  RunInfo back = Get((*reader)->Run());
  EXPECT_EQ(back.search, "dynamic_programming");
  EXPECT_EQ(back.devices, 1024);
  EXPECT_EQ(back.status, RunStatus::kRunning);
  EXPECT_TRUE((*reader)->IsLive());
}

// Per-instruction timing (schema 4): read back by step range and rank, in key order; the
// timed steps are the distinct steps; a second span with the same key is refused.
TEST(InstructionSpanTest, RoundTripsByStepAndRank) {
  TempDir dir;
  SampleRun sample = MakeSampleRun(6);
  auto writer = RunWriter::Create(dir.File("t.db"), sample.run);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_TRUE(testing::WriteSample(**writer, sample).ok());
  std::vector<InstructionSpanRecord> written;
  for (int64_t step : {5, 1, 2}) {  // any order in; key order out
    for (int64_t rank = 1; rank >= 0; --rank) {
      for (int64_t ordinal = 0; ordinal < 3; ++ordinal) {
        for (int64_t part : {kNone, int64_t{0}}) {
          if (part == 0 && ordinal != 1) continue;
          InstructionSpanRecord r;
          r.step = step;
          r.rank = rank;
          r.ordinal = ordinal;
          r.part = part;
          r.kind = ordinal != 1 ? "compute" : part == kNone ? "redistribution" : "collective";
          r.start_seconds = 0.001 * static_cast<double>(ordinal + step);
          r.end_seconds = r.start_seconds + 0.0005 * static_cast<double>(rank + 1);
          ASSERT_TRUE((*writer)->AddInstructionSpan(r).ok());
          written.push_back(r);
        }
      }
    }
  }
  EXPECT_FALSE((*writer)->AddInstructionSpan(written[0]).ok());
  ASSERT_TRUE((*writer)->Finish(RunStatus::kCompleted).ok());
  auto reader = RunReader::Open(dir.File("t.db"));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(Get((*reader)->TimedSteps()), (std::vector<int64_t>{1, 2, 5}));
  std::vector<InstructionSpanRecord> expected;
  for (const auto& r : written)
    if (r.step >= 2 && r.rank == 1) expected.push_back(r);
  std::sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
    return std::tie(a.step, a.rank, a.ordinal, a.part) <
           std::tie(b.step, b.rank, b.ordinal, b.part);
  });
  EXPECT_EQ(Get((*reader)->InstructionSpans(2, 5, 1)), expected);
  EXPECT_EQ(Get((*reader)->InstructionSpans()).size(), written.size());
  EXPECT_TRUE(Get((*reader)->InstructionSpans(3, 4)).empty());
}

}  // namespace
}  // namespace shardscope::store
