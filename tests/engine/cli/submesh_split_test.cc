// Stages of several devices balanced on their sharded price (pipeline_submesh.h): the split
// PriceSubMeshCandidate returns is no dearer than moving its boundary by one layer, and the
// same on every call.
#include <gtest/gtest.h>

#include "cli/pipeline_submesh.h"
#include "shardscope/pipeline_stages.h"

namespace shardscope::cli {
namespace {

TEST(SubMeshSplit, NoNeighbouringSplitPricesLower) {
  auto mf = LoadModelFile(SHARDSCOPE_SOURCE_DIR "/samples/models/mlp_pipeline.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto options = MakeSearchOptions(SearchFlags{}, SearchMode::kShardingPropagation, 4, {});
  ASSERT_TRUE(options.ok()) << options.status().message();
  const BuildAtFn build = [&](int64_t b) { return mf->Build(b); };
  auto chosen = PriceSubMeshCandidate(build, 64, 2, 2, 2, *options, 0);
  auto again = PriceSubMeshCandidate(build, 64, 2, 2, 2, *options, 0);
  ASSERT_TRUE(chosen.ok() && again.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->worker_of, again->worker_of);
  EXPECT_DOUBLE_EQ(chosen->price.step_seconds, again->price.step_seconds);
  auto model = mf->Build(chosen->micro_batch);
  ASSERT_TRUE(model.ok());
  auto units = LayerUnits(model->graph, *options);
  ASSERT_TRUE(units.ok());
  int boundary = 0;  // the first layer of stage 1
  while (chosen->worker_of.at(model->graph.node((*units)[boundary].nodes.front()).name) == 0)
    ++boundary;
  int priced = 0;
  for (int first : {boundary - 1, boundary + 1}) {
    if (first < 1 || first >= static_cast<int>(units->size())) continue;
    PipelineChoice moved = *chosen;
    for (int u = 0; u < static_cast<int>(units->size()); ++u) {
      for (NodeId n : (*units)[u].nodes) moved.worker_of[model->graph.node(n).name] = u >= first;
    }
    auto built = mf->Build(moved.micro_batch);
    ASSERT_TRUE(built.ok());
    ASSERT_TRUE(ApplySubMeshStrategies(moved, &built->graph).ok());
    auto neighbour = PriceSubMeshStages(std::move(*built), moved, *options, 0);
    ASSERT_TRUE(neighbour.ok()) << neighbour.status().message();
    EXPECT_GE(neighbour->price.step_seconds, chosen->price.step_seconds) << "boundary " << first;
    ++priced;
  }
  EXPECT_GE(priced, 1);
}

}  // namespace
}  // namespace shardscope::cli
