// `shardscope train MODEL`: trains a model file and prints test accuracy.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/command.h"
#include "cli/progress.h"
#include "shardscope/data.h"
#include "shardscope/model_file.h"
#include "shardscope/trainer.h"

namespace shardscope::cli {
namespace {

struct TrainOptions {
  std::string model;
  int64_t epochs = 0, steps = 0, batch = 0;
  double lr = 0;
  int64_t seed = -1;
  std::string data;
  int devices = 1;
  std::string mode;
  bool ignore_parallel = false;
  std::string dump_ir;
  int64_t limit = 0;
};

// Describes the parallel annotations that this build cannot run yet.
std::string DescribeUnsupported(const ParallelConfig& p) {
  std::string s;
  for (const AnnotationEntry& a : p.annotations) {
    s += "\n  " + a.location.ToString() + ": " + a.op;
    if (!a.annotations.in_strategy.empty()) s += " shard" + a.annotations.in_strategy;
    if (!a.annotations.out_strategy.empty()) s += " out " + a.annotations.out_strategy;
    if (a.annotations.worker >= 0) s += " place(worker, " + std::to_string(a.annotations.worker) + ")";
  }
  for (const ShardBlockEntry& b : p.shard_blocks) {
    s += "\n  " + b.location.ToString() + ": shard(" + b.block + ", " + b.in_strategy + ")";
  }
  return s;
}

Result<Dataset> LoadData(const ModelFile& mf, const TrainOptions& o, Split split, int64_t limit) {
  const DataConfig& d = mf.data();
  if (d.dataset == "synthetic") {
    const int64_t n = d.synthetic_size > 0 ? d.synthetic_size : 4096;
    // Train and test come from the same prototypes (one seed), split by position.
    Dataset all = MakeSyntheticDataset(n + n / 4, mf.example_shape(), mf.num_classes(), mf.training().seed);
    const int64_t begin = split == Split::kTrain ? 0 : n;
    const int64_t count = split == Split::kTrain ? n : n / 4;
    const int64_t ex = all.images.size() / all.size();
    Shape shape = all.images.shape();
    shape[0] = count;
    Dataset out;
    out.num_classes = all.num_classes;
    out.images = Tensor::FromVector(
        shape, std::vector<float>(all.images.data() + begin * ex, all.images.data() + (begin + count) * ex));
    out.labels = Tensor::FromInts(
        {count}, std::vector<int32_t>(all.labels.ints() + begin, all.labels.ints() + begin + count));
    return out;
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(std::string dir, ResolveDataDir(!o.data.empty() ? o.data : d.dir));
  ImageOptions opts;
  opts.normalize = d.normalize;
  opts.pad_to = d.pad_to;
  return LoadIdxDataset(dir, split, opts, limit);
}

int RunTrain(const TrainOptions& o) {
  auto mf = LoadModelFile(o.model);
  if (!mf.ok()) return Fail(kExitBadInput, mf.status().message());
  const ParallelConfig& parallel = mf->parallel();
  if (o.devices > 1) {
    return Fail(kExitBadInput, "--devices " + std::to_string(o.devices) +
                                   ": distributed training is not implemented yet in this build "
                                   "(it arrives with the SPMD partitioner, issue 4); use --devices 1");
  }
  if (!parallel.empty() && !o.ignore_parallel) {
    return Fail(kExitBadInput,
                o.model + " has parallel annotations that single-device training cannot honour, "
                          "and distributed execution is not implemented yet:" +
                    DescribeUnsupported(parallel) +
                    "\nRun with --ignore-parallel to train the same network on one device.");
  }
  if (!o.mode.empty() && o.mode != "stand_alone") {
    return Fail(kExitBadInput, "--mode " + o.mode + " is not implemented yet; only stand_alone runs in this build");
  }

  TrainingConfig tc = mf->training();
  if (o.batch > 0) tc.batch = o.batch;
  if (o.epochs > 0) tc.epochs = o.epochs;
  if (o.steps > 0) tc.steps = o.steps;
  if (o.lr > 0) tc.optimizer.lr = static_cast<float>(o.lr);
  if (o.seed >= 0) tc.seed = static_cast<uint64_t>(o.seed);

  auto train = LoadData(*mf, o, Split::kTrain, o.limit);
  if (!train.ok()) return Fail(kExitBadInput, train.status().message());
  auto test = LoadData(*mf, o, Split::kTest, o.limit);
  if (!test.ok()) return Fail(kExitBadInput, test.status().message());
  if (train->images.size() / std::max<int64_t>(1, train->size()) != NumElements(mf->example_shape())) {
    return Fail(kExitBadInput, o.model + ": the data's examples have shape " +
                                   ShapeToString(Shape(train->images.shape().begin() + 1, train->images.shape().end())) +
                                   " but the model's input is " + ShapeToString(mf->example_shape()) +
                                   " (set data.pad_to or input.shape)");
  }
  if (train->size() < tc.batch) {
    return Fail(kExitBadInput, "batch " + std::to_string(tc.batch) + " is larger than the training set (" +
                                   std::to_string(train->size()) + " examples)");
  }

  auto model = mf->Build(tc.batch);
  if (!model.ok()) return Fail(kExitBadInput, model.status().message());
  auto trainer = Trainer::Create(std::move(*model), TrainConfig{tc.seed, tc.optimizer});
  if (!trainer.ok()) return Fail(kExitRunFailure, trainer.status().message());
  Trainer& t = **trainer;
  if (!o.dump_ir.empty()) {
    std::ofstream out(o.dump_ir);
    out << t.graph().ToText();
    if (!out) return Fail(kExitBadInput, "cannot write --dump-ir file " + o.dump_ir);
  }

  BatchIterator batches(*train, tc.batch, tc.seed, /*shuffle=*/true);
  const int64_t per_epoch = batches.batches_per_epoch();
  const int64_t total = tc.steps > 0 ? tc.steps : per_epoch * tc.epochs;
  const int64_t epochs = (total + per_epoch - 1) / per_epoch;
  std::printf("training %s: %lld parameters, batch %lld, %s lr %g, %lld steps (%lld per epoch), seed %llu\n",
              mf->name().c_str(), static_cast<long long>(t.executor().BytesOf(ValueKind::kParameter) / 4),
              static_cast<long long>(tc.batch), OptimizerKindName(tc.optimizer.kind), tc.optimizer.lr,
              static_cast<long long>(total), static_cast<long long>(per_epoch),
              static_cast<unsigned long long>(tc.seed));
  std::fflush(stdout);

  Progress progress(stdout, total, std::max<int64_t>(1, per_epoch / 10));
  Tensor x, y;
  int64_t step = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t epoch = 0; epoch < epochs && step < total; ++epoch) {
    batches.Reset(static_cast<int>(epoch));
    double epoch_loss = 0;
    int64_t epoch_steps = 0;
    while (step < total && batches.Next(&x, &y)) {
      const float loss = t.Step(x, y);
      if (!std::isfinite(loss)) {
        progress.Finish();
        return Fail(kExitRunFailure, "loss became " + std::to_string(loss) + " at step " +
                                         std::to_string(step + 1) + " (try a smaller --lr)");
      }
      epoch_loss += loss;
      ++epoch_steps;
      ++step;
      progress.Update(step, "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs), loss, tc.batch);
    }
    progress.Finish();
    std::printf("epoch %lld: mean loss %.4f\n", static_cast<long long>(epoch + 1),
                epoch_loss / std::max<int64_t>(1, epoch_steps));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double accuracy = t.Evaluate(*test);
  std::printf("test accuracy: %.4f (%lld examples), %lld steps in %s (%.2f ms/step)\n", accuracy,
              static_cast<long long>(test->size()), static_cast<long long>(step),
              FormatDuration(secs).c_str(), step ? 1e3 * secs / step : 0.0);
  return kExitOk;
}

}  // namespace

void AddTrainCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* app = root.add_subcommand(
      "train",
      "Train a model file on one device and print test accuracy.\n"
      "\n"
      "Example: shardscope train samples/models/lenet5.yaml --epochs 3\n"
      "Data: --data DIR, else the model file's data.dir, else $SHARDSCOPE_DATA, else\n"
      "Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).\n"
      "Flags override the model file's training section.\n"
      "Not yet in this build: --devices > 1, --mode other than stand_alone, and running\n"
      "the parallel section (strategies, layouts, place, shard); --ignore-parallel trains\n"
      "such a model on one device instead.");
  app->add_option("model", o->model, "Model file (YAML, see docs/model-format.md)")->required();
  auto* epochs = app->add_option("--epochs", o->epochs, "Epochs to train")->check(CLI::PositiveNumber);
  app->add_option("--steps", o->steps, "Stop after this many steps")->check(CLI::PositiveNumber)->excludes(epochs);
  app->add_option("--batch", o->batch, "Global batch size")->check(CLI::PositiveNumber);
  app->add_option("--lr", o->lr, "Learning rate")->check(CLI::PositiveNumber);
  app->add_option("--seed", o->seed, "Seed of parameters, shuffling and dropout")->check(CLI::NonNegativeNumber);
  app->add_option("--data", o->data, "Directory with the four MNIST-format IDX files");
  app->add_option("--limit", o->limit, "Use only the first N examples of each split (quick runs)")
      ->check(CLI::PositiveNumber);
  app->add_option("--devices", o->devices, "Devices (only 1 in this build)")->check(CLI::PositiveNumber);
  app->add_option("--mode", o->mode, "stand_alone (data_parallel, semi_auto: not yet in this build)");
  app->add_flag("--ignore-parallel", o->ignore_parallel,
                "Train a model with a parallel section on one device, ignoring that section");
  app->add_option("--dump-ir", o->dump_ir, "Write the graph after autodiff, as text, to FILE");
  commands.push_back({app, [o] { return RunTrain(*o); }});
}

}  // namespace shardscope::cli
