#include "comm_checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "shardscope/layout/mesh.h"

namespace shardscope::comm_test {

namespace {

// Early returns that say where and on which rank a check failed. They need a `comm` in scope.
#define COMM_OK(expr)                                                                  \
  do {                                                                                 \
    ::shardscope::Status _st = (expr);                                                 \
    if (!_st.ok()) {                                                                   \
      return _st.WithContext("line " + std::to_string(__LINE__) + ", rank " +          \
                             std::to_string(comm.rank()) + ": " + std::string(#expr)); \
    }                                                                                  \
  } while (0)

#define COMM_REQUIRE(cond, msg)                                                           \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      return Status::Internal("line " + std::to_string(__LINE__) + ", rank " +            \
                              std::to_string(comm.rank()) + ": " + #cond + ": " + (msg)); \
    }                                                                                     \
  } while (0)

#define COMM_SAME(a, b, what)                                \
  do {                                                       \
    std::string _d = BitwiseDiff((a), (b));                  \
    COMM_REQUIRE(_d.empty(), std::string(what) + ": " + _d); \
  } while (0)

#define COMM_TRAFFIC(c, before, expected, what)                                           \
  do {                                                                                    \
    CommStats _now = (c).stats();                                                         \
    CommTraffic _got{_now.bytes_sent - (before).bytes_sent,                               \
                     _now.bytes_received - (before).bytes_received};                      \
    CommTraffic _want = (expected);                                                       \
    COMM_REQUIRE(_got == _want, std::string(what) + ": counted sent/received " +          \
                                    std::to_string(_got.bytes_sent) + "/" +               \
                                    std::to_string(_got.bytes_received) + ", expected " + \
                                    std::to_string(_want.bytes_sent) + "/" +              \
                                    std::to_string(_want.bytes_received));                \
  } while (0)

constexpr float kSentinel = -12345.0f;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string N(int64_t v) { return std::to_string(v); }

std::vector<float> Slice(const std::vector<float>& v, int64_t begin, int64_t count) {
  return std::vector<float>(v.begin() + begin, v.begin() + begin + count);
}

ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMax};

// Grid shapes used to build meshes for `size` ranks.
std::vector<DeviceMesh> MeshesFor(int size) {
  std::vector<DeviceMesh> meshes;
  auto add = [&](Shape shape, std::vector<int> ranks) {
    std::vector<std::string> names;
    for (size_t i = 0; i < shape.size(); ++i)
      names.push_back(std::string(1, static_cast<char>('a' + i)));
    auto mesh = DeviceMesh::Create(shape, names, ranks);
    if (mesh.ok()) meshes.push_back(*mesh);
  };
  if (size == 8) {
    add({2, 2, 2}, {});
    add({2, 4}, {0, 2, 4, 6, 1, 3, 5, 7});
  } else if (size == 4) {
    add({2, 2}, {});
    add({2, 2}, {3, 2, 1, 0});
  } else if (size == 6) {
    add({3, 2}, {});
  } else {
    add({size}, {});
  }
  return meshes;
}

}  // namespace

float Value(int seed, int rank, int64_t i) {
  uint64_t h = Mix(Mix(static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(rank)) ^
                   static_cast<uint64_t>(i));
  float mantissa = static_cast<float>(h & 0xffffff) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  int exponent = static_cast<int>((h >> 24) % 17) - 8;
  return std::ldexp(mantissa, exponent);
}

std::vector<float> Values(int seed, int rank, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = Value(seed, rank, i);
  return v;
}

std::vector<float> ReferenceReduce(int seed, int size, int64_t n, ReduceOp op) {
  std::vector<float> acc = Values(seed, 0, n);
  for (int k = 1; k < size; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      float x = Value(seed, k, i);
      acc[i] = op == ReduceOp::kSum ? acc[i] + x : std::max(acc[i], x);
    }
  }
  return acc;
}

std::string BitwiseDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return "sizes " + N(a.size()) + " and " + N(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      return "element " + N(i) + " of " + N(a.size()) + ": " + std::to_string(a[i]) + " vs " +
             std::to_string(b[i]);
    }
  }
  return "";
}

Status CheckRankAndSize(Communicator& comm) {
  const int p = comm.size();
  COMM_REQUIRE(p >= 1 && comm.rank() >= 0 && comm.rank() < p, "rank out of range");
  std::vector<float> mine = {static_cast<float>(comm.rank())};
  std::vector<float> all(p);
  COMM_OK(comm.AllGather(mine, all));
  std::vector<float> want(p);
  std::iota(want.begin(), want.end(), 0.0f);
  COMM_SAME(all, want, "ranks gathered");
  return Status::Ok();
}

