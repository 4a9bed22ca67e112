// Tests of Tensor, Shape helpers and DType names.
#include <gtest/gtest.h>

#include <vector>

#include "shardscope/tensor.h"

namespace shardscope {
namespace {

TEST(NumElements, ProductOfDimensions) {
  EXPECT_EQ(NumElements({}), 1);  // a scalar holds one element
  EXPECT_EQ(NumElements({7}), 7);
  EXPECT_EQ(NumElements({32, 784}), 32 * 784);
  EXPECT_EQ(NumElements({2, 3, 4, 5}), 120);
  EXPECT_EQ(NumElements({4, 0, 3}), 0);
}

TEST(ShapeToString, BracketsAndCommas) {
  EXPECT_EQ(ShapeToString({}), "[]");
  EXPECT_EQ(ShapeToString({5}), "[5]");
  EXPECT_EQ(ShapeToString({32, 784}), "[32, 784]");
  EXPECT_EQ(ShapeToString({1, 2, 3, 4}), "[1, 2, 3, 4]");
}

TEST(DTypeName, Names) {
  EXPECT_STREQ(DTypeName(DType::kF32), "f32");
  EXPECT_STREQ(DTypeName(DType::kI32), "i32");
}

TEST(Tensor, ShapeConstructorZeroFills) {
  Tensor t({2, 3, 4});
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_EQ(t.dim(2), 4);
  EXPECT_EQ(t.size(), 24);
  EXPECT_EQ(t.dtype(), DType::kF32);
  for (int64_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i], 0.0f) << i;

  Tensor ints({5}, DType::kI32);
  EXPECT_EQ(ints.dtype(), DType::kI32);
  EXPECT_EQ(ints.size(), 5);
  for (int64_t i = 0; i < ints.size(); ++i) EXPECT_EQ(ints.ints()[i], 0) << i;
}

TEST(Tensor, FromVectorKeepsRowMajorOrder) {
  Tensor t = Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.size(), 6);
  // Row-major: element (r, c) at r * 3 + c.
  EXPECT_EQ(t[1 * 3 + 0], 4.0f);
  EXPECT_EQ(t[0 * 3 + 2], 3.0f);
  EXPECT_EQ(t.ToVector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.data()[5], 6.0f);
}

TEST(Tensor, FromIntsIsI32) {
  Tensor t = Tensor::FromInts({4}, {3, -1, 0, 9});
  EXPECT_EQ(t.dtype(), DType::kI32);
  EXPECT_EQ(t.shape(), (Shape{4}));
  EXPECT_EQ(t.size(), 4);
  EXPECT_EQ(t.ints()[0], 3);
  EXPECT_EQ(t.ints()[1], -1);
  EXPECT_EQ(t.ints()[3], 9);
}

TEST(Tensor, ScalarHasRankZeroAndOneElement) {
  Tensor s = Tensor::Scalar(2.5f);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s[0], 2.5f);
}

TEST(Tensor, ReshapeInPlaceKeepsData) {
  Tensor t = Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6});
  t.Reshape({3, 2});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.ToVector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  t.Reshape({6});
  EXPECT_EQ(t.rank(), 1);
  t.Reshape({1, 2, 1, 3});
  EXPECT_EQ(t.rank(), 4);
  EXPECT_EQ(t.dim(3), 3);
}

TEST(Tensor, ReshapedIsACopy) {
  const Tensor t = Tensor::FromVector({2, 2}, {1, 2, 3, 4});
  Tensor r = t.Reshaped({4});
  EXPECT_EQ(r.shape(), (Shape{4}));
  EXPECT_EQ(t.shape(), (Shape{2, 2}));  // the original is untouched
  r[0] = 100.0f;
  EXPECT_EQ(t[0], 1.0f);
}

TEST(Tensor, FillSetsEveryElement) {
  Tensor t({3, 5});
  t.Fill(-1.5f);
  EXPECT_EQ(t.size(), 15);
  for (int64_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i], -1.5f) << i;
  EXPECT_EQ(t.shape(), (Shape{3, 5}));
}

TEST(Tensor, CopyHasValueSemantics) {
  Tensor a = Tensor::FromVector({3}, {1, 2, 3});
  Tensor b = a;
  b[1] = 20.0f;
  EXPECT_EQ(a[1], 2.0f);
  EXPECT_EQ(b[1], 20.0f);
  EXPECT_NE(a.data(), b.data());
}

}  // namespace
}  // namespace shardscope
