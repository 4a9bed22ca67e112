// The store reports failure with the one Status/Result of shardscope_base. Every message
// names the run file and the reason ("runs/a.db: not a Shardscope run file (...)").
// No exception leaves the library.
#pragma once

#include "shardscope/base/status.h"

namespace shardscope::store {

using ::shardscope::Result;
using ::shardscope::Status;
using ::shardscope::StatusCode;

// The input was at fault (exit code 2): kNotFound, kNotARunFile, kCorrupt, kTooNew,
// kInvalidInput. Anything else is a failure of the run or the machine (exit code 1).
bool IsBadInput(StatusCode code);

}  // namespace shardscope::store
