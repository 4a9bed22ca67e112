// The correctness law on random valid strategy assignments: the seed-003 FFN, a
// transformer block and networks of the ONNX-era operators, on 1, 2, 4 and 8 in-process
// devices.
#include <gtest/gtest.h>

#include <random>

#include "law.h"
#include "models.h"
#include "shardscope/autodiff.h"
#include "shardscope/composites.h"
#include "shardscope/partition.h"
#include "shardscope/sharding_rule.h"

namespace shardscope {
namespace {

using testing_law::CheckLaw;

// Annotates a random subset of forward operators with random split strategies: each
// factor 2 of the device count goes to a random splittable letter whose dimension it
// divides, or to replication.
void Randomize(ModelGraph& m, int devices, std::mt19937& rng) {
  for (const Node& n : m.graph.nodes()) {
    m.graph.mutable_node(n.id).annotations = {};
    if (n.is_backward || rng() % 2) continue;
    auto sig = GetShardingSignature(m.graph, n.id);
    ASSERT_TRUE(sig.ok());
    std::map<char, int64_t> size, parts;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      for (size_t d = 0; d < sig->inputs[i].size(); ++d) {
        size[sig->inputs[i][d]] = m.graph.value(n.inputs[i]).shape[d];
        parts[sig->inputs[i][d]] = 1;
      }
    }
    std::vector<char> letters;
    for (auto& [c, s] : size) {
      if (sig->whole.find(c) == std::string::npos) letters.push_back(c);
    }
    for (int f = devices; f > 1; f /= 2) {
      const size_t pick = rng() % (letters.size() + 1);
      if (pick == letters.size()) continue;  // replica
      const char c = letters[pick];
      if (size[c] % (parts[c] * 2) == 0) parts[c] *= 2;
    }
    std::string text = "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      text += "(";
      for (size_t d = 0; d < sig->inputs[i].size(); ++d) {
        text += (d ? "," : "") + std::to_string(parts[sig->inputs[i][d]]);
      }
      text += sig->inputs[i].size() == 1 ? ",)" : ")";
      text += i + 1 < n.inputs.size() ? "," : "";
    }
    text += n.inputs.size() == 1 ? ",)" : ")";
    m.graph.mutable_node(n.id).annotations.in_strategy = text;
  }
}

// Whether the partitioner accepts the assignment (a strategy may still break a rule the
// generator does not model, e.g. a reshape that cannot keep a split).
bool Valid(ModelGraph m, int devices) {
  auto grads = BuildBackward(m.graph, m.loss, m.graph.Parameters());
  if (!grads.ok()) return false;
  PartitionOptions o;
  o.devices = devices;
  return Partition(m.graph, {m.loss, grads->wrt, grads->grads}, o).ok();
}

void RunRandom(const std::function<Result<ModelGraph>()>& build, const Dataset& data, int64_t batch,
               int per_device_count, uint32_t seed) {
  std::mt19937 rng(seed);
  int checked = 0;
  for (int devices : {1, 2, 4, 8}) {
    for (int done = 0, tries = 0; done < per_device_count && tries < per_device_count * 20;
         ++tries) {
      auto base = build();
      ASSERT_TRUE(base.ok()) << base.status().message();
      Randomize(*base, devices, rng);
      if (::testing::Test::HasFatalFailure()) return;
      if (!Valid(*base, devices)) continue;
      std::vector<std::string> strategies;
      for (const Node& n : base->graph.nodes()) strategies.push_back(n.annotations.in_strategy);
      auto annotated = [&build, strategies]() -> Result<ModelGraph> {
        SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, build());
        for (const Node& n : m.graph.nodes())
          m.graph.mutable_node(n.id).annotations.in_strategy = strategies[n.id];
        return m;
      };
      Status st = CheckLaw(annotated, data, batch, devices, {}, 3);
      std::string described;
      for (const Node& n : base->graph.nodes()) {
        if (!strategies[n.id].empty()) described += "\n  " + n.name + " " + strategies[n.id];
      }
      ASSERT_TRUE(st.ok()) << devices << " devices: " << st.message() << described;
      ++done;
      ++checked;
    }
  }
  EXPECT_GE(checked, 4 * per_device_count * 9 / 10) << "too few valid assignments were found";
  std::printf("[   INFO   ] %d random strategy assignments equal single-device training\n",
              checked);
}

TEST(RandomStrategies, FfnEqualsSingleDevice) {
  const int64_t batch = 16;
  Dataset data = MakeSyntheticDataset(batch * 3, {1, 28, 28}, 10, 21);
  RunRandom(
      [] {
        samples::FFN net;
        return nn::BuildClassifier(net, {1, 28, 28}, 16);
      },
      data, batch, 50, 1234);
}

Dataset TokenData(int64_t n, int64_t tokens, int64_t vocab, int classes) {
  Dataset d;
  std::mt19937 rng(5);
  std::vector<int32_t> ids(n * tokens), labels(n);
  for (auto& t : ids) t = static_cast<int32_t>(rng() % vocab);
  for (int64_t i = 0; i < n; ++i) labels[i] = ids[i * tokens] % classes;
  d.images = Tensor::FromInts({n, tokens}, ids);
  d.labels = Tensor::FromInts({n}, labels);
  d.num_classes = classes;
  return d;
}

TEST(RandomStrategies, TransformerBlockEqualsSingleDevice) {
  const int64_t batch = 8, tokens = 8, vocab = 32, dim = 16, heads = 4;
  Dataset data = TokenData(batch * 3, tokens, vocab, 4);
  RunRandom(
      [&] {
        samples::TinyTransformer net(vocab, tokens, dim, heads, 4);
        return nn::BuildClassifier(net, {tokens}, batch, DType::kI32);
      },
      data, batch, 50, 99);
}

