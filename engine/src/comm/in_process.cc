// In-process devices: one thread per rank, state shared in memory.
//
// A group (the world or a Split result) owns one mutex, one condition variable for its
// collectives and one mailbox (with its condition variable) per member. A collective is:
//   1. post this rank's arguments in its slot, wait at barrier A;
//   2. with the lock released, cross-check every rank's arguments (all ranks reach the same
//      verdict) and compute this rank's part of the result straight from the other ranks'
//      buffers — rank r reduces block r of an all-reduce in fixed rank order and writes it
//      into every rank's output;
//   3. wait at barrier B, after which nobody reads the other ranks' buffers any more.
// Waiting also ends when the world is aborted or when a rank that never joined has already
// returned from InProcessWorld::Run's function (which would otherwise hang forever).
// StartAllReduce and StartReduceScatter post their buffers in a numbered round of the group
// and return; the last rank to post reduces for every rank (each element in rank order, as
// the blocking calls do), so the other ranks compute on until they wait.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "reduce_kernel.h"
#include "shardscope/communicator.h"

namespace shardscope {
namespace {

struct Slot {
  std::string_view op;  // the collective this rank called
  std::string error;    // non-empty: this rank rejected its own arguments
  const float* in = nullptr;
  size_t in_n = 0;
  float* out = nullptr;
  size_t out_n = 0;
  ReduceOp reduce = ReduceOp::kSum;
  int root = 0;
  const int64_t* send_counts = nullptr;
  const int64_t* send_displs = nullptr;
  const int64_t* recv_counts = nullptr;
  const int64_t* recv_displs = nullptr;
  int color = kNoColor;
  int key = 0;
};

// The slot of a collective that reads `in` and writes `out`.
Slot BufferSlot(std::string_view op, std::span<const float> in, std::span<float> out,
                ReduceOp reduce = ReduceOp::kSum) {
  Slot slot;
  slot.op = op;
  slot.in = in.data();
  slot.in_n = in.size();
  slot.out = out.data();
  slot.out_n = out.size();
  slot.reduce = reduce;
  return slot;
}

struct Message {
  int src;
  int tag;
  std::vector<std::byte> data;
};

struct WorldState;

// One StartAllReduce or StartReduceScatter call of every member (the n-th call of each rank
// meets in round n).
struct AsyncRound {
  std::vector<Slot> slots;
  int arrived = 0;
  int released = 0;  // members whose Wait returned
  bool done = false;
  Status result;
};

struct Group {
  Group(std::shared_ptr<WorldState> w, std::vector<int> m)
      : world(std::move(w)),
        members(std::move(m)),
        slots(members.size()),
        inbox(members.size()),
        inbox_cv(members.size()) {}

  int size() const { return static_cast<int>(members.size()); }

  std::shared_ptr<WorldState> world;
  const std::vector<int> members;  // world rank of each member

  std::mutex mu;
  std::condition_variable cv;  // barrier
  int arrived = 0;
  uint64_t generation = 0;
  std::vector<Slot> slots;
  std::map<int, std::shared_ptr<Group>> split_groups;  // colour -> group, during a Split
  std::map<uint64_t, AsyncRound> rounds;               // StartAllReduce rounds in flight
  std::vector<std::deque<Message>> inbox;
  std::vector<std::condition_variable> inbox_cv;
};

struct WorldState {
  explicit WorldState(int n) : size(n), finished(new std::atomic<bool>[n]) {
    for (int i = 0; i < n; ++i) finished[i] = false;
  }

  std::shared_ptr<Group> NewGroup(const std::shared_ptr<WorldState>& self,
                                  std::vector<int> members) {
    auto g = std::make_shared<Group>(self, std::move(members));
    std::lock_guard<std::mutex> lk(mu);
    std::erase_if(groups, [](const std::weak_ptr<Group>& w) { return w.expired(); });
    groups.push_back(g);
    return g;
  }