Status CheckAllReduce(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  for (ReduceOp op : kOps) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{p * 5 + 3},
                      int64_t{1000}, int64_t{1024}, int64_t{1025}, int64_t{5003}}) {
      const int seed = static_cast<int>(n) * 3 + static_cast<int>(op);
      const std::vector<float> in = Values(seed, r, n);
      const std::vector<float> ref = ReferenceReduce(seed, p, n, op);
      std::vector<float> out(n, kSentinel);
      CommStats before = comm.stats();
      COMM_OK(comm.AllReduce(in, out, op));
      COMM_TRAFFIC(comm, before, AllReduceTraffic(n, p, r), "AllReduce n=" + N(n));
      COMM_SAME(out, ref, std::string("AllReduce ") + ReduceOpName(op) + " n=" + N(n));
      COMM_SAME(in, Values(seed, r, n), "AllReduce changed its input");
      std::vector<float> data = in;
      COMM_OK(comm.AllReduce(data, op));
      COMM_SAME(data, ref, std::string("in-place AllReduce ") + ReduceOpName(op) + " n=" + N(n));
    }
  }
  return Status::Ok();
}

Status CheckAllGather(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  for (int64_t m : {0, 1, 5, 130}) {
    const int seed = 100 + static_cast<int>(m);
    std::vector<float> want;
    for (int k = 0; k < p; ++k) {
      auto block = Values(seed, k, m);
      want.insert(want.end(), block.begin(), block.end());
    }
    std::vector<float> out(p * m, kSentinel);
    CommStats before = comm.stats();
    COMM_OK(comm.AllGather(Values(seed, r, m), out));
    COMM_TRAFFIC(comm, before, AllGatherTraffic(m, p), "AllGather m=" + N(m));
    COMM_SAME(out, want, "AllGather m=" + N(m));
    // In place: this rank's block already sits in out.
    std::vector<float> buf(p * m, kSentinel);
    auto own = Values(seed, r, m);
    std::copy(own.begin(), own.end(), buf.begin() + r * m);
    std::span<float> all(buf);
    COMM_OK(comm.AllGather(all.subspan(r * m, m), all));
    COMM_SAME(buf, want, "in-place AllGather m=" + N(m));
  }
  return Status::Ok();
}

Status CheckReduceScatter(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  for (ReduceOp op : kOps) {
    for (int64_t m : {0, 1, 4, 33, 300}) {
      const int seed = 200 + static_cast<int>(m) * 2 + static_cast<int>(op);
      const auto ref = ReferenceReduce(seed, p, p * m, op);
      const auto want = Slice(ref, r * m, m);
      std::vector<float> out(m, kSentinel);
      CommStats before = comm.stats();
      COMM_OK(comm.ReduceScatter(Values(seed, r, p * m), out, op));
      COMM_TRAFFIC(comm, before, ReduceScatterTraffic(m, p), "ReduceScatter m=" + N(m));
      COMM_SAME(out, want, std::string("ReduceScatter ") + ReduceOpName(op) + " m=" + N(m));
      std::vector<float> buf = Values(seed, r, p * m);
      std::span<float> all(buf);
      COMM_OK(comm.ReduceScatter(all, all.subspan(r * m, m), op));
      COMM_SAME(Slice(buf, r * m, m), want, "in-place ReduceScatter m=" + N(m));
    }
  }
  return Status::Ok();
}

Status CheckAllToAll(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  for (int64_t m : {0, 1, 3, 50}) {
    const int seed = 300 + static_cast<int>(m);
    std::vector<float> out(p * m, kSentinel);
    CommStats before = comm.stats();
    COMM_OK(comm.AllToAll(Values(seed, r, p * m), out));
    COMM_TRAFFIC(comm, before, AllToAllTraffic(m, p), "AllToAll m=" + N(m));
    std::vector<float> want;
    for (int k = 0; k < p; ++k) {
      auto block = Slice(Values(seed, k, p * m), r * m, m);
      want.insert(want.end(), block.begin(), block.end());
    }
    COMM_SAME(out, want, "AllToAll m=" + N(m));
  }
  return Status::Ok();
}

