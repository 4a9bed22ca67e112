// The backend-independent half of Communicator: argument checks, traffic counters, the
// traffic formulas, GroupAlong, and launcher detection.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/communicator.h"

namespace shardscope {

struct Communicator::Counters {
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> received{0};
  std::atomic<int64_t> calls{0};
  std::shared_ptr<Counters> parent;  // traffic is also counted there
};

namespace {

constexpr int64_t kFloatBytes = static_cast<int64_t>(sizeof(float));

bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  auto pa = reinterpret_cast<uintptr_t>(a);
  auto pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

bool Overlap(std::span<const float> a, std::span<const float> b) {
  return Overlap(a.data(), a.size_bytes(), b.data(), b.size_bytes());
}

std::string Sz(size_t n) { return std::to_string(n); }

Status Bad(const char* op, const std::string& msg) {
  return Status::Invalid(std::string(op) + ": " + msg);
}

// Checks one side of AllToAllV and resolves empty displacements to packed ones.
Status CheckVSide(const char* op, const char* what, int size, std::span<const int64_t> counts,
                  std::span<const int64_t> displs, size_t buffer_size, bool forbid_overlap,
                  std::vector<int64_t>* resolved) {
  if (counts.size() != static_cast<size_t>(size)) {
    return Bad(op, std::string(what) + "_counts has " + Sz(counts.size()) +
                       " entries; the group has " + std::to_string(size) + " ranks");
  }
  if (!displs.empty() && displs.size() != static_cast<size_t>(size)) {
    return Bad(op, std::string(what) + "_displs has " + Sz(displs.size()) + " entries; expected " +
                       std::to_string(size) + " (or none for packed)");
  }
  resolved->resize(size);
  int64_t next = 0;
  for (int i = 0; i < size; ++i) {
    if (counts[i] < 0) {
      return Bad(op, std::string(what) + "_counts[" + std::to_string(i) +
                         "] = " + std::to_string(counts[i]) + " is negative");
    }
    int64_t d = displs.empty() ? next : displs[i];
    if (d < 0 || d > static_cast<int64_t>(buffer_size) ||
        counts[i] > static_cast<int64_t>(buffer_size) - d) {
      return Bad(op, std::string(what) + " block " + std::to_string(i) + " [" + std::to_string(d) +
                         ", +" + std::to_string(counts[i]) + ") lies outside the buffer of " +
                         Sz(buffer_size) + " elements");
    }
    (*resolved)[i] = d;
    next = d + counts[i];
  }
  if (forbid_overlap) {
    std::vector<std::pair<int64_t, int64_t>> blocks;
    for (int i = 0; i < size; ++i) {
      if (counts[i] > 0) blocks.emplace_back((*resolved)[i], (*resolved)[i] + counts[i]);
    }
    std::sort(blocks.begin(), blocks.end());
    for (size_t i = 1; i < blocks.size(); ++i) {
      if (blocks[i].first < blocks[i - 1].second) {
        return Bad(op, std::string(what) + " blocks overlap at element " +
                           std::to_string(blocks[i].first));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

int64_t BlockBegin(int64_t count, int parts, int index) {
  int64_t base = count / parts;
  int64_t extra = count % parts;
  return index * base + std::min<int64_t>(index, extra);
}

int64_t BlockSize(int64_t count, int parts, int index) {
  return count / parts + (index < count % parts ? 1 : 0);
}

CommTraffic AllReduceTraffic(int64_t count, int size, int rank) {
  if (size <= 1) return {};
  int64_t elems = count + (size - 2) * BlockSize(count, size, rank);
  return {elems * kFloatBytes, elems * kFloatBytes};
}

CommTraffic AllGatherTraffic(int64_t count_per_rank, int size) {
  int64_t bytes = (size - 1) * count_per_rank * kFloatBytes;
  return {bytes, bytes};
}

CommTraffic ReduceScatterTraffic(int64_t count_per_rank, int size) {
  return AllGatherTraffic(count_per_rank, size);
}

CommTraffic AllToAllTraffic(int64_t count_per_block, int size) {
  return AllGatherTraffic(count_per_block, size);
}

CommTraffic BroadcastTraffic(int64_t count, int size, int rank, int root) {
  if (size <= 1) return {};
  if (rank == root) return {(size - 1) * count * kFloatBytes, 0};
  return {0, count * kFloatBytes};
}

Communicator::Communicator() : counters_(std::make_shared<Counters>()) {}
Communicator::~Communicator() = default;

void Communicator::Count(CommTraffic traffic) {
  for (Counters* c = counters_.get(); c != nullptr; c = c->parent.get()) {
    c->sent.fetch_add(traffic.bytes_sent, std::memory_order_relaxed);
    c->received.fetch_add(traffic.bytes_received, std::memory_order_relaxed);
    c->calls.fetch_add(1, std::memory_order_relaxed);
  }
}

CommStats Communicator::stats() const {
  CommStats s;
  s.bytes_sent = counters_->sent.load(std::memory_order_relaxed);
  s.bytes_received = counters_->received.load(std::memory_order_relaxed);
  s.calls = counters_->calls.load(std::memory_order_relaxed);
  return s;
}

Status Communicator::RejectCollective(const char* /*op*/, Status error) { return error; }

Result<std::unique_ptr<Communicator>> Communicator::Split(int color, int key) {
  if (color < 0 && color != kNoColor) {
    return RejectCollective("Split", Bad("Split", "colour " + std::to_string(color) +
                                                      " is negative (use kNoColor to opt out)"));
  }
  auto result = DoSplit(color, key);
  if (!result.ok()) return result.status();
  if (result.value() != nullptr) result.value()->counters_->parent = counters_;
  Count({});
  return result;
}

namespace {
Status CheckAllReduce(const char* name, std::span<const float> in, std::span<float> out) {
  if (in.size() != out.size()) {
    return Bad(name, "in has " + Sz(in.size()) + " elements but out has " + Sz(out.size()));
  }
  if (in.data() != out.data() && Overlap(in, out)) {
    return Bad(name, "out overlaps in without being the same buffer");
  }
  return Status::Ok();
}

// A collective that completed when it was started.
class DoneOp final : public CommRequest::Op {
 public:
  bool Test() override { return true; }
  Status Wait() override { return Status::Ok(); }
};
}  // namespace

Status Communicator::AllReduce(std::span<const float> in, std::span<float> out, ReduceOp op) {
  const char* name = "AllReduce";
  Status st = CheckAllReduce(name, in, out);
  if (!st.ok()) return RejectCollective(name, st);
  SHARDSCOPE_RETURN_IF_ERROR(DoAllReduce(in, out, op));
  Count(AllReduceTraffic(static_cast<int64_t>(in.size()), size(), rank()));
  return Status::Ok();
}

Result<CommRequest> Communicator::StartAllReduce(std::span<const float> in, std::span<float> out,
                                                 ReduceOp op) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckAllReduce("StartAllReduce", in, out));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<CommRequest::Op> started,
                              DoStartAllReduce(in, out, op));
  const CommTraffic traffic = AllReduceTraffic(static_cast<int64_t>(in.size()), size(), rank());
  return CommRequest(std::move(started), [this, traffic] { Count(traffic); });
}

Result<std::unique_ptr<CommRequest::Op>> Communicator::DoStartAllReduce(std::span<const float> in,
                                                                        std::span<float> out,
                                                                        ReduceOp op) {
  SHARDSCOPE_RETURN_IF_ERROR(DoAllReduce(in, out, op));
  return std::unique_ptr<CommRequest::Op>(std::make_unique<DoneOp>());
}

CommRequest::CommRequest(std::unique_ptr<Op> op, std::function<void()> on_success)
    : op_(std::move(op)), on_success_(std::move(on_success)) {}

CommRequest& CommRequest::operator=(CommRequest&& other) noexcept {
  if (this != &other) {
    (void)Wait();
    op_ = std::move(other.op_);
    on_success_ = std::move(other.on_success_);
  }
  return *this;
}

CommRequest::~CommRequest() { (void)Wait(); }

// Wait() collects the status and counts the traffic.
bool CommRequest::Test() { return op_ == nullptr || op_->Test(); }

Status CommRequest::Wait() {
  if (op_ == nullptr) return Status::Ok();
  Status st = op_->Wait();
  op_.reset();
  if (st.ok() && on_success_) on_success_();
  on_success_ = nullptr;
  return st;
}

Status Communicator::AllGather(std::span<const float> in, std::span<float> out) {
  const char* name = "AllGather";
  if (out.size() != in.size() * size()) {
    return RejectCollective(name, Bad(name, "out has " + Sz(out.size()) + " elements; expected " +
                                                std::to_string(size()) + " x " + Sz(in.size())));
  }
  if (Overlap(in, out) && in.data() != out.data() + rank() * in.size()) {
    return RejectCollective(name, Bad(name, "in overlaps out without being out's own block"));
  }
  SHARDSCOPE_RETURN_IF_ERROR(DoAllGather(in, out));
  Count(AllGatherTraffic(static_cast<int64_t>(in.size()), size()));
  return Status::Ok();
}

namespace {
Status CheckReduceScatter(const char* name, int size, int rank, std::span<const float> in,
                          std::span<float> out) {
  if (in.size() != out.size() * size) {
    return Bad(name, "in has " + Sz(in.size()) + " elements; expected " + std::to_string(size) +
                         " x " + Sz(out.size()));
  }
  if (Overlap(in, out) && out.data() != in.data() + rank * out.size())
    return Bad(name, "out overlaps in without being in's own block");
  return Status::Ok();
}
}  // namespace

Status Communicator::ReduceScatter(std::span<const float> in, std::span<float> out, ReduceOp op) {
  const char* name = "ReduceScatter";
  Status st = CheckReduceScatter(name, size(), rank(), in, out);
  if (!st.ok()) return RejectCollective(name, st);
  SHARDSCOPE_RETURN_IF_ERROR(DoReduceScatter(in, out, op));
  Count(ReduceScatterTraffic(static_cast<int64_t>(out.size()), size()));
  return Status::Ok();
}

Result<CommRequest> Communicator::StartReduceScatter(std::span<const float> in,
                                                     std::span<float> out, ReduceOp op) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckReduceScatter("StartReduceScatter", size(), rank(), in, out));
  SHARDSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<CommRequest::Op> started,
                              DoStartReduceScatter(in, out, op));
  const CommTraffic traffic = ReduceScatterTraffic(static_cast<int64_t>(out.size()), size());
  return CommRequest(std::move(started), [this, traffic] { Count(traffic); });
}

