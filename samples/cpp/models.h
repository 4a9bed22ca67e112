// The seeds' networks on the public C++ API (DESIGN.md, shared/seeds/README.md).
// Header-only so that samples, tests and benchmarks build the very same models.
#pragma once

#include <cmath>

#include "shardscope/initializer.h"
#include "shardscope/nn.h"
#include "shardscope/trainer.h"  // ModelGraph, which the samples return

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
  nn::Dense fc1{
      "fc1", 16 * 5 * 5, 120, true, nn::TruncatedNormal(0.02f), nn::TruncatedNormal(0.02f)};
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

namespace shardscope::samples {

// A pre-LayerNorm transformer block: attention through BatchMatMul and Softmax, an MLP,
// residual adds. x: [batch, tokens, dim].
class TransformerBlock : public nn::Module {
  int64_t tokens_, dim_, heads_;  // first: the members below are built from them

 public:
  TransformerBlock(std::string name, int64_t tokens, int64_t dim, int64_t heads)
      : nn::Module(std::move(name)), tokens_(tokens), dim_(dim), heads_(heads) {}
  nn::LayerNorm ln1{"ln1", dim_}, ln2{"ln2", dim_};
  nn::Dense query{"query", dim_, dim_}, key{"key", dim_, dim_}, value{"value", dim_, dim_};
  nn::Dense proj{"proj", dim_, dim_};
  nn::Dense fc1{"fc1", dim_, 4 * dim_}, fc2{"fc2", 4 * dim_, dim_};
  nn::GELU gelu{"gelu"};

 protected:
  ValueId Forward(Builder& b, ValueId x) override {
    const int64_t batch = b.graph().value(x).shape[0], dh = dim_ / heads_;
    auto reshape = [&](ValueId v, Shape s, const char* name) {
      OpAttrs a;
      a.shape = std::move(s);
      return b.Op(OpKind::kReshape, name, {v}, a);
    };
    auto transpose = [&](ValueId v, const char* name) {
      OpAttrs a;
      a.axes = {0, 2, 1, 3};
      return b.Op(OpKind::kTranspose, name, {v}, a);
    };
    // Attention: [B·T, D] -> heads [B, H, T, dh].
    ValueId h = reshape(ln1(b, x), {batch * tokens_, dim_}, "flat_in");
    auto heads = [&](nn::Dense& d, const char* r, const char* t) {
      return transpose(reshape(d(b, h), {batch, tokens_, heads_, dh}, r), t);
    };
    ValueId q = heads(query, "q_heads", "q_t"), k = heads(key, "k_heads", "k_t"),
            v = heads(value, "v_heads", "v_t");
    OpAttrs tb;
    tb.transpose_b = true;
    ValueId scores = b.Op(OpKind::kBatchMatMul, "scores", {q, k}, tb);
    OpAttrs scale;
    scale.scale = 1.0f / std::sqrt(static_cast<float>(dh));
    ValueId probs =
        b.Op(OpKind::kSoftmax, "softmax", {b.Op(OpKind::kScale, "scale", {scores}, scale)});
    ValueId att = transpose(b.Op(OpKind::kBatchMatMul, "context", {probs, v}), "context_t");
    att = proj(b, reshape(att, {batch * tokens_, dim_}, "flat_context"));
    x = b.Op(OpKind::kAdd, "residual1", {x, reshape(att, {batch, tokens_, dim_}, "attention_out")});
    // MLP.
    ValueId m = reshape(ln2(b, x), {batch * tokens_, dim_}, "flat_mlp");
    m = fc2(b, gelu(b, fc1(b, m)));
    return b.Op(OpKind::kAdd, "residual2", {x, reshape(m, {batch, tokens_, dim_}, "mlp_out")});
  }
};

// Token classifier: Embedding -> TransformerBlock -> mean over tokens -> Dense.
// Input: i32 token ids [batch, tokens].
class TinyTransformer : public nn::Module {
 public:
  TinyTransformer(int64_t vocab, int64_t tokens, int64_t dim, int64_t heads, int64_t classes)
      : nn::Module(""),
        embedding{"embedding", vocab, dim},
        block{"block", tokens, dim, heads},
        head{"head", dim, classes} {}
  nn::Embedding embedding;
  TransformerBlock block;
  nn::Dense head;

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId tokens) override {
    ValueId x = block(b, embedding(b, tokens));
    OpAttrs mean;
    mean.axes = {1};
    return head(b, b.Op(OpKind::kReduceMean, "pool", {x}, mean));
  }
};

}  // namespace shardscope::samples

