#include "shardscope/cost/calibration.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <iterator>
#include <utility>

namespace shardscope {
namespace {

using Field = double CalibrationRound::*;
using Table = GemmRateTable CalibrationRound::*;

constexpr Field kMedianFields[] = {
    &CalibrationRound::all_reduce_pair_s,   &CalibrationRound::all_reduce_pairs_s,
    &CalibrationRound::all_reduce_halves_s, &CalibrationRound::all_reduce_all_s,
    &CalibrationRound::all_gather_all_s,    &CalibrationRound::interleaved_s,
    &CalibrationRound::interleaved_long_s,  &CalibrationRound::concurrent_gemm_flops};
constexpr Field kBestFields[] = {&CalibrationRound::single_gemm_flops,
                                 &CalibrationRound::max_pool_bytes_per_s,
                                 &CalibrationRound::memory_bandwidth};
constexpr Table kTables[] = {&CalibrationRound::gemm_rates, &CalibrationRound::conv_gemm_rates};

// The measured (non-zero) values of `field` over `rounds`.
std::vector<double> Measured(std::span<const CalibrationRound> rounds, Field field) {
  std::vector<double> v;
  for (const CalibrationRound& r : rounds) {
    if (r.*field != 0) v.push_back(r.*field);
  }
  return v;
}

double Highest(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// Every entry of the `table`s of the rounds that measured one: the highest.
GemmRateTable BestTable(std::span<const CalibrationRound> rounds, Table table) {
  GemmRateTable best;
  for (const CalibrationRound& r : rounds) {
    const GemmRateTable& t = r.*table;
    if (t.empty()) continue;
    if (best.empty()) {
      best = t;
      continue;
    }
    assert(t.base == best.base);
    best.base_flops = std::max(best.base_flops, t.base_flops);
    using Axis = std::vector<std::pair<int64_t, double>> GemmRateTable::*;
    for (Axis axis : {&GemmRateTable::rows, &GemmRateTable::depth, &GemmRateTable::cols}) {
      assert((t.*axis).size() == (best.*axis).size());
      for (size_t i = 0; i < (best.*axis).size(); ++i) {
        assert((t.*axis)[i].first == (best.*axis)[i].first);
        (best.*axis)[i].second = std::max((best.*axis)[i].second, (t.*axis)[i].second);
      }
    }
  }
  return best;
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
  for (Field f : kBestFields) c.*f = Highest(Measured(rounds, f));
  for (Table t : kTables) c.*t = BestTable(rounds, t);
  return c;
}

CalibrationSpread SpreadOfCalibrationRounds(std::span<const CalibrationRound> rounds) {
  CalibrationSpread s;
  std::vector<Field> fields(std::begin(kMedianFields), std::end(kMedianFields));
  fields.insert(fields.end(), std::begin(kBestFields), std::end(kBestFields));
  for (Field f : fields) {
    const std::vector<double> v = Measured(rounds, f);
    if (v.empty()) continue;
    const auto [low, high] = std::minmax_element(v.begin(), v.end());
    s.low.*f = *low;
    s.high.*f = *high;
  }
  for (Table t : kTables) {
    for (const CalibrationRound& r : rounds) {
      const double base = (r.*t).base_flops;
      if (base <= 0) continue;
      double& low = (s.low.*t).base_flops;
      double& high = (s.high.*t).base_flops;
      low = low > 0 ? std::min(low, base) : base;
      high = std::max(high, base);
    }
  }
  return s;
}

}  // namespace shardscope