Status CheckAllToAllV(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  // count(i, j): elements rank i sends to rank j; uneven, some zero.
  auto count = [](int i, int j) -> int64_t { return (i + 2 * j + 1) % 4; };
  auto total_sent = [&](int i) {
    int64_t t = 0;
    for (int j = 0; j < p; ++j) t += count(i, j);
    return t;
  };
  std::vector<int64_t> send_counts(p), recv_counts(p);
  for (int j = 0; j < p; ++j) {
    send_counts[j] = count(r, j);
    recv_counts[j] = count(j, r);
  }
  CommTraffic expected;
  for (int j = 0; j < p; ++j) {
    if (j == r) continue;
    expected.bytes_sent += 4 * send_counts[j];
    expected.bytes_received += 4 * recv_counts[j];
  }
  const int seed = 400;
  // What rank k sends to rank j in the packed layout.
  auto packed_block = [&](int k, int j) {
    int64_t begin = 0;
    for (int jj = 0; jj < j; ++jj) begin += count(k, jj);
    return Slice(Values(seed, k, total_sent(k)), begin, count(k, j));
  };

  // 1. Packed (empty displacement arrays).
  {
    int64_t total_recv = std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0});
    std::vector<float> out(total_recv, kSentinel);
    CommStats before = comm.stats();
    COMM_OK(comm.AllToAllV(Values(seed, r, total_sent(r)), send_counts, {}, out, recv_counts, {}));
    COMM_TRAFFIC(comm, before, expected, "AllToAllV packed");
    std::vector<float> want;
    for (int k = 0; k < p; ++k) {
      auto block = packed_block(k, r);
      want.insert(want.end(), block.begin(), block.end());
    }
    COMM_SAME(out, want, "AllToAllV packed");
  }
  // 2. Explicit displacements: blocks in reverse rank order with gaps, which must stay as
  //    they were.
  {
    std::vector<int64_t> send_displs(p), recv_displs(p);
    std::vector<float> in(total_sent(r) + p, kSentinel);
    int64_t at = 0;
    for (int j = p - 1; j >= 0; --j) {
      send_displs[j] = at;
      auto block = packed_block(r, j);
      std::copy(block.begin(), block.end(), in.begin() + at);
      at += count(r, j) + 1;
    }
    at = 1;
    for (int k = p - 1; k >= 0; --k) {
      recv_displs[k] = at;
      at += count(k, r) + 2;
    }
    std::vector<float> out(at, kSentinel);
    CommStats before = comm.stats();
    COMM_OK(comm.AllToAllV(in, send_counts, send_displs, out, recv_counts, recv_displs));
    COMM_TRAFFIC(comm, before, expected, "AllToAllV with displacements");
    std::vector<float> want(at, kSentinel);
    for (int k = 0; k < p; ++k) {
      auto block = packed_block(k, r);
      std::copy(block.begin(), block.end(), want.begin() + recv_displs[k]);
    }
    COMM_SAME(out, want, "AllToAllV with displacements");
  }
  return Status::Ok();
}

Status CheckBroadcast(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  for (int root = 0; root < p; ++root) {
    for (int64_t n : {0, 1, 100}) {
      const int seed = 500 + root;
      std::vector<float> data =
          r == root ? Values(seed, root, n) : std::vector<float>(n, kSentinel);
      CommStats before = comm.stats();
      COMM_OK(comm.Broadcast(data, root));
      COMM_TRAFFIC(comm, before, BroadcastTraffic(n, p, r, root), "Broadcast n=" + N(n));
      COMM_SAME(data, Values(seed, root, n), "Broadcast root " + N(root) + " n=" + N(n));
    }
  }
  return Status::Ok();
}

