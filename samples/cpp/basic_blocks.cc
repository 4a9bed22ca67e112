// Seed 000 (Functional operator sharding): three BasicBlocks, Dense -> GELU -> Dense, block1
// sharded with shard(), trained on a synthetic 16-class problem on 8 in-process devices.
//
//   build/bin/sample-basic-blocks [--epochs 5 | --steps N] [--devices 8] [--show-plan]
//
// The seed (MindSpore):
//   context.set_auto_parallel_context(parallel_mode=context.ParallelMode.AUTO_PARALLEL,
//                                     search_mode="sharding_propagation", device_num=8)
//   class Net1(Net):
//       def __init__(self):
//           super(Net1, self).__init__()
//           # slice input along the second axis and make output as data-parallel layout
//           self.block1.shard(in_strategy=((1, 8),), out_strategy=(None,))
//
// As in the seed, block1's boundary layouts are fixed (input split 8 ways along its second
// axis, output data-parallel) and sharding propagation chooses the strategies inside it; the
// operators outside every block run data-parallel.
//
// The seed shows neither its data nor its loss. Here, as in samples/models/basic_blocks.yaml,
// the 16 outputs are the logits of a 16-class synthetic problem with 16 features per example
// (the seed's 10 features do not split 8 ways).
#include "models.h"
#include "sample_runner.h"

using namespace shardscope;

int main(int argc, char** argv) {
  samples::BasicBlocksNet net;  // block1, block2, block3
  net.block1.shard("((1, 8),)", "(None,)");

  samples::SampleSpec spec;
  spec.description = "Seed 000: three BasicBlocks, block1 sharded, on 8 in-process devices";
  spec.headline = "seed 000: three BasicBlocks, block1 sharded ((1, 8),) -> (None,)";
  spec.search = SearchMode::kShardingPropagation;
  spec.devices_help = "In-process devices (the seed: 8)";
  spec.epochs = 5;
  spec.log_every = 32;
  spec.mnist = false;
  spec.synthetic = {.features = 16, .num_classes = 16};
  spec.input_shape = {16};
  spec.config = {.seed = 1,
                 .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f}};
  return samples::RunSample(argc, argv, net, spec);
}
