// The pipeline timeline and the partitioned graph of a real placed run (seed 001: LeNet5 cut
// over five workers, four micro-batches, GPipe; the engine refuses 1F1B for this placement,
// which crosses workers back and forth) recorded by `shardscope train`, and drawn by
// shardscope-render.
#include "shardscope/viewer/timeline_scene.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "run_command.h"
#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/painter.h"
#include "shardscope/viewer/render.h"
#include "shardscope/viewer/run_document.h"
#include "synthetic_run.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

const std::string kBin = SHARDSCOPE_BIN_DIR;
const std::string kSource = SHARDSCOPE_SOURCE_DIR;
constexpr int kWorkers = 5;
constexpr int kMicroBatches = 4;

using testing::RunCommand;

class TimelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempPath("unused");
    std::string output;
    const int code = RunCommand(
        kBin + "/shardscope train " + kSource + "/samples/models/lenet5_place.yaml --devices " +
            std::to_string(kWorkers) + " --micro-batches " + std::to_string(kMicroBatches) +
            " --schedule gpipe --steps 3 --limit 128 --data " SHARDSCOPE_DATASETS_DIR
            "/mnist --record " +
            RunFile(),
        &output);
    ASSERT_EQ(code, 0) << output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string RunFile() { return dir_->Sibling("lenet5_place.db"); }
  static RunData Load() {
    auto doc = RunDocument::Open(RunFile());
    EXPECT_TRUE(doc.ok()) << doc.status().message();
    return doc.ok() ? (*doc)->data() : RunData{};
  }
  static testing::TempPath* dir_;
};
testing::TempPath* TimelineTest::dir_ = nullptr;

TEST_F(TimelineTest, SummaryHasEveryWorkerAndMicroBatchOfEachStep) {
  const RunData run = Load();
  const std::vector<int64_t> steps = TimelineSteps(run.pipeline_spans);
  ASSERT_EQ(steps.size(), 3u);
  for (int64_t step : steps) {
    const TimelineSummary summary = SummarizeTimeline(run.pipeline_spans, step);
    EXPECT_EQ(summary.workers, kWorkers);
    EXPECT_EQ(summary.micro_batches, kMicroBatches);
    EXPECT_EQ(summary.spans.size(), size_t{2 * kWorkers * kMicroBatches});
    ASSERT_EQ(summary.per_worker.size(), size_t{kWorkers});
    EXPECT_DOUBLE_EQ(summary.theoretical_bubble,
                     (kWorkers - 1.0) / (kMicroBatches + kWorkers - 1.0));
    EXPECT_GT(summary.measured_bubble, 0);
    EXPECT_LT(summary.measured_bubble, 1);
    for (const auto& w : summary.per_worker) {
      EXPECT_GT(w.busy_seconds, 0) << "worker " << w.worker;
      EXPECT_LE(w.busy_seconds, summary.makespan_seconds + 1e-12);
      EXPECT_NEAR(w.busy_seconds + w.idle_seconds, summary.makespan_seconds, 1e-9);
    }
    // Forward micro-batch 0 flows from the first stage (conv1 on worker 3) to the last
    // (fc3 on worker 2): the last finishes it after the first has computed it (the first's
    // span itself may end later: it ends after its send, and the thread may sleep there), and
    // the first stage, which reads the data itself, waits less for forward input than the last.
    double first_computed = -1, last_end = -1, first_wait = 0, last_wait = 0;
    for (const auto& s : summary.spans) {
      if (s.phase != "forward") continue;
      if (s.rank == 3 && s.micro_batch == 0) first_computed = s.start_seconds + s.compute_seconds;
      if (s.rank == 2 && s.micro_batch == 0) last_end = s.end_seconds;
      if (s.rank == 3) first_wait += s.idle_seconds;
      if (s.rank == 2) last_wait += s.idle_seconds;
    }
    EXPECT_GT(first_computed, 0);
    EXPECT_LT(first_computed, last_end);
    EXPECT_LT(first_wait, last_wait);
  }
}

