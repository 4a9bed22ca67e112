// Pipeline stages sharded over sub-meshes under mpirun -np 4: 2 stages x 2 ranks, stage 0
// data-parallel and stage 1 row-parallel, 1 and 4 micro-batches, against the single-device run
// every rank also trains. With the argument `zero`: ZeRO 2 and 3 inside the stages (both
// stages data-parallel, then data- against row-parallel with every layer recomputed).
#include <cstdio>
#include <cstring>

#include "submesh_law.h"

using namespace shardscope;

namespace {

struct Case {
  int micro_batches;
  bool strategies;
  int zero;
  std::vector<std::string> recompute;
};

}  // namespace

int main(int argc, char** argv) {
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
  const bool zero = argc > 1 && std::strcmp(argv[1], "zero") == 0;
  const std::vector<Case> cases = zero ? std::vector<Case>{{2, false, 2, {}},
                                                           {4, false, 3, {}},
                                                           {2, true, 2, {"*"}},
                                                           {2, true, 3, {"*"}}}
                                       : std::vector<Case>{{1, true, 0, {}}, {4, true, 0, {}}};
  int failed = 0;
  for (const Case& c : cases) {
    const Status st = submesh_law::TrainRank(world, kBatch, c.micro_batches, kSteps, c.strategies,
                                             data, single, accuracy, c.zero, c.recompute);
    std::vector<float> mine = {st.ok() ? 1.0f : 0.0f}, all(world.size());
    if (!world.AllGather(mine, all).ok()) return 1;
    bool ok = true;
    for (float f : all) ok = ok && f == 1.0f;
    if (!st.ok()) std::fprintf(stderr, "rank %d: %s\n", world.rank(), st.message().c_str());
    if (world.rank() == 0)
      std::printf("%s 2 stages x %d ranks, %d micro-batches, %s, ZeRO %d, %zu recomputed\n",
                  ok ? "PASS" : "FAIL", world.size() / 2, c.micro_batches,
                  c.strategies ? "data- and row-parallel" : "data-parallel", c.zero,
                  c.recompute.size());
    failed += ok ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}