Result<std::unique_ptr<CommRequest::Op>> Communicator::DoStartReduceScatter(
    std::span<const float> in, std::span<float> out, ReduceOp op) {
  SHARDSCOPE_RETURN_IF_ERROR(DoReduceScatter(in, out, op));
  return std::unique_ptr<CommRequest::Op>(std::make_unique<DoneOp>());
}

Status Communicator::AllToAll(std::span<const float> in, std::span<float> out) {
  const char* name = "AllToAll";
  if (in.size() != out.size() || in.size() % size() != 0) {
    return RejectCollective(
        name, Bad(name, "in and out need the same size, divisible by " + std::to_string(size()) +
                            "; got " + Sz(in.size()) + " and " + Sz(out.size())));
  }
  if (Overlap(in, out)) return RejectCollective(name, Bad(name, "out overlaps in"));
  SHARDSCOPE_RETURN_IF_ERROR(DoAllToAll(in, out));
  Count(AllToAllTraffic(static_cast<int64_t>(in.size() / size()), size()));
  return Status::Ok();
}

Status Communicator::AllToAllV(std::span<const float> in, std::span<const int64_t> send_counts,
                               std::span<const int64_t> send_displs, std::span<float> out,
                               std::span<const int64_t> recv_counts,
                               std::span<const int64_t> recv_displs) {
  const char* name = "AllToAllV";
  std::vector<int64_t> sd, rd;
  Status st = CheckVSide(name, "send", size(), send_counts, send_displs, in.size(), false, &sd);
  if (st.ok()) {
    st = CheckVSide(name, "recv", size(), recv_counts, recv_displs, out.size(), true, &rd);
  }
  if (st.ok() && Overlap(in, out)) st = Bad(name, "out overlaps in");
  if (!st.ok()) return RejectCollective(name, st);
  SHARDSCOPE_RETURN_IF_ERROR(DoAllToAllV(in, send_counts, sd, out, recv_counts, rd));
  CommTraffic t;
  for (int j = 0; j < size(); ++j) {
    if (j == rank()) continue;
    t.bytes_sent += send_counts[j] * kFloatBytes;
    t.bytes_received += recv_counts[j] * kFloatBytes;
  }
  Count(t);
  return Status::Ok();
}

