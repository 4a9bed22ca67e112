// What one rank holds and does, from a run file: `shardscope inspect RUN --rank R`.
//
// Memory (the last recorded step's rank_step: parameters, gradients, optimizer states,
// activations, peak), the parameters with their layouts (SPMD) or the operators placed on it
// (place()), its traffic summed over the steps, and, when train timed steps
// (instruction_span), compute against communication per operator kind and the slowest
// instructions of its last timed step.
#pragma once

#include <cstdint>
#include <string>

#include "shardscope/store/reader.h"
#include "shardscope/store/status.h"

namespace shardscope::store {

// kNotFound when `rank` is not one of the run's devices. Text ends with a newline.
Result<std::string> FormatRankSummary(const RunReader& reader, int64_t rank, bool json = false);

}  // namespace shardscope::store
