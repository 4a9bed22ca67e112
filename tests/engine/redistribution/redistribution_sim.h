// Test support for the redistribution tests: random meshes and layouts, and a simulated
// executor that applies a plan's steps to the real shards of all ranks held in memory
// (no threads, no communicator), written independently of the planner.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "shardscope/base/prime_factors.h"
#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::redist_test {

inline DeviceMesh MakeMesh(Shape shape, std::vector<std::string> names,
                           std::vector<int> ranks = {}) {
  Result<DeviceMesh> m = DeviceMesh::Create(std::move(shape), std::move(names), std::move(ranks));
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : DeviceMesh();
}

inline Layout MakeLayout(const DeviceMesh& mesh, DimAxes dims, std::vector<int> partial,
                         Shape shape) {
  Result<Layout> l = Layout::Create(mesh, std::move(dims), std::move(partial), std::move(shape));
  EXPECT_TRUE(l.ok()) << l.status().message();
  return l.ok() ? *l : Layout();
}

inline Layout Spec(const DeviceMesh& mesh, const std::string& spec, const Shape& shape) {
  Result<Layout> l = ParseLayoutSpec(spec, mesh, shape);
  EXPECT_TRUE(l.ok()) << l.status().message();
  return l.ok() ? *l : Layout();
}

// ---------------------------------------------------------------------------------------
// Random cases.

inline std::vector<std::string> NamePool(std::mt19937& rng) {
  std::vector<std::string> pool = {"dp", "sp", "mp", "pp", "ep", "tp", "x0", "row", "col"};
  std::shuffle(pool.begin(), pool.end(), rng);
  return pool;
}

// A random mesh of up to 4 axes (sizes 1..4) and at most 16 devices.
inline DeviceMesh RandomMesh(std::mt19937& rng, bool explicit_ranks, int max_devices = 16) {
  std::vector<std::string> pool = NamePool(rng);
  const int num_axes = std::uniform_int_distribution<int>(0, 4)(rng);
  Shape shape;
  std::vector<std::string> names;
  int64_t total = 1;
  for (int a = 0; a < num_axes; ++a) {
    std::vector<int64_t> options;
    for (int64_t s = 1; s <= 4; ++s) {
      if (total * s <= max_devices) options.push_back(s);
    }
    const int64_t s = options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
    shape.push_back(s);
    names.push_back(pool[a]);
    total *= s;
  }
  std::vector<int> ranks;
  if (explicit_ranks) {
    ranks.resize(total);
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), rng);
  }
  return MakeMesh(shape, names, ranks);
}

// A mesh over the same ranks as `mesh` that is a regrouping of it: its axes are cut into
// prime digits, the digits shuffled and grouped into new axes (new names); the rank list
// follows. Always unifiable with `mesh`.
inline DeviceMesh RegroupedMesh(std::mt19937& rng, const DeviceMesh& mesh) {
  // Digits of `mesh`, most significant first per axis.
  struct D {
    int axis;
    int64_t size, below;
  };
  std::vector<D> digits;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    std::vector<int64_t> f = PrimeFactors(mesh.axis_size(a));
    std::shuffle(f.begin(), f.end(), rng);
    int64_t below = mesh.axis_size(a);
    for (int64_t x : f) {
      below /= x;
      digits.push_back({a, x, below});
    }
  }
  std::shuffle(digits.begin(), digits.end(), rng);
  // Group into axes (runs), maybe with a size-1 axis thrown in.
  std::vector<std::vector<int>> groups;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (groups.empty() || std::bernoulli_distribution(0.5)(rng)) groups.emplace_back();
    groups.back().push_back(static_cast<int>(i));
  }
  if (std::bernoulli_distribution(0.2)(rng)) {
    groups.insert(groups.begin() + std::uniform_int_distribution<size_t>(0, groups.size())(rng),
                  std::vector<int>{});
  }
  std::vector<std::string> pool = {"a", "b", "c", "d", "e", "f", "g", "h", "k", "q"};
  Shape shape;
  std::vector<std::string> names;
  for (size_t g = 0; g < groups.size(); ++g) {
    int64_t s = 1;
    for (int i : groups[g]) s *= digits[i].size;
    shape.push_back(s);
    names.push_back(pool[g]);
  }
  // Rank at each position of the new mesh.
  const int n = mesh.size();
  std::vector<int> ranks(n);
  for (int pos = 0; pos < n; ++pos) {
    // Digit values of this position (row-major over groups, digits major first).
    std::vector<int64_t> value(digits.size());
    int64_t rest = pos;
    for (int g = static_cast<int>(groups.size()) - 1; g >= 0; --g) {
      for (int k = static_cast<int>(groups[g].size()) - 1; k >= 0; --k) {
        const int i = groups[g][k];
        value[i] = rest % digits[i].size;
        rest /= digits[i].size;
      }
    }
    std::vector<int64_t> coords(mesh.num_axes(), 0);
    for (size_t i = 0; i < digits.size(); ++i) coords[digits[i].axis] += value[i] * digits[i].below;
    ranks[pos] = mesh.rank_at(coords);
  }
  return MakeMesh(shape, names, ranks);
}