Status CheckSendRecv(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  const int next = (r + 1) % p;
  const int prev = (r + p - 1) % p;
  CommStats before = comm.stats();
  CommTraffic expected;
  // Three messages with tag 7, then one with tag 3; the receiver takes tag 3 first.
  for (int k = 0; k < 3; ++k) {
    std::vector<float> msg = {static_cast<float>(100 * r + k)};
    COMM_OK(comm.Send(msg, next, 7));
  }
  std::vector<float> tag3 = {static_cast<float>(-r), 0.5f};
  COMM_OK(comm.Send(tag3, next, 3));
  expected.bytes_sent += 4 * 5;
  std::vector<float> got(2);
  COMM_OK(comm.Recv(got, prev, 3));
  COMM_SAME(got, (std::vector<float>{static_cast<float>(-prev), 0.5f}), "tag 3 message");
  for (int k = 0; k < 3; ++k) {
    std::vector<float> one(1);
    COMM_OK(comm.Recv(one, prev, 7));
    COMM_SAME(one, std::vector<float>{static_cast<float>(100 * prev + k)},
              "tag 7 message " + N(k) + " (order)");
  }
  expected.bytes_received += 4 * 5;

  // Byte messages of any length, and an empty one.
  std::vector<std::byte> bytes(r + 1, static_cast<std::byte>(r));
  COMM_OK(comm.SendBytes(bytes, next, 11));
  COMM_OK(comm.Send(std::span<const float>(), next, 12));
  expected.bytes_sent += r + 1;
  auto message = comm.RecvBytes(prev, 11);
  COMM_OK(message.status());
  COMM_REQUIRE(*message == std::vector<std::byte>(prev + 1, static_cast<std::byte>(prev)),
               "byte message from rank " + N(prev));
  auto empty = comm.RecvBytes(prev, 12);
  COMM_OK(empty.status());
  COMM_REQUIRE(empty->empty(), "empty message has " + N(empty->size()) + " bytes");
  expected.bytes_received += prev + 1;
  // Floats sent as floats, received as bytes (messages are untyped).
  std::vector<float> two = {1.5f, static_cast<float>(r)};
  COMM_OK(comm.Send(two, next, 13));
  expected.bytes_sent += 8;
  auto raw = comm.RecvBytes(prev, 13);
  COMM_OK(raw.status());
  COMM_REQUIRE(raw->size() == 8, "raw size " + N(raw->size()));
  std::vector<float> decoded(2);
  std::memcpy(decoded.data(), raw->data(), 8);
  COMM_SAME(decoded, (std::vector<float>{1.5f, static_cast<float>(prev)}), "bytes as floats");
  expected.bytes_received += 8;

  // Everyone sends large messages to everyone (itself included) before receiving anything:
  // sends are buffered, so this must not deadlock.
  const int64_t big = 50000;
  for (int j = 0; j < p; ++j) {
    COMM_OK(comm.Send(Values(600, r * p + j, big), j, 20));
    expected.bytes_sent += 4 * big;  // messages to oneself are counted too
  }
  for (int k = p - 1; k >= 0; --k) {
    std::vector<float> in(big);
    COMM_OK(comm.Recv(in, k, 20));
    COMM_SAME(in, Values(600, k * p + r, big), "large message from rank " + N(k));
    expected.bytes_received += 4 * big;
  }
  COMM_TRAFFIC(comm, before, expected, "send/receive");
  return Status::Ok();
}

Status CheckBarrier(Communicator& comm) {
  for (int i = 0; i < 5; ++i) {
    CommStats before = comm.stats();
    COMM_OK(comm.Barrier());
    COMM_TRAFFIC(comm, before, CommTraffic{}, "Barrier");
    COMM_REQUIRE(comm.stats().calls == before.calls + 1, "Barrier counted as one call");
  }
  return Status::Ok();
}

namespace {
// Checks a communicator whose members are the world ranks `members` (in rank order).
Status CheckGroup(Communicator& world, Communicator& sub, const std::vector<int>& members,
                  int seed) {
  Communicator& comm = world;
  const int me =
      static_cast<int>(std::find(members.begin(), members.end(), world.rank()) - members.begin());
  COMM_REQUIRE(me < static_cast<int>(members.size()), "this rank is not in its group");
  COMM_REQUIRE(sub.rank() == me, "sub rank " + N(sub.rank()) + ", expected " + N(me));
  COMM_REQUIRE(sub.size() == static_cast<int>(members.size()),
               "sub size " + N(sub.size()) + ", expected " + N(members.size()));
  std::vector<float> world_ranks(members.size());
  std::vector<float> mine = {static_cast<float>(world.rank())};
  COMM_OK(sub.AllGather(mine, world_ranks));
  std::vector<float> want(members.begin(), members.end());
  COMM_SAME(world_ranks, want, "members of the group");
  // Sum in group order of values keyed by world rank.
  const int64_t n = 37;
  std::vector<float> ref = Values(seed, members[0], n);
  for (size_t k = 1; k < members.size(); ++k) {
    for (int64_t i = 0; i < n; ++i) ref[i] += Value(seed, members[k], i);
  }
  std::vector<float> data = Values(seed, world.rank(), n);
  COMM_OK(sub.AllReduce(data));
  COMM_SAME(data, ref, "AllReduce in the group");
  return Status::Ok();
}
}  // namespace

