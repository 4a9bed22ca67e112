#include "sample_runner.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/program_price.h"

namespace shardscope::samples {
namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

struct Splits {
  Dataset train, test;
  std::string source;
};

Result<Splits> LoadData(const SampleSpec& spec, const std::string& data, int64_t limit) {
  Splits splits;
  if (spec.mnist) {
    SHARDSCOPE_ASSIGN_OR_RETURN(std::string dir, ResolveDataDir(data));
    SHARDSCOPE_ASSIGN_OR_RETURN(splits.train,
                                LoadIdxDataset(dir, Split::kTrain, spec.mnist_data.images, limit));
    SHARDSCOPE_ASSIGN_OR_RETURN(splits.test,
                                LoadIdxDataset(dir, Split::kTest, spec.mnist_data.images, limit));
    splits.source = dir;
  } else if (spec.custom.make) {
    Dataset all = spec.custom.make(spec.custom.train + spec.custom.test, /*seed=*/1);
    BatchIterator split(all, spec.custom.train, /*seed=*/1, /*shuffle=*/false,
                        /*drop_remainder=*/false);
    split.Next(&splits.train.images, &splits.train.labels);
    split.Next(&splits.test.images, &splits.test.labels);
    splits.train.num_classes = splits.test.num_classes = all.num_classes;
    splits.source = spec.custom.source;
  } else {
    // Training and test examples drawn around the same class prototypes.
    const int64_t train = 4096, test = 1024;
    Dataset all = MakeSyntheticDataset(train + test, {spec.synthetic.features},
                                       spec.synthetic.num_classes, /*seed=*/1);
    BatchIterator split(all, train, /*seed=*/1, /*shuffle=*/false, /*drop_remainder=*/false);
    split.Next(&splits.train.images, &splits.train.labels);
    split.Next(&splits.test.images, &splits.test.labels);
    splits.train.num_classes = splits.test.num_classes = spec.synthetic.num_classes;
    splits.source = "synthetic";
  }
  if (splits.train.size() < spec.batch) {
    return Status::Invalid("--limit: fewer training examples than a batch of " +
                           std::to_string(spec.batch));
  }
  return splits;
}

}  // namespace