TEST_F(TimelineTest, SceneHasALanePerWorkerAndABoxPerSpanInsideItsLane) {
  const RunData run = Load();
  const int64_t step = TimelineSteps(run.pipeline_spans).back();
  const Scene scene = BuildTimelineScene(run.pipeline_spans, step);
  const auto lanes = scene.Find("lane");
  ASSERT_EQ(lanes.size(), size_t{kWorkers});
  std::set<int64_t> lane_ids;
  for (const auto* lane : lanes) {
    lane_ids.insert(lane->id);
    EXPECT_EQ(lane->text, QString("worker %1").arg(lane->id));
  }
  EXPECT_EQ(lane_ids, (std::set<int64_t>{0, 1, 2, 3, 4}));
  const auto idle = scene.Find("idle");
  ASSERT_EQ(idle.size(), size_t{kWorkers});
  const TimelineSummary summary = SummarizeTimeline(run.pipeline_spans, step);
  size_t drawn = 0;
  for (const auto& s : summary.spans) drawn += s.end_seconds > s.start_seconds;
  const auto boxes = scene.Find("span");
  EXPECT_EQ(boxes.size(), drawn);
  std::set<QString> phases;
  for (const auto* box : boxes) {
    phases.insert(box->key);
    EXPECT_GE(box->id, 0);
    EXPECT_LT(box->id, kMicroBatches);
    // Each box sits inside one worker's lane, left to right within the step.
    bool inside = false;
    for (const auto* lane : idle) inside |= lane->rect.adjusted(-1, -1, 1, 1).contains(box->rect);
    EXPECT_TRUE(inside) << box->tooltip.toStdString();
  }
  EXPECT_EQ(phases, (std::set<QString>{"forward", "backward"}));
  const auto bubble = scene.Find("bubble");
  ASSERT_EQ(bubble.size(), 1u);
  EXPECT_TRUE(
      bubble[0]->text.contains(QString::number(summary.measured_bubble * 100, 'f', 1) + "%"));
  EXPECT_TRUE(
      bubble[0]->text.contains(QString::number(summary.theoretical_bubble * 100, 'f', 1) + "%"));
}

TEST_F(TimelineTest, RenderedSvgHoldsEveryWorkerAndTheBubble) {
  const std::string out = dir_->Sibling("timeline.svg");
  std::string output;
  ASSERT_EQ(RunCommand(
                kBin + "/shardscope render " + RunFile() + " --view timeline --step 1 --out " + out,
                &output),
            0)
      << output;
  std::ifstream in(out);
  std::stringstream svg;
  svg << in.rdbuf();
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_NE(svg.str().find("worker " + std::to_string(w)), std::string::npos) << w;
  }
  EXPECT_NE(svg.str().find("step 1"), std::string::npos);
  EXPECT_NE(svg.str().find("theoretical"), std::string::npos);
  // A step without spans is refused with the steps that have them.
  EXPECT_NE(RunCommand(kBin + "/shardscope-render " + RunFile() +
                           " --view timeline --step 99 --out " + out,
                       &output),
            0);
  EXPECT_NE(output.find("step 99"), std::string::npos) << output;
}

