#include "shardscope/nn.h"

#include <cmath>

namespace shardscope::nn {

OpSlot& OpSlot::shard(std::string in_strategy, std::string out_strategy) {
  annotations_.in_strategy = std::move(in_strategy);
  annotations_.out_strategy = std::move(out_strategy);
  return *this;
}

OpSlot& OpSlot::place(const std::string& role, int rank) {
  if (role != "worker" && role != "MS_WORKER") {
    role_error_ =
        "place(\"" + role + "\", " + std::to_string(rank) + "): the only role is \"worker\"";
  }
  annotations_.worker = rank;
  return *this;
}

Module& Module::place(const std::string& role, int rank) {
  role_ = role;
  worker_ = rank;
  return *this;
}

Module& Module::shard(const std::string& in_strategy, const std::string& out_strategy, int level) {
  shard_.push_back({"", in_strategy, out_strategy, level, ""});
  return *this;
}

ValueId Module::operator()(Builder& b, ValueId x) {
  if (!role_.empty() && role_ != "worker" && role_ != "MS_WORKER") {
    b.Fail(Status::Invalid("module '" + b.ScopedName(name_) + "': place(\"" + role_ + "\", " +
                           std::to_string(worker_) + "): the only role is \"worker\""));
    return kNoValue;
  }
  if (!shard_.empty()) {
    const std::string scope = b.ScopedName(name_);
    if (shard_.size() > 1) {
      b.Fail(Status::Invalid("module '" + scope + "': shard() called " +
                             std::to_string(shard_.size()) +
                             " times; a block is sharded once (call shard() on the block, do not "
                             "assign its result back over the block)"));
      return kNoValue;
    }
    if (!scoped()) {
      b.Fail(Status::Invalid("module '" + scope +
                             "': shard() is for blocks of operators under their own name scope; "
                             "shard the operators inside with their slots "
                             "(dense.matmul.shard(\"((2, 4), (4, 1))\"))"));
      return kNoValue;
    }
    if (shard_[0].level < 0 || shard_[0].level > 2) {
      b.Fail(Status::Invalid("module '" + scope + "': shard() level " +
                             std::to_string(shard_[0].level) + "; the levels are 0, 1 and 2"));
      return kNoValue;
    }
    ShardBlockSpec block = shard_[0];
    block.scope = scope;
    b.AddShardBlock(std::move(block));
  }
  if (scoped()) b.PushScope(name_);
  const int saved = b.default_worker();
  if (worker_ >= 0) b.set_default_worker(worker_);
  ValueId y = Forward(b, x);
  b.set_default_worker(saved);
  if (scoped()) b.PopScope();
  return y;
}

ValueId Module::Apply(Builder& b, OpKind op, const std::string& local, std::vector<ValueId> in,
                      OpAttrs attrs, const OpSlot& slot) {
  if (!slot.role_error_.empty()) {
    b.Fail(Status::Invalid("operator '" + b.ScopedName(local) + "': " + slot.role_error_));
    return kNoValue;
  }
  return b.Op(op, local, std::move(in), std::move(attrs), slot.annotations());
}

InitSpec Normal(float stddev) { return {InitSpec::kNormal, stddev}; }
InitSpec TruncatedNormal(float stddev) { return {InitSpec::kTruncatedNormal, stddev}; }
InitSpec XavierUniform() { return {InitSpec::kXavierUniform, 1.0f}; }
InitSpec HeNormal() { return {InitSpec::kHeNormal, 1.0f}; }
InitSpec Zeros() { return {InitSpec::kZeros, 0.0f}; }
InitSpec DefaultWeightInit() { return {InitSpec::kFanInUniform, 1.0f}; }

Dense::Dense(std::string name, int64_t in, int64_t out, bool has_bias, InitSpec weight_init,
             InitSpec bias_init)
    : Module(std::move(name)),
      in_(in),
      out_(out),
      has_bias_(has_bias),
      weight_init_(weight_init),
      bias_init_(bias_init) {}

ValueId Dense::Forward(Builder& b, ValueId x) {
  ValueId w = b.Parameter("weight", {in_, out_}, weight_init_);
  ValueId y = Apply(b, OpKind::kMatMul, "matmul", {x, w}, {}, matmul);
  if (!has_bias_) return y;
  // The bias's fan-in is the layer's, as in PyTorch and MindSpore.
  InitSpec bias_init = bias_init_;
  if (bias_init.kind == InitSpec::kFanInUniform)
    bias_init = {InitSpec::kUniform, 1.0f / std::sqrt(static_cast<float>(in_))};
  ValueId bias = b.Parameter("bias", {out_}, bias_init);
  return Apply(b, OpKind::kBiasAdd, "bias_add", {y, bias}, {}, bias_add);
}

Conv2d::Conv2d(std::string name, int64_t in_channels, int64_t out_channels, int64_t kernel,
               int64_t stride, Padding pad_mode, bool has_bias, InitSpec weight_init)
    : Module(std::move(name)),
      in_(in_channels),
      out_(out_channels),
      kernel_(kernel),
      stride_(stride),
      pad_(pad_mode),
      has_bias_(has_bias),
      weight_init_(weight_init) {}

ValueId Conv2d::Forward(Builder& b, ValueId x) {
  ValueId w = b.Parameter("weight", {out_, in_, kernel_, kernel_}, weight_init_);
  OpAttrs a;
  a.stride[0] = a.stride[1] = stride_;
  a.padding = pad_;
  ValueId y = Apply(b, OpKind::kConv2D, "conv2d", {x, w}, a, conv2d);
  if (!has_bias_) return y;
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_ * kernel_ * kernel_));
  ValueId bias = b.Parameter("bias", {out_}, {InitSpec::kUniform, bound});
  return Apply(b, OpKind::kBiasAdd, "bias_add", {y, bias}, {}, bias_add);
}

