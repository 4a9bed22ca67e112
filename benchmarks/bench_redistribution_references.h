// Reference plans the redistribution benchmark compares the planner with, as per-rank bytes.
// Both work on the two layouts expressed on one mesh (the unified mesh when the meshes
// differ), so that "the same axis" means the same thing in both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"

namespace shardscope::bench_redist {

constexpr int64_t kElementBytes = 4;

struct Unified {
  Layout from;
  Layout to;
};

// Both layouts on one mesh (aborts if the meshes do not unify: the suite's always do).
Unified Unify(const Layout& from, const Layout& to);

// Per-rank bytes received by a sequence of collectives on one mesh.
struct RecvTally {
  explicit RecvTally(const DeviceMesh& mesh) : mesh(mesh), per_rank(mesh.size(), 0) {}
  // All-reduce of `count` elements over the groups along `axes` (counted as the communicator
  // counts it: balanced blocks, ring bytes).
  void AllReduce(int64_t count, const std::vector<int>& axes) {
    const int p = static_cast<int>(mesh.GroupSize(axes));
    if (p == 1) return;
    for (int r = 0; r < mesh.size(); ++r) {
      const int index = static_cast<int>(mesh.IndexInGroup(r, axes));
      per_rank[r] += AllReduceTraffic(count, p, index).bytes_received;
    }
  }
  // All-gather of `count` elements per rank over groups of `k` ranks.
  void AllGather(int64_t count, int64_t k) {
    for (int64_t& b : per_rank) b += (k - 1) * count * kElementBytes;
  }
  int64_t Total() const {
    int64_t t = 0;
    for (int64_t b : per_rank) t += b;
    return t;
  }
  int64_t Max() const { return *std::max_element(per_rank.begin(), per_rank.end()); }
  const DeviceMesh& mesh;
  std::vector<int64_t> per_rank;
};

// Naive plan: all-reduce the partial sums, all-gather to a full copy, slice locally.
RecvTally NaiveRecv(const Unified& u);

// A per-dimension split / concat rule loop modelled on MindSpore's, without all-to-all.
RecvTally RulesLoopRecv(const Unified& u);

}  // namespace shardscope::bench_redist