// The partitioned graph of the same real run: one cluster per worker, full operator names
// (the cluster is the worker, not the scope), and every cut edge drawn once, as its
// send/receive edge with bytes, not also as a plain data edge.
TEST_F(TimelineTest, PartitionedGraphOfTheSeed001Run) {
  const RunData run = Load();
  ASSERT_FALSE(run.send_recvs.empty());
  GraphOptions options;
  options.partitioned = true;
  auto partitioned = BuildGraphScene(run, options);
  ASSERT_TRUE(partitioned.ok()) << partitioned.status().message();
  std::set<QString> clusters;
  for (const SceneItem* c : partitioned->Find("cluster")) clusters.insert(c->key);
  EXPECT_EQ(clusters,
            (std::set<QString>{"worker 0", "worker 1", "worker 2", "worker 3", "worker 4"}));
  // Legend: a swatch per worker and the send/receive line (the run has no redistributions).
  EXPECT_EQ(partitioned->Find("legend").size(), 5u + 1u);
  const auto* fc3 = run.OperatorNamed("fc3.matmul");
  ASSERT_NE(fc3, nullptr);
  ASSERT_EQ(partitioned->Find("operator", fc3->id).size(), 1u);
  EXPECT_TRUE(partitioned->Find("operator", fc3->id)[0]->text.startsWith("fc3.matmul"));
  const auto sends = partitioned->Find("send_recv");
  EXPECT_EQ(sends.size(), run.send_recvs.size());
  for (const auto* send : sends) EXPECT_TRUE(send->text.contains("B")) << send->text.toStdString();
  // The plain view has, on top of the partitioned view's data edges, one edge per operator
  // pair that a send/receive connects across workers.
  std::set<std::pair<int64_t, int64_t>> sent, cut_pairs;
  for (const auto& sr : run.send_recvs) sent.insert({sr.tensor_id, sr.dst_rank});
  for (const auto& e : run.edges) {
    const auto* src = run.Operator(e.src_op);
    const auto* dst = run.Operator(e.dst_op);
    if (src && dst && src->worker != dst->worker && sent.count({e.tensor_id, dst->worker})) {
      cut_pairs.insert({e.src_op, e.dst_op});
    }
  }
  EXPECT_FALSE(cut_pairs.empty());
  auto plain = BuildGraphScene(run, GraphOptions{});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->Find("edge").size(), partitioned->Find("edge").size() + cut_pairs.size());
}

TEST(TimelineSceneTest, BubbleFiguresFollowTheSpans) {
  // Two workers, one micro-batch, back to back: each works half the step.
  std::vector<store::PipelineSpanRecord> spans = {
      {.step = 7,
       .rank = 0,
       .micro_batch = 0,
       .phase = "forward",
       .start_seconds = 0,
       .end_seconds = 1,
       .compute_seconds = 1},
      {.step = 7,
       .rank = 1,
       .micro_batch = 0,
       .phase = "forward",
       .start_seconds = 1,
       .end_seconds = 2,
       .compute_seconds = 1},
      {.step = 8,
       .rank = 0,
       .micro_batch = 0,
       .phase = "forward",
       .start_seconds = 0,
       .end_seconds = 5,
       .compute_seconds = 5},
  };
  TimelineSummary summary = SummarizeTimeline(spans, 7);
  EXPECT_EQ(summary.workers, 2);
  EXPECT_EQ(summary.micro_batches, 1);
  EXPECT_DOUBLE_EQ(summary.makespan_seconds, 2);
  EXPECT_DOUBLE_EQ(summary.measured_bubble, 0.5);
  EXPECT_DOUBLE_EQ(summary.theoretical_bubble, 0.5);
  // Waiting inside a span is idle too.
  spans[1].idle_seconds = 0.5;
  summary = SummarizeTimeline(spans, 7);
  EXPECT_DOUBLE_EQ(summary.measured_bubble, 0.625);
  EXPECT_DOUBLE_EQ(summary.per_worker[1].idle_seconds, 1.5);
  EXPECT_EQ(TimelineSteps(spans), (std::vector<int64_t>{7, 8}));
}

TEST(TimelineSceneTest, RunWithoutSpansSaysNoneRecorded) {
  testing::TempPath path("plain.db");
  ASSERT_TRUE(testing::WriteSyntheticRun(path.path()).ok());
  auto doc = RunDocument::Open(path.path());
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  RenderRequest request;
  request.view = "timeline";
  auto scene = RenderView((*doc)->data(), request);
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  const auto labels = scene->Find("label");
  ASSERT_EQ(labels.size(), 1u);
  EXPECT_TRUE(labels[0]->text.contains("no pipeline timeline recorded"));
  EXPECT_TRUE(scene->Find("lane").empty());
  EXPECT_TRUE(SaveScene(*scene, path.Sibling("none.png")).ok());
}

}  // namespace
}  // namespace shardscope::viewer