// A random factorisation of the same device count with a random rank list (usually not a
// regrouping of anything related).
inline DeviceMesh UnrelatedMesh(std::mt19937& rng, int size) {
  std::vector<int64_t> f = PrimeFactors(size);
  std::shuffle(f.begin(), f.end(), rng);
  Shape shape;
  for (int64_t x : f) {
    if (shape.empty() || std::bernoulli_distribution(0.5)(rng)) {
      shape.push_back(x);
    } else {
      shape.back() *= x;
    }
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < shape.size(); ++i) names.push_back("u" + std::to_string(i));
  std::vector<int> ranks(size);
  std::iota(ranks.begin(), ranks.end(), 0);
  std::shuffle(ranks.begin(), ranks.end(), rng);
  return MakeMesh(shape, names, ranks);
}

// Random axis assignment of `mesh` to `rank` dims (random order within a dim), some axes
// partial when allowed.
inline void RandomAssignment(std::mt19937& rng, const DeviceMesh& mesh, int rank, bool partial_ok,
                             DimAxes* dims, std::vector<int>* partial, double partial_prob = 0.5) {
  dims->assign(rank, {});
  partial->clear();
  std::vector<int> axes(mesh.num_axes());
  std::iota(axes.begin(), axes.end(), 0);
  std::shuffle(axes.begin(), axes.end(), rng);
  for (int a : axes) {
    const int choice = std::uniform_int_distribution<int>(-2, rank - 1)(rng);
    if (choice >= 0) {
      (*dims)[choice].push_back(a);
    } else if (choice == -1 && partial_ok && std::bernoulli_distribution(partial_prob)(rng)) {
      partial->push_back(a);
    }
  }
}

struct Case {
  Layout from, to;
};

inline int64_t Lcm(int64_t a, int64_t b) { return a / std::gcd(a, b) * b; }

// A random case: source mesh (explicit ranks sometimes), target mesh the same (most often),
// a regrouping, or unrelated; tensors up to 4-D; partial sums when allowed.
// `scale`: dimension sizes are the needed multiple times 1..scale.
inline Case RandomCase(std::mt19937& rng, bool partial_ok, int max_devices = 16, int scale = 2) {
  const DeviceMesh m1 = RandomMesh(rng, std::bernoulli_distribution(0.3)(rng), max_devices);
  const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
  const DeviceMesh m2 = kind < 6   ? m1
                        : kind < 9 ? RegroupedMesh(rng, m1)
                                   : UnrelatedMesh(rng, m1.size());
  const int rank = std::uniform_int_distribution<int>(0, 4)(rng);
  DimAxes d1, d2;
  std::vector<int> p1, p2;
  RandomAssignment(rng, m1, rank, partial_ok, &d1, &p1, 0.7);
  RandomAssignment(rng, m2, rank, partial_ok && std::bernoulli_distribution(0.3)(rng), &d2, &p2);
  Shape shape(rank);
  for (int d = 0; d < rank; ++d) {
    shape[d] = Lcm(m1.GroupSize(d1[d]), m2.GroupSize(d2[d])) *
               std::uniform_int_distribution<int64_t>(1, scale)(rng);
  }
  return {MakeLayout(m1, d1, p1, shape), MakeLayout(m2, d2, p2, shape)};
}

// ---------------------------------------------------------------------------------------
// Simulated execution.