namespace shardscope::samples {

// Seed 003, second example: the 3-layer network searched fully automatically. The seed's
// layer3 is Dense(512, 1) trained with MAELoss; as in samples/models/network3.yaml it is a
// 10-class MNIST classifier here (softmax cross-entropy is the only loss).
class Network3 : public nn::Module {
 public:
  Network3() : nn::Module("") {}
  nn::Flatten flatten{"flatten"};
  nn::Dense layer1{"layer1", 28 * 28, 512};
  nn::Dense layer2{"layer2", 512, 512};
  nn::Dense layer3{"layer3", 512, 10};  // the seed: Dense(512, 1)
  nn::ReLU relu{"relu"};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    x = flatten(b, x);
    x = relu(b, layer1(b, x));
    x = relu(b, layer2(b, x));
    return layer3(b, x);
  }
};

// Seed 004: three MatMuls on raw operators with explicit parameters (samples/models/
// matmul3.yaml). Every operator is a slot, so the seed's lines read the same here:
//   net.matmul1.shard(R"((layout("mp", ("sp", "dp")), layout(("sp", "dp"), "None")))");
//   net.relu1.shard("((4, 1),)");
class MatMul3Net : public nn::Module {
 public:
  MatMul3Net() : nn::Module("") {}
  nn::OpSlot flatten, matmul1, relu1, matmul2, relu2, matmul3;

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    // self.fc1_weight = ms.Parameter(initializer("normal", [28*28, 512], ms.float32)), ...
    ValueId fc1_weight = b.Parameter("fc1_weight", {28 * 28, 512}, nn::Normal());
    ValueId fc2_weight = b.Parameter("fc2_weight", {512, 512}, nn::Normal());
    ValueId fc3_weight = b.Parameter("fc3_weight", {512, 10}, nn::Normal());
    x = Apply(b, OpKind::kFlatten, "flatten", {x}, {}, flatten);
    x = Apply(b, OpKind::kMatMul, "matmul1", {x, fc1_weight}, {}, matmul1);
    x = Apply(b, OpKind::kReLU, "relu1", {x}, {}, relu1);
    x = Apply(b, OpKind::kMatMul, "matmul2", {x, fc2_weight}, {}, matmul2);
    x = Apply(b, OpKind::kReLU, "relu2", {x}, {}, relu2);
    return Apply(b, OpKind::kMatMul, "matmul3", {x, fc3_weight}, {}, matmul3);
  }
};

// Seed 002: one MatMul against the [32, 16] weight "w1", then a ReLU (samples/models/
// matmul_relu.yaml). The seed shards both in its constructor; here the caller does:
//   net.matmul.shard("((2, 4), (4, 1))");
//   net.relu.shard("((8, 1),)");
class MatMulReluNet : public nn::Module {
 public:
  MatMulReluNet() : nn::Module("") {}
  nn::OpSlot matmul, relu;

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    // self.weight = Parameter(initializer("normal", [32, 16]), "w1")
    ValueId weight = b.Parameter("w1", {32, 16}, nn::Normal());
    return Apply(b, OpKind::kReLU, "relu",
                 {Apply(b, OpKind::kMatMul, "matmul", {x, weight}, {}, matmul)}, {}, relu);
  }
};

// Seed 000: Dense -> GELU -> Dense; its operators are "block1.dense1.matmul", "block1.gelu",
// ... inside BasicBlocksNet. 16 features instead of the seed's 10, as in
// samples/models/basic_blocks.yaml: block1's in_strategy ((1, 8),) splits them 8 ways.
class BasicBlock : public nn::Module {
 public:
  explicit BasicBlock(std::string name) : nn::Module(std::move(name)) {}
  nn::Dense dense1{"dense1", 16, 16};
  nn::GELU gelu{"gelu"};
  nn::Dense dense2{"dense2", 16, 16};

 protected:
  ValueId Forward(Builder& b, ValueId x) override {
    // two dimensional input x
    return dense2(b, gelu(b, dense1(b, x)));
  }
};

// Seed 000's Net: three BasicBlocks in a row (samples/models/basic_blocks.yaml).
class BasicBlocksNet : public nn::Module {
 public:
  BasicBlocksNet() : nn::Module("") {}
  BasicBlock block1{"block1"}, block2{"block2"}, block3{"block3"};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override { return block3(b, block2(b, block1(b, x))); }
};

}  // namespace shardscope::samples