Status CheckSplit(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  // Colour by parity, key reverses the order.
  CommStats world_before = comm.stats();
  auto sub = comm.Split(r % 2, -r);
  COMM_OK(sub.status());
  COMM_REQUIRE(*sub != nullptr, "Split gave no communicator");
  std::vector<int> members;
  for (int k = p - 1; k >= 0; --k) {
    if (k % 2 == r % 2) members.push_back(k);
  }
  COMM_OK(CheckGroup(comm, **sub, members, 700));
  // Split of the split: first half and second half.
  Communicator& s = **sub;
  const int half = (s.size() + 1) / 2;
  auto subsub = s.Split(s.rank() < half ? 0 : 1, 0);
  COMM_OK(subsub.status());
  std::vector<int> inner = s.rank() < half
                               ? std::vector<int>(members.begin(), members.begin() + half)
                               : std::vector<int>(members.begin() + half, members.end());
  COMM_OK(CheckGroup(comm, **subsub, inner, 701));
  // Traffic on sub-communicators is also counted on the world.
  CommStats world_after = comm.stats();
  CommStats sub_stats = s.stats();
  COMM_REQUIRE(
      world_after.bytes_sent - world_before.bytes_sent == sub_stats.bytes_sent &&
          world_after.bytes_received - world_before.bytes_received == sub_stats.bytes_received,
      "world counted " + N(world_after.bytes_sent - world_before.bytes_sent) +
          " bytes sent, the sub-communicator " + N(sub_stats.bytes_sent));
  COMM_REQUIRE(world_after.calls - world_before.calls == sub_stats.calls + 1,
               "calls: world " + N(world_after.calls - world_before.calls) + ", sub " +
                   N(sub_stats.calls) + " + 1 split");
  COMM_REQUIRE(sub_stats.bytes_sent >= (**subsub).stats().bytes_sent, "nested counting");
  // kNoColor: rank 0 opts out.
  auto rest = comm.Split(r == 0 ? kNoColor : 5, r);
  COMM_OK(rest.status());
  if (r == 0) {
    COMM_REQUIRE(*rest == nullptr, "kNoColor gave a communicator");
  } else {
    COMM_REQUIRE(*rest != nullptr, "no communicator for colour 5");
    std::vector<int> others(p - 1);
    std::iota(others.begin(), others.end(), 1);
    COMM_OK(CheckGroup(comm, **rest, others, 702));
  }
  // The world still works after all that.
  COMM_OK(CheckRankAndSize(comm));
  return Status::Ok();
}

Status CheckGroupAlong(Communicator& comm) {
  const int r = comm.rank();
  for (const DeviceMesh& mesh : MeshesFor(comm.size())) {
    const int naxes = mesh.num_axes();
    std::vector<std::vector<int>> axis_sets;
    for (int mask = 0; mask < (1 << naxes); ++mask) {
      std::vector<int> axes;
      for (int a = 0; a < naxes; ++a) {
        if (mask & (1 << a)) axes.push_back(a);
      }
      axis_sets.push_back(axes);
      if (axes.size() >= 2) axis_sets.emplace_back(axes.rbegin(), axes.rend());
    }
    int seed = 800;
    for (const auto& axes : axis_sets) {
      auto groups = mesh.Groups(axes);
      auto sub = GroupAlong(comm, groups);
      COMM_OK(sub.status());
      COMM_REQUIRE((*sub)->rank() == mesh.IndexInGroup(r, axes), "rank in group");
      COMM_REQUIRE((*sub)->size() == mesh.GroupSize(axes), "group size");
      COMM_OK(CheckGroup(comm, **sub, mesh.GroupOf(r, axes), seed++));
    }
  }
  // Bad group lists fail on every rank before any communication.
  const int p = comm.size();
  std::vector<int> all(p);
  std::iota(all.begin(), all.end(), 0);
  std::vector<std::vector<std::vector<int>>> bad = {
      {std::vector<int>(all.begin(), all.end() - 1)},  // last rank missing
      {all, {0}},                                      // rank 0 twice
      {all, {}},                                       // empty group
      {all, {p}},                                      // out of range
  };
  for (const auto& groups : bad) {
    auto sub = GroupAlong(comm, groups);
    COMM_REQUIRE(!sub.ok() && sub.status().code() == StatusCode::kInvalidInput,
                 "bad groups accepted");
  }
  return Status::Ok();
}

Status CheckConcurrentGroups(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  // Two different partitions used alternately; the groups of each run at the same time.
  auto halves = comm.Split(r < p / 2 ? 0 : 1, r);
  COMM_OK(halves.status());
  auto parity = comm.Split(r % 2, r);
  COMM_OK(parity.status());
  for (int iter = 0; iter < 60; ++iter) {
    Communicator& sub = iter % 2 == 0 ? **halves : **parity;
    const int seed = 900 + iter;
    const int64_t n = 1 + (iter * 37) % 300;
    std::vector<float> data = Values(seed, r, n);
    COMM_OK(sub.AllReduce(data));
    std::vector<int> members;
    for (int k = 0; k < p; ++k) {
      bool same = iter % 2 == 0 ? ((k < p / 2) == (r < p / 2)) : (k % 2 == r % 2);
      if (same) members.push_back(k);
    }
    std::vector<float> ref = Values(seed, members[0], n);
    for (size_t k = 1; k < members.size(); ++k) {
      for (int64_t i = 0; i < n; ++i) ref[i] += Value(seed, members[k], i);
    }
    COMM_SAME(data, ref, "iteration " + N(iter));
    // Point-to-point inside the group, around its ring.
    const int q = sub.size();
    std::vector<float> token = {static_cast<float>(iter * 1000 + sub.rank())};
    COMM_OK(sub.Send(token, (sub.rank() + 1) % q, iter % 5));
    std::vector<float> in(1);
    const int from = (sub.rank() + q - 1) % q;
    COMM_OK(sub.Recv(in, from, iter % 5));
    COMM_REQUIRE(in[0] == static_cast<float>(iter * 1000 + from), "ring token");
    if (iter % 10 == 9) COMM_OK(comm.Barrier());
  }
  return Status::Ok();
}

