// Tests of the seeded Rng, StableHash and DeriveSeed.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "shardscope/rng.h"

namespace shardscope {
namespace {

constexpr int kDraws = 100000;

TEST(Rng, MatchesPublishedSplitMix64Sequence) {
  // Reference outputs of SplitMix64 (Vigna) from state 0: the sequence is fixed by the
  // algorithm, not by the compiler or standard library.
  Rng rng(0);
  EXPECT_EQ(rng.NextU64(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(rng.NextU64(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(rng.NextU64(), 0x06C45D188009454FULL);
}

TEST(Rng, SameSeedSameSequence) {
  Rng a(12345), b(12345);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.NextU64(), b.NextU64()) << i;
  // Mixed calls stay in lock step too (Normal keeps a spare).
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(a.Uniform(), b.Uniform());
    ASSERT_EQ(a.Normal(), b.Normal());
    ASSERT_EQ(a.Below(17), b.Below(17));
  }
}

TEST(Rng, DifferentSeedsDiffer) {
  Rng a(1), b(2);
  int equal = 0;
  for (int i = 0; i < 1000; ++i) equal += a.NextU64() == b.NextU64();
  EXPECT_EQ(equal, 0);
}

TEST(Rng, UniformInHalfOpenUnitIntervalWithRightMoments) {
  Rng rng(7);
  double sum = 0, sum_sq = 0, lo = 1, hi = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum_sq += u * u;
  }
  const double mean = sum / kDraws;
  const double var = sum_sq / kDraws - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.005);  // σ of the mean ≈ 0.0009
  EXPECT_NEAR(var, 1.0 / 12.0, 0.002);
  EXPECT_LT(lo, 0.001);
  EXPECT_GT(hi, 0.999);
}

TEST(Rng, NormalHasMeanZeroVarianceOne) {
  Rng rng(99);
  double sum = 0, sum_sq = 0;
  int within_one = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double z = rng.Normal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
    within_one += std::abs(z) < 1.0;
  }
  const double mean = sum / kDraws;
  const double var = sum_sq / kDraws - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.015);  // σ of the mean ≈ 0.0032
  EXPECT_NEAR(var, 1.0, 0.025);   // σ of the variance ≈ 0.0045
  // P(|Z| < 1) = 0.682689...
  EXPECT_NEAR(static_cast<double>(within_one) / kDraws, 0.682689, 0.006);
}

TEST(Rng, BelowStaysInRangeAndIsRoughlyUniform) {
  Rng rng(3);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t k = rng.Below(10);
    ASSERT_LT(k, 10u);
    ++counts[k];
  }
  for (int c = 0; c < 10; ++c) EXPECT_NEAR(counts[c], kDraws / 10, 500) << "bucket " << c;
  EXPECT_EQ(rng.Below(1), 0u);
  EXPECT_EQ(rng.Below(0), 0u);  // documented degenerate case: no range, returns 0
}

TEST(StableHash, IsFnv1a64) {
  // Published FNV-1a 64-bit test vectors.
  EXPECT_EQ(StableHash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(StableHash("foobar"), 0x85944171f73967e8ULL);
}

TEST(DeriveSeed, DiffersPerNameAndPerSeedAndIsStable) {
  const std::vector<std::string> names = {"dense1.weight", "dense1.bias",  "dense2.weight",
                                          "dense2.bias",   "conv1.weight", "dropout"};
  std::set<uint64_t> seeds;
  for (uint64_t s : {0ULL, 1ULL, 2ULL, 42ULL}) {
    for (const std::string& n : names) {
      EXPECT_EQ(DeriveSeed(s, n), DeriveSeed(s, n));
      seeds.insert(DeriveSeed(s, n));
    }
  }
  EXPECT_EQ(seeds.size(), 4 * names.size()) << "two (seed, name) pairs collided";

  // Streams derived for different names are unrelated.
  Rng a(DeriveSeed(1, "dense1.weight")), b(DeriveSeed(1, "dense1.bias"));
  int equal = 0;
  for (int i = 0; i < 100; ++i) equal += a.NextU64() == b.NextU64();
  EXPECT_EQ(equal, 0);
}

}  // namespace
}  // namespace shardscope
