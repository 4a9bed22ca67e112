// Seed 003 (Automatic Parallelism), first example: the 5-layer FFN on MNIST with two MatMuls
// sharded by hand, trained on 8 in-process devices.
//
//   build/bin/sample-ffn-mnist --data ../shared/datasets/mnist [--epochs N | --steps N]
//                              [--devices 8] [--limit N] [--show-plan]
//
// The seed (MindSpore):
//   ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.AUTO_PARALLEL,
//                                search_mode="sharding_propagation")
//   ms.set_seed(1)
//   net = FFN()
//   net.dense1.matmul.shard(((2, 4), (4, 1)))
//   net.dense3.matmul.shard(((1, 8), (8, 1)))
//   data_set = create_dataset(32)
//   optimizer = nn.Momentum(net.trainable_params(), 1e-3, 0.1)
//   loss_fn = nn.CrossEntropyLoss()
//
// As in the seed, sharding propagation chooses the strategies of every other operator.
#include "models.h"
#include "sample_runner.h"

using namespace shardscope;

int main(int argc, char** argv) {
  // The network and the seed's two strategies.
  samples::FFN net;
  net.dense1.matmul.shard("((2, 4), (4, 1))");
  net.dense3.matmul.shard("((1, 8), (8, 1))");

  samples::SampleSpec spec;
  spec.description =
      "Seed 003: the FFN on MNIST, dense1 and dense3 sharded, on 8 in-process devices";
  spec.headline = "seed 003: FFN, dense1.matmul ((2, 4), (4, 1)), dense3.matmul ((1, 8), (8, 1))";
  spec.search = SearchMode::kShardingPropagation;
  spec.devices_help = "In-process devices (the strategies need 8)";
  spec.config = {.seed = 1,
                 .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 1e-3f, .momentum = 0.1f}};
  return samples::RunSample(argc, argv, net, spec);
}
