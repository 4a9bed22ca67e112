// Seed 003 (Automatic Parallelism), second example: the 3-layer network the seed leaves
// entirely to the double recursive strategy search, trained on MNIST on 8 in-process devices.
//
//   build/bin/sample-network3-mnist --data ../shared/datasets/mnist [--epochs N | --steps N]
//                                   [--devices 8] [--limit N] [--show-plan]
//
// The seed (MindSpore):
//   ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.AUTO_PARALLEL,
//                                search_mode="recursive_programming")
//   ms.set_seed(1)
//   net = Network()          # flatten, layer1 784->512, relu, layer2 512->512, relu, layer3
//   optimizer = nn.Momentum(net.trainable_params(), 1e-3, 0.1)
//   loss_fn = nn.MAELoss()
//
// Deviation (as in samples/models/network3.yaml): the seed's layer3 is Dense(512, 1) trained
// with MAELoss; softmax cross-entropy is the only loss here, so layer3 is Dense(512, 10) and
// the network is a 10-class classifier.
//
// As in the seed, the recursive_programming search chooses every strategy.
#include "models.h"
#include "sample_runner.h"

using namespace shardscope;

int main(int argc, char** argv) {
  samples::Network3 net;  // the seed configures no operator

  samples::SampleSpec spec;
  spec.description = "Seed 003: the 3-layer network on MNIST on 8 in-process devices";
  spec.headline = "seed 003: Network (3 layers), recursive_programming";
  spec.search = SearchMode::kRecursiveProgramming;
  spec.devices_help = "In-process devices (the seed: 8)";
  spec.config = {.seed = 1,
                 .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 1e-3f, .momentum = 0.1f}};
  return samples::RunSample(argc, argv, net, spec);
}
