// The seeded suite of random layout pairs the redistribution benchmark plans.
// Suite. For every (devices, axes) class, --pairs pairs (default 200) drawn from one
// std::mt19937 seeded from the class (so the suite is the same on every run; the distributions
// are libstdc++'s):
//   - the source mesh: `devices` split into `axes` power-of-two axes (random composition);
//   - the target mesh: the same, or (1 pair in 5, when axes >= 2) a regrouping that merges
//     two adjacent axes, so the planner has to unify the meshes;
//   - tensors of 1 to 4 dimensions; each mesh axis is a replica, a partial-sum axis (partial
//     sums in the source of about 1 pair in 5, in the target of 1 in 20), or splits a random
//     dimension, in random order inside the dimension (so multi-axis dimensions are common);
//   - the target is either independent of the source or (half the same-mesh pairs) the source
//     with one or two axes moved, which is what consecutive operators usually need;
//   - every dimension is a multiple (x1..x4) of the larger of its two split factors.
#pragma once

#include <utility>
#include <vector>

#include "shardscope/layout/layout.h"

namespace shardscope::bench_redist {

inline int g_pairs = 200;  // pairs per (devices, axes) class (--pairs)

// The classes (devices, axes): 8, 64, 512 and 1024 devices with 1 to 4 power-of-two axes.
const std::vector<std::pair<int, int>>& Classes();

struct Pair {
  Layout from;
  Layout to;
  bool regrouped = false;  // the target mesh merges two source axes
};

// The pairs of one class, made on first use (the same on every run).
const std::vector<Pair>& Suite(int devices, int axes);

}  // namespace shardscope::bench_redist
