// The correctness law for searched strategies under mpirun: every rank runs the search
// (they must agree: the search is deterministic), trains its shard of the searched
// program and compares it with the single-device run it also trains.
//   mpirun -np 8 engine_search_law_mpi
#include <cstdio>

#include "gpt.h"
#include "law.h"
#include "models.h"
#include "searched.h"

using namespace shardscope;

namespace {

// This rank's verdict on one model, and whether every rank agrees it passed.
bool LawHolds(Communicator& world, const testing_law::BuildFn& build, const Dataset& data,
              int64_t batch, const std::string& name) {
  PartitionOptions options;
  options.devices = world.size();
  const auto single = testing_law::TrainSingle(build, data, batch, 3);
  std::unique_ptr<DistTrainer> t;
  auto losses = testing_law::TrainRank(world, build, data, batch, 3, options, &t);
  const Status st =
      losses.ok() ? testing_law::CompareRank(*t, *losses, single, world.rank()) : losses.status();
  if (!st.ok())
    std::fprintf(stderr, "rank %d, %s: %s\n", world.rank(), name.c_str(), st.message().c_str());
  std::vector<float> verdict = {st.ok() ? 1.0f : 0.0f}, all(world.size());
  if (!world.AllGather(verdict, all).ok()) return false;
  for (float v : all) {
    if (v != 1.0f) return false;
  }
  return true;
}

int RunAll(Communicator& world) {
  const int n = world.size();
  const testing_law::BuildFn ffn = [] {
    samples::FFN net;
    return nn::BuildClassifier(net, {1, 28, 28}, 16);
  };
  const testing_law::BuildFn gpt = [] {
    samples::Gpt net(2, 32, 8, 64, 8, 4);
    return nn::BuildClassifier(net, {8}, 8, DType::kI32);
  };
  const Dataset images = MakeSyntheticDataset(16 * 3, {1, 28, 28}, 10, 7);
  const Dataset tokens = samples::MakeTokenSumDataset(8 * 3, 8, 32, 4, 5);
  int failed = 0;
  for (SearchMode mode : {SearchMode::kShardingPropagation, SearchMode::kRecursiveProgramming,
                          SearchMode::kDynamicProgramming}) {
    const bool a = LawHolds(world, testing_law::Searched(ffn, mode, n), images, 16, "ffn");
    const bool b = LawHolds(world, testing_law::Searched(gpt, mode, n), tokens, 8, "gpt");
    if (world.rank() == 0) {
      std::printf("%s ffn, %s gpt: %s on %d ranks\n", a ? "PASS" : "FAIL", b ? "PASS" : "FAIL",
                  SearchModeName(mode), n);
    }
    failed += !a + !b;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main() {
  auto world = MpiWorld();
  if (world.ok()) return RunAll(**world);
  std::fprintf(stderr, "error: %s\n", world.status().message().c_str());
  return 1;
}
