// nn: the C++ module API that mirrors the seeds' networks.
//
// A module has a local name; calling it inside a Builder scopes its operators under that
// name, so `net.dense1.matmul` in the seeds is the operator "dense1.matmul" here (and
// "block1.dense1.matmul" when dense1 sits in block1). Operator slots (OpSlot) carry the
// user's sharding strategy and placement to the operator they build.
//
// Weights are stored [in, out] (no transpose), so a MatMul strategy ((a, b), (b, c)) reads
// exactly as in the seeds: x [batch, in] split (a, b), weight [in, out] split (b, c).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shardscope/builder.h"

namespace shardscope::nn {

// The annotations of one operator a module builds.
class OpSlot {
 public:
  // Seed notation: shard("((2,4),(4,1))") or shard("(layout(\"mp\",(\"sp\",\"dp\")),)", out).
  OpSlot& shard(std::string in_strategy, std::string out_strategy = "");
  // place("worker", rank): only the worker role exists (checked when the model is built).
  OpSlot& place(const std::string& role, int rank);
  const OpAnnotations& annotations() const { return annotations_; }
  OpAnnotations& annotations() { return annotations_; }

 private:
  OpAnnotations annotations_;
  std::string role_error_;
  friend class Module;
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  // Builds the module's operators under its name scope; returns its output.
  ValueId operator()(Builder& b, ValueId x);
  // Pins every operator inside (not already placed) to a worker.
  Module& place(const std::string& role, int rank);
  // Seed 000's shard(block, in_strategy, out_strategy, level): fixes this block's boundary
  // layouts ("((1, 8),)" per input, "(None,)" per output; None = data-parallel) and lets the
  // search choose the strategies inside with objective `level` (0: most computation per byte
  // communicated, 1: least memory, 2: least step time). Needs a search (mode auto); building
  // fails if a module is sharded twice (the seed's `block = block.shard(...)` misuse).
  Module& shard(const std::string& in_strategy, const std::string& out_strategy = "",
                int level = 2);

 protected:
  virtual ValueId Forward(Builder& b, ValueId x) = 0;
  // Single-operator modules name their operator after themselves, without a scope.
  virtual bool scoped() const { return true; }
  // Adds an operator with the slot's annotations (and the module's placement).
  ValueId Apply(Builder& b, OpKind op, const std::string& local, std::vector<ValueId> in,
                OpAttrs attrs, const OpSlot& slot);

 private:
  std::string name_;
  int worker_ = -1;
  std::string role_;
  std::vector<ShardBlockSpec> shard_;  // at most one; more is the misuse building reports
};

// Initialisers as in the seeds: "normal", "truncated_normal(0.02)", "xavier_uniform", ...
InitSpec Normal(float stddev = 0.01f);
InitSpec TruncatedNormal(float stddev = 0.02f);
InitSpec XavierUniform();
InitSpec HeNormal();
InitSpec Zeros();
// Uniform(−1/sqrt(fan_in), +1/sqrt(fan_in)): the default for Dense and Conv2d weights.
InitSpec DefaultWeightInit();

class Dense : public Module {
 public:
  Dense(std::string name, int64_t in, int64_t out, bool has_bias = true,
        InitSpec weight_init = DefaultWeightInit(), InitSpec bias_init = DefaultWeightInit());
  OpSlot matmul;
  OpSlot bias_add;

 protected:
  ValueId Forward(Builder& b, ValueId x) override;

 private:
  int64_t in_, out_;
  bool has_bias_;
  InitSpec weight_init_, bias_init_;
};

class Conv2d : public Module {
 public:
  Conv2d(std::string name, int64_t in_channels, int64_t out_channels, int64_t kernel,
         int64_t stride = 1, Padding pad_mode = Padding::kValid, bool has_bias = false,
         InitSpec weight_init = DefaultWeightInit());
  OpSlot conv2d;
  OpSlot bias_add;

 protected:
  ValueId Forward(Builder& b, ValueId x) override;