// The global tensor: small integers (sums of addends stay exact in double).
inline double GlobalValue(int64_t linear) { return static_cast<double>((linear * 37 + 11) % 101); }
// Addend k (of `count`) of element `linear`: small integers summing to GlobalValue.
inline double Addend(int64_t linear, int64_t k, int64_t count) {
  auto part = [&](int64_t j) { return static_cast<double>((linear * 7 + j * 13) % 11 - 5); };
  if (k < count - 1) return part(k);
  double rest = GlobalValue(linear);
  for (int64_t j = 0; j < count - 1; ++j) rest -= part(j);
  return rest;
}

struct SimShard {
  std::vector<int64_t> lo;
  Shape ext;
  std::vector<double> v;
};

inline int64_t LinearOf(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t l = 0;
  for (size_t d = 0; d < shape.size(); ++d) l = l * shape[d] + idx[d];
  return l;
}

// Calls f(local multi-index, global multi-index) over a box.
template <typename F>
void ForBox(const std::vector<int64_t>& lo, const Shape& ext, F f) {
  const size_t d = ext.size();
  if (NumElements(ext) == 0) return;
  std::vector<int64_t> i(d, 0), g(d);
  while (true) {
    for (size_t k = 0; k < d; ++k) g[k] = lo[k] + i[k];
    f(i, g);
    int k = static_cast<int>(d) - 1;
    while (k >= 0 && ++i[k] == ext[k]) i[k--] = 0;
    if (k < 0) break;
  }
}

inline SimShard InitialShard(const Layout& l, int r) {
  SimShard s;
  s.lo = l.ShardOffsets(r);
  s.ext = l.ShardShape();
  s.v.assign(NumElements(s.ext), 0);
  const int64_t count = l.PartialFactor();
  const int64_t k = l.mesh().IndexInGroup(r, l.partial_axes());
  ForBox(s.lo, s.ext, [&](const std::vector<int64_t>& li, const std::vector<int64_t>& gi) {
    const int64_t lin = LinearOf(l.shape(), gi);
    s.v[LinearOf(s.ext, li)] = count > 1 ? Addend(lin, k, count) : GlobalValue(lin);
  });
  return s;
}

inline bool Contains(const SimShard& s, const std::vector<int64_t>& lo, const Shape& ext) {
  for (size_t d = 0; d < ext.size(); ++d) {
    if (ext[d] == 0) continue;
    if (lo[d] < s.lo[d] || lo[d] + ext[d] > s.lo[d] + s.ext[d]) return false;
  }
  return true;
}

inline double At(const SimShard& s, const std::vector<int64_t>& g) {
  std::vector<int64_t> li(g.size());
  for (size_t d = 0; d < g.size(); ++d) li[d] = g[d] - s.lo[d];
  return s.v[LinearOf(s.ext, li)];
}

inline SimShard Extract(const SimShard& s, const std::vector<int64_t>& lo, const Shape& ext) {
  SimShard out{lo, ext, std::vector<double>(NumElements(ext))};
  ForBox(lo, ext, [&](const std::vector<int64_t>& li, const std::vector<int64_t>& gi) {
    out.v[LinearOf(ext, li)] = At(s, gi);
  });
  return out;
}

// Concatenation of `parts` along `dim` (they must be adjacent, in order, and agree elsewhere).
inline bool Concat(const std::vector<SimShard>& parts, int dim, SimShard* out, std::string* why) {
  SimShard r = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const SimShard& q = parts[i];
    for (size_t d = 0; d < r.ext.size(); ++d) {
      if (static_cast<int>(d) == dim) continue;
      if (q.lo[d] != r.lo[d] || q.ext[d] != r.ext[d]) {
        *why = "concat: parts disagree on dim " + std::to_string(d);
        return false;
      }
    }
    if (q.lo[dim] != r.lo[dim] + r.ext[dim]) {
      *why =
          "concat: part " + std::to_string(i) + " is not adjacent along dim " + std::to_string(dim);
      return false;
    }
    r.ext[dim] += q.ext[dim];
  }
  r.v.assign(NumElements(r.ext), 0);
  for (const SimShard& q : parts) {
    ForBox(q.lo, q.ext, [&](const std::vector<int64_t>& li, const std::vector<int64_t>& gi) {
      std::vector<int64_t> ri(gi.size());
      for (size_t d = 0; d < gi.size(); ++d) ri[d] = gi[d] - r.lo[d];
      r.v[LinearOf(r.ext, ri)] = q.v[LinearOf(q.ext, li)];
    });
  }
  *out = std::move(r);
  return true;
}

