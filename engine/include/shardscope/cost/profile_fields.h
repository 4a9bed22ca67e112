// Cost profile fields, named once: the table that reads, writes, validates and documents
// every field of a cost profile (`shardscope calibrate --out FILE`, `--profile FILE`).
// A field is either part of the portable core or of the optional in-process term.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "shardscope/cost/cost_model.h"

namespace shardscope {

enum class ProfileFieldKind {
  kSeconds,    // a number of seconds >= 0
  kRate,       // a positive number (bytes/s, flop/s)
  kCount,      // a number >= 0 (compute_slots)
  kAxisRates,  // {"axis": positive number}
  kAxisTimes,  // {"axis": seconds >= 0}
  kKindRates,  // {"OpName": positive bytes/s}
  kGemmTable,  // GemmRateTable: {"base", "base_flops", "rows", "depth", "cols"}
  kFlag,       // true/false
};

struct ProfileField {
  const char* name;
  ProfileFieldKind kind;
  bool in_process;  // part of InProcessOverhead (predicts in-process runs on this machine)
  const char* doc;  // one line: what it means
  // The member it reads and writes (exactly one is set, by kind).
  double* (*number)(CostModel&) = nullptr;
  std::map<std::string, double>* (*map)(CostModel&) = nullptr;
  GemmRateTable* (*table)(CostModel&) = nullptr;
  bool* (*flag)(CostModel&) = nullptr;
  bool omit_zero = false;  // left out of a written profile at 0 (added after the first ones)
};

// Every field, in the order profiles are written.
const std::vector<ProfileField>& CostProfileFields();

// "name: doc" per line, core fields first, for --help and the docs.
std::string CostProfileFieldsHelp();

}  // namespace shardscope
