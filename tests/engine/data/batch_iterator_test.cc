// Tests of BatchIterator: coverage, determinism of shuffles, batch contents, reuse.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "shardscope/data.h"

namespace shardscope {
namespace {

// A dataset whose example i is filled with the value i and labelled i % 10, so a batch row
// tells which example it came from.
Dataset Indexed(int64_t n, Shape example_shape) {
  Dataset ds;
  Shape shape = example_shape;
  shape.insert(shape.begin(), n);
  ds.images = Tensor(shape, DType::kF32);
  ds.labels = Tensor({n}, DType::kI32);
  const int64_t e = NumElements(example_shape);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < e; ++j) ds.images.data()[i * e + j] = static_cast<float>(i);
    ds.labels.ints()[i] = static_cast<int32_t>(i % 10);
  }
  return ds;
}

// Example indices visited in one epoch, read back from the batch contents.
std::vector<int64_t> Visit(BatchIterator* it, const Dataset& ds, std::vector<int64_t>* sizes) {
  std::vector<int64_t> seen;
  Tensor x, y;
  const int64_t e = ds.example_size();
  while (it->Next(&x, &y)) {
    sizes->push_back(x.dim(0));
    for (int64_t k = 0; k < x.dim(0); ++k) {
      const int64_t idx = static_cast<int64_t>(x.data()[k * e]);
      seen.push_back(idx);
      EXPECT_EQ(y.ints()[k], idx % 10);
    }
  }
  return seen;
}

TEST(BatchIterator, CoversEveryExampleOnceWithoutDrop) {
  Dataset ds = Indexed(103, {1, 2, 2});
  BatchIterator it(ds, 10, 5, /*shuffle=*/true, /*drop_remainder=*/false);
  EXPECT_EQ(it.batches_per_epoch(), 11);
  for (int epoch = 0; epoch < 3; ++epoch) {
    it.Reset(epoch);
    std::vector<int64_t> sizes;
    std::vector<int64_t> seen = Visit(&it, ds, &sizes);
    ASSERT_EQ(static_cast<int64_t>(sizes.size()), it.batches_per_epoch());
    for (size_t b = 0; b + 1 < sizes.size(); ++b) EXPECT_EQ(sizes[b], 10);
    EXPECT_EQ(sizes.back(), 3);
    std::vector<int> count(103, 0);
    for (int64_t i : seen) ++count[i];
    for (int i = 0; i < 103; ++i) EXPECT_EQ(count[i], 1) << "example " << i << " epoch " << epoch;
    EXPECT_EQ(seen, it.order());
  }
}

TEST(BatchIterator, DropRemainderSkipsThePartialBatch) {
  Dataset ds = Indexed(103, {3});
  BatchIterator it(ds, 10, 5, true);
  EXPECT_EQ(it.batches_per_epoch(), 10);
  std::vector<int64_t> sizes;
  std::vector<int64_t> seen = Visit(&it, ds, &sizes);
  EXPECT_EQ(sizes, std::vector<int64_t>(10, 10));
  EXPECT_EQ(seen, std::vector<int64_t>(it.order().begin(), it.order().begin() + 100));

  // A batch larger than the data set yields nothing with drop_remainder, one batch without.
  BatchIterator big(ds, 200, 5, true, true);
  EXPECT_EQ(big.batches_per_epoch(), 0);
  Tensor x, y;
  EXPECT_FALSE(big.Next(&x, &y));
  BatchIterator big_keep(ds, 200, 5, true, false);
  EXPECT_EQ(big_keep.batches_per_epoch(), 1);
  ASSERT_TRUE(big_keep.Next(&x, &y));
  EXPECT_EQ(x.shape(), (Shape{103, 3}));
}

TEST(BatchIterator, ShufflesDifferBetweenEpochsButRepeatForASeed) {
  Dataset ds = Indexed(1000, {2});
  BatchIterator a(ds, 32, 11, true);
  BatchIterator b(ds, 32, 11, true);
  BatchIterator other(ds, 32, 12, true);
  std::vector<int64_t> identity(1000);
  for (int i = 0; i < 1000; ++i) identity[i] = i;

  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 4; ++e) {
    a.Reset(e);
    b.Reset(e);
    other.Reset(e);
    EXPECT_EQ(a.order(), b.order()) << "epoch " << e;
    EXPECT_NE(a.order(), other.order()) << "epoch " << e;
    EXPECT_NE(a.order(), identity);
    epochs.push_back(a.order());
  }
  for (size_t i = 0; i < epochs.size(); ++i) {
    for (size_t j = i + 1; j < epochs.size(); ++j) EXPECT_NE(epochs[i], epochs[j]);
  }
  // Returning to an epoch reproduces it; batches follow the order.
  a.Reset(1);
  EXPECT_EQ(a.order(), epochs[1]);
  std::vector<int64_t> sizes;
  std::vector<int64_t> seen = Visit(&a, ds, &sizes);
  EXPECT_EQ(seen, std::vector<int64_t>(epochs[1].begin(), epochs[1].begin() + 31 * 32));
}

