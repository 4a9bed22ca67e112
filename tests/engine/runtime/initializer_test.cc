// Tests of seeded parameter initialisation: determinism by (seed, name), independence of
// creation order, and the distribution of each InitSpec kind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "shardscope/executor.h"
#include "shardscope/initializer.h"

namespace shardscope {
namespace {

Value Param(const std::string& name, Shape shape, InitSpec init) {
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.kind = ValueKind::kParameter;
  v.init = init;
  return v;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

struct Moments {
  double mean = 0, var = 0, max_abs = 0;
};
Moments MomentsOf(const Tensor& t) {
  Moments m;
  for (int64_t i = 0; i < t.size(); ++i) m.mean += t[i];
  m.mean /= static_cast<double>(t.size());
  for (int64_t i = 0; i < t.size(); ++i) {
    m.var += (t[i] - m.mean) * (t[i] - m.mean);
    m.max_abs = std::max(m.max_abs, static_cast<double>(std::abs(t[i])));
  }
  m.var /= static_cast<double>(t.size());
  return m;
}

TEST(FanInOut, MatricesConvolutionsVectors) {
  int64_t in = 0, out = 0;
  FanInOut({784, 512}, &in, &out);
  EXPECT_EQ(in, 784);
  EXPECT_EQ(out, 512);
  FanInOut({16, 6, 5, 5}, &in, &out);  // [O, C, KH, KW]
  EXPECT_EQ(in, 6 * 25);
  EXPECT_EQ(out, 16 * 25);
  FanInOut({120}, &in, &out);
  EXPECT_EQ(in, 120);
  EXPECT_EQ(out, 120);
}

TEST(Initializer, SameSeedAndNameGiveSameValuesRegardlessOfCreationOrder) {
  const InitSpec spec{InitSpec::kNormal, 0.5f};
  Graph g1, g2;
  g1.AddInput("x", {2, 4});
  g1.AddParameter("layer.a", {4, 3}, spec);
  g1.AddParameter("layer.b", {3, 3}, spec);
  g2.AddParameter("layer.b", {3, 3}, spec);  // other order, other ids
  g2.AddParameter("extra", {7}, spec);
  g2.AddParameter("layer.a", {4, 3}, spec);
  Executor e1(g1), e2(g2);
  e1.InitializeParameters(42);
  e2.InitializeParameters(42);
  for (const char* name : {"layer.a", "layer.b"}) {
    SCOPED_TRACE(name);
    const Tensor& t1 = e1.value(g1.FindValue(name));
    const Tensor& t2 = e2.value(g2.FindValue(name));
    EXPECT_TRUE(SameBits(t1, t2));
    EXPECT_NE(MomentsOf(t1).var, 0.0);  // actually drawn, not zeros
  }
  EXPECT_FALSE(SameBits(e1.value(g1.FindValue("layer.a")).Reshaped({12}),
                        InitializeValue(Param("layer.a", {4, 3}, spec), 43).Reshaped({12})));
}

TEST(Initializer, DifferentSeedsOrNamesDiffer) {
  const InitSpec spec{InitSpec::kXavierUniform, 1.0f};
  const Tensor a = InitializeValue(Param("w", {10, 10}, spec), 1);
  const Tensor a2 = InitializeValue(Param("w", {10, 10}, spec), 1);
  const Tensor b = InitializeValue(Param("w", {10, 10}, spec), 2);
  const Tensor c = InitializeValue(Param("v", {10, 10}, spec), 1);
  EXPECT_TRUE(SameBits(a, a2));
  int same_b = 0, same_c = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    same_b += a[i] == b[i];
    same_c += a[i] == c[i];
  }
  EXPECT_EQ(same_b, 0);
  EXPECT_EQ(same_c, 0);
}

TEST(Initializer, ZerosOnesAndConstantScale) {
  const Tensor z = InitializeValue(Param("z", {3, 4}, {InitSpec::kZeros, 5.0f}), 1);
  const Tensor o = InitializeValue(Param("o", {3, 4}, {InitSpec::kOnes, 5.0f}), 1);
  EXPECT_EQ(z.shape(), (Shape{3, 4}));
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(z[i], 0.0f);
    EXPECT_EQ(o[i], 1.0f);
  }
}

TEST(Initializer, NormalHasRequestedStddev) {
  const Tensor t = InitializeValue(Param("n", {200, 200}, {InitSpec::kNormal, 0.05f}), 3);
  const Moments m = MomentsOf(t);
  EXPECT_NEAR(m.mean, 0.0, 0.002);
  EXPECT_NEAR(std::sqrt(m.var), 0.05, 0.05 * 0.03);
}

TEST(Initializer, TruncatedNormalStaysWithinTwoSigma) {
  const float sigma = 0.02f;
  const Tensor t = InitializeValue(Param("t", {300, 200}, {InitSpec::kTruncatedNormal, sigma}), 5);
  const Moments m = MomentsOf(t);
  EXPECT_LE(m.max_abs, 2.0 * sigma * (1 + 1e-6));
  EXPECT_GT(m.max_abs, 1.9 * sigma);  // the tails are used up to the cut
  EXPECT_NEAR(m.mean, 0.0, 0.001);
  // Std of N(0, 1) truncated to [-2, 2]: sqrt(1 − 2·2·φ(2) / (2Φ(2) − 1)) = 0.8796.
  EXPECT_NEAR(std::sqrt(m.var) / sigma, 0.8796, 0.02);
}

TEST(Initializer, XavierUniformBoundAndVariance) {
  const int64_t fan_in = 200, fan_out = 300;
  const Tensor t =
      InitializeValue(Param("x", {fan_in, fan_out}, {InitSpec::kXavierUniform, 1.0f}), 9);
  const double bound = std::sqrt(6.0 / (fan_in + fan_out));
  const Moments m = MomentsOf(t);
  EXPECT_LE(m.max_abs, bound);
  EXPECT_GT(m.max_abs, 0.99 * bound);
  EXPECT_NEAR(m.var, bound * bound / 3.0, 0.03 * bound * bound / 3.0);  // U(±b): b²/3
}

TEST(Initializer, HeNormalVariance) {
  const int64_t fan_in = 400;
  const Tensor t = InitializeValue(Param("h", {fan_in, 150}, {InitSpec::kHeNormal, 1.0f}), 11);
  const Moments m = MomentsOf(t);
  EXPECT_NEAR(m.var, 2.0 / fan_in, 0.03 * 2.0 / fan_in);
  EXPECT_NEAR(m.mean, 0.0, 0.002);
  // Convolution fan-in is C·KH·KW.
  const Tensor c = InitializeValue(Param("c", {256, 8, 3, 3}, {InitSpec::kHeNormal, 1.0f}), 12);
  EXPECT_NEAR(MomentsOf(c).var, 2.0 / 72, 0.05 * 2.0 / 72);
}

TEST(Initializer, FanInUniformAndUniformBounds) {
  const Tensor t = InitializeValue(Param("f", {256, 200}, {InitSpec::kFanInUniform, 1.0f}), 13);
  const double bound = 1.0 / 16.0;  // 1 / sqrt(256)
  Moments m = MomentsOf(t);
  EXPECT_LE(m.max_abs, bound);
  EXPECT_GT(m.max_abs, 0.99 * bound);
  EXPECT_NEAR(m.var, bound * bound / 3.0, 0.03 * bound * bound / 3.0);

  const Tensor u = InitializeValue(Param("u", {200, 200}, {InitSpec::kUniform, 0.3f}), 14);
  m = MomentsOf(u);
  EXPECT_LE(m.max_abs, 0.3);
  EXPECT_GT(m.max_abs, 0.29);
  EXPECT_NEAR(m.var, 0.09 / 3.0, 0.03 * 0.03);
}

}  // namespace
}  // namespace shardscope