Status Communicator::Broadcast(std::span<float> data, int root) {
  const char* name = "Broadcast";
  if (root < 0 || root >= size()) {
    return RejectCollective(
        name, Bad(name, "root " + std::to_string(root) + " is not a rank of a group of " +
                            std::to_string(size())));
  }
  SHARDSCOPE_RETURN_IF_ERROR(DoBroadcast(data, root));
  Count(BroadcastTraffic(static_cast<int64_t>(data.size()), size(), rank(), root));
  return Status::Ok();
}

namespace {
Status CheckPeer(const char* op, const char* what, int peer, int size, int tag) {
  if (peer < 0 || peer >= size) {
    return Bad(op, std::string(what) + " " + std::to_string(peer) +
                       " is not a rank of a group of " + std::to_string(size));
  }
  if (tag < 0 || tag > kMaxTag) {
    return Bad(op,
               "tag " + std::to_string(tag) + " is outside [0, " + std::to_string(kMaxTag) + "]");
  }
  return Status::Ok();
}
}  // namespace

Status Communicator::Send(std::span<const float> data, int dest, int tag) {
  return SendBytes(std::as_bytes(data), dest, tag);
}

Status Communicator::Recv(std::span<float> data, int src, int tag) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckPeer("Recv", "src", src, size(), tag));
  SHARDSCOPE_RETURN_IF_ERROR(DoRecvBytes(src, tag, static_cast<int64_t>(data.size_bytes()),
                                         std::as_writable_bytes(data), nullptr));
  Count({0, static_cast<int64_t>(data.size_bytes())});
  return Status::Ok();
}