 private:
  int64_t in_, out_, kernel_, stride_;
  Padding pad_;
  bool has_bias_;
  InitSpec weight_init_;
};

class Embedding : public Module {
 public:
  Embedding(std::string name, int64_t vocab, int64_t dim, InitSpec init = Normal(0.02f));
  OpSlot gather;

 protected:
  ValueId Forward(Builder& b, ValueId indices) override;

 private:
  int64_t vocab_, dim_;
  InitSpec init_;
};

class LayerNorm : public Module {
 public:
  LayerNorm(std::string name, int64_t dim, float epsilon = 1e-5f);
  OpSlot layer_norm;

 protected:
  ValueId Forward(Builder& b, ValueId x) override;

 private:
  int64_t dim_;
  float epsilon_;
};

// A module that is exactly one operator: ReLU, GELU, Flatten, MaxPool2d, Dropout.
class SingleOp : public Module, public OpSlot {
 public:
  SingleOp(std::string name, OpKind op, OpAttrs attrs = {})
      : Module(std::move(name)), op_(op), attrs_(std::move(attrs)) {}
  using Module::place;
  // A single operator's shard() is its strategy (seed 002: ops.ReLU().shard(((8, 1),))).
  using OpSlot::shard;

 protected:
  ValueId Forward(Builder& b, ValueId x) override;
  bool scoped() const override { return false; }

 private:
  OpKind op_;
  OpAttrs attrs_;
};

class ReLU : public SingleOp {
 public:
  explicit ReLU(std::string name = "relu") : SingleOp(std::move(name), OpKind::kReLU) {}
};
class GELU : public SingleOp {
 public:
  explicit GELU(std::string name = "gelu") : SingleOp(std::move(name), OpKind::kGeLU) {}
};
class Flatten : public SingleOp {
 public:
  explicit Flatten(std::string name = "flatten") : SingleOp(std::move(name), OpKind::kFlatten) {}
};
class MaxPool2d : public SingleOp {
 public:
  MaxPool2d(std::string name, int64_t kernel, int64_t stride);
};
class Dropout : public SingleOp {
 public:
  Dropout(std::string name, float rate, uint64_t seed = 0);
};

// Runs its children in order; each child keeps its own name.
class Sequential : public Module {
 public:
  explicit Sequential(std::string name) : Module(std::move(name)) {}
  template <typename M, typename... Args>
  M& Add(Args&&... args) {
    auto m = std::make_unique<M>(std::forward<Args>(args)...);
    M& ref = *m;
    children_.push_back(std::move(m));
    return ref;
  }
  void Add(std::unique_ptr<Module> m) { children_.push_back(std::move(m)); }
  const std::vector<std::unique_ptr<Module>>& children() const { return children_; }
  Module* Find(const std::string& name) const;

 protected:
  ValueId Forward(Builder& b, ValueId x) override;
  // The top-level Sequential of a model adds no scope of its own.
  bool scoped() const override { return !name().empty(); }

 private:
  std::vector<std::unique_ptr<Module>> children_;
};

// mean softmax cross-entropy of logits [N, C] against i32 labels [N].
ValueId SoftmaxCrossEntropy(Builder& b, ValueId logits, ValueId labels,
                            const std::string& name = "loss");

}  // namespace shardscope::nn

namespace shardscope {
struct ModelGraph;
namespace nn {
// A classifier's forward graph: input "x" [batch, example...], labels "label" [batch],
// logits = net(x), loss = mean softmax cross-entropy. Fails with the builder's first error.
// Token models take i32 input (`input_dtype`). With `sequence` (next-token models) the
// labels are one per position, i32 [batch, example...], the logits [batch, example...,
// classes], and the loss is the mean cross-entropy over every position (both reshaped to
// rows: operators loss.logits_rows, loss.label_rows, then loss).
Result<ModelGraph> BuildClassifier(Module& net, const Shape& example_shape, int64_t batch,
                                   DType input_dtype = DType::kF32, bool sequence = false);
}  // namespace nn
}  // namespace shardscope
