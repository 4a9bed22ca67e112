// The MPI backend (library shardscope_comm_mpi): one process per rank.
//
// Reductions are deterministic: MPI_Allreduce and MPI_Reduce_scatter may combine the ranks'
// values in any order (and OpenMPI's order depends on the message size and the algorithm it
// picks), so they are not used. Instead:
//   - AllReduce of n elements: small buffers (n <= kSmallAllReduce) use one MPI_Allgather of
//     the whole buffers and every rank reduces all of it; larger buffers use MPI_Alltoallv to
//     send block j of every rank to rank j (balanced blocks), rank j reduces its block, and
//     MPI_Allgatherv puts the blocks together (reduce-scatter + all-gather: the same volume as
//     a ring all-reduce, 2 latency terms).
//   - ReduceScatter: MPI_Alltoall, then every rank reduces the blocks it got.
// Both reduce with comm_internal::ReduceInOrder in rank order 0, 1, ..., size-1, exactly as
// the in-process backend does, so the two backends agree bitwise.
//
// StartAllReduce and StartReduceScatter run the same calls as their nonblocking forms
// (MpiAllReduce, MpiReduceScatter), advanced by the request's Test/Wait on the thread that
// owns MPI.
//
// Every wait is an idle wait (mpi_wait.h): nonblocking calls, then tests that yield and
// sleep, so a waiting rank leaves its core to the others instead of busy-polling.
//
// Send is buffered: the message is copied and sent with MPI_Isend; the request is completed
// later (checked on every call, waited for when the communicator is destroyed). So, as on the
// in-process backend, sends never wait for their receives.
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "mpi_wait.h"
#include "reduce_kernel.h"
#include "shardscope/communicator.h"

