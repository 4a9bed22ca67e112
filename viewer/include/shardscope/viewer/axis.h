// Value axes drawn from run-file figures, which may be zero, negative, NaN or infinite.
//
// Every scale and tick computation of the viewer and the GUI goes through these: they never
// divide by a zero span and never loop on a zero tick spacing; a span that is not a positive
// finite number draws no ticks and scales everything to the axis origin.
#pragma once

#include <vector>

namespace shardscope::viewer {

// About `count` round ticks 0, d, 2d, ... <= span (d = 1, 2 or 5 times a power of ten); at
// most 2·count + 1 of them; none unless span is positive and finite.
std::vector<double> AxisTicks(double span, int count);

// length / span for a positive finite span (and a finite result), else 0.
double AxisScale(double length, double span);

// A chart range [lo, hi] with both finite and hi > lo, from the finite data range [lo, hi]
// (padded by `headroom` of its width above); {0, 1} when nothing finite is given.
struct AxisRange {
  double lo = 0, hi = 1;
};
AxisRange ChartRange(double lo, double hi, double headroom = 0.05);
// The data range [lo, hi] padded by `margin` of its width on both sides, so a curve that
// stays far from zero fills the chart (loss, step time); ChartRange's guarantees hold.
AxisRange DataRange(double lo, double hi, double margin = 0.05);

// The binary unit (base::FormatBytes's family) values up to `max_bytes` read best in:
// {1, "B"}, {1024, "KiB"}, {1024², "MiB"}, ... up to TiB; {1, "B"} for what is not finite.
struct ByteUnit {
  double divisor = 1;
  const char* name = "B";
};
ByteUnit ByteUnitFor(double max_bytes);

}  // namespace shardscope::viewer
