// Communicator: how the ranks of a run talk to each other (DESIGN.md §3).
//
// One interface, two implementations:
//   - in-process devices: one thread per device inside this process (InProcessWorld,
//     RunOnDevices). The default; runs anywhere. Library shardscope_comm.
//   - MPI (OpenMPI): one process per device, any number of hosts (MpiWorld). Library
//     shardscope_comm_mpi; shardscope_comm itself never touches MPI.
//
// A Communicator is one rank's handle on a group of `size()` ranks numbered 0..size()-1. The
// whole world is a Communicator; sub-groups (for example the ranks along some mesh axes, see
// DeviceMesh::Groups and GroupAlong below) come from Split().
//
// Calls. Collectives (Split, AllReduce, AllGather, ReduceScatter, AllToAll, AllToAllV,
// Broadcast, Barrier) must be called by every rank of the communicator, in the same order,
// with matching arguments (the same element counts, op and root everywhere; AllToAllV: what
// rank a sends to b is what b expects from a). Send/Recv are point-to-point and blocking:
// Send copies the message out (it is buffered, so a Send never waits for its Recv and two
// ranks may both send before they receive); Recv waits for the first not-yet-received
// message from `src` with `tag` (messages between one pair with one tag arrive in the order
// they were sent; different tags are matched independently).
//
// Data are float buffers: `std::span<const float> in` and `std::span<float> out`, sizes in
// elements. Unless a method says otherwise, `out` must not overlap `in`.
//
// Reduction order (determinism). Sums are computed element by element in the fixed order
// ((x_0 + x_1) + x_2) + ... + x_{size-1}, where x_k is rank k's value, on BOTH backends. So a
// result depends only on the inputs: repeated runs are bitwise equal, and the in-process and
// MPI backends give bitwise equal results for the same inputs. (The MPI backend does not use
// MPI_Allreduce / MPI_Reduce_scatter, whose order is unspecified; see AllReduce.)
//
// Errors are Status values; nothing throws. Arguments a rank can check alone (span sizes,
// ranks, roots, tags, counts) give kInvalidInput naming the method and the value. On the
// in-process backend a collective also cross-checks the arguments of all its ranks, and a
// collective fails on every rank of the group or on none (a rank whose own arguments are
// wrong still joins, so the others do not wait for it). On the MPI backend mismatched
// arguments across ranks are, as in MPI, undefined behaviour, and a rank that rejects its own
// arguments returns at once (the others may then wait forever): treat such errors as fatal.
// After a failure inside the transport (MPI error, aborted in-process world) the communicator
// should not be used again.
//
// Traffic counters. Every communicator counts the bytes this rank sent and received through
// it since it was created (CommStats). Traffic on a communicator made by Split / GroupAlong is
// also counted on the communicator it was split from, so the world's counters hold all the
// traffic of the rank. The counts are the logical payload of the direct (bandwidth-optimal)
// algorithm, the same on both backends whatever MPI does internally, so they can be checked
// against the planner's prediction; the *Traffic() functions below give them (4 bytes per
// float). A rank's own block of a collective is never counted (it does not travel); a
// point-to-point message is counted in full, even one a rank sends to itself. Only calls that
// succeed are counted.
//
// Thread safety. A communicator belongs to one rank (one thread): do not call it from two
// threads at once. Different communicators, including sub-communicators of the same rank and
// those of different in-process devices, may be used concurrently. stats() may be read from
// any thread. The MPI backend initialises MPI with MPI_THREAD_FUNNELED: call it from the
// thread that called MpiWorld() only.
//
// Typical use:
//
//   Status st = RunOnDevices(8, [&](Communicator& world) -> Status {
//     std::vector<std::vector<int>> groups = mesh.Groups({mp_axis});
//     SHARDSCOPE_ASSIGN_OR_RETURN(auto mp, GroupAlong(world, groups));
//     return mp->AllReduce(partial_sums);  // in place
//   });
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "shardscope/status.h"