int RunSample(int argc, char** argv, nn::Module& net, SampleSpec spec) {
  CLI::App app{spec.description};
  int64_t steps = 0, limit = 0;
  std::string data;
  bool show_plan = false;
  int devices = spec.devices;
  int64_t epochs = spec.epochs, log_every = spec.log_every;
  if (spec.mnist) {
    app.add_option("--data", data, "MNIST directory (default: $SHARDSCOPE_DATA, then Debian's)");
    app.add_option("--limit", limit, "Use only the first N examples of each split");
  }
  app.add_option("--epochs", epochs, "Epochs")->capture_default_str();
  app.add_option("--steps", steps, "Stop after N steps (default: whole epochs)");
  app.add_option("--devices", devices, spec.devices_help)->capture_default_str();
  app.add_option("--log-every", log_every, "Print the loss every N steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--show-plan", show_plan, "Print the partitioned program");
  std::string search_name = spec.search ? SearchModeName(*spec.search) : "";
  std::string profile;
  if (spec.search) {
    app.add_option("--search", search_name,
                   "Strategy search: sharding_propagation, recursive_programming or "
                   "dynamic_programming")
        ->capture_default_str();
    app.add_option("--profile", profile,
                   "Cost profile of `shardscope calibrate --out FILE` the search prices with "
                   "(default: built-in figures); the predicted step time (the partitioned "
                   "program's price, as `shardscope plan` reports it) is printed next to the "
                   "measured one");
  }
  CLI11_PARSE(app, argc, argv);
  if (spec.search) {
    auto mode = ParseSearchMode(search_name);
    if (!mode.ok()) return Fail(mode.status());
    spec.search = *mode;
  }

  auto splits = LoadData(spec, data, limit);
  if (!splits.ok()) return Fail(splits.status());
  const Dataset& train = splits->train;
  const Dataset& test = splits->test;
  auto model = nn::BuildClassifier(net, spec.input_shape, spec.batch, spec.input_dtype);
  if (!model.ok()) return Fail(model.status());
  spec.options.devices = devices;
  std::printf("data: %s (%lld training, %lld test examples)\n", splits->source.c_str(),
              static_cast<long long>(train.size()), static_cast<long long>(test.size()));
  if (!spec.note.empty()) std::printf("note: %s\n", spec.note.c_str());
  if (!model->shard_blocks.empty() && !spec.search) {
    return Fail(Status::Invalid("shard() on '" + model->shard_blocks[0].scope +
                                "' needs a search to choose the strategies inside the block"));
  }
  if (!profile.empty()) {
    auto cost = LoadCostModel(profile);
    if (!cost.ok()) return Fail(cost.status());
    spec.options.cost = *cost;
  }
  // The predicted step time prices the program the devices run (PriceProgram, as `shardscope
  // plan` reports it), not the search's objective (which is blind to what the partitioner
  // makes of a layout); set by the lead device once its program exists.
  double predicted_seconds = 0;
  bool searched = false;
  SearchOptions search;
  if (spec.search && devices > 1) {
    search.cost = spec.options.cost;
    search.mode = *spec.search;
    search.devices = devices;
    search.meshes = spec.options.meshes;
    search.shard_blocks = model->shard_blocks;
    search.optimizer_states = OptimizerStateTensors(spec.config.optimizer.kind);
    auto chosen = SearchStrategies(model->graph, search);
    if (!chosen.ok()) return Fail(chosen.status());
    if (Status applied = ApplySearchResult(*chosen, &model->graph); !applied.ok()) {
      return Fail(applied);
    }
    searched = true;
    std::printf("%s chose the strategies of %zu operator(s); search objective %.3f ms\n",
                SearchModeName(*spec.search), chosen->operators.size(), 1e3 * chosen->step_seconds);
    if (spec.report_search) spec.report_search(*chosen);
  }

  // One thread per device; every device runs this with its own rank.
  Status status = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    const bool lead = comm.rank() == 0;
    SHARDSCOPE_ASSIGN_OR_RETURN(
        auto trainer, DistTrainer::Create(*model, spec.config, spec.options, comm.rank()));
    if (lead) {
      const DistProgram& program = trainer->program();
      std::printf(
          "%s on %d device(s): %d redistribution(s), %lld bytes received per step by "
          "rank 0\n",
          spec.headline.c_str(), comm.size(), program.NumRedistributions(),
          static_cast<long long>(program.PlannedRecvBytes(0)));
      if (show_plan) std::printf("%s", program.ToText(trainer->graph()).c_str());
      if (searched) {
        SHARDSCOPE_ASSIGN_OR_RETURN(ProgramPrice price,
                                    PriceProgram(trainer->graph(), program, search));
        predicted_seconds = price.step_seconds;
        std::printf(
            "predicted step time: %.3f ms (operators %.3f ms, communication %.3f ms in %d "
            "steps)\n",
            1e3 * price.step_seconds, 1e3 * price.operator_seconds,
            1e3 * price.communication_seconds, price.communication_steps);
      }
    }
    BatchIterator batches(train, spec.batch, spec.config.seed, /*shuffle=*/true);
    const int64_t total = steps > 0 ? steps : epochs * batches.batches_per_epoch();
    Tensor x, y;
    // Wall time of the steps after the first (which allocates and splits communicators).
    double steady_seconds = 0;
    for (int epoch = 1; trainer->step() < total; ++epoch) {
      batches.Reset(epoch - 1);
      const auto start = std::chrono::steady_clock::now();
      for (int64_t i = 1; trainer->step() < total && batches.Next(&x, &y); ++i) {
        const auto step_start = std::chrono::steady_clock::now();
        SHARDSCOPE_ASSIGN_OR_RETURN(float loss, trainer->Step(comm, x, y));
        if (trainer->step() > 1)
          steady_seconds +=
              std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
        if (lead && (i == 1 || i % log_every == 0)) {
          std::printf("epoch: %d step: %lld, loss is %.6f\n", epoch, static_cast<long long>(i),
                      loss);
        }
      }
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (lead && spec.epoch_times) std::printf("epoch time: %.1f s\n", took.count());
    }
    if (lead && trainer->step() > 1) {
      const double measured = steady_seconds / static_cast<double>(trainer->step() - 1);
      std::printf("step time: %.2f ms measured (mean of steps 2-%lld)", 1e3 * measured,
                  static_cast<long long>(trainer->step()));
      if (predicted_seconds > 0) {
        std::printf(", %.2f ms predicted (measured / predicted %.2f)", 1e3 * predicted_seconds,
                    measured / predicted_seconds);
      }
      std::printf("\n");
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

}  // namespace shardscope::samples
