// Internal: Ctrl-C (SIGINT) and SIGTERM during `train`. The first one asks the run to stop
// after the step in flight (the ranks agree on that step: run_control.h); a second one of
// the same kind exits at once, as if nobody had caught it.
#pragma once

namespace shardscope::cli {

// While alive, catches SIGINT and SIGTERM: the handler only records the signal (one atomic
// store; async-signal-safe) and is reset by the kernel as it runs (SA_RESETHAND), so the
// next such signal takes its default action. Restores the previous handlers when destroyed.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

// The first stop signal received since the process started (SIGINT, SIGTERM), or 0.
int PendingStopSignal();

// "SIGINT", "SIGTERM", else "a signal".
const char* StopSignalName(int signal);

}  // namespace shardscope::cli
