// The correctness law under mpirun: each rank is one device of the distributed run and
// also trains the single-device reference itself; every rank compares its shards.
//   mpirun -np 2 engine_law_mpi      (configurations for 2 ranks: ZeRO 2 and 3)
//   mpirun -np 4 engine_law_mpi      (configurations for 4 ranks)
//   mpirun -np 8 engine_law_mpi      (configurations for 8 ranks, including the seeds')
#include <cstdio>
#include <map>
#include <string>

#include "law_mpi_cases.h"
#include "models.h"
#include "shardscope/model_file.h"
#include "token_law.h"

using namespace shardscope;

namespace {

using testing_law::Case;

Case FromFile(const std::string& file) {
  auto mf = std::make_shared<ModelFile>(
      LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + file).value());
  Case c;
  c.name = file;
  c.batch = mf->training().batch;
  c.data = MakeSyntheticDataset(c.batch * 5, mf->example_shape(), mf->num_classes(), 5);
  for (const auto& [name, text] : mf->parallel().meshes)
    c.options.meshes[name] = ParseMeshExpr(text).value();
  const int64_t batch = c.batch;
  c.build = [mf, batch] { return mf->Build(batch); };
  return c;
}

Case Ffn(const std::string& dense1, const std::string& dense3) {
  Case c;
  c.name = "ffn " + dense1 + " " + dense3;
  c.batch = 16;
  c.data = MakeSyntheticDataset(16 * 5, {1, 28, 28}, 10, 7);
  c.build = [dense1, dense3] {
    samples::FFN net;
    if (!dense1.empty()) net.dense1.matmul.shard(dense1);
    if (!dense3.empty()) net.dense3.matmul.shard(dense3);
    return nn::BuildClassifier(net, {1, 28, 28}, 16);
  };
  return c;
}

// A token model on the GPL-3 text with `strategies` set (operator -> in_strategy).
Case Tokens(const std::string& name, Result<std::shared_ptr<const ModelFile>> (*load)(),
            std::map<std::string, std::string> strategies) {
  auto mf = load().value();
  Case c;
  c.name = name;
  c.batch = 16;
  c.data = testing_law::TextData(*mf, c.batch).value();
  c.build = testing_law::WithStrategies(mf, c.batch, std::move(strategies));
  return c;
}

Case WithMemoryOptions(Case c, int zero, std::vector<std::string> recompute) {
  c.name += " zero " + std::to_string(zero) + " recompute " + std::to_string(recompute.size());
  c.options.optimizer_sharding = zero;
  c.options.recompute = std::move(recompute);
  return c;
}

}  // namespace

int main() {
  auto world_or = MpiWorld();
  if (!world_or.ok()) {
    std::fprintf(stderr, "error: %s\n", world_or.status().message().c_str());
    return 1;
  }
  Communicator& world = **world_or;
  const int n = world.size();
  std::vector<Case> cases = {Ffn("", "")};  // data parallel
  if (n == 2 || n == 4) {  // ZeRO 2 and 3: gradients reduce-scattered beside the backward
    Case each = WithMemoryOptions(Ffn("", ""), 3, {});
    each.config.bucket_bytes = 0;
    each.name += " unbucketed";
    cases.push_back(each);
    cases.push_back(WithMemoryOptions(Ffn(n == 4 ? "((2,1),(1,2))" : "", ""), 2, {}));
    for (int stage : {2, 3}) {              // several buckets of several gradients each
      for (bool overlap : {true, false}) {  // beside the backward (the default), or blocking
        Case small = WithMemoryOptions(Ffn(n == 4 ? "((2,1),(1,2))" : "", ""), stage, {});
        small.config.bucket_bytes = int64_t{256} << 10;
        small.config.overlap_grad_reduce = overlap;
        small.name += overlap ? " 256 KiB buckets overlapped" : " 256 KiB buckets blocking";
        cases.push_back(small);
      }
    }
  }
  if (n == 2) {
    Case blocking = WithMemoryOptions(Ffn("", "((1,1),(1,2))"), 2, {"dense1"});
    blocking.config.overlap_grad_reduce = false;
    blocking.name += " blocking buckets";
    cases.push_back(blocking);
    cases.push_back(WithMemoryOptions(Ffn("", "((1,1),(1,2))"), 3, {}));
  }
  if (n == 4) {
    cases.push_back(Ffn("((1,1),(1,4))", ""));
    cases.push_back(FromFile("matmul_allgather.yaml"));
    cases.push_back(Tokens("gpt.yaml data-parallel", testing_law::LoadGpt, {}));
    cases.push_back(Tokens("gpt.yaml sharded", testing_law::LoadGpt,
                           {{"embedding.gather", "((4,1),(1,1))"},
                            {"layer0.fc1.matmul", "((1,1),(1,4))"},
                            {"layer0.fc2.matmul", "((1,4),(4,1))"},
                            {"layer1.scores", "((1,4,1,1),(1,4,1,1))"}}));
    cases.push_back(Tokens("ids through a redistribution", testing_law::LoadIdsThroughIdentity,
                           {{"gather", "((4,1),(1,1))"}}));
    // Optimizer-state sharding (ZeRO 1-3) and recomputation over MPI ranks.
    cases.push_back(WithMemoryOptions(Ffn("", ""), 2, {}));
    cases.push_back(WithMemoryOptions(Ffn("((2,1),(1,2))", ""), 1, {"dense1"}));
    cases.push_back(WithMemoryOptions(Ffn("", ""), 3, {"*"}));
  }
  if (n == 8) {
    cases.push_back(Ffn("((2,4),(4,1))", "((1,8),(8,1))"));
    cases.push_back(FromFile("matmul_relu.yaml"));
    cases.push_back(FromFile("dense_matmul_net.yaml"));
    cases.push_back(FromFile("matmul3.yaml"));
  }
  return testing_law::RunMpiCases(world, cases);
}