Status CheckDeterminism(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  const int64_t n = 4097;
  const int seed = 1000;
  const auto ref = ReferenceReduce(seed, p, n, ReduceOp::kSum);
  if (p >= 3) {
    // The data are order-sensitive: summing in reverse rank order gives other bits.
    std::vector<float> reverse = Values(seed, p - 1, n);
    for (int k = p - 2; k >= 0; --k) {
      for (int64_t i = 0; i < n; ++i) reverse[i] += Value(seed, k, i);
    }
    COMM_REQUIRE(!BitwiseDiff(reverse, ref).empty(), "test data are not order-sensitive");
  }
  const auto in = Values(seed, r, n);
  for (int rep = 0; rep < 10; ++rep) {
    std::vector<float> out(n);
    COMM_OK(comm.AllReduce(in, out));
    COMM_SAME(out, ref, "repetition " + N(rep));
    std::vector<float> part(n / p);
    COMM_OK(comm.ReduceScatter(std::span<const float>(in).first(p * (n / p)), part));
    COMM_SAME(part, Slice(ref, r * (n / p), n / p), "ReduceScatter repetition " + N(rep));
  }
  return Status::Ok();
}

Status CheckLocalErrors(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  // Every rank passes the same kind of bad arguments, so each rank detects them itself.
  auto invalid = [](const Status& st) { return st.code() == StatusCode::kInvalidInput; };
  CommStats before = comm.stats();
  std::vector<float> three(3), two(2), many(3 * p + 1);
  COMM_REQUIRE(invalid(comm.AllReduce(three, two)), "AllReduce size mismatch");
  std::span<float> whole(many);
  COMM_REQUIRE(invalid(comm.AllReduce(whole.first(3), whole.subspan(1, 3))),
               "AllReduce partial overlap");
  COMM_REQUIRE(invalid(comm.AllGather(two, three)), "AllGather size");
  COMM_REQUIRE(invalid(comm.AllGather(two, many)), "AllGather size");
  COMM_REQUIRE(invalid(comm.ReduceScatter(many, three)), "ReduceScatter size");
  COMM_REQUIRE(invalid(comm.AllToAll(three, two)), "AllToAll size");
  std::vector<int64_t> counts(p + 1, 0), good(p, 0);
  COMM_REQUIRE(invalid(comm.AllToAllV(three, counts, {}, two, good, {})), "AllToAllV counts");
  std::vector<int64_t> too_far(p, 0);
  too_far[0] = 4;
  COMM_REQUIRE(invalid(comm.AllToAllV(three, too_far, {}, many, good, {})), "AllToAllV range");
  COMM_REQUIRE(invalid(comm.Broadcast(two, p)), "Broadcast root");
  COMM_REQUIRE(invalid(comm.Broadcast(two, -1)), "Broadcast root");
  COMM_REQUIRE(invalid(comm.Split(-5, 0).status()), "Split colour");
  COMM_REQUIRE(invalid(comm.Send(two, p, 0)), "Send dest");
  COMM_REQUIRE(invalid(comm.Send(two, 0, -1)), "Send tag");
  COMM_REQUIRE(invalid(comm.Send(two, 0, kMaxTag + 1)), "Send tag");
  COMM_REQUIRE(invalid(comm.Recv(two, -1, 0)), "Recv src");
  COMM_REQUIRE(invalid(comm.RecvBytes(p, 0).status()), "RecvBytes src");
  COMM_TRAFFIC(comm, before, CommTraffic{}, "failed calls");
  COMM_REQUIRE(comm.stats().calls == before.calls, "failed calls were counted");
  // A message of the wrong length is consumed and reported; the next one is fine.
  const int next = (r + 1) % p;
  const int prev = (r + p - 1) % p;
  COMM_OK(comm.Send(three, next, 9));
  std::vector<float> two_more = {1.0f, static_cast<float>(r)};
  COMM_OK(comm.Send(two_more, next, 9));
  COMM_REQUIRE(invalid(comm.Recv(two, prev, 9)), "Recv of a 3-float message into 2 floats");
  COMM_OK(comm.Recv(two, prev, 9));
  COMM_SAME(two, (std::vector<float>{1.0f, static_cast<float>(prev)}), "message after the error");
  // The communicator still works.
  COMM_OK(CheckRankAndSize(comm));
  return Status::Ok();
}

