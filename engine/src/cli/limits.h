// Internal: resource limits that commands check before they start work.
//
// A run that cannot fit (memory, threads, output) is refused with exit 2 naming the figure,
// instead of dying in bad_alloc or running for hours. All limits live in one table; the
// root option `--resource-limit NAME=VALUE` changes one (clamped to its range); --help lists them.
#pragma once

#include <cstdint>
#include <string>

#include "shardscope/status.h"

namespace shardscope::cli {

struct Limits {
  int64_t in_process_devices = 1024;   // device threads of one in-process run
  int64_t memory_percent = 90;         // in-process runs: of the memory available now
  int64_t mesh_ranks = 1 << 20;        // ranks `layout` prints and `redistribute` plans
  int64_t record_entries = 100000000;  // per-rank entries `plan --record` writes
};

const Limits& GetLimits();
void ResetLimits();  // back to the defaults
// Applies "NAME=VALUE"; kInvalidInput naming the known limits otherwise.
Status SetLimit(const std::string& assignment);
// The --help text: one line per limit with its default and range.
std::string LimitsHelp();
// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
int64_t AvailableMemoryBytes();

}  // namespace shardscope::cli
