#include "shardscope/base/format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace shardscope {
namespace {

std::string Printf(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

}  // namespace

std::string FormatBytes(double bytes) {
  const double b = bytes;
  const double a = std::fabs(b);
  constexpr double kKiB = 1024.0;
  if (a >= kKiB * kKiB * kKiB) return Printf("%.2f GiB", b / (kKiB * kKiB * kKiB));
  if (a >= kKiB * kKiB) return Printf("%.2f MiB", b / (kKiB * kKiB));
  if (a >= kKiB) return Printf("%.1f KiB", b / kKiB);
  return Printf("%.0f B", b);
}

std::string FormatSeconds(double seconds) {
  if (std::isnan(seconds)) return "-";
  const double a = std::fabs(seconds);
  if (a == 0) return "0";
  if (a < 1e-3) return Printf("%.1f us", seconds * 1e6);
  if (a < 1) return Printf("%.2f ms", seconds * 1e3);
  return Printf("%.3f s", seconds);
}

std::string FormatClock(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

}  // namespace shardscope