Embedding::Embedding(std::string name, int64_t vocab, int64_t dim, InitSpec init)
    : Module(std::move(name)), vocab_(vocab), dim_(dim), init_(init) {}

ValueId Embedding::Forward(Builder& b, ValueId indices) {
  ValueId table = b.Parameter("table", {vocab_, dim_}, init_);
  OpAttrs a;
  a.axis = 0;
  return Apply(b, OpKind::kGather, "gather", {table, indices}, a, gather);
}

LayerNorm::LayerNorm(std::string name, int64_t dim, float epsilon)
    : Module(std::move(name)), dim_(dim), epsilon_(epsilon) {}

ValueId LayerNorm::Forward(Builder& b, ValueId x) {
  ValueId gamma = b.Parameter("gamma", {dim_}, {InitSpec::kOnes, 1.0f});
  ValueId beta = b.Parameter("beta", {dim_}, Zeros());
  OpAttrs a;
  a.epsilon = epsilon_;
  return Apply(b, OpKind::kLayerNorm, "layer_norm", {x, gamma, beta}, a, layer_norm);
}

ValueId SingleOp::Forward(Builder& b, ValueId x) {
  return Apply(b, op_, name(), {x}, attrs_, *this);
}

namespace {
OpAttrs PoolAttrs(int64_t kernel, int64_t stride) {
  OpAttrs a;
  a.kernel[0] = a.kernel[1] = kernel;
  a.stride[0] = a.stride[1] = stride;
  return a;
}
OpAttrs DropoutAttrs(float rate, uint64_t seed) {
  OpAttrs a;
  a.rate = rate;
  a.seed = seed;
  return a;
}
}  // namespace

MaxPool2d::MaxPool2d(std::string name, int64_t kernel, int64_t stride)
    : SingleOp(std::move(name), OpKind::kMaxPool2D, PoolAttrs(kernel, stride)) {}

Dropout::Dropout(std::string name, float rate, uint64_t seed)
    : SingleOp(std::move(name), OpKind::kDropout, DropoutAttrs(rate, seed)) {}

Module* Sequential::Find(const std::string& name) const {
  for (const auto& c : children_) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

ValueId Sequential::Forward(Builder& b, ValueId x) {
  for (const auto& c : children_) x = (*c)(b, x);
  return x;
}

ValueId SoftmaxCrossEntropy(Builder& b, ValueId logits, ValueId labels, const std::string& name) {
  return b.Op(OpKind::kSoftmaxCrossEntropyWithLogits, name, {logits, labels});
}

}  // namespace shardscope::nn

#include "shardscope/trainer.h"

namespace shardscope::nn {

Result<ModelGraph> BuildClassifier(Module& net, const Shape& example_shape, int64_t batch,
                                   DType input_dtype, bool sequence) {
  ModelGraph m;
  Builder b(&m.graph);
  Shape input_shape = {batch};
  input_shape.insert(input_shape.end(), example_shape.begin(), example_shape.end());
  m.input = b.Input("x", input_shape, input_dtype);
  m.labels = b.Label("label", sequence ? input_shape : Shape{batch});
  m.logits = net(b, m.input);
  if (!b.ok()) return b.status();
  const Shape& logits = b.graph().value(m.logits).shape;
  if (!sequence) {
    if (logits.size() != 2) {
      b.Fail(Status::Invalid("the network's output must be logits [batch, classes], got " +
                             ShapeToString(logits)));
    }
    m.loss = SoftmaxCrossEntropy(b, m.logits, m.labels);
  } else {
    Shape expect = input_shape;
    expect.push_back(logits.empty() ? 0 : logits.back());
    if (logits != expect) {
      b.Fail(Status::Invalid(
          "a sequence loss needs logits [batch, positions..., classes] = " + ShapeToString(expect) +
          " (one row per input position), got " + ShapeToString(logits)));
    }
    // Rows of [batch * positions, classes]: the classifier's loss then averages every position.
    OpAttrs rows, label_rows;
    rows.shape = {-1, logits.empty() ? 1 : logits.back()};
    label_rows.shape = {-1};
    const ValueId x = b.Op(OpKind::kReshape, "loss.logits_rows", {m.logits}, rows);
    const ValueId y = b.Op(OpKind::kReshape, "loss.label_rows", {m.labels}, label_rows);
    m.loss = SoftmaxCrossEntropy(b, x, y);
  }
  if (!b.ok()) return b.status();
  m.shard_blocks = b.shard_blocks();
  SHARDSCOPE_RETURN_IF_ERROR(m.graph.Verify());
  return m;
}

}  // namespace shardscope::nn
