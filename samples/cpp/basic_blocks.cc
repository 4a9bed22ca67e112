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
  CLI::App app{"Seed 000: three BasicBlocks, data-parallel on 8 in-process devices"};
  int64_t steps = 0, epochs = 5, log_every = 32;
  int devices = 8;
  bool show_plan = false;
  app.add_option("--steps", steps, "Stop after N steps (default: whole epochs)");
  app.add_option("--epochs", epochs, "Epochs over the 4096 training examples");
  app.add_option("--devices", devices, "In-process devices (the seed: 8)");
  app.add_option("--log-every", log_every, "Print the loss every N steps")
      ->check(CLI::PositiveNumber);
  app.add_flag("--show-plan", show_plan, "Print the partitioned program");
  CLI11_PARSE(app, argc, argv);

  samples::BasicBlocksNet net;  // block1, block2, block3; no strategies (see above)

  // 4096 training and 1024 test examples drawn around the same 10 class prototypes.
  Dataset all = MakeSyntheticDataset(4096 + 1024, {10}, /*num_classes=*/10, /*seed=*/1);
  Dataset train, test;
  BatchIterator split(all, 4096, /*seed=*/1, /*shuffle=*/false, /*drop_remainder=*/false);
  split.Next(&train.images, &train.labels);
  split.Next(&test.images, &test.labels);
  train.num_classes = test.num_classes = 10;

  const int64_t batch = 32;
  auto model = nn::BuildClassifier(net, {10}, batch);
  if (!model.ok()) return Fail(model.status());
  const TrainConfig config{
      .seed = 1, .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f}};
  PartitionOptions options;
  options.devices = devices;

  std::printf(
      "note: shard(block1, in_strategy=((1, 8),), out_strategy=(None,)) is not "
      "implemented yet (issue 7); training data-parallel\n");
  // One thread per device; every device runs this with its own rank.
  Status status = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    const bool lead = comm.rank() == 0;
    SHARDSCOPE_ASSIGN_OR_RETURN(auto trainer,
                                DistTrainer::Create(*model, config, options, comm.rank()));
    if (lead) {
      const DistProgram& program = trainer->program();
      std::printf(
          "seed 000: three BasicBlocks data-parallel on %d device(s): "
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