// Chunk j of p along dim.
inline SimShard Chunk(const SimShard& s, int dim, int64_t p, int64_t j) {
  std::vector<int64_t> lo = s.lo;
  Shape ext = s.ext;
  ext[dim] /= p;
  lo[dim] += j * ext[dim];
  return Extract(s, lo, ext);
}

inline bool SameBox(const SimShard& s, const Layout& l, int r) {
  return s.lo == l.ShardOffsets(r) && s.ext == l.ShardShape();
}

struct SimResult {
  bool ok = true;
  std::string error;
  std::vector<int64_t> recv;    // counted bytes received per rank
  int64_t max_shard_elems = 0;  // largest buffer any rank held at any time
};

// Applies every step of `plan` to all ranks' shards and checks the result against the
// target (exact values; partial targets checked through the sums of their addends).
inline SimResult Simulate(const RedistPlan& plan) {
  SimResult res;
  const Layout& from = plan.from;
  const int n = from.mesh().size();
  const int64_t eb = plan.element_bytes;
  res.recv.assign(n, 0);
  std::vector<SimShard> sh(n);
  for (int r = 0; r < n; ++r) sh[r] = InitialShard(from, r);
  auto fail = [&](size_t step, const std::string& msg) {
    res.ok = false;
    res.error = "step " + std::to_string(step + 1) + ": " + msg;
    return res;
  };
  auto track = [&]() {
    for (int r = 0; r < n; ++r)
      res.max_shard_elems = std::max<int64_t>(res.max_shard_elems, sh[r].v.size());
  };
  track();
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const RedistStep& st = plan.steps[k];
    const Layout& after = st.after;
    std::vector<SimShard> next = sh;
    std::string why;
    using K = RedistStep::Kind;
    if (st.kind == K::kLocalSlice) {
      std::vector<bool> zero(n, false);
      for (int r : st.zero_ranks) zero[r] = true;
      for (int r = 0; r < n; ++r) {
        const std::vector<int64_t> lo = after.ShardOffsets(r);
        const Shape ext = after.ShardShape();
        if (zero[r]) {
          next[r] = SimShard{lo, ext, std::vector<double>(NumElements(ext), 0.0)};
          continue;
        }
        if (!Contains(sh[r], lo, ext)) return fail(k, "slice outside the local shard");
        next[r] = Extract(sh[r], lo, ext);
      }
    } else if (!st.irregular() && (st.kind == K::kAllGather || st.kind == K::kAllToAll ||
                                   st.kind == K::kReduceScatter || st.kind == K::kAllReduce)) {
      std::vector<int> seen(n, 0);
      for (const std::vector<int>& g : st.groups) {
        const int64_t p = static_cast<int64_t>(g.size());
        for (int r : g) seen[r]++;
        if (st.kind == K::kAllGather) {
          std::vector<SimShard> parts;
          for (int r : g) parts.push_back(sh[r]);
          SimShard cat;
          if (!Concat(parts, st.dim, &cat, &why)) return fail(k, why);
          for (int r : g) {
            next[r] = cat;
            res.recv[r] += (p - 1) * static_cast<int64_t>(sh[r].v.size()) * eb;
          }
        } else if (st.kind == K::kAllToAll) {
          for (int64_t j = 0; j < p; ++j) {
            std::vector<SimShard> parts;
            for (int64_t i = 0; i < p; ++i) {
              if (sh[g[i]].ext[st.dim_to] % p) return fail(k, "all-to-all: uneven chunks");
              parts.push_back(Chunk(sh[g[i]], st.dim_to, p, j));
              if (i != j) res.recv[g[j]] += static_cast<int64_t>(parts.back().v.size()) * eb;
            }
            if (!Concat(parts, st.dim, &next[g[j]], &why)) return fail(k, why);
          }
        } else {
          for (int r : g) {
            if (sh[r].lo != sh[g[0]].lo || sh[r].ext != sh[g[0]].ext)
              return fail(k, "reduction over ranks holding different boxes");
          }
          SimShard sum = sh[g[0]];
          for (size_t i = 1; i < g.size(); ++i) {
            for (size_t e = 0; e < sum.v.size(); ++e) sum.v[e] += sh[g[i]].v[e];
          }
          const int64_t elems = static_cast<int64_t>(sum.v.size());
          for (int64_t j = 0; j < p; ++j) {
            if (st.kind == K::kReduceScatter) {
              if (sum.ext[st.dim] % p) return fail(k, "reduce-scatter: uneven chunks");
              next[g[j]] = Chunk(sum, st.dim, p, j);
              res.recv[g[j]] += (elems - elems / p) * eb;
            } else {
              next[g[j]] = sum;
              const int64_t block = elems / p + (j < elems % p ? 1 : 0);
              res.recv[g[j]] += (elems + (p - 2) * block) * eb;
            }
          }
        }
      }
      for (int r = 0; r < n; ++r) {
        if (seen[r] != 1)
          return fail(k,
                      "rank " + std::to_string(r) + " in " + std::to_string(seen[r]) + " groups");
      }
    } else if (st.irregular() && (st.kind == K::kReduceScatter || st.kind == K::kAllReduce)) {
      // Each destination adds the others' addends of its box to its own.
      std::vector<std::vector<int>> count(n);
      for (int r = 0; r < n; ++r) {
        next[r].lo = after.ShardOffsets(r);
        next[r].ext = after.ShardShape();
        next[r].v.assign(NumElements(next[r].ext), 0);
        count[r].assign(next[r].v.size(), 0);
      }
      std::vector<bool> zero(n, false);
      for (int r : st.zero_ranks) zero[r] = true;
      for (int r = 0; r < n; ++r) {
        if (zero[r] || next[r].v.empty()) continue;
        if (!Contains(sh[r], next[r].lo, next[r].ext))
          return fail(k, "reduce-scatter-v: rank " + std::to_string(r) + " lacks its own addend");
        next[r] = Extract(sh[r], next[r].lo, next[r].ext);
        for (int& c : count[r]) c = 1;
      }
      for (const RedistTransfer& t : st.transfers) {
        if (zero[t.dst]) return fail(k, "a zero rank receives data");
        if (!Contains(sh[t.src], t.offset, t.extent))
          return fail(k,
                      "reduce-scatter-v from rank " + std::to_string(t.src) + " of data it lacks");
        ForBox(t.offset, t.extent,
               [&](const std::vector<int64_t>&, const std::vector<int64_t>& gi) {
                 std::vector<int64_t> li(gi.size());
                 for (size_t d = 0; d < gi.size(); ++d) li[d] = gi[d] - next[t.dst].lo[d];
                 next[t.dst].v[LinearOf(next[t.dst].ext, li)] += At(sh[t.src], gi);
                 count[t.dst][LinearOf(next[t.dst].ext, li)]++;
               });
        res.recv[t.dst] += NumElements(t.extent) * eb;
      }
      for (const std::vector<int>& g : st.groups) {
        for (int r : g) {
          if (zero[r]) continue;
          for (int c : count[r]) {
            if (c != static_cast<int>(g.size()))
              return fail(k, "reduce-scatter-v: rank " + std::to_string(r) + " sums " +
                                 std::to_string(c) + " addends, group has " +
                                 std::to_string(g.size()));
          }
        }
      }
    } else if (st.irregular()) {
      std::vector<std::vector<int>> cover(n);
      std::vector<bool> zero(n, false);
      for (int r : st.zero_ranks) zero[r] = true;
      for (int r = 0; r < n; ++r) {
        next[r].lo = after.ShardOffsets(r);
        next[r].ext = after.ShardShape();
        next[r].v.assign(NumElements(next[r].ext), 0);
        cover[r].assign(next[r].v.size(), 0);
        if (zero[r]) continue;
        // What this rank keeps.
        ForBox(next[r].lo, next[r].ext,
               [&](const std::vector<int64_t>& li, const std::vector<int64_t>& gi) {
                 bool inside = true;
                 for (size_t d = 0; d < gi.size(); ++d) {
                   inside &= gi[d] >= sh[r].lo[d] && gi[d] < sh[r].lo[d] + sh[r].ext[d];
                 }
                 if (inside) {
                   next[r].v[LinearOf(next[r].ext, li)] = At(sh[r], gi);
                   cover[r][LinearOf(next[r].ext, li)]++;
                 }
               });
      }
      for (const RedistTransfer& t : st.transfers) {
        if (zero[t.dst]) return fail(k, "a zero rank receives data");
        if (!Contains(sh[t.src], t.offset, t.extent))
          return fail(k, "transfer from rank " + std::to_string(t.src) + " of data it lacks");
        if (!Contains(next[t.dst], t.offset, t.extent))
          return fail(k, "transfer to rank " + std::to_string(t.dst) + " outside its new shard");
        if (t.src == t.dst) return fail(k, "transfer to itself");
        ForBox(t.offset, t.extent,
               [&](const std::vector<int64_t>&, const std::vector<int64_t>& gi) {
                 std::vector<int64_t> li(gi.size());
                 for (size_t d = 0; d < gi.size(); ++d) li[d] = gi[d] - next[t.dst].lo[d];
                 next[t.dst].v[LinearOf(next[t.dst].ext, li)] = At(sh[t.src], gi);
                 cover[t.dst][LinearOf(next[t.dst].ext, li)]++;
               });
        res.recv[t.dst] += NumElements(t.extent) * eb;
      }
      for (int r = 0; r < n; ++r) {
        if (zero[r]) continue;
        for (int c : cover[r]) {
          if (c != 1)
            return fail(k, "rank " + std::to_string(r) + " has an element covered " +
                               std::to_string(c) + " times");
        }
      }
    } else if (st.kind == K::kLocalReshape) {
      for (int r : st.zero_ranks) {
        next[r] = SimShard{after.ShardOffsets(r), after.ShardShape(),
                           std::vector<double>(NumElements(after.ShardShape()), 0.0)};
      }
    } else {
      return fail(k, "unknown step kind " + st.KindName());
    }
    for (int r = 0; r < n; ++r) {
      if (!SameBox(next[r], after, r)) {
        return fail(k, st.KindName() + ": rank " + std::to_string(r) +
                           " does not hold its block of the layout after the step (" +
                           after.ToString() + ")");
      }
    }
    sh = std::move(next);
    track();
  }
  // Final check against the target.
  const Layout& to = plan.to;
  for (int r = 0; r < n; ++r) {
    if (!SameBox(sh[r], to, r))
      return fail(plan.steps.size(), "final box mismatch on rank " + std::to_string(r));
    const std::vector<int> group = to.PartialGroup(r);
    bool bad = false;
    ForBox(sh[r].lo, sh[r].ext,
           [&](const std::vector<int64_t>& li, const std::vector<int64_t>& gi) {
             double sum = 0;
             for (int q : group) sum += sh[q].v[LinearOf(sh[q].ext, li)];
             if (sum != GlobalValue(LinearOf(to.shape(), gi))) bad = true;
           });
    if (bad) return fail(plan.steps.size(), "wrong values on rank " + std::to_string(r));
  }
  return res;
}

// The move part of the lower bound computed directly from the two layouts: per rank, the
// elements of its target box outside its source box (0 for ranks that end as zero addends of
// a new partial sum: nonzero index along a target partial axis when the source is not partial).
inline std::vector<int64_t> DirectMoveBound(const Layout& from, const Layout& to, int64_t eb) {
  const int n = from.mesh().size();
  std::vector<int64_t> out(n);
  for (int r = 0; r < n; ++r) {
    const std::vector<int64_t> slo = from.ShardOffsets(r), tlo = to.ShardOffsets(r);
    const Shape sx = from.ShardShape(), tx = to.ShardShape();
    int64_t inter = 1;
    for (size_t d = 0; d < sx.size(); ++d) {
      inter *=
          std::max<int64_t>(0, std::min(slo[d] + sx[d], tlo[d] + tx[d]) - std::max(slo[d], tlo[d]));
    }
    out[r] = (NumElements(tx) - inter) * eb;
    if (to.is_partial() && !from.is_partial() &&
        to.mesh().IndexInGroup(r, to.partial_axes()) != 0) {
      out[r] = 0;
    }
  }
  return out;
}

}  // namespace shardscope::redist_test