  // Wakes every waiter of every group. Must not be called with a group mutex held.
  void WakeAll() {
    std::vector<std::shared_ptr<Group>> live;
    {
      std::lock_guard<std::mutex> lk(mu);
      for (auto& w : groups) {
        if (auto g = w.lock()) live.push_back(std::move(g));
      }
    }
    for (auto& g : live) {
      std::lock_guard<std::mutex> lk(g->mu);
      g->cv.notify_all();
      for (auto& c : g->inbox_cv) c.notify_all();
    }
  }

  void Abort(Status reason) {
    {
      std::lock_guard<std::mutex> lk(mu);
      if (aborted.load()) return;
      abort_status = std::move(reason);
      aborted.store(true);
    }
    WakeAll();
  }

  Status AbortedStatus() {
    std::lock_guard<std::mutex> lk(mu);
    return Status::Internal("in-process world aborted: " + abort_status.message());
  }

  void MarkFinished(int rank) {
    finished[rank].store(true);
    WakeAll();
  }

  const int size;
  std::atomic<bool> aborted{false};
  std::unique_ptr<std::atomic<bool>[]> finished;  // rank returned from Run's function
  std::mutex mu;                                  // guards abort_status and groups
  Status abort_status;
  std::vector<std::weak_ptr<Group>> groups;
};

class InProcessComm final : public Communicator {
 public:
  InProcessComm(std::shared_ptr<Group> group, int rank) : g_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return g_->size(); }
  const char* backend() const override { return "in-process"; }

 protected:
  Result<std::unique_ptr<Communicator>> DoSplit(int color, int key) override;
  Status DoAllReduce(std::span<const float> in, std::span<float> out, ReduceOp op) override;
  Result<std::unique_ptr<CommRequest::Op>> DoStartAllReduce(std::span<const float> in,
                                                            std::span<float> out,
                                                            ReduceOp op) override;
  Result<std::unique_ptr<CommRequest::Op>> DoStartReduceScatter(std::span<const float> in,
                                                                std::span<float> out,
                                                                ReduceOp op) override;
  Status DoAllGather(std::span<const float> in, std::span<float> out) override;
  Status DoReduceScatter(std::span<const float> in, std::span<float> out, ReduceOp op) override;
  Status DoAllToAll(std::span<const float> in, std::span<float> out) override;
  Status DoAllToAllV(std::span<const float> in, std::span<const int64_t> send_counts,
                     std::span<const int64_t> send_displs, std::span<float> out,
                     std::span<const int64_t> recv_counts,
                     std::span<const int64_t> recv_displs) override;
  Status DoBroadcast(std::span<float> data, int root) override;
  Status DoSendBytes(std::span<const std::byte> data, int dest, int tag) override;
  Status DoRecvBytes(int src, int tag, int64_t expected, std::span<std::byte> data,
                     std::vector<std::byte>* any) override;
  Status DoBarrier() override;
  Status RejectCollective(const char* op, Status error) override;

 private:
  // Runs one collective: post `slot`, barrier A, check + compute(slots), barrier B.
  template <typename Compute>
  Status Collective(Slot slot, Compute&& compute);
  // Waits at the group barrier; `lk` holds g_->mu on entry and on return.
  Status Arrive(std::unique_lock<std::mutex>& lk, std::string_view op, bool first_phase);
  // Index of a member that has returned from Run's function, or -1.
  int FinishedMember() const;
  Status LeftWhileWaiting(std::unique_lock<std::mutex>& lk, std::string_view what, int gone);

  // Posts `slot` in this rank's next round of the group; the last rank to post runs
  // compute(slots) for every rank.
  template <typename Compute>
  Result<std::unique_ptr<CommRequest::Op>> StartRound(Slot slot, Compute&& compute);
  friend class AsyncCollective;
  bool RoundDone(uint64_t id);
  Status WaitRound(uint64_t id);

