// Seed 001's LeNet5 trained on MNIST on one device, written against the public API.
//   build/bin/sample-lenet5-mnist [DATA_DIR] [EPOCHS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "models.h"

using namespace shardscope;

int main(int argc, char** argv) {
  auto dir = ResolveDataDir(argc > 1 ? argv[1] : "");
  if (!dir.ok()) {
    std::fprintf(stderr, "error: %s\n", dir.status().message().c_str());
    return 2;
  }
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 1;
  ImageOptions opts;
  opts.pad_to = 32;
  auto train = LoadIdxDataset(*dir, Split::kTrain, opts);
  auto test = LoadIdxDataset(*dir, Split::kTest, opts);
  if (!train.ok() || !test.ok()) {
    std::fprintf(stderr, "error: %s\n", (!train.ok() ? train : test).status().message().c_str());
    return 2;
  }

  samples::LeNet5 net;
  const int64_t batch = 32;
  auto model = nn::BuildClassifier(net, {1, 32, 32}, batch);
  if (!model.ok()) {
    std::fprintf(stderr, "error: %s\n", model.status().message().c_str());
    return 2;
  }
  TrainConfig config;
  config.seed = 1;
  config.optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f};
  auto trainer = Trainer::Create(std::move(*model), config);
  if (!trainer.ok()) {
    std::fprintf(stderr, "error: %s\n", trainer.status().message().c_str());
    return 1;
  }
  BatchIterator batches(*train, batch, /*seed=*/1, /*shuffle=*/true);
  Tensor x, y;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    batches.Reset(epoch);
    const auto start = std::chrono::steady_clock::now();
    float loss = 0.0f;
    for (int64_t i = 0; batches.Next(&x, &y); ++i) {
      loss = (*trainer)->Step(x, y);
      if (i % 500 == 0) std::printf("epoch %d step %lld loss %.4f\n", epoch, static_cast<long long>(i), loss);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("epoch %d: loss %.4f, test accuracy %.4f, %.1f s\n", epoch, loss,
                (*trainer)->Evaluate(*test), secs);
  }
  return 0;
}
