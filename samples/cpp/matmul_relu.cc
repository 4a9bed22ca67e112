// Seed 002 (Operator-level Parallelism): a MatMul split ((2, 4), (4, 1)) feeding a ReLU split
// ((8, 1),), trained on 8 in-process devices. The two layouts differ, so the partitioner puts
// a redistribution between them (a reduce-scatter: the MatMul's output is a partial sum over
// the 4 devices that split its reduction axis). --show-plan prints the whole program.
//
//   build/bin/sample-matmul-relu [--steps N] [--devices 8] [--show-plan]
//
// The seed (MindSpore):
//   context.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)
//   class Net(Cell):
//       def __init__(self):
//           super().__init__()
//           self.matmul = ops.MatMul().shard(((2, 4), (4, 1)))
//           self.weight = Parameter(initializer("normal", [32, 16]), "w1")
//           self.relu = ops.ReLU().shard(((8, 1),))
//       def construct(self, x):
//           out = self.matmul(x, self.weight)
//           out = self.relu(out)
//           return out
//
// The seed shows neither its data nor its loss. Here, as in samples/models/matmul_relu.yaml,
// the 16 outputs are the logits of a 16-class synthetic problem with 32 features per example.
#include "models.h"
#include "sample_runner.h"

using namespace shardscope;

int main(int argc, char** argv) {
  // The network and the seed's strategies (data-parallel elsewhere: semi-auto).
  samples::MatMulReluNet net;
  net.matmul.shard("((2, 4), (4, 1))");
  net.relu.shard("((8, 1),)");

  samples::SampleSpec spec;
  spec.description = "Seed 002: MatMul ((2, 4), (4, 1)) + ReLU ((8, 1),) on 8 in-process devices";
  spec.headline = "seed 002: MatMul ((2, 4), (4, 1)) + ReLU ((8, 1),)";
  spec.devices_help = "In-process devices (the strategies need 8)";
  spec.epochs = 1;
  spec.log_every = 1;
  spec.mnist = false;
  spec.synthetic = {.features = 32, .num_classes = 16};
  spec.input_shape = {32};
  spec.config = {.seed = 1,
                 .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f}};
  return samples::RunSample(argc, argv, net, spec);
}
