// The suite of the redistribution benchmark (bench_redistribution_suite.h says what it holds).
#include "bench_redistribution_suite.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "shardscope/layout/mesh.h"

namespace shardscope::bench_redist {

namespace {

int RandInt(std::mt19937& rng, int lo, int hi) {  // inclusive
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
double Uniform(std::mt19937& rng) { return std::uniform_real_distribution<double>(0, 1)(rng); }

// `devices` (a power of two) as `axes` power-of-two axes, a random composition of log2(devices).
Shape RandomMeshShape(std::mt19937& rng, int devices, int axes) {
  int log2 = 0;
  while ((1 << log2) < devices) ++log2;
  std::vector<int> cuts;  // axes-1 distinct cut points in 1..log2-1
  std::vector<int> points(log2 - 1);
  for (int i = 0; i < log2 - 1; ++i) points[i] = i + 1;
  std::shuffle(points.begin(), points.end(), rng);
  cuts.assign(points.begin(), points.begin() + (axes - 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(log2);
  Shape shape;
  int prev = 0;
  for (int c : cuts) {
    shape.push_back(int64_t{1} << (c - prev));
    prev = c;
  }
  return shape;
}

struct Roles {
  DimAxes dims;
  std::vector<int> partial;
};

// Every axis of a mesh with `axes` axes becomes a replica, a partial axis (with probability
// `partial_p`) or a split of a random dimension; each dimension's axes in random order.
Roles RandomRoles(std::mt19937& rng, int axes, int rank, double partial_p) {
  Roles r;
  r.dims.assign(rank, {});
  for (int a = 0; a < axes; ++a) {
    const double u = Uniform(rng);
    if (u < partial_p) {
      r.partial.push_back(a);
    } else if (u < partial_p + 0.2) {
      // replica
    } else {
      r.dims[RandInt(rng, 0, rank - 1)].push_back(a);
    }
  }
  for (auto& d : r.dims) std::shuffle(d.begin(), d.end(), rng);
  return r;
}

// `base` with one or two axes given a new random role (and, sometimes, its partial sums
// reduced), so that the target resembles the source.
Roles Perturb(std::mt19937& rng, Roles base, int axes, int rank, bool to_partial_ok) {
  if (!base.partial.empty() && Uniform(rng) < 0.7) base.partial.clear();
  const int moves = RandInt(rng, 1, 2);
  for (int m = 0; m < moves; ++m) {
    const int a = RandInt(rng, 0, axes - 1);
    for (auto& d : base.dims) d.erase(std::remove(d.begin(), d.end(), a), d.end());
    base.partial.erase(std::remove(base.partial.begin(), base.partial.end(), a),
                       base.partial.end());
    const double u = Uniform(rng);
    if (to_partial_ok && u < 0.15) {
      base.partial.push_back(a);
    } else if (u < 0.35) {
      // replica
    } else {
      auto& d = base.dims[RandInt(rng, 0, rank - 1)];
      d.insert(d.begin() + RandInt(rng, 0, static_cast<int>(d.size())), a);
    }
  }
  return base;
}

int64_t SplitFactor(const Shape& mesh_shape, const std::vector<int>& axes) {
  int64_t f = 1;
  for (int a : axes) f *= mesh_shape[a];
  return f;
}

std::vector<Pair> MakeSuite(int devices, int axes) {
  std::mt19937 rng(static_cast<uint32_t>(1000003u * devices + 7919u * axes + 17u));
  std::vector<Pair> suite;
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  while (static_cast<int>(suite.size()) < g_pairs) {
    const Shape from_shape = RandomMeshShape(rng, devices, axes);
    const std::vector<std::string> from_names(names.begin(), names.begin() + axes);
    // Target mesh: the same or a regrouping merging axes i and i+1 (same rank order).
    Shape to_shape = from_shape;
    std::vector<std::string> to_names = from_names;
    bool regrouped = false;
    if (axes >= 2 && Uniform(rng) < 0.2) {
      const int i = RandInt(rng, 0, axes - 2);
      to_shape[i] *= to_shape[i + 1];
      to_shape.erase(to_shape.begin() + i + 1);
      to_names[i] = to_names[i] + to_names[i + 1];
      to_names.erase(to_names.begin() + i + 1);
      regrouped = true;
    }
    const int rank = RandInt(rng, 1, 4);
    const double from_partial_p = Uniform(rng) < 0.35 ? 0.3 : 0.0;
    const double to_partial_p = Uniform(rng) < 0.1 ? 0.25 : 0.0;
    const Roles from = RandomRoles(rng, axes, rank, from_partial_p);
    const int to_axes = static_cast<int>(to_shape.size());
    const Roles to = (!regrouped && Uniform(rng) < 0.5)
                         ? Perturb(rng, from, axes, rank, to_partial_p > 0)
                         : RandomRoles(rng, to_axes, rank, to_partial_p);
    Shape tensor(rank);
    for (int d = 0; d < rank; ++d) {
      tensor[d] =
          std::max(SplitFactor(from_shape, from.dims[d]), SplitFactor(to_shape, to.dims[d])) *
          RandInt(rng, 1, 4);
    }
    auto from_mesh = DeviceMesh::Create(from_shape, from_names);
    auto to_mesh = DeviceMesh::Create(to_shape, to_names);
    if (!from_mesh.ok() || !to_mesh.ok()) std::abort();
    auto a = Layout::Create(*from_mesh, from.dims, from.partial, tensor);
    auto b = Layout::Create(*to_mesh, to.dims, to.partial, tensor);
    if (!a.ok() || !b.ok()) {
      std::fprintf(stderr, "suite: %s\n", (a.ok() ? b.status() : a.status()).message().c_str());
      std::abort();
    }
    suite.push_back({*a, *b, regrouped});
  }
  return suite;
}

}  // namespace

// The classes: 8 devices have at most 3 power-of-two axes.
const std::vector<std::pair<int, int>>& Classes() {
  static const std::vector<std::pair<int, int>> classes = [] {
    std::vector<std::pair<int, int>> c;
    for (int devices : {8, 64, 512, 1024}) {
      int log2 = 0;
      while ((1 << log2) < devices) ++log2;
      for (int axes = 1; axes <= std::min(4, log2); ++axes) c.emplace_back(devices, axes);
    }
    return c;
  }();
  return classes;
}

const std::vector<Pair>& Suite(int devices, int axes) {
  static std::map<std::pair<int, int>, std::vector<Pair>> suites;
  auto it = suites.find({devices, axes});
  if (it == suites.end())
    it = suites.emplace(std::make_pair(devices, axes), MakeSuite(devices, axes)).first;
  return it->second;
}

}  // namespace shardscope::bench_redist