namespace shardscope {

enum class ReduceOp { kSum, kMax };
// "sum" or "max".
const char* ReduceOpName(ReduceOp op);

// Split() colour meaning "this rank joins no group" (MPI_UNDEFINED).
inline constexpr int kNoColor = -1;
// Tags of Send/Recv are in [0, kMaxTag] (the smallest upper bound MPI guarantees).
inline constexpr int kMaxTag = 32767;

// Traffic of a communicator since it was created (bytes = elements * sizeof(float), or the
// message length for SendBytes/RecvBytes).
struct CommStats {
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  int64_t calls = 0;  // successful calls: collectives (including Barrier, Split), sends, receives
};

// The traffic one call adds to one rank's counters.
struct CommTraffic {
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  friend bool operator==(const CommTraffic&, const CommTraffic&) = default;
};

// Balanced blocks: element range of block `index` when `count` elements are cut into `parts`
// contiguous blocks, the first count % parts of them one element longer.
int64_t BlockBegin(int64_t count, int parts, int index);
int64_t BlockSize(int64_t count, int parts, int index);

// Counted traffic of each collective on a group of `size` ranks, for the rank `rank`.
//   AllReduce(count):         sent = received = count + (size-2) * BlockSize(count,size,rank)
//                             (reduce-scatter of balanced blocks then all-gather; equals the
//                             ring formula 2 (size-1)/size * count when size divides count)
//   AllGather(count per rank), ReduceScatter(count per rank out), AllToAll(count per block):
//                             sent = received = (size-1) * count
//   AllToAllV:                sent = sum of send_counts to other ranks, received = sum of
//                             recv_counts from other ranks
//   Broadcast(count):         root sends (size-1) * count; every other rank receives count
//   Barrier, Split:           nothing
// All results are in bytes (4 per float).
CommTraffic AllReduceTraffic(int64_t count, int size, int rank);
CommTraffic AllGatherTraffic(int64_t count_per_rank, int size);
CommTraffic ReduceScatterTraffic(int64_t count_per_rank, int size);
CommTraffic AllToAllTraffic(int64_t count_per_block, int size);
CommTraffic BroadcastTraffic(int64_t count, int size, int rank, int root);

class Communicator;

// A collective started without waiting (Communicator::StartAllReduce, StartReduceScatter). Its
// buffers stay in use until Test() returns true or Wait() returns: do not read, write or free them
// before. Like the communicator, a request belongs to one rank's thread; the communicator that
// started it must outlive it. Destroying a request that is not complete waits for it.
class CommRequest {
 public:
  // What a backend implements for one in-flight collective.
  class Op {
   public:
    virtual ~Op() = default;
    // Advances without blocking (MPI: the owning thread must call this or Wait for the
    // collective to progress); true once complete.
    virtual bool Test() = 0;
    // Blocks, without busy-polling, until complete; the collective's status.
    virtual Status Wait() = 0;
  };

  CommRequest() = default;  // complete already
  CommRequest(std::unique_ptr<Op> op, std::function<void()> on_success);
  CommRequest(CommRequest&&) noexcept = default;
  CommRequest& operator=(CommRequest&& other) noexcept;
  ~CommRequest();

  // True once the collective is complete (then Wait returns at once). Never blocks.
  bool Test();
  // Waits for completion; the collective's status (later calls return OK).
  Status Wait();
  bool pending() const { return op_ != nullptr; }

 private:
  std::unique_ptr<Op> op_;
  std::function<void()> on_success_;  // counts the traffic
};

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // This rank's index in the group, 0 <= rank() < size().
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "in-process" or "mpi".
  virtual const char* backend() const = 0;

  // Collective. Ranks passing the same `color` (>= 0) form a new communicator, ordered by
  // `key` and then by rank() (MPI_Comm_split). A rank passing kNoColor gets nullptr. The new
  // communicator is independent of this one (both may be used, also concurrently) and may
  // outlive it.
  Result<std::unique_ptr<Communicator>> Split(int color, int key);

  // out = reduction over all ranks of in (element-wise); in.size() == out.size(), the same on
  // every rank. `out` may be the same buffer as `in` (in place), but may not overlap it
  // otherwise. Sums use the fixed rank order (see top). Implemented on both backends as a
  // reduce-scatter of balanced blocks (each rank reduces one block in fixed order) followed
  // by an all-gather of the blocks (MPI: MPI_Alltoallv + MPI_Allgatherv), so it moves no more
  // data than a ring all-reduce. (MPI, up to 1024 elements: one MPI_Allgather of the whole
  // buffers and a local reduction, fewer latencies; same bits, same counted traffic.)
  Status AllReduce(std::span<const float> in, std::span<float> out, ReduceOp op = ReduceOp::kSum);
  Status AllReduce(std::span<float> data, ReduceOp op = ReduceOp::kSum) {
    return AllReduce(std::span<const float>(data), data, op);
  }

  // AllReduce without waiting: the same sums, to the bit (the same rank order per element),
  // complete once the request says so. Every rank starts the same sequence of them, in the
  // same order; blocking collectives may be called while they are in flight. Argument errors
  // are returned on this rank only (the others then fail or wait): treat them as fatal.
  // In-process: the last rank to start reduces for every rank, so the others never wait
  // until their Wait. MPI: nonblocking MPI calls advanced by Test/Wait (same thread, FUNNELED).
  Result<CommRequest> StartAllReduce(std::span<const float> in, std::span<float> out,
                                     ReduceOp op = ReduceOp::kSum);

