// Seed 000 (Functional operator sharding): three BasicBlocks, Dense(10, 10) -> GELU ->
// Dense(10, 10), trained on a synthetic 10-class problem on 8 in-process devices.
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
// Not yet (issue 7): shard() on a block. It would fix block1's input and output layouts and
// search the strategies of the operators inside; the engine has no block-level shard() yet,
// so this program does not call one: all three blocks train data-parallel (every operator
// splits the batch over the devices).
//
// The seed shows neither its data nor its loss. Here, as in samples/models/basic_blocks.yaml,
// the 10 outputs are the logits of a 10-class synthetic problem with 10 features per example.
// The loss stays near 2.30 for about one epoch, then falls: 5 epochs (the default) reach a
// test accuracy of about 0.86.
#include "models.h"
#include "sample_runner.h"

using namespace shardscope;

int main(int argc, char** argv) {
  samples::BasicBlocksNet net;  // block1, block2, block3; no strategies (see above)

  samples::SampleSpec spec;
  spec.description = "Seed 000: three BasicBlocks, data-parallel on 8 in-process devices";
  spec.headline = "seed 000: three BasicBlocks data-parallel";
  spec.note =
      "shard(block1, in_strategy=((1, 8),), out_strategy=(None,)) is not implemented yet "
      "(issue 7); training data-parallel";
  spec.devices_help = "In-process devices (the seed: 8)";
  spec.epochs = 5;
  spec.log_every = 32;
  spec.mnist = false;
  spec.synthetic = {.features = 10, .num_classes = 10};
  spec.input_shape = {10};
  spec.config = {.seed = 1,
                 .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f}};
  return samples::RunSample(argc, argv, net, spec);
}
