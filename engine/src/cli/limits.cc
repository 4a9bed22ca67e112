#include "cli/limits.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace shardscope::cli {
namespace {

struct LimitDef {
  const char* name;
  int64_t Limits::*field;
  int64_t min, max;
  const char* what;
};

constexpr LimitDef kLimits[] = {
    {"in_process_devices", &Limits::in_process_devices, 1, 65536,
     "device threads of one in-process `train`"},
    {"memory_percent", &Limits::memory_percent, 1, 1000,
     "planned memory of an in-process `train`, in % of MemAvailable"},
    {"mesh_ranks", &Limits::mesh_ranks, 1, int64_t{1} << 31,
     "ranks `layout` prints and `redistribute` plans"},
    {"record_entries", &Limits::record_entries, 1000, int64_t{1} << 40,
     "per-rank entries (bytes, groups, transfers) `plan --record` writes"},
};

Limits& MutableLimits() {
  static Limits limits;
  return limits;
}

}  // namespace

const Limits& GetLimits() { return MutableLimits(); }

void ResetLimits() { MutableLimits() = Limits{}; }

Status SetLimit(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string name = assignment.substr(0, eq);
  std::string known;
  for (const LimitDef& d : kLimits) {
    known += std::string(known.empty() ? "" : ", ") + d.name;
    if (name != d.name) continue;
    const std::string text = eq == std::string::npos ? "" : assignment.substr(eq + 1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return Status::Invalid("--resource-limit " + assignment + ": the value must be an integer");
    }
    MutableLimits().*d.field = std::clamp(v, d.min, d.max);
    return Status::Ok();
  }
  return Status::Invalid("--resource-limit " + assignment + ": unknown limit '" + name + "' (" +
                         known + ")");
}

std::string LimitsHelp() {
  std::ostringstream out;
  out << "Limits (checked before work starts; exceeding one exits 2 naming it; change with\n"
         "--resource-limit NAME=VALUE, clamped to the range):\n";
  const Limits defaults;
  for (const LimitDef& d : kLimits) {
    out << "  " << d.name << " = " << defaults.*d.field << " [" << d.min << ", " << d.max
        << "]: " << d.what << "\n";
  }
  return out.str();
}

int64_t AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  long long kb = 0;
  while (std::getline(in, line)) {
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kb) == 1) return kb * 1024;
  }
  return 0;
}

}  // namespace shardscope::cli
