#include "shardscope/viewer/axis.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscope::viewer {

std::vector<double> AxisTicks(double span, int count) {
  std::vector<double> ticks;
  if (!(span > 0) || !std::isfinite(span) || count < 1) return ticks;
  const double raw = span / count;
  double spacing = 0;
  if (raw > 0 && std::isfinite(raw)) {
    const double power = std::pow(10, std::floor(std::log10(raw)));
    spacing = 10 * power;
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * power >= raw) {
        spacing = m * power;
        break;
      }
    }
  }
  // A span near the smallest double rounds its spacing to 0 (or one near the largest to inf).
  if (!(spacing > 0) || !std::isfinite(spacing)) return {0.0};
  const int64_t last = std::min<int64_t>(2 * static_cast<int64_t>(count),
                                         static_cast<int64_t>(std::floor(span * 1.0001 / spacing)));
  for (int64_t i = 0; i <= last; ++i) ticks.push_back(static_cast<double>(i) * spacing);
  return ticks;
}

double AxisScale(double length, double span) {
  if (!(span > 0) || !std::isfinite(span)) return 0;
  const double scale = length / span;
  return std::isfinite(scale) ? scale : 0;
}

AxisRange ChartRange(double lo, double hi, double headroom) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return {};
  constexpr double kLargest = std::numeric_limits<double>::max() / 4;
  lo = std::clamp(lo, -kLargest, kLargest);
  hi = std::clamp(hi, -kLargest, kLargest);
  const double width = hi - lo;
  if (width > 0) return {lo, hi + width * std::clamp(headroom, 0.0, 1.0)};
  // One value: a unit (or 1 %) around it, whichever is wider, so the axis has a width.
  const double pad = std::max(1.0, std::fabs(lo) * 0.01);
  return {lo - (lo < 0 ? pad : 0), hi + pad};
}

AxisRange DataRange(double lo, double hi, double margin) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return {};
  double pad = std::isfinite(hi - lo) ? (hi - lo) * std::clamp(margin, 0.0, 1.0) : 0;
  if (hi == lo) pad = lo != 0 ? std::fabs(lo) * 0.05 : 1;  // one value: centred
  return ChartRange(lo - pad, hi + pad, 0);
}

ByteUnit ByteUnitFor(double max_bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  ByteUnit unit;
  if (!std::isfinite(max_bytes)) return unit;
  for (int i = 1; i < 5 && std::fabs(max_bytes) >= unit.divisor * 1024; ++i) {
    unit.divisor *= 1024;
    unit.name = kNames[i];
  }
  return unit;
}

}  // namespace shardscope::viewer
