// The Recorder (recorder.h) used directly, read back through the store: the plan's
// operators, redistributions and program; steps written in the background, each timed by
// its slowest rank; the final status.
#include "shardscope/recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "shardscope/model_file.h"
#include "shardscope/store/reader.h"

namespace shardscope {
namespace {

TEST(Recorder, PlanStepsAndStatusReadBackThroughTheStore) {
  auto mf = LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/ffn.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto model = mf->Build(mf->training().batch);
  ASSERT_TRUE(model.ok()) << model.status().message();
  PartitionOptions options;
  options.devices = 8;
  auto program = PlanTrainingProgram(&*model, options);  // the file's strategies
  ASSERT_TRUE(program.ok()) << program.status().message();

  const std::string path =
      (std::filesystem::temp_directory_path() / "shardscope_recorder_test.db").string();
  std::filesystem::remove(path);
  store::RunInfo info;
  info.name = "ffn";
  info.mode = "train";
  info.search = "semi_auto";
  info.devices = 8;
  info.backend = "in-process";
  auto recorder = Recorder::Create(path, info);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  ASSERT_TRUE((*recorder)->RecordPlan(model->graph, *program).ok());
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<store::RankStepRecord> ranks(8);
    for (int r = 0; r < 8; ++r) {
      ranks[r].rank = r;
      ranks[r].wall_seconds = 0.001 * static_cast<double>(step * 10 + r);
    }
    ASSERT_TRUE((*recorder)->RecordStep(step, 1, 2.0 / static_cast<double>(step), ranks).ok());
  }
  ASSERT_TRUE((*recorder)->Finish(store::RunStatus::kCompleted).ok());
  EXPECT_EQ((*recorder)->last_recorded_step(), 3);

  auto reader = store::RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ((*reader)->Run()->status, store::RunStatus::kCompleted);
  auto counts = (*reader)->Counts();
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  int64_t forward = 0, backward = 0, redistributions = 0;
  for (const Node& n : model->graph.nodes()) (n.is_backward ? backward : forward) += 1;
  for (const DistInstr& in : program->instrs)
    redistributions += in.kind == DistInstr::Kind::kRedistribute;
  EXPECT_EQ(counts->operators, forward + backward);  // every operator, the backward ones too
  EXPECT_EQ(counts->backward_operators, backward);
  EXPECT_EQ(counts->redistributions, redistributions);
  EXPECT_EQ(counts->programs, 1);  // SPMD: one program, the same on every rank
  EXPECT_EQ(counts->steps, 3);
  EXPECT_EQ(counts->rank_steps, 24);
  auto steps = (*reader)->Steps();
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_DOUBLE_EQ((*steps)[2].loss, 2.0 / 3);
  EXPECT_DOUBLE_EQ((*steps)[2].seconds, 0.037);  // the slowest rank's wall time
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace shardscope
