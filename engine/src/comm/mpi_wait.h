// Internal to the MPI backend: waiting for a request without busy-polling.
//
// Open MPI's blocking calls poll their progress engine on the CPU for as long as they wait,
// which starves other ranks and threads on the same cores. IdleWait tests the request while
// yielding the core for a short while (collectives inside a step mostly end then), and after
// that sleeps between tests with pauses growing to kMaxPause, so a rank that waits long costs
// almost no CPU. SHARDSCOPE_MPI_WAIT=spin keeps MPI_Wait (dedicated cores, lowest latency).
#pragma once

#include <mpi.h>

namespace shardscope::comm_internal {

// MPI_Wait's contract (an MPI error code), by the policy above.
int IdleWait(MPI_Request* request);

// Matched probe (MPI_Mprobe) by the same policy.
int IdleMprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status);

// True unless SHARDSCOPE_MPI_WAIT=spin.
bool IdleWaits();

}  // namespace shardscope::comm_internal