Status Communicator::SendBytes(std::span<const std::byte> data, int dest, int tag) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckPeer("Send", "dest", dest, size(), tag));
  SHARDSCOPE_RETURN_IF_ERROR(DoSendBytes(data, dest, tag));
  Count({static_cast<int64_t>(data.size()), 0});
  return Status::Ok();
}

Result<std::vector<std::byte>> Communicator::RecvBytes(int src, int tag) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckPeer("RecvBytes", "src", src, size(), tag));
  std::vector<std::byte> message;
  SHARDSCOPE_RETURN_IF_ERROR(DoRecvBytes(src, tag, -1, {}, &message));
  Count({0, static_cast<int64_t>(message.size())});
  return message;
}

Status Communicator::Barrier() {
  SHARDSCOPE_RETURN_IF_ERROR(DoBarrier());
  Count({});
  return Status::Ok();
}

Result<std::unique_ptr<Communicator>> GroupAlong(Communicator& world,
                                                 const std::vector<std::vector<int>>& groups) {
  const int n = world.size();
  std::vector<int> group_of(n, -1), position(n, -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) {
      return Status::Invalid("GroupAlong: group " + std::to_string(g) + " is empty");
    }
    for (size_t i = 0; i < groups[g].size(); ++i) {
      int r = groups[g][i];
      if (r < 0 || r >= n) {
        return Status::Invalid("GroupAlong: group " + std::to_string(g) + " lists rank " +
                               std::to_string(r) + ", outside a world of " + std::to_string(n));
      }
      if (group_of[r] >= 0) {
        return Status::Invalid("GroupAlong: rank " + std::to_string(r) + " is in group " +
                               std::to_string(group_of[r]) + " and again in group " +
                               std::to_string(g));
      }
      group_of[r] = static_cast<int>(g);
      position[r] = static_cast<int>(i);
    }
  }
  for (int r = 0; r < n; ++r) {
    if (group_of[r] < 0) {
      return Status::Invalid("GroupAlong: rank " + std::to_string(r) + " is in no group");
    }
  }
  return world.Split(group_of[world.rank()], position[world.rank()]);
}

bool RunningUnderMpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && v[0] != '\0') return true;
  }
  return false;
}

}  // namespace shardscope