  std::shared_ptr<Group> g_;
  const int rank_;
  uint64_t next_round_ = 0;  // this rank's Start* calls so far
};

class AsyncCollective final : public CommRequest::Op {
 public:
  AsyncCollective(InProcessComm* comm, uint64_t id) : comm_(comm), id_(id) {}
  bool Test() override { return comm_->RoundDone(id_); }
  Status Wait() override { return comm_->WaitRound(id_); }

 private:
  InProcessComm* comm_;
  uint64_t id_;
};

int InProcessComm::FinishedMember() const {
  for (int i = 0; i < g_->size(); ++i) {
    if (i != rank_ && g_->world->finished[g_->members[i]].load()) return i;
  }
  return -1;
}

Status InProcessComm::LeftWhileWaiting(std::unique_lock<std::mutex>& lk, std::string_view what,
                                       int gone) {
  Status st = Status::Internal(std::string(what) + ": rank " + std::to_string(rank_) +
                               " waits for rank " + std::to_string(gone) + " (device " +
                               std::to_string(g_->members[gone]) + "), which has already returned");
  lk.unlock();
  g_->world->Abort(st);
  lk.lock();
  return g_->world->AbortedStatus();
}

Status InProcessComm::Arrive(std::unique_lock<std::mutex>& lk, std::string_view op,
                             bool first_phase) {
  Group& g = *g_;
  WorldState& w = *g.world;
  // Barrier B is never abandoned: every member has passed barrier A, and the compute phase
  // between them does not wait for anything, so B always completes soon. Leaving B early on
  // an abort would let a rank free (or reuse) its buffers while others still read them.
  if (first_phase && w.aborted.load()) return w.AbortedStatus();
  const uint64_t gen = g.generation;
  if (++g.arrived == g.size()) {
    g.arrived = 0;
    ++g.generation;
    // Everyone has left the previous collective's compute phase.
    if (first_phase) g.split_groups.clear();
    g.cv.notify_all();
    return Status::Ok();
  }
  if (!first_phase) {
    g.cv.wait(lk, [&] { return g.generation != gen; });
    return Status::Ok();
  }
  int gone = -1;
  g.cv.wait(lk, [&] {
    if (g.generation != gen || w.aborted.load()) return true;
    gone = FinishedMember();
    return gone >= 0;
  });
  if (g.generation != gen) return Status::Ok();
  if (w.aborted.load()) return w.AbortedStatus();
  return LeftWhileWaiting(lk, op, gone);
}

// The verdict every rank reaches on the posted arguments.
Status CheckSlots(const std::vector<Slot>& s) {
  const int p = static_cast<int>(s.size());
  const std::string_view op = s[0].op;
  for (int k = 1; k < p; ++k) {
    if (s[k].op != op) {
      return Status::Invalid("mismatched collectives: rank 0 called " + std::string(op) +
                             ", rank " + std::to_string(k) + " called " + std::string(s[k].op));
    }
  }
  for (int k = 0; k < p; ++k) {
    if (!s[k].error.empty()) {
      return Status::Invalid(std::string(op) + " failed on rank " + std::to_string(k) + ": " +
                             s[k].error);
    }
  }
  auto disagree = [&](const char* what, int k, int64_t a, int64_t b) {
    return Status::Invalid(std::string(op) + ": ranks disagree on " + what + ": rank 0 has " +
                           std::to_string(a) + ", rank " + std::to_string(k) + " has " +
                           std::to_string(b));
  };
  for (int k = 1; k < p; ++k) {
    if (op == "AllReduce" || op == "StartAllReduce" || op == "AllGather" || op == "AllToAll") {
      if (s[k].in_n != s[0].in_n) return disagree("the element count", k, s[0].in_n, s[k].in_n);
    }
    if (op == "ReduceScatter" || op == "StartReduceScatter" || op == "Broadcast") {
      if (s[k].out_n != s[0].out_n) {
        return disagree("the element count", k, s[0].out_n, s[k].out_n);
      }
    }
    if (op == "AllReduce" || op == "StartAllReduce" || op == "ReduceScatter" ||
        op == "StartReduceScatter") {
      if (s[k].reduce != s[0].reduce) {
        return Status::Invalid(std::string(op) + ": ranks disagree on the operation: rank 0 " +
                               ReduceOpName(s[0].reduce) + ", rank " + std::to_string(k) + " " +
                               ReduceOpName(s[k].reduce));
      }
    }
    if (op == "Broadcast" && s[k].root != s[0].root) {
      return disagree("the root", k, s[0].root, s[k].root);
    }
  }
  if (op == "AllToAllV") {
    for (int i = 0; i < p; ++i) {
      for (int j = 0; j < p; ++j) {
        if (s[i].send_counts[j] != s[j].recv_counts[i]) {
          return Status::Invalid("AllToAllV: rank " + std::to_string(i) + " sends " +
                                 std::to_string(s[i].send_counts[j]) + " elements to rank " +
                                 std::to_string(j) + ", which expects " +
                                 std::to_string(s[j].recv_counts[i]));
        }
      }
    }
  }
  return Status::Ok();
}

template <typename Compute>
Status InProcessComm::Collective(Slot slot, Compute&& compute) {
  Group& g = *g_;
  const std::string_view op = slot.op;
  std::unique_lock<std::mutex> lk(g.mu);
  g.slots[rank_] = std::move(slot);
  SHARDSCOPE_RETURN_IF_ERROR(Arrive(lk, op, /*first_phase=*/true));
  lk.unlock();
  Status result = CheckSlots(g.slots);
  if (result.ok()) result = compute(static_cast<const std::vector<Slot>&>(g.slots));
  lk.lock();
  SHARDSCOPE_RETURN_IF_ERROR(Arrive(lk, op, /*first_phase=*/false));
  return result;
}

Status InProcessComm::RejectCollective(const char* op, Status error) {
  Slot slot;
  slot.op = op;
  slot.error = error.message();
  return Collective(std::move(slot), [](const std::vector<Slot>&) { return Status::Ok(); });
}

Result<std::unique_ptr<Communicator>> InProcessComm::DoSplit(int color, int key) {
  Slot slot;
  slot.op = "Split";
  slot.color = color;
  slot.key = key;
  std::unique_ptr<Communicator> made;
  Status st = Collective(std::move(slot), [&](const std::vector<Slot>& s) {
    if (color == kNoColor) return Status::Ok();
    std::vector<std::pair<int, int>> order;  // (key, old rank)
    for (int k = 0; k < static_cast<int>(s.size()); ++k) {
      if (s[k].color == color) order.emplace_back(s[k].key, k);
    }
    std::sort(order.begin(), order.end());
    std::vector<int> members;
    int new_rank = -1;
    for (auto& [k_key, old] : order) {
      if (old == rank_) new_rank = static_cast<int>(members.size());
      members.push_back(g_->members[old]);
    }
    std::shared_ptr<Group> group;
    {
      std::lock_guard<std::mutex> lk(g_->mu);
      auto& slot_group = g_->split_groups[color];
      if (!slot_group) slot_group = g_->world->NewGroup(g_->world, std::move(members));
      group = slot_group;
    }
    made = std::make_unique<InProcessComm>(std::move(group), new_rank);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return made;
}

Status InProcessComm::DoAllReduce(std::span<const float> in, std::span<float> out, ReduceOp op) {
  Slot slot = BufferSlot("AllReduce", in, out, op);
  return Collective(std::move(slot), [&](const std::vector<Slot>& s) {
    const int p = static_cast<int>(s.size());
    const int64_t n = static_cast<int64_t>(in.size());
    const int64_t lo = BlockBegin(n, p, rank_);
    const int64_t len = BlockSize(n, p, rank_);
    if (len == 0) return Status::Ok();
    std::vector<const float*> inputs(p);
    std::vector<float*> outs(p);
    for (int k = 0; k < p; ++k) {
      inputs[k] = s[k].in + lo;
      outs[k] = s[k].out + lo;
    }
    comm_internal::ReduceInOrder(op, inputs, len, outs);
    return Status::Ok();
  });
}

template <typename Compute>
Result<std::unique_ptr<CommRequest::Op>> InProcessComm::StartRound(Slot slot, Compute&& compute) {
  Group& g = *g_;
  const uint64_t id = next_round_++;
  std::unique_lock<std::mutex> lk(g.mu);
  if (g.world->aborted.load()) return g.world->AbortedStatus();
  AsyncRound& round = g.rounds[id];  // map nodes never move while other rounds come and go
  round.slots.resize(g.size());
  round.slots[rank_] = std::move(slot);
  if (++round.arrived == g.size()) {
    lk.unlock();  // nobody writes the slots of a full round
    Status result = CheckSlots(round.slots);
    if (result.ok()) compute(static_cast<const std::vector<Slot>&>(round.slots));
    lk.lock();
    round.result = std::move(result);
    round.done = true;
    g.cv.notify_all();
  }
  return std::unique_ptr<CommRequest::Op>(std::make_unique<AsyncCollective>(this, id));
}

Result<std::unique_ptr<CommRequest::Op>> InProcessComm::DoStartAllReduce(std::span<const float> in,
                                                                         std::span<float> out,
                                                                         ReduceOp op) {
  return StartRound(BufferSlot("StartAllReduce", in, out, op), [&](const std::vector<Slot>& s) {
    if (in.empty()) return;
    const int p = static_cast<int>(s.size());
    std::vector<const float*> inputs(p);
    std::vector<float*> outs(p);
    for (int k = 0; k < p; ++k) {
      inputs[k] = s[k].in;
      outs[k] = s[k].out;
    }
    comm_internal::ReduceInOrder(op, inputs, static_cast<int64_t>(in.size()), outs);
  });
}

// Every rank's block, each reduced in rank order as the blocking ReduceScatter does.
Result<std::unique_ptr<CommRequest::Op>> InProcessComm::DoStartReduceScatter(
    std::span<const float> in, std::span<float> out, ReduceOp op) {
  return StartRound(BufferSlot("StartReduceScatter", in, out, op), [&](const std::vector<Slot>& s) {
    const int p = static_cast<int>(s.size());
    const int64_t m = static_cast<int64_t>(out.size());
    if (m == 0) return;
    std::vector<const float*> inputs(p);
    for (int r = 0; r < p; ++r) {
      for (int k = 0; k < p; ++k) inputs[k] = s[k].in + r * m;
      float* const outs[1] = {s[r].out};
      comm_internal::ReduceInOrder(op, inputs, m, outs);
    }
  });
}

bool InProcessComm::RoundDone(uint64_t id) {
  std::lock_guard<std::mutex> lk(g_->mu);
  return g_->rounds[id].done;
}

Status InProcessComm::WaitRound(uint64_t id) {
  Group& g = *g_;
  WorldState& w = *g.world;
  std::unique_lock<std::mutex> lk(g.mu);
  AsyncRound& round = g.rounds[id];
  int gone = -1;
  // A full round is being reduced into this rank's buffers: wait for it even on an abort.
  g.cv.wait(lk, [&] {
    if (round.done) return true;
    if (round.arrived == g.size()) return false;
    if (w.aborted.load()) return true;
    for (int i = 0; i < g.size(); ++i) {
      if (round.slots[i].op.empty() && i != rank_ && w.finished[g.members[i]].load()) gone = i;
    }
    return gone >= 0;
  });
  if (!round.done) {
    if (w.aborted.load()) return w.AbortedStatus();
    return LeftWhileWaiting(lk, round.slots[rank_].op, gone);
  }
  Status result = round.result;
  if (++round.released == g.size()) g.rounds.erase(id);
  return result;
}

Status InProcessComm::DoAllGather(std::span<const float> in, std::span<float> out) {
  Slot slot = BufferSlot("AllGather", in, out);
  return Collective(std::move(slot), [&](const std::vector<Slot>& s) {
    const size_t m = in.size();
    for (size_t k = 0; k < s.size(); ++k) {
      float* dst = out.data() + k * m;
      if (m > 0 && dst != s[k].in) std::memcpy(dst, s[k].in, m * sizeof(float));
    }
    return Status::Ok();
  });
}

Status InProcessComm::DoReduceScatter(std::span<const float> in, std::span<float> out,
                                      ReduceOp op) {
  Slot slot = BufferSlot("ReduceScatter", in, out, op);
  return Collective(std::move(slot), [&](const std::vector<Slot>& s) {
    const int p = static_cast<int>(s.size());
    const int64_t m = static_cast<int64_t>(out.size());
    std::vector<const float*> inputs(p);
    for (int k = 0; k < p; ++k) inputs[k] = s[k].in + rank_ * m;
    float* const outs[1] = {out.data()};
    comm_internal::ReduceInOrder(op, inputs, m, outs);
    return Status::Ok();
  });
}

Status InProcessComm::DoAllToAll(std::span<const float> in, std::span<float> out) {
  Slot slot = BufferSlot("AllToAll", in, out);
  return Collective(std::move(slot), [&](const std::vector<Slot>& s) {
    const size_t m = in.size() / s.size();
    if (m == 0) return Status::Ok();
    for (size_t k = 0; k < s.size(); ++k) {
      std::memcpy(out.data() + k * m, s[k].in + rank_ * m, m * sizeof(float));
    }
    return Status::Ok();
  });
}

Status InProcessComm::DoAllToAllV(std::span<const float> in, std::span<const int64_t> send_counts,
                                  std::span<const int64_t> send_displs, std::span<float> out,
                                  std::span<const int64_t> recv_counts,
                                  std::span<const int64_t> recv_displs) {
  Slot slot = BufferSlot("AllToAllV", in, out);
  slot.send_counts = send_counts.data();
  slot.send_displs = send_displs.data();
  slot.recv_counts = recv_counts.data();
  slot.recv_displs = recv_displs.data();
  return Collective(std::move(slot), [&](const std::vector<Slot>& s) {
    for (size_t k = 0; k < s.size(); ++k) {
      const int64_t count = s[k].send_counts[rank_];
      if (count == 0) continue;
      std::memcpy(out.data() + recv_displs[k], s[k].in + s[k].send_displs[rank_],
                  count * sizeof(float));
    }
    return Status::Ok();
  });
}

Status InProcessComm::DoBroadcast(std::span<float> data, int root) {
  Slot slot;
  slot.op = "Broadcast";
  slot.out = data.data();
  slot.out_n = data.size();
  slot.root = root;
  return Collective(std::move(slot), [&](const std::vector<Slot>& s) {
    if (rank_ != root && !data.empty()) {
      std::memcpy(data.data(), s[root].out, data.size() * sizeof(float));
    }
    return Status::Ok();
  });
}

Status InProcessComm::DoBarrier() {
  Slot slot;
  slot.op = "Barrier";
  return Collective(std::move(slot), [](const std::vector<Slot>&) { return Status::Ok(); });
}

Status InProcessComm::DoSendBytes(std::span<const std::byte> data, int dest, int tag) {
  Group& g = *g_;
  Message msg{rank_, tag, std::vector<std::byte>(data.begin(), data.end())};
  std::lock_guard<std::mutex> lk(g.mu);
  if (g.world->aborted.load()) return g.world->AbortedStatus();
  g.inbox[dest].push_back(std::move(msg));
  g.inbox_cv[dest].notify_all();
  return Status::Ok();
}

Status InProcessComm::DoRecvBytes(int src, int tag, int64_t expected, std::span<std::byte> data,
                                  std::vector<std::byte>* any) {
  Group& g = *g_;
  WorldState& w = *g.world;
  std::deque<Message>& box = g.inbox[rank_];
  std::unique_lock<std::mutex> lk(g.mu);
  auto match = box.end();
  auto find = [&] {
    match = std::find_if(box.begin(), box.end(),
                         [&](const Message& m) { return m.src == src && m.tag == tag; });
    return match != box.end();
  };
  if (src == rank_ && !find()) {
    return Status::Invalid("Recv: rank " + std::to_string(rank_) +
                           " receives from itself but has sent itself no message with tag " +
                           std::to_string(tag));
  }
  bool gone = false;
  g.inbox_cv[rank_].wait(lk, [&] {
    if (w.aborted.load() || find()) return true;
    gone = src != rank_ && w.finished[g.members[src]].load();
    return gone;
  });
  if (w.aborted.load()) return w.AbortedStatus();
  if (match == box.end()) {
    return LeftWhileWaiting(lk, "Recv(tag " + std::to_string(tag) + ")", src);
  }
  Message msg = std::move(*match);
  box.erase(match);
  lk.unlock();
  if (expected >= 0) {
    if (static_cast<int64_t>(msg.data.size()) != expected) {
      return Status::Invalid("Recv: the message from rank " + std::to_string(src) + " with tag " +
                             std::to_string(tag) + " has " + std::to_string(msg.data.size()) +
                             " bytes; expected " + std::to_string(expected));
    }
    if (!msg.data.empty()) std::memcpy(data.data(), msg.data.data(), msg.data.size());
  } else {
    *any = std::move(msg.data);
  }
  return Status::Ok();
}

}  // namespace

struct InProcessWorld::State {
  std::shared_ptr<WorldState> world;
};

InProcessWorld::InProcessWorld(int size) : state_(std::make_shared<State>()) {
  assert(size >= 1);
  state_->world = std::make_shared<WorldState>(size);
  std::vector<int> members(size);
  for (int r = 0; r < size; ++r) members[r] = r;
  auto group = state_->world->NewGroup(state_->world, std::move(members));
  for (int r = 0; r < size; ++r) comms_.push_back(std::make_unique<InProcessComm>(group, r));
}

InProcessWorld::~InProcessWorld() = default;

int InProcessWorld::size() const { return state_->world->size; }

Communicator& InProcessWorld::comm(int rank) {
  assert(rank >= 0 && rank < size());
  return *comms_[rank];
}

void InProcessWorld::Abort(Status reason) {
  assert(!reason.ok());
  state_->world->Abort(std::move(reason));
}

Status InProcessWorld::Run(const std::function<Status(Communicator&)>& fn) {
  WorldState& w = *state_->world;
  if (w.aborted.load()) {
    std::lock_guard<std::mutex> lk(w.mu);
    return w.abort_status;
  }
  for (int r = 0; r < w.size; ++r) w.finished[r] = false;
  auto device = [&](int r) {
    Status st;
    try {
      st = fn(*comms_[r]);
    } catch (const std::exception& e) {
      st = Status::Internal(std::string("exception: ") + e.what());
    } catch (...) {
      st = Status::Internal("unknown exception");
    }
    if (!st.ok()) w.Abort(st.WithContext("device " + std::to_string(r)));
    w.MarkFinished(r);
  };
  std::vector<std::thread> threads;
  threads.reserve(w.size);
  for (int r = 0; r < w.size; ++r) {
    try {
      threads.emplace_back(device, r);
    } catch (const std::exception& e) {
      w.Abort(Status::Internal("cannot start the thread of device " + std::to_string(r) + ": " +
                               e.what()));
      break;
    }
  }
  for (auto& t : threads) t.join();
  // "Returned" only means something while Run's threads run: the communicators may be
  // driven by other threads afterwards.
  for (int r = 0; r < w.size; ++r) w.finished[r] = false;
  if (w.aborted.load()) {
    std::lock_guard<std::mutex> lk(w.mu);
    return w.abort_status;
  }
  return Status::Ok();
}

Status RunOnDevices(int size, const std::function<Status(Communicator&)>& fn) {
  if (size < 1) {
    return Status::Invalid("RunOnDevices: " + std::to_string(size) + " devices; need at least 1");
  }
  InProcessWorld world(size);
  return world.Run(fn);
}

}  // namespace shardscope
