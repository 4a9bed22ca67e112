// Tests of Trainer: learning on a synthetic data set, bitwise determinism by seed,
// Evaluate on partial batches, and refused models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "shardscope/builder.h"
#include "shardscope/data.h"
#include "shardscope/trainer.h"

namespace shardscope {
namespace {

// x [batch, in] -> fc1 -> ReLU -> (Dropout) -> fc2 -> logits [batch, classes] -> loss.
ModelGraph MakeMlp(int64_t batch, int64_t in, int64_t hidden, int64_t classes,
                   float dropout = 0.0f) {
  ModelGraph m;
  Builder b(&m.graph);
  m.input = b.Input("x", {batch, in});
  m.labels = b.Label("label", {batch});
  auto dense = [&](const std::string& name, ValueId x, int64_t fan_in, int64_t fan_out) {
    b.PushScope(name);
    ValueId w = b.Parameter("weight", {fan_in, fan_out}, {InitSpec::kFanInUniform, 1.0f});
    ValueId bias = b.Parameter("bias", {fan_out},
                               {InitSpec::kUniform, 1.0f / std::sqrt(static_cast<float>(fan_in))});
    ValueId y = b.Op(OpKind::kMatMul, "matmul", {x, w});
    y = b.Op(OpKind::kBiasAdd, "bias_add", {y, bias});
    b.PopScope();
    return y;
  };
  ValueId h = b.Op(OpKind::kReLU, "relu", {dense("fc1", m.input, in, hidden)});
  if (dropout > 0.0f) {
    OpAttrs d;
    d.rate = dropout;
    d.seed = 17;
    h = b.Op(OpKind::kDropout, "dropout", {h}, d);
  }
  m.logits = dense("fc2", h, hidden, classes);
  m.loss = b.Op(OpKind::kSoftmaxCrossEntropyWithLogits, "loss", {m.logits, m.labels});
  EXPECT_TRUE(b.ok()) << b.status().message();
  return m;
}

std::unique_ptr<Trainer> MakeTrainer(ModelGraph model, uint64_t seed,
                                     OptimizerConfig::Kind kind = OptimizerConfig::kMomentum,
                                     float lr = 0.05f) {
  TrainConfig config;
  config.seed = seed;
  config.optimizer.kind = kind;
  config.optimizer.lr = lr;
  auto t = Trainer::Create(std::move(model), config);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Examples [start, start + count) of `ds`.
Dataset Slice(const Dataset& ds, int64_t start, int64_t count) {
  Dataset out;
  out.num_classes = ds.num_classes;
  Shape shape = ds.example_shape();
  shape.insert(shape.begin(), count);
  out.images = Tensor(shape);
  out.labels = Tensor({count}, DType::kI32);
  const int64_t ex = ds.example_size();
  std::memcpy(out.images.data(), ds.images.data() + start * ex, sizeof(float) * count * ex);
  std::memcpy(out.labels.ints(), ds.labels.ints() + start, sizeof(int32_t) * count);
  return out;
}

// Runs `steps` training steps over shuffled epochs of `data`; returns every loss.
std::vector<float> Train(Trainer& t, const Dataset& data, int steps, uint64_t seed) {
  BatchIterator it(data, t.batch_size(), seed, /*shuffle=*/true);
  std::vector<float> losses;
  Tensor x, y;
  int epoch = 0;
  while (static_cast<int>(losses.size()) < steps) {
    if (!it.Next(&x, &y)) {
      it.Reset(++epoch);
      continue;
    }
    losses.push_back(t.Step(x, y));
  }
  return losses;
}

bool SameParameters(Trainer& a, Trainer& b) {
  if (a.parameters().size() != b.parameters().size()) return false;
  for (size_t i = 0; i < a.parameters().size(); ++i) {
    const Tensor& pa = a.executor().value(a.parameters()[i]);
    const Tensor& pb = b.executor().value(b.parameters()[i]);
    if (pa.shape() != pb.shape() ||
        std::memcmp(pa.data(), pb.data(), sizeof(float) * pa.size()) != 0) {
      return false;
    }
  }
  return true;
}

TEST(Trainer, LearnsASyntheticDataSet) {
  const Dataset all = MakeSyntheticDataset(1536, {16}, 4, 7);
  const Dataset train = Slice(all, 0, 1024), test = Slice(all, 1024, 512);
  auto t = MakeTrainer(MakeMlp(32, 16, 32, 4), 1);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->batch_size(), 32);
  const double chance = t->Evaluate(test);
  const std::vector<float> losses = Train(*t, train, 200, 3);
  ASSERT_EQ(losses.size(), 200u);
  EXPECT_EQ(t->step(), 200);
  for (float l : losses) ASSERT_TRUE(std::isfinite(l));
  // The first loss is near ln 4 for a fresh network.
  EXPECT_NEAR(losses.front(), std::log(4.0), 0.5);
  const double late = std::accumulate(losses.end() - 10, losses.end(), 0.0) / 10;
  EXPECT_LT(late, 0.5 * losses.front()) << "first " << losses.front() << ", late " << late;
  const double accuracy = t->Evaluate(test);
  EXPECT_GT(accuracy, 0.9) << "accuracy before training " << chance;
}

// ENGINE BUG (Adam case): results depend on where parameter and activation buffers are
// allocated, because Eigen's packet and scalar paths round differently and the split between
// them follows the buffer's address modulo 64. See
// Optimizer.UpdateDoesNotDependOnBufferAlignment and Kernels.ResultsDoNotDependOnBufferAlignment
// for the precise cause and the suggested fix (64-byte-aligned Tensor storage).
TEST(Trainer, SameSeedGivesBitwiseIdenticalParameters) {
  const Dataset data = MakeSyntheticDataset(256, {12}, 3, 5);
  for (auto kind : {OptimizerConfig::kMomentum, OptimizerConfig::kAdam}) {
    SCOPED_TRACE(OptimizerKindName(kind));
    auto a = MakeTrainer(MakeMlp(16, 12, 10, 3), 42, kind, 0.01f);
    ASSERT_NE(a, nullptr);
    const auto la = Train(*a, data, 30, 9);
    // Twins created after differently sized allocations, so their buffers sit elsewhere.
    for (int k = 0; k < 4; ++k) {
      SCOPED_TRACE(testing::Message() << "twin " << k);
      std::vector<char> elsewhere(static_cast<size_t>(24 + 200 * k));
      auto b = MakeTrainer(MakeMlp(16, 12, 10, 3), 42, kind, 0.01f);
      ASSERT_NE(b, nullptr);
      EXPECT_EQ(Train(*b, data, 30, 9), la);  // exact float equality, step by step
      EXPECT_TRUE(SameParameters(*a, *b));
    }
    auto c = MakeTrainer(MakeMlp(16, 12, 10, 3), 43, kind, 0.01f);
    ASSERT_NE(c, nullptr);
    EXPECT_FALSE(SameParameters(*a, *c));  // another seed, other initial values
    EXPECT_NE(Train(*c, data, 30, 9), la);
    EXPECT_FALSE(SameParameters(*a, *c));
  }
}

TEST(Trainer, DropoutModelIsDeterministicToo) {
  const Dataset data = MakeSyntheticDataset(128, {8}, 2, 6);
  auto a = MakeTrainer(MakeMlp(16, 8, 16, 2, 0.5f), 1);
  auto b = MakeTrainer(MakeMlp(16, 8, 16, 2, 0.5f), 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(Train(*a, data, 12, 2), Train(*b, data, 12, 2));
  EXPECT_TRUE(SameParameters(*a, *b));
  // Evaluation runs without dropout: repeated evaluations agree.
  EXPECT_EQ(a->Evaluate(data), a->Evaluate(data));
}

TEST(Trainer, EvaluateHandlesPartialLastBatch) {
  const Dataset all = MakeSyntheticDataset(600, {10}, 5, 11);
  const Dataset train = Slice(all, 0, 512);
  auto t = MakeTrainer(MakeMlp(8, 10, 12, 5), 2);
  ASSERT_NE(t, nullptr);
  Train(*t, train, 20, 1);  // partly trained: accuracy well between 0 and 1

  // A reference that sees one example at a time: batch 1, same parameter names, with the
  // trained values copied over.
  auto one = MakeTrainer(MakeMlp(1, 10, 12, 5), 99);
  ASSERT_NE(one, nullptr);
  for (ValueId p : t->parameters()) {
    const std::string& name = t->graph().value(p).name;
    const ValueId q = one->graph().FindValue(name);
    ASSERT_NE(q, kNoValue) << name;
    one->executor().value(q) = t->executor().value(p);
  }
  for (int64_t n : {13, 5, 16, 1, 88}) {
    SCOPED_TRACE(testing::Message() << n << " examples, batch 8");
    const Dataset part = Slice(all, 512, n);
    const double acc = t->Evaluate(part);
    const double ref = one->Evaluate(part);
    EXPECT_DOUBLE_EQ(acc, ref);
    // A whole number of correct examples out of n (padding rows are not counted).
    const double correct = acc * static_cast<double>(n);
    EXPECT_NEAR(correct, std::round(correct), 1e-9);
    EXPECT_GE(acc, 0.0);
    EXPECT_LE(acc, 1.0);
  }
  const Dataset rest = Slice(all, 512, 88);
  const double acc = t->Evaluate(rest);
  EXPECT_GT(acc, 0.0);
  EXPECT_LT(acc, 1.0 + 1e-12);
  EXPECT_EQ(t->Evaluate(Dataset{}), 0.0);  // empty data: no division by zero
}

TEST(Trainer, StateAndCounters) {
  auto t = MakeTrainer(MakeMlp(4, 6, 5, 3), 1);  // Momentum
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->parameters().size(), 4u);  // fc1.weight, fc1.bias, fc2.weight, fc2.bias
  ASSERT_EQ(t->gradients().size(), 4u);
  int64_t elements = 0;
  for (size_t i = 0; i < t->parameters().size(); ++i) {
    const Value& p = t->graph().value(t->parameters()[i]);
    const Value& g = t->graph().value(t->gradients()[i]);
    EXPECT_EQ(p.kind, ValueKind::kParameter);
    EXPECT_EQ(g.shape, p.shape) << p.name;
    elements += NumElements(p.shape);
  }
  EXPECT_EQ(elements, 6 * 5 + 5 + 5 * 3 + 3);
  EXPECT_EQ(t->optimizer().StateBytes(), 0);
  const Dataset data = MakeSyntheticDataset(8, {6}, 3, 1);
  Train(*t, data, 3, 1);
  EXPECT_EQ(t->step(), 3);
  EXPECT_EQ(t->optimizer().StateBytes(), elements * 4);
  EXPECT_TRUE(t->graph().Verify().ok());
}

TEST(Trainer, RefusesIncompleteModels) {
  {
    ModelGraph m = MakeMlp(4, 6, 5, 3);
    m.loss = kNoValue;
    TrainConfig config;
    auto t = Trainer::Create(std::move(m), config);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("loss"), std::string::npos) << t.status().message();
  }
  {
    // Logits straight from the input: nothing to train.
    ModelGraph m;
    Builder b(&m.graph);
    m.input = b.Input("x", {4, 3});
    m.labels = b.Label("label", {4});
    m.logits = b.Op(OpKind::kReLU, "logits", {m.input});
    m.loss = b.Op(OpKind::kSoftmaxCrossEntropyWithLogits, "loss", {m.logits, m.labels});
    ASSERT_TRUE(b.ok());
    auto t = Trainer::Create(std::move(m), TrainConfig{});
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("no parameters"), std::string::npos)
        << t.status().message();
  }
}

}  // namespace
}  // namespace shardscope
