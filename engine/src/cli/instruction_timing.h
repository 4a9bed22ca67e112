// Internal: the per-instruction timing `train` records for a sample of steps (SPMD runs; run
// file table instruction_span, docs/run-format.md): which steps, and gathering every rank's
// spans to rank 0's recorder.
#pragma once

#include <cstdint>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/recorder.h"

namespace shardscope::cli {

// At most this many steps are timed per run, and at most kMaxTimedRows spans per step (ranks
// beyond that are left out, highest first): the table stays small at thousands of ranks.
inline constexpr int64_t kMaxTimedSteps = 10;
inline constexpr int64_t kMaxTimedRows = 500000;

// Whether 1-based `step` is timed: steps 1 and 2 (the first pays for allocations) and every
// `every`-th, up to kMaxTimedSteps of them. `every` <= 0: none.
bool TimedStep(int64_t step, int64_t every);

// Every rank calls this after a timed step with its executor's spans; rank 0 (`recorder`
// non-null there) queues them. Errors returned are the communicator's; a recording failure
// is the recorder's (its return value).
Status GatherInstructionSpans(Communicator& comm, const DistProgram& program, int64_t step,
                              const std::vector<InstrSpan>& mine, Recorder* recorder,
                              Status* recorded);

}  // namespace shardscope::cli