Status CheckTrafficCounters(Communicator& world) {
  Communicator& comm = world;
  const int r = world.rank();
  // A fresh duplicate counts from zero.
  auto dup = world.Split(0, r);
  COMM_OK(dup.status());
  Communicator& c = **dup;
  const int p = c.size();
  COMM_REQUIRE(c.stats().bytes_sent == 0 && c.stats().bytes_received == 0 && c.stats().calls == 0,
               "fresh communicator has traffic");
  CommTraffic want;
  auto add = [&](CommTraffic t) {
    want.bytes_sent += t.bytes_sent;
    want.bytes_received += t.bytes_received;
  };
  std::vector<float> buf(10 * p + 3);
  std::vector<float> big(p * 10);
  COMM_OK(c.AllReduce(buf));
  add(AllReduceTraffic(10 * p + 3, p, r));
  COMM_OK(c.AllGather(std::span<const float>(buf).first(10), big));
  add(AllGatherTraffic(10, p));
  std::vector<float> ten(10);
  COMM_OK(c.ReduceScatter(big, ten));
  add(ReduceScatterTraffic(10, p));
  std::vector<float> big2(p * 10);
  COMM_OK(c.AllToAll(big, big2));
  add(AllToAllTraffic(10, p));
  COMM_OK(c.Broadcast(buf, p - 1));
  add(BroadcastTraffic(10 * p + 3, p, r, p - 1));
  COMM_OK(c.Barrier());
  COMM_OK(c.Send(ten, (r + 1) % p, 1));
  COMM_OK(c.Recv(ten, (r + p - 1) % p, 1));
  add({40, 40});
  CommStats s = c.stats();
  COMM_REQUIRE(s.bytes_sent == want.bytes_sent && s.bytes_received == want.bytes_received,
               "counted " + N(s.bytes_sent) + "/" + N(s.bytes_received) + ", expected " +
                   N(want.bytes_sent) + "/" + N(want.bytes_received));
  COMM_REQUIRE(s.calls == 8, "calls " + N(s.calls));
  // With balanced blocks the all-reduce volume matches the ring formula 2 (p-1)/p n.
  const int64_t n = 12 * p;
  CommTraffic t = AllReduceTraffic(n, p, r);
  COMM_REQUIRE(t.bytes_sent == 4 * 2 * (p - 1) * n / p, "ring formula");
  return Status::Ok();
}

Status CheckStartAllReduce(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  const int64_t sizes[] = {0, 1, 7, 1000, 1025, 5003};
  for (ReduceOp op : kOps) {
    // Every size in flight at once (in place, or into another buffer), with blocking
    // collectives in between: each result equals the blocking AllReduce's bits.
    std::vector<std::vector<float>> data, outs;
    std::vector<CommRequest> requests;
    const CommStats before = comm.stats();
    CommTraffic want;
    for (int64_t n : sizes) {
      const int seed = 7000 + static_cast<int>(n) * 3 + static_cast<int>(op);
      data.push_back(Values(seed, r, n));
      outs.emplace_back(n, kSentinel);
      auto in_place = comm.StartAllReduce(data.back(), data.back(), op);
      COMM_OK(in_place.status());
      requests.push_back(std::move(in_place).value());
      const std::vector<float> in = Values(seed, r, n);  // alive until the Wait below
      auto copied = comm.StartAllReduce(in, outs.back(), op);
      COMM_OK(copied.status());
      COMM_OK(copied.value().Wait());
      for (int twice = 0; twice < 2; ++twice) {
        const CommTraffic t = AllReduceTraffic(n, p, r);
        want.bytes_sent += t.bytes_sent;
        want.bytes_received += t.bytes_received;
      }
      std::vector<float> blocking = Values(seed, r, n);
      COMM_OK(comm.AllReduce(blocking, op));
      COMM_SAME(outs.back(), blocking, "StartAllReduce vs AllReduce n=" + N(n));
      COMM_SAME(blocking, ReferenceReduce(seed, p, n, op), "AllReduce n=" + N(n));
      const CommTraffic t = AllReduceTraffic(n, p, r);
      want.bytes_sent += t.bytes_sent;
      want.bytes_received += t.bytes_received;
      COMM_OK(comm.Barrier());
    }
    for (size_t k = 0; k < requests.size(); ++k) {
      requests[k].Test();
      COMM_OK(requests[k].Wait());
      COMM_REQUIRE(requests[k].Test() && !requests[k].pending(), "request still pending");
      COMM_SAME(data[k], outs[k], "in-place StartAllReduce n=" + N(sizes[k]));
    }
    COMM_TRAFFIC(comm, before, want, std::string("StartAllReduce ") + ReduceOpName(op));
  }
  std::vector<float> a(3), b(4);
  COMM_REQUIRE(!comm.StartAllReduce(a, b).ok(), "sizes 3 and 4 accepted");
  return Status::Ok();
}

