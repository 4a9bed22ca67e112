// Calibration rounds: how `shardscope calibrate` turns repeated measurements on a shared
// machine into one figure per cost-model parameter.
//
// A round measures every load-sensitive figure once, back to back (the collectives, the GEMM
// rate of all device threads together, one thread's GEMM rate; every few rounds also the
// kernels' rates by shape and the memory bandwidth). Calibrate spreads its rounds
// evenly over a few seconds, so that a disturbance from another process (a build, a burst of
// another job: on a 2-core VM it moves the hand-off, one thread's GEMM and the kernels' rates
// by up to 2x for a second or so) falls into a few rounds of every figure instead of every
// measurement of one figure, and CombineCalibrationRounds keeps each figure's undisturbed
// value.
//
// Pure arithmetic; thread-safe.
#pragma once

#include <span>
#include <vector>

#include "shardscope/cost/cost_model.h"

namespace shardscope {

// The figures of one round; a figure not measured (0) is left out of its combination.
struct CalibrationRound {
  double all_reduce_pair_s = 0;      // 4-byte all-reduce on 2 ranks (median of the round's repeats)
  double all_reduce_pairs_s = 0;     // 4-byte all-reduce in pairs, every rank at once
  double all_reduce_halves_s = 0;    // the same in two halves of the ranks
  double all_reduce_all_s = 0;       // 4-byte all-reduce on every rank (the group sync in-process)
  double all_gather_all_s = 0;       // all-gather of the bandwidth buffer on every rank
  double interleaved_s = 0;          // 4-byte all-reduce on every rank arriving from computation
  double interleaved_long_s = 0;     // the same after a long phase of computation
  double concurrent_gemm_flops = 0;  // GEMM flop/s all device threads reach together
  double single_gemm_flops = 0;      // one thread's GEMM flop/s
  // One thread's kernels (CostModel's fields of the same names); empty / 0 in rounds that do
  // not measure them. Every table measured must have the same shapes.
  GemmRateTable gemm_rates, conv_gemm_rates;
  double max_pool_bytes_per_s = 0;  // CostModel::kernel_rates["MaxPool2D"]
  double memory_bandwidth = 0;
};

// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
double MedianOf(std::vector<double> values);

// One figure per field over `rounds`:
//  - the collectives and the concurrent GEMM rate: the median over the rounds. A training
//    step pays them at whatever load it runs, so the typical round is wanted, not the best:
//    the median ignores disturbed rounds as long as they are fewer than half, in either
//    direction.
//  - one thread's rates (the GEMM, every entry of the kernels' tables, MaxPool2D, the memory
//    bandwidth): the highest. They are the thread's undisturbed speed (the unit in which
//    compute slots are counted: the searches price a kernel at it, then divide by the
//    slots); load only ever slows a round down.
// Fields with no measured round (all 0, empty tables) stay 0 / empty.
CalibrationRound CombineCalibrationRounds(std::span<const CalibrationRound> rounds);

// The lowest and the highest value of each number over `rounds` (the spread calibrate
// reports); of the tables, base_flops only.
struct CalibrationSpread {
  CalibrationRound low, high;
};
CalibrationSpread SpreadOfCalibrationRounds(std::span<const CalibrationRound> rounds);

}  // namespace shardscope