namespace shardscope {
namespace {

constexpr int64_t kSmallAllReduce = 1024;

Status MpiError(int err, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) {
    return Status::Internal(std::string(call) + " failed with MPI error " + std::to_string(err));
  }
  return Status::Internal(std::string(call) + " failed: " + std::string(text, len));
}

#define SHARDSCOPE_MPI(call)                               \
  do {                                                     \
    int _err = (call);                                     \
    if (_err != MPI_SUCCESS) return MpiError(_err, #call); \
  } while (0)

// Starts a nonblocking call that fills `wait_request`, then waits for it without spinning
// (mpi_wait.h): the blocking forms of these calls busy-poll the CPU while they wait.
#define SHARDSCOPE_MPI_IDLE(call)                           \
  do {                                                      \
    MPI_Request wait_request = MPI_REQUEST_NULL;            \
    SHARDSCOPE_MPI(call);                                   \
    SHARDSCOPE_MPI(comm_internal::IdleWait(&wait_request)); \
  } while (0)

Status ToInt(int64_t value, const char* op, int* out) {
  if (value < 0 || value > INT_MAX) {
    return Status::Invalid(std::string(op) + ": " + std::to_string(value) +
                           " elements exceed MPI's int count limit");
  }
  *out = static_cast<int>(value);
  return Status::Ok();
}

bool MpiFinalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

// One AllReduce as a chain of nonblocking MPI calls (see the top): started, then advanced by
// Test (never blocks) or Wait (idle wait). The blocking AllReduce is Start + Wait, so both
// forms give the same bits.
class MpiAllReduce final : public CommRequest::Op {
 public:
  // `scratch` null: the op owns its staging buffer (it may outlive the call that started it).
  MpiAllReduce(MPI_Comm comm, int rank, int size, std::span<const float> in, std::span<float> out,
               ReduceOp op, std::vector<float>* scratch)
      : comm_(comm),
        rank_(rank),
        size_(size),
        in_(in),
        out_(out),
        op_(op),
        scratch_(scratch != nullptr ? scratch : &own_scratch_) {}
  ~MpiAllReduce() override {
    if (request_ != MPI_REQUEST_NULL && !MpiFinalized()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

  Status Start() {
    const int p = size_;
    const int64_t n = static_cast<int64_t>(in_.size());
    if (p == 1 || n == 0) {
      if (n > 0 && in_.data() != out_.data())
        std::memcpy(out_.data(), in_.data(), n * sizeof(float));
      stage_ = Stage::kDone;
      return Status::Ok();
    }
    if (n <= kSmallAllReduce) {
      scratch_->resize(p * n);
      stage_ = Stage::kGather;
      SHARDSCOPE_MPI(MPI_Iallgather(in_.data(), static_cast<int>(n), MPI_FLOAT, scratch_->data(),
                                    static_cast<int>(n), MPI_FLOAT, comm_, &request_));
      return Status::Ok();
    }
    counts_.resize(p);
    displs_.resize(p);
    recv_counts_.resize(p);
    recv_displs_.resize(p);
    for (int j = 0; j < p; ++j) {
      SHARDSCOPE_RETURN_IF_ERROR(ToInt(BlockSize(n, p, j), "AllReduce", &counts_[j]));
      SHARDSCOPE_RETURN_IF_ERROR(ToInt(BlockBegin(n, p, j), "AllReduce", &displs_[j]));
    }
    const int mine = counts_[rank_];
    for (int k = 0; k < p; ++k) {
      recv_counts_[k] = mine;
      recv_displs_[k] = k * mine;
    }
    scratch_->resize(static_cast<size_t>(p) * mine);
    stage_ = Stage::kScatter;
    SHARDSCOPE_MPI(MPI_Ialltoallv(in_.data(), counts_.data(), displs_.data(), MPI_FLOAT,
                                  scratch_->data(), recv_counts_.data(), recv_displs_.data(),
                                  MPI_FLOAT, comm_, &request_));
    return Status::Ok();
  }

  bool Test() override {
    while (stage_ != Stage::kDone && error_.ok()) {
      int done = 0;
      const int err = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
      if (err != MPI_SUCCESS) error_ = MpiError(err, "MPI_Test");
      if (err != MPI_SUCCESS || !done) break;
      Advance();
    }
    return stage_ == Stage::kDone || !error_.ok();
  }

  Status Wait() override {
    while (stage_ != Stage::kDone && error_.ok()) {
      const int err = comm_internal::IdleWait(&request_);
      if (err != MPI_SUCCESS) error_ = MpiError(err, "MPI_Wait");
      if (err == MPI_SUCCESS) Advance();
    }
    return error_;
  }

 private:
  enum class Stage { kGather, kScatter, kCollect, kDone };

  // The current MPI call has completed: reduce, and start the next one if any.
  void Advance() {
    const int p = size_;
    std::vector<const float*> inputs(p);
    if (stage_ == Stage::kGather) {
      const int64_t n = static_cast<int64_t>(in_.size());
      for (int k = 0; k < p; ++k) inputs[k] = scratch_->data() + k * n;
      float* const outs[1] = {out_.data()};
      comm_internal::ReduceInOrder(op_, inputs, n, outs);
      stage_ = Stage::kDone;
    } else if (stage_ == Stage::kScatter) {
      const int mine = counts_[rank_];
      for (int k = 0; k < p; ++k) inputs[k] = scratch_->data() + static_cast<size_t>(k) * mine;
      float* const outs[1] = {out_.data() + displs_[rank_]};
      comm_internal::ReduceInOrder(op_, inputs, mine, outs);
      stage_ = Stage::kCollect;
      const int err = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out_.data(),
                                      counts_.data(), displs_.data(), MPI_FLOAT, comm_, &request_);
      if (err != MPI_SUCCESS) error_ = MpiError(err, "MPI_Iallgatherv");
    } else {
      stage_ = Stage::kDone;
    }
  }

  MPI_Comm comm_;
  int rank_, size_;
  std::span<const float> in_;
  std::span<float> out_;
  ReduceOp op_;
  std::vector<float> own_scratch_;
  std::vector<float>* scratch_;
  std::vector<int> counts_, displs_, recv_counts_, recv_displs_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  Stage stage_ = Stage::kDone;
  Status error_;
};

// One ReduceScatter: MPI_Ialltoall of the blocks, then this rank reduces the blocks it got
// in rank order. The blocking ReduceScatter is Start + Wait, so both give the same bits.
class MpiReduceScatter final : public CommRequest::Op {
 public:
  // `scratch` null: the op owns its staging buffer (it may outlive the call that started it).
  MpiReduceScatter(MPI_Comm comm, int size, std::span<const float> in, std::span<float> out,
                   ReduceOp op, std::vector<float>* scratch)
      : comm_(comm),
        size_(size),
        in_(in),
        out_(out),
        op_(op),
        scratch_(scratch != nullptr ? scratch : &own_scratch_) {}
  ~MpiReduceScatter() override {
    if (request_ != MPI_REQUEST_NULL && !MpiFinalized()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

  Status Start() {
    int m = 0;
    SHARDSCOPE_RETURN_IF_ERROR(ToInt(static_cast<int64_t>(in_.size()), "ReduceScatter", &m));
    m = static_cast<int>(out_.size());
    if (m == 0) return Status::Ok();
    if (size_ == 1) {
      if (in_.data() != out_.data()) std::memcpy(out_.data(), in_.data(), m * sizeof(float));
      return Status::Ok();
    }
    scratch_->resize(static_cast<size_t>(size_) * m);
    pending_ = true;
    SHARDSCOPE_MPI(
        MPI_Ialltoall(in_.data(), m, MPI_FLOAT, scratch_->data(), m, MPI_FLOAT, comm_, &request_));
    return Status::Ok();
  }

  bool Test() override {
    if (pending_ && error_.ok()) {
      int done = 0;
      const int err = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
      if (err != MPI_SUCCESS) error_ = MpiError(err, "MPI_Test");
      if (err == MPI_SUCCESS && done) Reduce();
    }
    return !pending_ || !error_.ok();
  }

  Status Wait() override {
    if (pending_ && error_.ok()) {
      const int err = comm_internal::IdleWait(&request_);
      if (err != MPI_SUCCESS) error_ = MpiError(err, "MPI_Wait");
      if (err == MPI_SUCCESS) Reduce();
    }
    return error_;
  }

 private:
  void Reduce() {
    const int64_t m = static_cast<int64_t>(out_.size());
    std::vector<const float*> inputs(size_);
    for (int k = 0; k < size_; ++k) inputs[k] = scratch_->data() + k * m;
    float* const outs[1] = {out_.data()};
    comm_internal::ReduceInOrder(op_, inputs, m, outs);
    pending_ = false;
  }

  MPI_Comm comm_;
  int size_;
  std::span<const float> in_;
  std::span<float> out_;
  ReduceOp op_;
  std::vector<float> own_scratch_;
  std::vector<float>* scratch_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool pending_ = false;  // the all-to-all is in flight
  Status error_;
};

class MpiComm final : public Communicator {
 public:
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiComm() override {
    if (MpiFinalized()) return;  // too late: MPI has already released everything
    for (auto& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }

 protected:
  Result<std::unique_ptr<Communicator>> DoSplit(int color, int key) override {
    Progress();
    MPI_Comm sub = MPI_COMM_NULL;
    SHARDSCOPE_MPI(MPI_Comm_split(comm_, color == kNoColor ? MPI_UNDEFINED : color, key, &sub));
    if (sub == MPI_COMM_NULL) return std::unique_ptr<Communicator>();
    return std::unique_ptr<Communicator>(std::make_unique<MpiComm>(sub));
  }

  Status DoAllReduce(std::span<const float> in, std::span<float> out, ReduceOp op) override {
    Progress();
    MpiAllReduce reduce(comm_, rank_, size_, in, out, op, &scratch_);
    SHARDSCOPE_RETURN_IF_ERROR(reduce.Start());
    return reduce.Wait();
  }

  Result<std::unique_ptr<CommRequest::Op>> DoStartAllReduce(std::span<const float> in,
                                                            std::span<float> out,
                                                            ReduceOp op) override {
    Progress();
    auto reduce = std::make_unique<MpiAllReduce>(comm_, rank_, size_, in, out, op, nullptr);
    SHARDSCOPE_RETURN_IF_ERROR(reduce->Start());
    return std::unique_ptr<CommRequest::Op>(std::move(reduce));
  }

  Status DoAllGather(std::span<const float> in, std::span<float> out) override {
    Progress();
    int m = 0;
    SHARDSCOPE_RETURN_IF_ERROR(ToInt(static_cast<int64_t>(out.size()), "AllGather", &m));
    m = static_cast<int>(in.size());
    if (!in.empty() && in.data() == out.data() + static_cast<size_t>(rank_) * m) {
      SHARDSCOPE_MPI_IDLE(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out.data(), m,
                                         MPI_FLOAT, comm_, &wait_request));
    } else {
      SHARDSCOPE_MPI_IDLE(
          MPI_Iallgather(in.data(), m, MPI_FLOAT, out.data(), m, MPI_FLOAT, comm_, &wait_request));
    }
    return Status::Ok();
  }

  Status DoReduceScatter(std::span<const float> in, std::span<float> out, ReduceOp op) override {
    Progress();
    MpiReduceScatter scatter(comm_, size_, in, out, op, &scratch_);
    SHARDSCOPE_RETURN_IF_ERROR(scatter.Start());
    return scatter.Wait();
  }

  Result<std::unique_ptr<CommRequest::Op>> DoStartReduceScatter(std::span<const float> in,
                                                                std::span<float> out,
                                                                ReduceOp op) override {
    Progress();
    auto scatter = std::make_unique<MpiReduceScatter>(comm_, size_, in, out, op, nullptr);
    SHARDSCOPE_RETURN_IF_ERROR(scatter->Start());
    return std::unique_ptr<CommRequest::Op>(std::move(scatter));
  }

  Status DoAllToAll(std::span<const float> in, std::span<float> out) override {
    Progress();
    int total = 0;
    SHARDSCOPE_RETURN_IF_ERROR(ToInt(static_cast<int64_t>(in.size()), "AllToAll", &total));
    const int m = total / size_;
    SHARDSCOPE_MPI_IDLE(
        MPI_Ialltoall(in.data(), m, MPI_FLOAT, out.data(), m, MPI_FLOAT, comm_, &wait_request));
    return Status::Ok();
  }

  Status DoAllToAllV(std::span<const float> in, std::span<const int64_t> send_counts,
                     std::span<const int64_t> send_displs, std::span<float> out,
                     std::span<const int64_t> recv_counts,
                     std::span<const int64_t> recv_displs) override {
    Progress();
    const int p = size_;
    // Every block lies inside its buffer (checked by the base), so when both buffer sizes fit
    // in an int, so do all counts and displacements.
    int unused = 0;
    SHARDSCOPE_RETURN_IF_ERROR(ToInt(static_cast<int64_t>(in.size()), "AllToAllV", &unused));
    SHARDSCOPE_RETURN_IF_ERROR(ToInt(static_cast<int64_t>(out.size()), "AllToAllV", &unused));
    std::vector<int> sc(p), sd(p), rc(p), rd(p);
    for (int j = 0; j < p; ++j) {
      sc[j] = static_cast<int>(send_counts[j]);
      sd[j] = static_cast<int>(send_displs[j]);
      rc[j] = static_cast<int>(recv_counts[j]);
      rd[j] = static_cast<int>(recv_displs[j]);
    }
    SHARDSCOPE_MPI_IDLE(MPI_Ialltoallv(in.data(), sc.data(), sd.data(), MPI_FLOAT, out.data(),
                                       rc.data(), rd.data(), MPI_FLOAT, comm_, &wait_request));
    return Status::Ok();
  }

  Status DoBroadcast(std::span<float> data, int root) override {
    Progress();
    int n = 0;
    SHARDSCOPE_RETURN_IF_ERROR(ToInt(static_cast<int64_t>(data.size()), "Broadcast", &n));
    SHARDSCOPE_MPI_IDLE(MPI_Ibcast(data.data(), n, MPI_FLOAT, root, comm_, &wait_request));
    return Status::Ok();
  }

  Status DoSendBytes(std::span<const std::byte> data, int dest, int tag) override {
    Progress();
    int n = 0;
    SHARDSCOPE_RETURN_IF_ERROR(ToInt(static_cast<int64_t>(data.size()), "Send (bytes)", &n));
    Pending& p = pending_.emplace_back();
    p.buffer.assign(data.begin(), data.end());
    int err = MPI_Isend(p.buffer.data(), n, MPI_BYTE, dest, tag, comm_, &p.request);
    if (err != MPI_SUCCESS) {
      pending_.pop_back();
      return MpiError(err, "MPI_Isend");
    }
    return Status::Ok();
  }

  Status DoRecvBytes(int src, int tag, int64_t expected, std::span<std::byte> data,
                     std::vector<std::byte>* any) override {
    Progress();
    MPI_Message message;
    MPI_Status status;
    SHARDSCOPE_MPI(comm_internal::IdleMprobe(src, tag, comm_, &message, &status));
    int count = 0;
    SHARDSCOPE_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
    if (expected >= 0 && count == expected) {
      SHARDSCOPE_MPI_IDLE(MPI_Imrecv(data.data(), count, MPI_BYTE, &message, &wait_request));
      return Status::Ok();
    }
    std::vector<std::byte> buffer(count);
    SHARDSCOPE_MPI_IDLE(MPI_Imrecv(buffer.data(), count, MPI_BYTE, &message, &wait_request));
    if (expected >= 0) {
      return Status::Invalid("Recv: the message from rank " + std::to_string(src) + " with tag " +
                             std::to_string(tag) + " has " + std::to_string(count) +
                             " bytes; expected " + std::to_string(expected));
    }
    *any = std::move(buffer);
    return Status::Ok();
  }

  Status DoBarrier() override {
    Progress();
    SHARDSCOPE_MPI_IDLE(MPI_Ibarrier(comm_, &wait_request));
    return Status::Ok();
  }

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::byte> buffer;
  };

  // Releases the buffers of completed sends.
  void Progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::list<Pending> pending_;  // list: buffers and requests never move
  std::vector<float> scratch_;
};

void FinalizeAtExit() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized && !MpiFinalized()) MPI_Finalize();
}

}  // namespace

Result<std::unique_ptr<Communicator>> MpiWorld() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (MpiFinalized()) return Status::Internal("MpiWorld: MPI has already been finalised");
  if (!initialized) {
    // What Open MPI's own blocking calls (MPI_Comm_split, Finalize) do while they wait:
    // yield the core rather than spin; the user's setting wins.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    int provided = 0;
    int err = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (err != MPI_SUCCESS) return MpiError(err, "MPI_Init_thread").WithContext("MpiWorld");
    std::atexit(FinalizeAtExit);
  }
  MPI_Comm dup = MPI_COMM_NULL;
  int err = MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  if (err != MPI_SUCCESS) return MpiError(err, "MPI_Comm_dup").WithContext("MpiWorld");
  return std::unique_ptr<Communicator>(std::make_unique<MpiComm>(dup));
}

void AbortMpiJob(int code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized && !MpiFinalized()) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace shardscope
