// Placed training under mpirun -np 5 (one worker per process, MPI point-to-point): the
// chain crossing workers back and forth, with and without micro-batches, and seed 001's
// LeNet on real MNIST, each against the single-device run that every rank also trains.
#include <cstdio>

#include "placement_law.h"
#include "shardscope/model_file.h"

using namespace shardscope;

int main() {
  auto world_or = MpiWorld();
  if (!world_or.ok()) {
    std::fprintf(stderr, "error: %s\n", world_or.status().message().c_str());
    return 1;
  }
  Communicator& world = **world_or;
  struct Case {
    std::string name;
    testing_law::BuildAtFn build;
    Dataset data;
    int64_t batch;
    int steps;
    PipelineOptions options;
  };
  std::vector<Case> cases;
  const Dataset chain_data = testing_law::CrossingChainData(16, 5);
  cases.push_back({"crossing chain", testing_law::BuildCrossingChain, chain_data, 16, 5, {}});
  cases.push_back({"crossing chain, 4 micro-batches gpipe", testing_law::BuildCrossingChain,
                   chain_data, 16, 5, PipelineOptions{0, 4, PipelineSchedule::kGPipe}});
  auto mf = LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/lenet5_place.yaml");
  ImageOptions opts;
  opts.pad_to = 32;
  auto mnist =
      LoadIdxDataset(std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist", Split::kTrain, opts, 32 * 10);
  if (!mf.ok() || !mnist.ok()) {
    std::fprintf(stderr, "error: %s\n",
                 (!mf.ok() ? mf.status() : mnist.status()).message().c_str());
    return 1;
  }
  auto lenet = [&](int64_t batch) { return mf->Build(batch); };
  cases.push_back({"seed 001 lenet5_place on MNIST", lenet, *mnist, 32, 10, {}});
  int failed = 0;
  for (const Case& c : cases) {
    const testing_law::SingleRun single =
        testing_law::TrainSingle([&] { return c.build(c.batch); }, c.data, c.batch, c.steps);
    Status st =
        testing_law::TrainPlacedRank(world, c.build, c.data, c.batch, c.steps, c.options, single);
    std::vector<float> mine = {st.ok() ? 1.0f : 0.0f}, all(world.size());
    if (!world.AllGather(mine, all).ok()) return 1;
    bool ok = true;
    for (float f : all) ok = ok && f == 1.0f;
    if (!st.ok())
      std::fprintf(stderr, "rank %d, %s: %s\n", world.rank(), c.name.c_str(), st.message().c_str());
    if (world.rank() == 0)
      std::printf("%s %s on %d ranks\n", ok ? "PASS" : "FAIL", c.name.c_str(), world.size());
    failed += ok ? 0 : 1;
  }
  // A placed operator sharded over a sub-mesh is refused on every rank, before any message.
  auto model = testing_law::BuildCrossingChain(8);
  if (!model.ok()) return 1;
  model->graph.mutable_node(model->graph.FindNode("d2.matmul")).annotations.in_strategy =
      "((1,2),(2,1))";
  auto refused = PipelineTrainer::Create(std::move(*model), testing_law::LawConfig(),
                                         PipelineOptions{world.size(), 1}, world.rank());
  const bool rejected = !refused.ok() && refused.status().code() == StatusCode::kNotImplemented &&
                        refused.status().message().find("sub-mesh") != std::string::npos;
  if (world.rank() == 0)
    std::printf("%s placed + sharded block rejected on %d ranks\n", rejected ? "PASS" : "FAIL",
                world.size());
  failed += rejected ? 0 : 1;
  return failed == 0 ? 0 : 1;
}
