#include "mpi_wait.h"

#include <sched.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace shardscope::comm_internal {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kYieldPhase = std::chrono::microseconds(1000);
constexpr long kFirstPause = 20'000, kMaxPause = 250'000;  // nanoseconds

// Calls `test` (true when done, or on an error in *err) until done: yielding, then sleeping.
template <typename Test>
int Poll(Test test) {
  int err = MPI_SUCCESS;
  if (test(&err)) return err;
  const Clock::time_point start = Clock::now();
  while (Clock::now() - start < kYieldPhase) {
    sched_yield();
    if (test(&err)) return err;
  }
  for (long pause = kFirstPause;; pause = pause < kMaxPause ? 2 * pause : kMaxPause) {
    const timespec t{0, pause};
    nanosleep(&t, nullptr);
    if (test(&err)) return err;
  }
}

}  // namespace

bool IdleWaits() {
  static const bool idle = [] {
    const char* policy = std::getenv("SHARDSCOPE_MPI_WAIT");
    return policy == nullptr || std::strcmp(policy, "spin") != 0;
  }();
  return idle;
}

int IdleWait(MPI_Request* request) {
  if (!IdleWaits()) return MPI_Wait(request, MPI_STATUS_IGNORE);
  return Poll([&](int* err) {
    int done = 0;
    *err = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    return done != 0 || *err != MPI_SUCCESS;
  });
}

int IdleMprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (!IdleWaits()) return MPI_Mprobe(source, tag, comm, message, status);
  return Poll([&](int* err) {
    int found = 0;
    *err = MPI_Improbe(source, tag, comm, &found, message, status);
    return found != 0 || *err != MPI_SUCCESS;
  });
}

}  // namespace shardscope::comm_internal
