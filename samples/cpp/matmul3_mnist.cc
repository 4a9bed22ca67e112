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
  CLI::App app{"Seed 004: three MatMuls sharded with layouts, MNIST, 8 in-process devices"};
  int64_t steps = 0, epochs = 10, limit = 0, log_every = 10;
  int devices = 8;
  std::string data;
  bool show_plan = false;
  app.add_option("--data", data, "MNIST directory (default: $SHARDSCOPE_DATA, then Debian's)");
  app.add_option("--epochs", epochs, "Epochs (the seed: 10)");
  app.add_option("--steps", steps, "Stop after N steps");
  app.add_option("--devices", devices, "In-process devices (the layouts need 8)");
  app.add_option("--limit", limit, "Use only the first N examples of each split");
  app.add_option("--log-every", log_every, "Print the loss every N steps")
      ->check(CLI::PositiveNumber);
  app.add_flag("--show-plan", show_plan, "Print the partitioned program");
  CLI11_PARSE(app, argc, argv);

  // The network and the seed's strategies. The layouts name the meshes declared below.
  samples::MatMul3Net net;
  net.matmul1.shard(R"((layout("mp", ("sp", "dp")), layout(("sp", "dp"), "None")))");
  net.relu1.shard("((4, 1),)");
  net.matmul2.shard(R"((layout2("None", "tp"), layout2("tp", "None")))");
  net.relu2.shard("((8, 1),)");

  // The device meshes, under the names the strategies use.
  auto layout = ParseMeshExpr(R"(Layout((2, 2, 2), ("dp", "sp", "mp")))");
  if (!layout.ok()) return Fail(layout.status());
  auto layout2 = ParseMeshExpr(R"(Layout((8,), ("tp",)))");
  if (!layout2.ok()) return Fail(layout2.status());
  PartitionOptions options;
  options.devices = devices;
  options.meshes = {{"layout", *layout}, {"layout2", *layout2}};

  // MNIST, scaled to [0, 1] and normalised with mean 0.1307, stddev 0.3081 (the defaults).
  auto dir = ResolveDataDir(data);
  if (!dir.ok()) return Fail(dir.status());
  auto train = LoadIdxDataset(*dir, Split::kTrain, ImageOptions{}, limit);
  if (!train.ok()) return Fail(train.status());
  auto test = LoadIdxDataset(*dir, Split::kTest, ImageOptions{}, limit);
  if (!test.ok()) return Fail(test.status());
  const int64_t batch = 32;
  if (train->size() < batch) return Fail(Status::Invalid("--limit: fewer examples than a batch"));

  auto model = nn::BuildClassifier(net, {1, 28, 28}, batch);
  if (!model.ok()) return Fail(model.status());
  const TrainConfig config{.seed = 1, .optimizer = {.kind = OptimizerConfig::kSGD, .lr = 1e-2f}};

  std::printf("data: %s (%lld training, %lld test examples)\n", dir->c_str(),
              static_cast<long long>(train->size()), static_cast<long long>(test->size()));
  // One thread per device; every device runs this with its own rank.
  Status status = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    const bool lead = comm.rank() == 0;
    SHARDSCOPE_ASSIGN_OR_RETURN(auto trainer,
                                DistTrainer::Create(*model, config, options, comm.rank()));
    if (lead) {
      const DistProgram& program = trainer->program();
      std::printf(
          "seed 004: matmul1 on %s, matmul2 on %s, %d device(s): "
          "%d redistribution(s), %lld bytes received per step by rank 0\n",
          layout->ToString().c_str(), layout2->ToString().c_str(), comm.size(),
          program.NumRedistributions(), static_cast<long long>(program.PlannedRecvBytes(0)));
      if (show_plan) std::printf("%s", program.ToText(trainer->graph()).c_str());
    }
    BatchIterator batches(*train, batch, config.seed, /*shuffle=*/true);
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
    SHARDSCOPE_ASSIGN_OR_RETURN(double accuracy, trainer->Evaluate(comm, *test));
    if (lead) {
      std::printf("test accuracy: %.4f (%lld examples)\n", accuracy,
                  static_cast<long long>(test->size()));
    }
    return Status::Ok();
  });
  return status.ok() ? 0 : Fail(status);
}
