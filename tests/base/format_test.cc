// Tests of the shared formatting (bytes, seconds, clock) and the small helpers beside it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "shardscope/base/format.h"
#include "shardscope/base/hash.h"
#include "shardscope/base/prime_factors.h"

namespace shardscope {
namespace {

TEST(FormatBytes, BinaryUnitsAtEachBoundary) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{1} << 20), "1.00 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(FormatBytes(-2048), "-2.0 KiB");
  EXPECT_EQ(FormatBytes(static_cast<double>(INT64_MAX)), "8589934592.00 GiB");
  EXPECT_EQ(FormatBytes(1e30), "931322574615478534144.00 GiB");  // no overflow of a conversion
}

TEST(FormatSeconds, MicroMilliAndWholeSeconds) {
  EXPECT_EQ(FormatSeconds(0), "0");
  EXPECT_EQ(FormatSeconds(std::nan("")), "-");
  EXPECT_EQ(FormatSeconds(12.34e-6), "12.3 us");
  EXPECT_EQ(FormatSeconds(4.567e-3), "4.57 ms");
  EXPECT_EQ(FormatSeconds(1.2345), "1.234 s");
  EXPECT_EQ(FormatSeconds(-2e-3), "-2.00 ms");
}

TEST(FormatClock, MinutesThenHours) {
  EXPECT_EQ(FormatClock(0), "0:00");
  EXPECT_EQ(FormatClock(59.6), "1:00");
  EXPECT_EQ(FormatClock(3599), "59:59");
  EXPECT_EQ(FormatClock(3600 + 61), "1:01:01");
}

TEST(PrimeFactors, AscendingWithMultiplicity) {
  EXPECT_EQ(PrimeFactors(1), std::vector<int64_t>{});
  EXPECT_EQ(PrimeFactors(2), std::vector<int64_t>{2});
  EXPECT_EQ(PrimeFactors(12), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(PrimeFactors(4096), std::vector<int64_t>(12, 2));
  EXPECT_EQ(PrimeFactors(97), std::vector<int64_t>{97});
  // Near the top of int64: no overflow in the trial bound.
  EXPECT_EQ(PrimeFactors(INT64_MAX), (std::vector<int64_t>{7, 7, 73, 127, 337, 92737, 649657}));
  for (int64_t n = 2; n < 2000; ++n) {
    int64_t product = 1;
    for (int64_t f : PrimeFactors(n)) product *= f;
    EXPECT_EQ(product, n);
  }
}

TEST(HashCombine, DependsOnOrderAndValues) {
  const size_t ab = HashCombine(HashCombine(0, 1), 2);
  const size_t ba = HashCombine(HashCombine(0, 2), 1);
  EXPECT_NE(ab, ba);
  EXPECT_EQ(ab, HashCombine(HashCombine(0, 1), 2));
  EXPECT_NE(HashCombine(0, 1), HashCombine(0, 0));
}

}  // namespace
}  // namespace shardscope