// Batched and broadcast MatMul, Split/Concat/Slice, Squeeze/Unsqueeze, Div/Pow/Sqrt,
// Tanh/Sigmoid, Where and Identity in one network: input [batch, 8, 12].
class OnnxOpsNet : public nn::Module {
 public:
  OnnxOpsNet() : nn::Module("") {}

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    const ValueId w1 = b.Parameter("w1", {12, 16}, nn::Normal(0.3f));
    const ValueId h = b.Op(OpKind::kMatMul, "proj", {x, w1});  // [B, 8, 16]
    OpAttrs split;
    split.axis = 2;
    split.sizes = {8, 8};
    const std::vector<ValueId> qk = b.OpAll(OpKind::kSplit, "split", {h}, split);
    OpAttrs tb;
    tb.transpose_b = true;
    const ValueId scores = b.Op(OpKind::kMatMul, "scores", {qk[0], qk[1]}, tb);  // [B, 8, 8]
    OpAttrs cat;
    cat.axis = -1;
    const ValueId c =
        b.Op(OpKind::kConcat, "concat", {b.Op(OpKind::kTanh, "tanh", {scores}), qk[0]}, cat);
    OpAttrs every_other;
    every_other.axes = {1};
    every_other.starts = {0};
    every_other.ends = {8};
    every_other.steps = {2};
    const ValueId s = b.Op(OpKind::kSigmoid, "sigmoid",
                           {b.Op(OpKind::kSlice, "slice", {c}, every_other)});  // [B, 4, 16]
    const ValueId e = b.Parameter("exponent", {16}, nn::Normal(0.3f));
    const ValueId e_pos = b.Op(OpKind::kSigmoid, "e_pos", {e});
    const ValueId p = b.Op(OpKind::kSqrt, "sqrt", {b.Op(OpKind::kPow, "pow", {s, e_pos})});
    // An f32 condition, zero about half the time (redistribution moves f32 values only).
    const ValueId cond = b.Op(OpKind::kReLU, "cond", {b.Op(OpKind::kSub, "centre", {s, e_pos})});
    const ValueId d = b.Op(OpKind::kDiv, "div", {p, s});
    const ValueId w = b.Op(OpKind::kWhere, "where", {cond, p, d});
    OpAttrs axis1;
    axis1.axes = {1};
    const ValueId u = b.Op(OpKind::kUnsqueeze, "unsqueeze", {w}, axis1);  // [B, 1, 4, 16]
    const ValueId sq =
        b.Op(OpKind::kSqueeze, "squeeze", {b.Op(OpKind::kIdentity, "identity", {u})}, axis1);
    const ValueId w2 = b.Parameter("w2", {1, 16, 10}, nn::Normal(0.3f));
    const ValueId y = b.Op(OpKind::kMatMul, "head", {sq, w2});  // [B, 4, 10]
    OpAttrs mean;
    mean.axes = {1};
    return b.Op(OpKind::kReduceMean, "pool", {y}, mean);
  }
};

TEST(RandomStrategies, OnnxOperatorsEqualSingleDevice) {
  const int64_t batch = 8;
  Dataset data = MakeSyntheticDataset(batch * 3, {8, 12}, 10, 31);
  RunRandom(
      [&] {
        OnnxOpsNet net;
        return nn::BuildClassifier(net, {8, 12}, batch);
      },
      data, batch, 30, 77);
}

// AveragePool2D, BatchNorm with batch statistics (the composite) and with given statistics:
// input [batch, 2, 6, 6].
class PoolNormNet : public nn::Module {
 public:
  PoolNormNet() : nn::Module("") {}

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    OpAttrs pool;
    pool.kernel[0] = pool.kernel[1] = 2;
    pool.stride[0] = pool.stride[1] = 2;
    pool.padding = Padding::kSame;
    const ValueId p = b.Op(OpKind::kAveragePool2D, "pool", {x}, pool);  // [B, 2, 3, 3]
    auto channel = [&](const std::string& name) {
      return b.Parameter(name, {2}, nn::Normal(0.5f));
    };
    auto bn =
        AddBatchNormTraining(b.graph(), "bn", p, channel("bn.scale"), channel("bn.bias"), 1e-5f);
    if (!bn.ok()) {
      b.Fail(bn.status());
      return kNoValue;
    }
    const ValueId t = b.Op(OpKind::kTanh, "tanh", {*bn});
    const ValueId var = b.Op(OpKind::kSigmoid, "var", {channel("bn2.var")});
    const ValueId y =
        b.Op(OpKind::kBatchNorm, "bn2",
             {t, channel("bn2.scale"), channel("bn2.bias"), channel("bn2.mean"), var});
    OpAttrs flat;
    flat.shape = {-1, 18};
    const ValueId f = b.Op(OpKind::kReshape, "flatten", {y}, flat);
    return b.Op(OpKind::kMatMul, "head", {f, b.Parameter("w", {18, 10}, nn::Normal(0.3f))});
  }
};

TEST(RandomStrategies, PoolingAndBatchNormEqualSingleDevice) {
  const int64_t batch = 8;
  Dataset data = MakeSyntheticDataset(batch * 3, {2, 6, 6}, 10, 41);
  RunRandom(
      [&] {
        PoolNormNet net;
        return nn::BuildClassifier(net, {2, 6, 6}, batch);
      },
      data, batch, 30, 55);
}

}  // namespace
}  // namespace shardscope
