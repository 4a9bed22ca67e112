// The seeds' networks on the public C++ API (DESIGN.md, shared/seeds/README.md).
// Header-only so that samples, tests and benchmarks build the very same models.
#pragma once

#include "shardscope/shardscope.h"

namespace shardscope::samples {

// Seed 003: the 5-layer FFN on MNIST, 784 -> 512 -> 256 -> 128 -> 64 -> 10, one shared ReLU.
// Configure it as the seed does: net.dense1.matmul.shard("((2,4),(4,1))").
class FFN : public nn::Module {
 public:
  FFN() : nn::Module("") {}
  nn::Flatten flatten{"flatten"};
  nn::Dense dense1{"dense1", 28 * 28, 512};
  nn::Dense dense2{"dense2", 512, 256};
  nn::Dense dense3{"dense3", 256, 128};
  nn::Dense dense4{"dense4", 128, 64};
  nn::Dense dense5{"dense5", 64, 10};
  nn::ReLU relu{"relu"};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    x = flatten(b, x);
    for (nn::Dense* d : {&dense1, &dense2, &dense3, &dense4}) x = relu(b, (*d)(b, x));
    return dense5(b, x);
  }
};

// Seed 001: LeNet5 on 32x32 MNIST (zero-padded from 28), convolutions without bias,
// truncated-normal(0.02) weights as in the seed.
class LeNet5 : public nn::Module {
 public:
  LeNet5() : nn::Module("") {}
  nn::Conv2d conv1{"conv1", 1, 6, 5, 1, Padding::kValid, false, nn::TruncatedNormal(0.02f)};
  nn::Conv2d conv2{"conv2", 6, 16, 5, 1, Padding::kValid, false, nn::TruncatedNormal(0.02f)};
  nn::Dense fc1{"fc1", 16 * 5 * 5, 120, true, nn::TruncatedNormal(0.02f), nn::TruncatedNormal(0.02f)};
  nn::Dense fc2{"fc2", 120, 84, true, nn::TruncatedNormal(0.02f), nn::TruncatedNormal(0.02f)};
  nn::Dense fc3{"fc3", 84, 10, true, nn::TruncatedNormal(0.02f), nn::TruncatedNormal(0.02f)};
  nn::ReLU relu{"relu"};
  nn::MaxPool2d max_pool2d{"max_pool2d", 2, 2};
  nn::Flatten flatten{"flatten"};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    x = max_pool2d(b, relu(b, conv1(b, x)));
    x = max_pool2d(b, relu(b, conv2(b, x)));
    x = flatten(b, x);
    x = relu(b, fc1(b, x));
    x = relu(b, fc2(b, x));
    return fc3(b, x);
  }
};

}  // namespace shardscope::samples
