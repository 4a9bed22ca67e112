#include "shardscope/calibration.h"

#include <algorithm>

namespace shardscope {
namespace {

using Field = double CalibrationRound::*;

constexpr Field kMedianFields[] = {
    &CalibrationRound::all_reduce_pair_s, &CalibrationRound::all_reduce_all_s,
    &CalibrationRound::all_gather_all_s, &CalibrationRound::interleaved_s,
    &CalibrationRound::concurrent_gemm_flops};
constexpr Field kAllFields[] = {
    &CalibrationRound::all_reduce_pair_s,     &CalibrationRound::all_reduce_all_s,
    &CalibrationRound::all_gather_all_s,      &CalibrationRound::interleaved_s,
    &CalibrationRound::concurrent_gemm_flops, &CalibrationRound::single_gemm_flops};

// The measured (non-zero) values of `field` over `rounds`.
std::vector<double> Measured(std::span<const CalibrationRound> rounds, Field field) {
  std::vector<double> v;
  for (const CalibrationRound& r : rounds) {
    if (r.*field != 0) v.push_back(r.*field);
  }
  return v;
}

}  // namespace

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

CalibrationRound CombineCalibrationRounds(std::span<const CalibrationRound> rounds) {
  CalibrationRound c;
  for (Field f : kMedianFields) c.*f = MedianOf(Measured(rounds, f));
  const std::vector<double> single = Measured(rounds, &CalibrationRound::single_gemm_flops);
  c.single_gemm_flops = single.empty() ? 0 : *std::max_element(single.begin(), single.end());
  return c;
}

CalibrationSpread SpreadOfCalibrationRounds(std::span<const CalibrationRound> rounds) {
  CalibrationSpread s;
  for (Field f : kAllFields) {
    const std::vector<double> v = Measured(rounds, f);
    if (v.empty()) continue;
    const auto [low, high] = std::minmax_element(v.begin(), v.end());
    s.low.*f = *low;
    s.high.*f = *high;
  }
  return s;
}

}  // namespace shardscope
