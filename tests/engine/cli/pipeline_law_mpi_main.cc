// The planner's pipeline stages under mpirun -np 4 (one stage per process, MPI
// point-to-point), each sample against the single-device run every rank also trains.
#include <cstdio>

#include "pipeline_law_cases.h"

using namespace shardscope;

int main() {
  auto world_or = MpiWorld();
  if (!world_or.ok()) {
    std::fprintf(stderr, "error: %s\n", world_or.status().message().c_str());
    return 1;
  }
  Communicator& world = **world_or;
  int failed = 0;
  for (const auto& [sample, batch] : {std::pair<std::string, int64_t>{"ffn.yaml", 32},
                                      std::pair<std::string, int64_t>{"mlp_pipeline.yaml", 64}}) {
    auto s = pipeline_law::Staged(sample, world.size(), batch);
    Status st = s.status();
    if (st.ok()) {
      const Dataset data = MakeSyntheticDataset(batch * 4, {1, 28, 28}, 10, 5);
      const testing_law::BuildAtFn build = pipeline_law::StagedBuild(*s);
      const testing_law::SingleRun single =
          testing_law::TrainSingle([&] { return build(batch); }, data, batch, 4);
      st = testing_law::TrainPlacedRank(world, build, data, batch, 4, pipeline_law::OptionsOf(*s),
                                        single);
    }
    std::vector<float> mine = {st.ok() ? 1.0f : 0.0f}, all(world.size());
    if (!world.AllGather(mine, all).ok()) return 1;
    bool ok = true;
    for (float f : all) ok = ok && f == 1.0f;
    if (!st.ok())
      std::fprintf(stderr, "rank %d, %s: %s\n", world.rank(), sample.c_str(), st.message().c_str());
    if (world.rank() == 0)
      std::printf("%s %s: planner's stages on %d ranks\n", ok ? "PASS" : "FAIL", sample.c_str(),
                  world.size());
    failed += ok ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}
