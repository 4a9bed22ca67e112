#include "shardscope/cost/calibration.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace shardscope {
namespace {

// A round of an undisturbed machine; `jitter` in [-1, 1] moves every figure by up to 5 %.
CalibrationRound QuietRound(double jitter) {
  CalibrationRound r;
  r.all_reduce_pair_s = 20e-6 * (1 + 0.05 * jitter);
  r.all_reduce_all_s = 100e-6 * (1 + 0.05 * jitter);
  r.all_reduce_halves_s = 80e-6 * (1 + 0.05 * jitter);
  r.all_gather_all_s = 3e-3 * (1 + 0.05 * jitter);
  r.interleaved_s = 180e-6 * (1 + 0.05 * jitter);
  r.interleaved_long_s = 1e-3 * (1 + 0.05 * jitter);
  r.concurrent_gemm_flops = 75e9 * (1 - 0.05 * jitter);
  r.single_gemm_flops = 88e9 * (1 - 0.05 * jitter);
  return r;
}

// The same round while another process holds the cores: collectives twice as slow, the GEMMs
// at half their rate.
CalibrationRound DisturbedRound(double jitter) {
  CalibrationRound r = QuietRound(jitter);
  r.all_reduce_pair_s *= 2;
  r.all_reduce_all_s *= 2;
  r.all_reduce_halves_s *= 2;
  r.all_gather_all_s *= 2;
  r.interleaved_s *= 2;
  r.interleaved_long_s *= 2;
  r.concurrent_gemm_flops /= 2;
  r.single_gemm_flops /= 2;
  return r;
}

TEST(MedianOf, OddAndEvenCounts) {
  EXPECT_EQ(MedianOf({}), 0);
  EXPECT_EQ(MedianOf({3, 1, 2}), 2);
  EXPECT_EQ(MedianOf({4, 1, 3, 2}), 2.5);
}

// Seven of fifteen rounds disturbed (a burst of load for almost half the duration): every
// figure stays within the quiet rounds' own spread.
TEST(CombineCalibrationRounds, RoundsDisturbedByAnotherProcessDoNotMoveAnyFigure) {
  std::vector<CalibrationRound> rounds;
  for (int i = 0; i < 15; ++i) {
    const double jitter = (i % 5 - 2) / 2.0;
    // Rounds 4..10 (one contiguous burst) are disturbed.
    rounds.push_back(i >= 4 && i <= 10 ? DisturbedRound(jitter) : QuietRound(jitter));
  }
  const CalibrationRound c = CombineCalibrationRounds(rounds);
  // The quiet rounds' figures lie within 5 % of QuietRound(0); the disturbed ones 90 % off.
  EXPECT_LE(c.all_reduce_pair_s, 21e-6 * 1.001);
  EXPECT_LE(c.all_reduce_all_s, 105e-6 * 1.001);
  EXPECT_GE(c.all_reduce_all_s, 95e-6 * 0.999);
  EXPECT_LE(c.all_reduce_halves_s, 84e-6 * 1.001);
  EXPECT_LE(c.all_gather_all_s, 3.15e-3 * 1.001);
  EXPECT_LE(c.interleaved_s, 189e-6 * 1.001);
  EXPECT_LE(c.interleaved_long_s, 1.05e-3 * 1.001);
  EXPECT_GE(c.concurrent_gemm_flops, 71.25e9 * 0.999);
  // One thread's rate is the best round's: a disturbance only slows a round down.
  EXPECT_DOUBLE_EQ(c.single_gemm_flops, 88e9 * 1.05);
}

// A burst in the last rounds leaves the figure at the quiet rounds' value; a majority of
// disturbed rounds is what the figure then follows (a persistent load, which the training
// runs after the calibration see too).
TEST(CombineCalibrationRounds, FollowsTheLoadWhenMostRoundsSeeIt) {
  std::vector<CalibrationRound> few, most;
  for (int i = 0; i < 9; ++i) {
    few.push_back(i < 7 ? QuietRound(0) : DisturbedRound(0));
    most.push_back(i < 3 ? QuietRound(0) : DisturbedRound(0));
  }
  EXPECT_DOUBLE_EQ(CombineCalibrationRounds(few).all_reduce_all_s, 100e-6);
  EXPECT_DOUBLE_EQ(CombineCalibrationRounds(most).all_reduce_all_s, 200e-6);
  EXPECT_DOUBLE_EQ(CombineCalibrationRounds(most).concurrent_gemm_flops, 37.5e9);
}

// MPI rounds measure no concurrent GEMM rate (0): it stays 0, the others are combined.
TEST(CombineCalibrationRounds, UnmeasuredFiguresStayZero) {
  std::vector<CalibrationRound> rounds(3, QuietRound(0));
  for (CalibrationRound& r : rounds) r.concurrent_gemm_flops = 0;
  rounds[1].all_reduce_all_s = 300e-6;
  const CalibrationRound c = CombineCalibrationRounds(rounds);
  EXPECT_EQ(c.concurrent_gemm_flops, 0);
  EXPECT_DOUBLE_EQ(c.all_reduce_all_s, 100e-6);
  EXPECT_EQ(CombineCalibrationRounds({}).all_reduce_all_s, 0);
}

// A rate table of the given scale: base 256 at 100 GFLOP/s x scale, each axis slower below.
GemmRateTable Table(double scale) {
  GemmRateTable t;
  t.base_flops = 100e9 * scale;
  for (int64_t d : {1, 4, 16, 256}) {
    const double rate = t.base_flops * static_cast<double>(d) / 256;
    t.rows.emplace_back(d, rate);
    t.depth.emplace_back(d, rate * 2);
    t.cols.emplace_back(d, rate / 2);
  }
  return t;
}

// The kernels' tables are measured in some rounds only; a round disturbed in its middle has
// some entries slow. Every entry is its best round's, so the undisturbed table comes out.
TEST(CombineCalibrationRounds, EveryTableEntryIsItsBestRound) {
  std::vector<CalibrationRound> rounds(7, QuietRound(0));
  rounds[1].gemm_rates = Table(1);
  rounds[4].gemm_rates = Table(1);
  rounds[1].gemm_rates.rows[2].second /= 3;  // a burst hit these two shapes in round 1
  rounds[1].gemm_rates.cols[0].second /= 2;
  rounds[4].gemm_rates.depth[1].second /= 2;  // and this one in round 4
  rounds[4].gemm_rates.base_flops /= 2;
  rounds[1].max_pool_bytes_per_s = 3e9;
  rounds[4].max_pool_bytes_per_s = 1.5e9;
  const CalibrationRound c = CombineCalibrationRounds(rounds);
  const GemmRateTable want = Table(1);
  EXPECT_EQ(c.gemm_rates.base_flops, want.base_flops);
  EXPECT_EQ(c.gemm_rates.rows, want.rows);
  EXPECT_EQ(c.gemm_rates.depth, want.depth);
  EXPECT_EQ(c.gemm_rates.cols, want.cols);
  EXPECT_EQ(c.max_pool_bytes_per_s, 3e9);
  // No round measured the convolutions: the table stays empty (calibrate writes none).
  EXPECT_TRUE(c.conv_gemm_rates.empty());
  const CalibrationSpread s = SpreadOfCalibrationRounds(rounds);
  EXPECT_EQ(s.low.gemm_rates.base_flops, 50e9);
  EXPECT_EQ(s.high.gemm_rates.base_flops, 100e9);
}

TEST(SpreadOfCalibrationRounds, LowestAndHighestRoundPerFigure) {
  const std::vector<CalibrationRound> rounds = {QuietRound(0), DisturbedRound(0), QuietRound(1)};
  const CalibrationSpread s = SpreadOfCalibrationRounds(rounds);
  EXPECT_DOUBLE_EQ(s.low.all_reduce_all_s, 100e-6);
  EXPECT_DOUBLE_EQ(s.high.all_reduce_all_s, 200e-6);
  EXPECT_DOUBLE_EQ(s.low.single_gemm_flops, 44e9);
  EXPECT_DOUBLE_EQ(s.high.single_gemm_flops, 88e9);
}

}  // namespace
}  // namespace shardscope
