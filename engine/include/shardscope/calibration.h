// Calibration rounds: how `shardscope calibrate` turns repeated measurements on a shared
// machine into one figure per cost-model parameter.
//
// A round measures every load-sensitive figure once, back to back (the collectives, the GEMM
// rate of all device threads together, one thread's GEMM rate). Calibrate spreads its rounds
// evenly over a few seconds, so that a disturbance from another process (a build, a burst of
// another job: on a 2-core VM it doubles the collectives' figures for up to about a second)
// falls into a few rounds of every figure instead of every measurement of one figure, and
// CombineCalibrationRounds keeps each figure's undisturbed value.
//
// Pure arithmetic; thread-safe.
#pragma once

#include <span>
#include <vector>

namespace shardscope {

// The figures of one round; a figure not measured (0) is left out of its combination.
struct CalibrationRound {
  double all_reduce_pair_s = 0;      // 4-byte all-reduce on 2 ranks (median of the round's repeats)
  double all_reduce_all_s = 0;       // 4-byte all-reduce on every rank (the group sync in-process)
  double all_gather_all_s = 0;       // all-gather of the bandwidth buffer on every rank
  double interleaved_s = 0;          // 4-byte all-reduce on every rank arriving from computation
  double concurrent_gemm_flops = 0;  // GEMM flop/s all device threads reach together
  double single_gemm_flops = 0;      // one thread's GEMM flop/s
};

// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
double MedianOf(std::vector<double> values);

// One figure per field over `rounds`:
//  - the collectives and the concurrent GEMM rate: the median over the rounds. A training
//    step pays them at whatever load it runs, so the typical round is wanted, not the best:
//    the median ignores disturbed rounds as long as they are fewer than half, in either
//    direction.
//  - one thread's GEMM rate: the highest. It is the thread's undisturbed speed (the unit in
//    which compute slots are counted); load only ever slows a round down.
// Fields with no measured round (all 0) stay 0.
CalibrationRound CombineCalibrationRounds(std::span<const CalibrationRound> rounds);

// The lowest and the highest value of each field over `rounds` (the spread calibrate reports).
struct CalibrationSpread {
  CalibrationRound low, high;
};
CalibrationSpread SpreadOfCalibrationRounds(std::span<const CalibrationRound> rounds);

}  // namespace shardscope
