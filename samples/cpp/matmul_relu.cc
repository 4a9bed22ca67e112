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
#include <CLI/CLI.hpp>
#include <cstdio>

#include "models.h"
#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"

using namespace shardscope;

static int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

int main(int argc, char** argv) {
  CLI::App app{"Seed 002: MatMul ((2, 4), (4, 1)) + ReLU ((8, 1),) on 8 in-process devices"};
  int64_t steps = 0, epochs = 1, log_every = 1;
  int devices = 8;
  bool show_plan = false;
  app.add_option("--steps", steps, "Stop after N steps (default: whole epochs)");
  app.add_option("--epochs", epochs, "Epochs over the 4096 training examples");
  app.add_option("--devices", devices, "In-process devices (the strategies need 8)");
  app.add_option("--log-every", log_every, "Print the loss every N steps")
      ->check(CLI::PositiveNumber);
  app.add_flag("--show-plan", show_plan, "Print the partitioned program");
  CLI11_PARSE(app, argc, argv);

  // The network and the seed's strategies.
  samples::MatMulReluNet net;
  net.matmul.shard("((2, 4), (4, 1))");
  net.relu.shard("((8, 1),)");

  // 4096 training and 1024 test examples drawn around the same 16 class prototypes.
  Dataset all = MakeSyntheticDataset(4096 + 1024, {32}, /*num_classes=*/16, /*seed=*/1);
  Dataset train, test;
  BatchIterator split(all, 4096, /*seed=*/1, /*shuffle=*/false, /*drop_remainder=*/false);
  split.Next(&train.images, &train.labels);
  split.Next(&test.images, &test.labels);
  train.num_classes = test.num_classes = 16;

  const int64_t batch = 32;
  auto model = nn::BuildClassifier(net, {32}, batch);
  if (!model.ok()) return Fail(model.status());
  const TrainConfig config{
      .seed = 1, .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f}};
  PartitionOptions options;
  options.devices = devices;  // semi-auto: the strategies above, data-parallel elsewhere

  // One thread per device; every device runs this with its own rank.
  Status status = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    const bool lead = comm.rank() == 0;
    SHARDSCOPE_ASSIGN_OR_RETURN(auto trainer,
                                DistTrainer::Create(*model, config, options, comm.rank()));
    if (lead) {
      const DistProgram& program = trainer->program();
      std::printf(
          "seed 002: MatMul ((2, 4), (4, 1)) + ReLU ((8, 1),) on %d device(s): "
          "%d redistribution(s), %lld bytes received per step by rank 0\n",
          comm.size(), program.NumRedistributions(),
          static_cast<long long>(program.PlannedRecvBytes(0)));
      if (show_plan) std::printf("%s", program.ToText(trainer->graph()).c_str());
    }
    BatchIterator batches(train, batch, config.seed, /*shuffle=*/true);
    const int64_t total = steps > 0 ? steps : epochs * batches.batches_per_epoch();
    Tensor x, y;
    for (int epoch = 1; trainer->step() < total; ++epoch) {
      batches.Reset(epoch - 1);
      for (int64_t i = 1; trainer->step() < total && batches.Next(&x, &y); ++i) {
        SHARDSCOPE_ASSIGN_OR_RETURN(float loss, trainer->Step(comm, x, y));
        if (lead && (i == 1 || i % log_every == 0)) {
          std::printf("epoch: %d step: %lld, loss is %.6f\n", epoch, static_cast<long long>(i),
                      loss);
        }
      }
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(double accuracy, trainer->Evaluate(comm, test));
    if (lead) {
      std::printf("test accuracy: %.4f (%lld examples)\n", accuracy,
                  static_cast<long long>(test.size()));
    }
    return Status::Ok();
  });
  return status.ok() ? 0 : Fail(status);
}
