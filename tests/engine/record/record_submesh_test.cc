// Recorder::RecordSubMeshPlan read back through the store: pipeline stages sharded over their
// sub-meshes (samples/models/mlp_place_sharded.yaml: 2 workers of 2 devices) keep their
// strategies and layouts, each on a mesh of its stage's world ranks, per-rank figures at
// world ranks, and one send_recv row per value crossing stages.
#include <gtest/gtest.h>

#include <filesystem>

#include "shardscope/model_file.h"
#include "shardscope/recorder.h"
#include "shardscope/store/reader.h"
#include "shardscope/submesh_pipeline.h"

namespace shardscope {
namespace {

TEST(RecordSubMeshPlan, StagesKeepStrategiesAndLayoutsOnTheirRanks) {
  auto mf =
      LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/mlp_place_sharded.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto model = mf->Build(16);
  ASSERT_TRUE(model.ok()) << model.status().message();
  SubMeshOptions options;
  options.stages = 2;
  options.micro_batches = 2;
  options.partition.devices = 2;
  for (const Node& n : model->graph.nodes()) {  // place entries become stages (unplaced: 0)
    if (n.is_backward) continue;
    options.stage_of[n.name] = std::max(0, n.annotations.worker);
    model->graph.mutable_node(n.id).annotations.worker = -1;
  }
  auto plan = PlanSubMeshPipeline(&*model, options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();

  const std::string path =
      (std::filesystem::temp_directory_path() / "shardscope_record_submesh_test.db").string();
  std::filesystem::remove(path);
  store::RunInfo info;
  info.name = "mlp_place_sharded";
  info.mode = "plan";
  info.devices = 4;
  auto recorder = Recorder::Create(path, info);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  ASSERT_TRUE((*recorder)->RecordSubMeshPlan(model->graph, *plan).ok());
  ASSERT_TRUE((*recorder)->Finish(store::RunStatus::kCompleted).ok());

  auto reader = store::RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto meshes = (*reader)->Meshes();
  auto operators = (*reader)->Operators();
  auto tensors = (*reader)->Tensors();
  auto redistributions = (*reader)->Redistributions();
  auto sends = (*reader)->SendRecvs();
  ASSERT_TRUE(meshes.ok() && operators.ok() && tensors.ok() && redistributions.ok() && sends.ok());
  const auto ranks_of = [&](int64_t mesh) {
    for (const auto& m : *meshes) {
      if (m.id == mesh) return m.ranks;
    }
    return std::vector<int64_t>{-1};
  };
  const std::vector<int64_t> stage0{0, 1}, stage1{2, 3};
  EXPECT_EQ(operators->size(), static_cast<size_t>(model->graph.num_nodes()));
  for (const auto& op : *operators) {
    ASSERT_FALSE(op.strategy.empty()) << op.name;
    ASSERT_TRUE(op.worker == 0 || op.worker == 1) << op.name;
    EXPECT_EQ(ranks_of(op.mesh_id), op.worker == 0 ? stage0 : stage1) << op.name;
    if (op.name == "fc3.matmul") {
      EXPECT_EQ(op.worker, 1);
      EXPECT_EQ(op.strategy, "((1, 2), (2, 1))");
    }
    if (op.name == "fc1.matmul") {
      EXPECT_EQ(op.worker, 0);
    }
  }
  bool weight = false;
  for (const auto& t : *tensors) {
    if (t.name != "fc3.weight") continue;
    weight = true;
    EXPECT_EQ(t.layout, "[k | -]");  // split over the contraction on worker 1's two devices
    EXPECT_EQ(ranks_of(t.mesh_id), stage1);
  }
  EXPECT_TRUE(weight);
  int64_t on_stage1 = 0;
  for (const auto& r : *redistributions) {
    if (ranks_of(r.plan_mesh_id) != stage1) continue;
    for (const auto& s : r.steps) {
      if (s.bytes_recv.empty()) continue;
      ++on_stage1;
      ASSERT_EQ(s.bytes_recv.size(), 4u) << r.id;  // indexed by world rank
      EXPECT_EQ(s.bytes_recv[0] + s.bytes_recv[1], 0) << r.id;
      EXPECT_GT(s.bytes_recv[2] + s.bytes_recv[3], 0) << r.id;
    }
  }
  EXPECT_GT(on_stage1, 0);
  ASSERT_EQ(sends->size(), plan->cuts.size());
  for (const auto& s : *sends) {
    EXPECT_NE(s.src_rank, s.dst_rank);
    EXPECT_TRUE((s.src_rank == 0 && s.dst_rank == 2) || (s.src_rank == 2 && s.dst_rank == 0));
    EXPECT_GT(s.bytes, 0);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace shardscope
