// Seed 004 (Higher-order Operator-level Parallelism): three raw MatMuls with explicit
// parameters, two of them sharded with layouts on named device meshes, trained on MNIST on 8
// in-process devices.
//   - matmul1 maps one tensor dimension to two mesh axes: x's columns are split over
//     ("sp", "dp"), which puts consecutive blocks on the non-contiguous ranks 0, 4, 2, 6;
//   - matmul2 splits the reduction axis 8 ways on layout2, so its output is a partial sum
//     that the partitioner reduces before relu2.
//
//   build/bin/sample-matmul3-mnist --data ../shared/datasets/mnist [--epochs N | --steps N]
//                                  [--devices 8] [--limit N] [--show-plan]
//
// The seed (MindSpore):
//   ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL)
//   ms.set_seed(1)
//   net = Network()
//   layout = Layout((2, 2, 2), ("dp", "sp", "mp"))
//   net.matmul1.shard((layout("mp", ("sp", "dp")), layout(("sp", "dp"), "None")))
//   net.relu1.shard(((4, 1),))
//   layout2 = Layout((8,), ("tp",))
//   net.matmul2.shard((layout2("None", "tp"), layout2("tp", "None")))
//   net.relu2.shard(((8, 1),))
//   optimizer = nn.SGD(net.trainable_params(), 1e-2)
//   loss_fn = nn.CrossEntropyLoss()
#include <cstdio>

#include "models.h"
#include "sample_runner.h"

using namespace shardscope;

int main(int argc, char** argv) {
  // The network and the seed's strategies. The layouts name the meshes declared below.
  samples::MatMul3Net net;
  net.matmul1.shard(R"((layout("mp", ("sp", "dp")), layout(("sp", "dp"), "None")))");
  net.relu1.shard("((4, 1),)");
  net.matmul2.shard(R"((layout2("None", "tp"), layout2("tp", "None")))");
  net.relu2.shard("((8, 1),)");

  // The device meshes, under the names the strategies use.
  auto layout = ParseMeshExpr(R"(Layout((2, 2, 2), ("dp", "sp", "mp")))");
  auto layout2 = ParseMeshExpr(R"(Layout((8,), ("tp",)))");
  if (!layout.ok() || !layout2.ok()) {
    std::fprintf(stderr, "error: %s\n",
                 (layout.ok() ? layout2.status() : layout.status()).message().c_str());
    return 1;
  }

  samples::SampleSpec spec;
  spec.description = "Seed 004: three MatMuls sharded with layouts, MNIST, 8 in-process devices";
  spec.headline =
      "seed 004: matmul1 on " + layout->ToString() + ", matmul2 on " + layout2->ToString();
  spec.devices_help = "In-process devices (the layouts need 8)";
  spec.log_every = 10;
  spec.options.meshes = {{"layout", *layout}, {"layout2", *layout2}};
  spec.config = {.seed = 1, .optimizer = {.kind = OptimizerConfig::kSGD, .lr = 1e-2f}};
  return samples::RunSample(argc, argv, net, spec);
}