// Several reduce-scatters in flight at once (in place and into another buffer), with
// blocking collectives between: each gives the blocking ReduceScatter's bits, counted once.
Status CheckStartReduceScatter(Communicator& comm) {
  const int p = comm.size();
  const int r = comm.rank();
  for (ReduceOp op : kOps) {
    std::vector<std::vector<float>> ins, outs, whole;
    std::vector<CommRequest> requests;
    const CommStats before = comm.stats();
    CommTraffic want;
    const int64_t blocks[] = {0, 1, 5, 700};
    for (int64_t m : blocks) {
      const int seed = 9000 + static_cast<int>(m) * 5 + static_cast<int>(op);
      ins.push_back(Values(seed, r, p * m));
      outs.emplace_back(m, kSentinel);
      auto copied = comm.StartReduceScatter(ins.back(), outs.back(), op);
      COMM_OK(copied.status());
      requests.push_back(std::move(copied).value());
      whole.push_back(Values(seed, r, p * m));
      std::span<float> all(whole.back());
      auto in_place = comm.StartReduceScatter(all, all.subspan(r * m, m), op);
      COMM_OK(in_place.status());
      requests.push_back(std::move(in_place).value());
      COMM_OK(comm.Barrier());
      for (int twice = 0; twice < 2; ++twice) {
        const CommTraffic t = ReduceScatterTraffic(m, p);
        want.bytes_sent += t.bytes_sent;
        want.bytes_received += t.bytes_received;
      }
    }
    for (CommRequest& request : requests) {
      request.Test();
      COMM_OK(request.Wait());
      COMM_REQUIRE(request.Test() && !request.pending(), "request still pending");
    }
    for (size_t k = 0; k < ins.size(); ++k) {
      const int64_t m = blocks[k];
      const int seed = 9000 + static_cast<int>(m) * 5 + static_cast<int>(op);
      std::vector<float> blocking(m, kSentinel);
      COMM_OK(comm.ReduceScatter(Values(seed, r, p * m), blocking, op));
      COMM_SAME(outs[k], blocking, "StartReduceScatter vs ReduceScatter m=" + N(m));
      COMM_SAME(Slice(whole[k], r * m, m), blocking, "in-place StartReduceScatter m=" + N(m));
      COMM_SAME(blocking, Slice(ReferenceReduce(seed, p, p * m, op), r * m, m),
                "ReduceScatter m=" + N(m));
      const CommTraffic t = ReduceScatterTraffic(m, p);
      want.bytes_sent += t.bytes_sent;
      want.bytes_received += t.bytes_received;
    }
    COMM_TRAFFIC(comm, before, want, std::string("StartReduceScatter ") + ReduceOpName(op));
  }
  std::vector<float> a(3 * p + 1), b(3);
  COMM_REQUIRE(!comm.StartReduceScatter(a, b).ok(), "sizes 3p+1 and 3 accepted");
  return Status::Ok();
}

const std::vector<NamedCheck>& AllChecks() {
  static const std::vector<NamedCheck> checks = {
      {"RankAndSize", CheckRankAndSize},
      {"AllReduce", CheckAllReduce},
      {"AllGather", CheckAllGather},
      {"ReduceScatter", CheckReduceScatter},
      {"AllToAll", CheckAllToAll},
      {"AllToAllV", CheckAllToAllV},
      {"Broadcast", CheckBroadcast},
      {"SendRecv", CheckSendRecv},
      {"Barrier", CheckBarrier},
      {"Split", CheckSplit},
      {"GroupAlong", CheckGroupAlong},
      {"ConcurrentGroups", CheckConcurrentGroups},
      {"Determinism", CheckDeterminism},
      {"LocalErrors", CheckLocalErrors},
      {"TrafficCounters", CheckTrafficCounters},
      {"StartAllReduce", CheckStartAllReduce},
      {"StartReduceScatter", CheckStartReduceScatter},
  };
  return checks;
}

}  // namespace shardscope::comm_test
