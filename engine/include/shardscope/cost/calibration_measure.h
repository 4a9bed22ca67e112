// What `shardscope calibrate` measures: collective latency and overhead, link bandwidth,
// GEMM and kernel rates and memory bandwidth, in rounds spread over a few seconds
// (calibration.h combines them), and the cost model fitted to the combined round.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "shardscope/cost/calibration.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/status.h"

namespace shardscope {

class Communicator;

// Bytes every rank holds after the bandwidth measurement's all-gather.
inline constexpr size_t kCalibrationGatherBytes = 4u << 20;

struct CalibrationOptions {
  int devices = 8;        // in-process devices (ignored when given an MPI world)
  int repeats = 30;       // repetitions of each small collective within a round
  int trials = 15;        // rounds
  double duration = 5.0;  // seconds the rounds are spread over
};

// Every round's figures (only rank 0's, under MPI, are complete: one thread's rates are
// measured on rank 0 alone, after the rounds) and the seconds they took.
struct CalibrationRun {
  std::vector<CalibrationRound> rounds;
  double seconds = 0;
};

// Measures o.trials rounds evenly spread over o.duration seconds: between o.devices
// in-process devices, or between the ranks of `mpi_world` when not null (every rank calls).
// `on_round(i, seconds since the start, round)` is called on every rank as round i ends.
Result<CalibrationRun> MeasureCalibrationRounds(
    const CalibrationOptions& o, Communicator* mpi_world,
    const std::function<void(int, double, const CalibrationRound&)>& on_round = {});

// The cost model fitted to `m` (the combined rounds) measured between `devices` devices: the
// alpha-beta terms always, the in-process terms (compute slots, group syncs, long-phase
// hand-off) when `in_process`.
CostModel FitCalibratedCostModel(const CalibrationRound& m, int devices, bool in_process);

}  // namespace shardscope
