// Checked counts: every product and sum that can overflow 63 bits says so.
#include "shardscope/checked_math.h"

#include <gtest/gtest.h>

#include <limits>

namespace shardscope {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedMath, MultipliesAndAddsWithinSixtyThreeBits) {
  EXPECT_EQ(CheckedMul(3, 5), 15);
  EXPECT_EQ(CheckedMul(kMax, 1), kMax);
  EXPECT_EQ(CheckedMul(int64_t{1} << 32, int64_t{1} << 30), int64_t{1} << 62);
  EXPECT_EQ(CheckedMul(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);
  EXPECT_EQ(CheckedMul(-1, 4), std::nullopt);  // counts are never negative
  EXPECT_EQ(CheckedAdd(kMax - 1, 1), kMax);
  EXPECT_EQ(CheckedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(CheckedAdd(-5, 1), std::nullopt);
}

TEST(CheckedMath, ShapesWhoseProductWrapsAreRefused) {
  // 2^32 x 2^32 wraps to 0 in plain int64 arithmetic.
  EXPECT_EQ(CheckedNumElements({4294967296, 4294967296}), std::nullopt);
  EXPECT_EQ(CheckedNumElements({16, 4611686018427387904}), std::nullopt);
  EXPECT_EQ(CheckedNumElements({4611686018427387904, 4}), std::nullopt);
  EXPECT_EQ(CheckedNumElements({2, -3}), std::nullopt);
  EXPECT_EQ(CheckedNumElements({}), 1);
  EXPECT_EQ(CheckedNumElements({0, kMax}), 0);
  EXPECT_EQ(CheckedBytes({int64_t{1} << 61}, 4), std::nullopt);
  EXPECT_EQ(CheckedBytes({int64_t{1} << 60}, 4), int64_t{1} << 62);
}

TEST(CheckedMath, TensorSizeNamesTheShapeAndTheLimit) {
  EXPECT_TRUE(CheckTensorSize({32, 784}, 4, "x").ok());
  EXPECT_TRUE(CheckTensorSize({kMaxTensorBytes / 4}, 4, "x").ok());
  const Status wraps = CheckTensorSize({4294967296, 4294967296}, 4, "parameter 'big'");
  EXPECT_EQ(wraps.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(wraps.message(),
            "parameter 'big' [4294967296, 4294967296] has 2^64 elements, which does not fit in "
            "63 bits");
  const Status big = CheckTensorSize({kMaxTensorBytes / 4 + 1}, 4, "w");
  EXPECT_NE(big.message().find("more than 2^56 bytes"), std::string::npos) << big.message();
  EXPECT_FALSE(CheckTensorSize({3, -1}, 4, "w").ok());
  EXPECT_EQ(CountText({1024, 3}), "3072");
  EXPECT_EQ(CountText({4294967296, 4294967296, 4}), "2^66");
  EXPECT_EQ(CountText({3, 4611686018427387904}), "more than 2^63");
}

}  // namespace
}  // namespace shardscope
