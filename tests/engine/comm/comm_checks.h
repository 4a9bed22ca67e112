// Backend-independent checks of a Communicator, run by every rank of a group: the in-process
// tests run them on RunOnDevices(n, ...), the MPI tests on MpiWorld() under mpirun.
//
// Each check returns OK or a Status saying what differed on this rank. Every rank makes the
// same calls in the same order, so a check that fails on one rank returns early there only
// (the in-process world then aborts; an MPI run may wait until the test's timeout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/communicator.h"

namespace shardscope::comm_test {

// A value that depends on (seed, rank, i), with magnitudes spread over 2^-8 .. 2^8, so that
// float sums of them depend on the order of the additions.
float Value(int seed, int rank, int64_t i);
std::vector<float> Values(int seed, int rank, int64_t n);
// ((x_0 op x_1) op x_2) ... with x_k = Values(seed, k, n), the order both backends promise.
std::vector<float> ReferenceReduce(int seed, int size, int64_t n, ReduceOp op);
// Empty when a and b are bitwise equal; otherwise names the first differing element.
std::string BitwiseDiff(const std::vector<float>& a, const std::vector<float>& b);

Status CheckRankAndSize(Communicator& comm);
Status CheckAllReduce(Communicator& comm);
Status CheckAllGather(Communicator& comm);
Status CheckReduceScatter(Communicator& comm);
Status CheckAllToAll(Communicator& comm);
Status CheckAllToAllV(Communicator& comm);
Status CheckBroadcast(Communicator& comm);
Status CheckSendRecv(Communicator& comm);
Status CheckBarrier(Communicator& comm);
Status CheckSplit(Communicator& comm);
Status CheckGroupAlong(Communicator& comm);
Status CheckConcurrentGroups(Communicator& comm);
Status CheckDeterminism(Communicator& comm);
Status CheckLocalErrors(Communicator& comm);
Status CheckTrafficCounters(Communicator& comm);
Status CheckStartAllReduce(Communicator& comm);
Status CheckStartReduceScatter(Communicator& comm);

struct NamedCheck {
  const char* name;
  Status (*fn)(Communicator&);
};
// Every check above, in a fixed order.
const std::vector<NamedCheck>& AllChecks();

}  // namespace shardscope::comm_test