  // out = the `in` blocks of ranks 0, 1, ..., size()-1, concatenated; out.size() ==
  // size() * in.size(), in.size() the same on every rank. `in` may be exactly out's block
  // rank() (in place); no other overlap.
  Status AllGather(std::span<const float> in, std::span<float> out);

  // `in` is size() equal blocks of out.size() elements; rank r gets the reduction over all
  // ranks of block r. in.size() == size() * out.size(). `out` may be exactly in's block
  // rank() (in place); no other overlap.
  Status ReduceScatter(std::span<const float> in, std::span<float> out,
                       ReduceOp op = ReduceOp::kSum);
  // ReduceScatter without waiting, as StartAllReduce is to AllReduce: the same bits, the
  // same rules (every rank starts the same sequence; in-process the last rank to start
  // reduces every rank's block; MPI: nonblocking calls advanced by Test/Wait).
  Result<CommRequest> StartReduceScatter(std::span<const float> in, std::span<float> out,
                                         ReduceOp op = ReduceOp::kSum);

  // `in` and `out` are size() equal blocks; block j of rank i's `in` becomes block i of rank
  // j's `out`. in.size() == out.size(), divisible by size(), the same on every rank.
  Status AllToAll(std::span<const float> in, std::span<float> out);

  // All-to-all with per-rank counts (elements). Rank i sends in[send_displs[j] ..
  // + send_counts[j]) to rank j, which puts it at out[recv_displs[i] .. + recv_counts[i]).
  // send_counts[j] on rank i must equal recv_counts[i] on rank j. All four arrays have
  // size() entries; a displacement array may be empty, meaning the blocks are packed in rank
  // order (displs = exclusive prefix sums of the counts). Counts and displacements are >= 0
  // and every block lies inside its buffer. Received blocks must not overlap each other.
  Status AllToAllV(std::span<const float> in, std::span<const int64_t> send_counts,
                   std::span<const int64_t> send_displs, std::span<float> out,
                   std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs);

  // Copies the root's `data` into `data` on every other rank; data.size() the same on every
  // rank, 0 <= root < size().
  Status Broadcast(std::span<float> data, int root);

  // Point-to-point, blocking, buffered (see top). 0 <= dest/src < size() (sending to oneself
  // is allowed), 0 <= tag <= kMaxTag. Recv needs the message to hold exactly data.size()
  // floats: a message of another length is consumed and reported as kInvalidInput.
  Status Send(std::span<const float> data, int dest, int tag);
  Status Recv(std::span<float> data, int src, int tag);
  // The same for raw bytes of any length (records, strings). Messages are untyped: a
  // SendBytes of 4n bytes may be received by Recv of n floats and vice versa.
  Status SendBytes(std::span<const std::byte> data, int dest, int tag);
  Result<std::vector<std::byte>> RecvBytes(int src, int tag);

  // Returns once every rank of the group has called Barrier.
  Status Barrier();

  // Traffic through this communicator and every communicator split from it (recursively).
  CommStats stats() const;

 protected:
  Communicator();

  // Backend hooks, called after the arguments passed the local checks (sizes, ranges,
  // overlap; AllToAllV displacements resolved). They must not count traffic (the base
  // does).
  virtual Result<std::unique_ptr<Communicator>> DoSplit(int color, int key) = 0;
  virtual Status DoAllReduce(std::span<const float> in, std::span<float> out, ReduceOp op) = 0;
  // Default: the blocking DoAllReduce, returning a completed op.
  virtual Result<std::unique_ptr<CommRequest::Op>> DoStartAllReduce(std::span<const float> in,
                                                                    std::span<float> out,
                                                                    ReduceOp op);
  virtual Status DoAllGather(std::span<const float> in, std::span<float> out) = 0;
  virtual Status DoReduceScatter(std::span<const float> in, std::span<float> out, ReduceOp op) = 0;
  // Default: the blocking DoReduceScatter, returning a completed op.
  virtual Result<std::unique_ptr<CommRequest::Op>> DoStartReduceScatter(std::span<const float> in,
                                                                        std::span<float> out,
                                                                        ReduceOp op);
  virtual Status DoAllToAll(std::span<const float> in, std::span<float> out) = 0;
  virtual Status DoAllToAllV(std::span<const float> in, std::span<const int64_t> send_counts,
                             std::span<const int64_t> send_displs, std::span<float> out,
                             std::span<const int64_t> recv_counts,
                             std::span<const int64_t> recv_displs) = 0;
  virtual Status DoBroadcast(std::span<float> data, int root) = 0;
  virtual Status DoSendBytes(std::span<const std::byte> data, int dest, int tag) = 0;
  // Receives into `data` when the message has exactly data.size() bytes; otherwise the
  // message is consumed and an error returned. `expected` < 0: any length, into `*any`.
  virtual Status DoRecvBytes(int src, int tag, int64_t expected, std::span<std::byte> data,
                             std::vector<std::byte>* any) = 0;
  virtual Status DoBarrier() = 0;
  // A collective whose local arguments were rejected with `error` (named `op`). The default
  // returns `error`; the in-process backend joins the collective so every rank fails.
  virtual Status RejectCollective(const char* op, Status error);