TEST(BatchIterator, NoShuffleIsSequential) {
  Dataset ds = Indexed(25, {4});
  BatchIterator it(ds, 5, 99, /*shuffle=*/false);
  for (int e = 0; e < 2; ++e) {
    it.Reset(e);
    std::vector<int64_t> sizes;
    std::vector<int64_t> seen = Visit(&it, ds, &sizes);
    ASSERT_EQ(seen.size(), 25u);
    for (int i = 0; i < 25; ++i) EXPECT_EQ(seen[i], i);
  }
}

TEST(BatchIterator, BatchContentsMatchDatasetRows) {
  Dataset ds = MakeSyntheticDataset(77, {1, 5, 3}, 4, 21);
  BatchIterator it(ds, 8, 3, true, false);
  Tensor x, y;
  int64_t pos = 0;
  const int64_t e = 15;
  while (it.Next(&x, &y)) {
    ASSERT_EQ(x.rank(), 4);
    EXPECT_EQ(x.dim(1), 1);
    EXPECT_EQ(x.dim(2), 5);
    EXPECT_EQ(x.dim(3), 3);
    EXPECT_EQ(y.dtype(), DType::kI32);
    ASSERT_EQ(y.shape(), (Shape{x.dim(0)}));
    for (int64_t k = 0; k < x.dim(0); ++k) {
      const int64_t idx = it.order()[pos + k];
      EXPECT_EQ(0, std::memcmp(x.data() + k * e, ds.images.data() + idx * e, e * sizeof(float)))
          << "row " << k << " = example " << idx;
      EXPECT_EQ(y.ints()[k], ds.labels.ints()[idx]);
    }
    pos += x.dim(0);
  }
  EXPECT_EQ(pos, 77);
}

TEST(BatchIterator, ExhaustedLeavesTensorsAloneAndResetRestarts) {
  Dataset ds = Indexed(20, {2});
  BatchIterator it(ds, 10, 1, true);
  Tensor x, y;
  ASSERT_TRUE(it.Next(&x, &y));
  const float* buffer = x.data();
  ASSERT_TRUE(it.Next(&x, &y));
  EXPECT_EQ(x.data(), buffer) << "same-shaped batches reuse the tensor's storage";
  const std::vector<float> last = x.ToVector();
  EXPECT_FALSE(it.Next(&x, &y));
  EXPECT_EQ(x.ToVector(), last);
  EXPECT_FALSE(it.Next(&x, &y));
  it.Reset(7);
  EXPECT_EQ(it.epoch(), 7);
  EXPECT_TRUE(it.Next(&x, &y));
}

TEST(BatchIterator, EmptyDataset) {
  Dataset ds = Indexed(0, {2});
  BatchIterator it(ds, 4, 1, true, false);
  EXPECT_EQ(it.batches_per_epoch(), 0);
  Tensor x, y;
  EXPECT_FALSE(it.Next(&x, &y));
}

// Sequence labels [N, T] (text data) travel with their example, row for row.
TEST(BatchIteratorTest, SequenceLabelsFollowTheirExample) {
  Dataset d;
  std::vector<int32_t> ids(6 * 3), next(6 * 3);
  for (int i = 0; i < 18; ++i) {
    ids[i] = i;
    next[i] = 100 + i;
  }
  d.images = Tensor::FromInts({6, 3}, ids);
  d.labels = Tensor::FromInts({6, 3}, next);
  BatchIterator it(d, 4, 7, /*shuffle=*/true);
  Tensor x, y;
  ASSERT_TRUE(it.Next(&x, &y));
  EXPECT_EQ(x.dtype(), DType::kI32);
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  for (int64_t i = 0; i < x.size(); ++i) EXPECT_EQ(y.ints()[i], 100 + x.ints()[i]) << i;
}

}  // namespace
}  // namespace shardscope
