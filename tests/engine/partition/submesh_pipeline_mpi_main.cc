// Pipeline stages sharded over sub-meshes under mpirun -np 4: 2 stages x 2 ranks, stage 0
// data-parallel and stage 1 row-parallel, 1 and 4 micro-batches, against the single-device run
// every rank also trains.
#include <cstdio>

#include "submesh_law.h"

using namespace shardscope;

int main() {
  auto world_or = MpiWorld();
  if (!world_or.ok()) {
    std::fprintf(stderr, "error: %s\n", world_or.status().message().c_str());
    return 1;
  }
  Communicator& world = **world_or;
  constexpr int64_t kBatch = 16;
  constexpr int kSteps = 4;
  const Dataset data = MakeSyntheticDataset(kBatch * kSteps, {1, 28, 28}, 10, 5);
  double accuracy = 0;
  const testing_law::SingleRun single = submesh_law::Single(kBatch, kSteps, data, &accuracy);
  int failed = 0;
  for (const int micro_batches : {1, 4}) {
    const Status st =
        submesh_law::TrainRank(world, kBatch, micro_batches, kSteps, true, data, single, accuracy);
    std::vector<float> mine = {st.ok() ? 1.0f : 0.0f}, all(world.size());
    if (!world.AllGather(mine, all).ok()) return 1;
    bool ok = true;
    for (float f : all) ok = ok && f == 1.0f;
    if (!st.ok()) std::fprintf(stderr, "rank %d: %s\n", world.rank(), st.message().c_str());
    if (world.rank() == 0)
      std::printf("%s 2 stages x %d ranks, %d micro-batches\n", ok ? "PASS" : "FAIL",
                  world.size() / 2, micro_batches);
    failed += ok ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}