 private:
  struct Counters;
  void Count(CommTraffic traffic);
  std::shared_ptr<Counters> counters_;
};

// Splits `world` into the given groups of its ranks (collective over `world`): every rank of
// `world` must appear in exactly one group, and each group's member order becomes its rank
// order (member i gets rank i). `groups` must be the same on every rank, e.g.
// DeviceMesh::Groups(axes). Returns this rank's group. kInvalidInput (on every rank, before
// any communication) for an empty group, a rank out of range, missing or listed twice.
Result<std::unique_ptr<Communicator>> GroupAlong(Communicator& world,
                                                 const std::vector<std::vector<int>>& groups);

// ---------------------------------------------------------------------------------------
// In-process devices.

// `size` communicators (one per device, rank i = comm(i)) sharing their state in memory. Each
// is meant to be driven by its own thread; Run() / RunOnDevices() do that. Collectives meet
// at a barrier (mutex + condition variables, no spinning), then every rank computes its own
// part of the result straight from the other ranks' buffers (no staging copies), then meets
// again. Send copies the message into the receiver's mailbox.
//
// Failure handling: when a device fails, the world is aborted and every rank blocked in (or
// later entering) a call on any communicator of this world gets a kInternal status naming
// the first failure. A rank waiting for a rank that already returned from Run()'s function
// (a collective it never joined, a message it never sent) fails the same way instead of
// hanging.
class InProcessWorld {
 public:
  // 1 <= size (asserted).
  explicit InProcessWorld(int size);
  ~InProcessWorld();
  InProcessWorld(const InProcessWorld&) = delete;
  InProcessWorld& operator=(const InProcessWorld&) = delete;

  int size() const;
  Communicator& comm(int rank);

  // Runs fn(comm(r)) on one new thread per rank and joins them all. Returns OK when every
  // call returned OK; otherwise the first failure, prefixed with "device <r>". An exception
  // thrown by fn is caught and reported as kInternal. After a failure the world stays
  // aborted: further calls fail at once. May be called again after a success.
  Status Run(const std::function<Status(Communicator&)>& fn);

  // Aborts the world with `reason` (not OK): see the class comment. The first reason wins.
  void Abort(Status reason);

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

// Creates an InProcessWorld of `size` devices and runs fn on it (see InProcessWorld::Run).
// fn may return Status or void. size < 1 gives kInvalidInput.
Status RunOnDevices(int size, const std::function<Status(Communicator&)>& fn);
template <typename Fn>
requires std::is_void_v<std::invoke_result_t<Fn&, Communicator&>> Status RunOnDevices(int size,
                                                                                      Fn fn) {
  return RunOnDevices(size, std::function<Status(Communicator&)>([&fn](Communicator& comm) {
                        fn(comm);
                        return Status::Ok();
                      }));
}

// ---------------------------------------------------------------------------------------
// MPI (defined in shardscope_comm_mpi, except RunningUnderMpi).

// True when this process was started by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
// PMIX_RANK in the environment). Does not initialise MPI.
bool RunningUnderMpi();

// A communicator over MPI_COMM_WORLD (a duplicate of it, so its traffic never mixes with
// other MPI users). Initialises MPI with MPI_THREAD_FUNNELED if nobody has yet, and then
// finalises it at exit (std::atexit); if MPI was already initialised, the caller finalises.
// Destroy every MPI communicator before MPI_Finalize; destroying one waits until the messages
// sent through it have been received. kInternal if MPI cannot be initialised or was already
// finalised.
Result<std::unique_ptr<Communicator>> MpiWorld();

// Ends every process of the MPI job with exit code `code` (MPI_Abort): the last resort when
// this rank fails alone and the others would wait for it forever. Returns only when MPI is
// not initialised (or already finalised).
void AbortMpiJob(int code);

}  // namespace shardscope
