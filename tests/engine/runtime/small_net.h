// A small classifier of 1x4x4 inputs for the runtime tests: three Dense layers with ReLUs and
// an optional dropout (rate 0.25) after the second, whose MatMuls a test may shard.
#pragma once

#include "shardscope/nn.h"

namespace shardscope::testing_nets {

class SmallNet : public nn::Module {
 public:
  SmallNet(int64_t width, bool with_dropout)
      : nn::Module(""),
        with_dropout_(with_dropout),
        a{"a", 16, width},
        b{"b", width, width},
        c{"c", width, 8} {}
  nn::Flatten flatten{"flatten"};
  nn::ReLU relu{"relu"};
  nn::Dropout dropout{"dropout", 0.25f, 5};
  bool with_dropout_;
  nn::Dense a, b, c;

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& bld, ValueId x) override {
    x = relu(bld, a(bld, flatten(bld, x)));
    x = relu(bld, b(bld, x));
    if (with_dropout_) x = dropout(bld, x);
    return c(bld, x);
  }
};

}  // namespace shardscope::testing_nets
