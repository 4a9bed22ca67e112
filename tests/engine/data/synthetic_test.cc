// Tests of MakeSyntheticDataset: shapes, determinism, prefix property, learnability.

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "shardscope/data.h"

namespace shardscope {
namespace {

bool SameData(const Dataset& a, const Dataset& b) {
  return a.images.shape() == b.images.shape() && a.labels.shape() == b.labels.shape() &&
         a.num_classes == b.num_classes &&
         std::memcmp(a.images.data(), b.images.data(), a.images.size() * sizeof(float)) == 0 &&
         std::memcmp(a.labels.ints(), b.labels.ints(), a.labels.size() * sizeof(int32_t)) == 0;
}

TEST(Synthetic, ShapesAndLabels) {
  Dataset ds = MakeSyntheticDataset(500, {1, 8, 8}, 7, 3);
  EXPECT_EQ(ds.size(), 500);
  EXPECT_EQ(ds.images.shape(), (Shape{500, 1, 8, 8}));
  EXPECT_EQ(ds.images.dtype(), DType::kF32);
  EXPECT_EQ(ds.labels.shape(), (Shape{500}));
  EXPECT_EQ(ds.labels.dtype(), DType::kI32);
  EXPECT_EQ(ds.num_classes, 7);
  EXPECT_EQ(ds.example_shape(), (Shape{1, 8, 8}));
  EXPECT_EQ(ds.example_size(), 64);
  std::vector<int> counts(7, 0);
  for (int64_t i = 0; i < ds.size(); ++i) {
    const int y = ds.labels.ints()[i];
    ASSERT_GE(y, 0);
    ASSERT_LT(y, 7);
    ++counts[y];
  }
  for (int c = 0; c < 7; ++c) EXPECT_GT(counts[c], 30) << "class " << c;  // ~71 expected

  Dataset flat = MakeSyntheticDataset(4, {16}, 2, 3);
  EXPECT_EQ(flat.images.shape(), (Shape{4, 16}));
  Dataset empty = MakeSyntheticDataset(0, {3}, 2, 3);
  EXPECT_EQ(empty.size(), 0);
}

TEST(Synthetic, DeterministicForASeed) {
  Dataset a = MakeSyntheticDataset(200, {1, 4, 4}, 10, 42);
  Dataset b = MakeSyntheticDataset(200, {1, 4, 4}, 10, 42);
  Dataset c = MakeSyntheticDataset(200, {1, 4, 4}, 10, 43);
  EXPECT_TRUE(SameData(a, b));
  EXPECT_FALSE(SameData(a, c));
}

TEST(Synthetic, SmallerSetIsAPrefix) {
  Dataset big = MakeSyntheticDataset(300, {12}, 5, 9);
  Dataset small = MakeSyntheticDataset(120, {12}, 5, 9);
  EXPECT_EQ(0, std::memcmp(big.images.data(), small.images.data(), 120 * 12 * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(big.labels.ints(), small.labels.ints(), 120 * sizeof(int32_t)));
}

// Nearest class mean, fitted on the first half and scored on the second, is nearly perfect:
// the set is learnable, not noise.
TEST(Synthetic, Learnable) {
  const int classes = 10;
  const int64_t dim = 64, n = 2000, half = n / 2;
  Dataset ds = MakeSyntheticDataset(n, {1, 8, 8}, classes, 7);
  std::vector<double> means(classes * dim, 0.0);
  std::vector<int> counts(classes, 0);
  for (int64_t i = 0; i < half; ++i) {
    const int y = ds.labels.ints()[i];
    ++counts[y];
    for (int64_t j = 0; j < dim; ++j) means[y * dim + j] += ds.images.data()[i * dim + j];
  }
  for (int c = 0; c < classes; ++c) {
    ASSERT_GT(counts[c], 0);
    for (int64_t j = 0; j < dim; ++j) means[c * dim + j] /= counts[c];
  }
  int correct = 0;
  for (int64_t i = half; i < n; ++i) {
    int best = -1;
    double best_d = std::numeric_limits<double>::infinity();
    for (int c = 0; c < classes; ++c) {
      double d = 0;
      for (int64_t j = 0; j < dim; ++j) {
        const double diff = ds.images.data()[i * dim + j] - means[c * dim + j];
        d += diff * diff;
      }
      if (d < best_d) best_d = d, best = c;
    }
    correct += best == ds.labels.ints()[i];
  }
  EXPECT_GT(static_cast<double>(correct) / (n - half), 0.95);
}

}  // namespace
}  // namespace shardscope
