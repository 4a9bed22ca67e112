// Redistribution planner (issue 3): planning time per layout pair and bytes planned, on a fixed
// seeded suite of random layout pairs for meshes of 8, 64, 512 and 1024 devices with 1 to 4
// axes (see benchmarks/README.md for the figures).
//
//   build/bin/bench_redistribution                                  # timing + bytes tables
//   build/bin/bench_redistribution --benchmark_filter='/1024/'      # one size class
//   build/bin/bench_redistribution --visits=9 --slowest=10          # more samples per pair
//   build/bin/bench_redistribution --bytes=0                        # timing table only
//   build/bin/bench_redistribution --explain=1024/4/56              # one pair: plan, references
//   build/bin/bench_redistribution --explain=1024/4/56,512/4/3 --repeat=1000  # a mix, for perf
//   build/bin/bench_redistribution --median-pairs=10                # also the pairs at the median
//   build/bin/bench_redistribution --benchmark_filter=NONE          # bytes table only
//
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
//
// Timing. Each benchmark iteration plans one pair of its class (cycling over the suite), with
// the planner's defaults (CostModel{}, RedistOptions{}); every call (plan built and destroyed)
// is timed by the steady clock and by the thread's CPU clock (the machine is shared: CPU
// time is the robust figure). A pair's time is the median of its visits (--visits; default 5
// up to 64 devices, 3 from 512); the iteration count is pairs x visits. Counters: median and
// p99 over pairs (wall and CPU); Google Benchmark's own time column is the mean over all calls.
//
// Bytes. Every pair is planned once more (outside the timing) and its total bytes received
// (summed over ranks) compared with three references, all per rank then summed:
//   ours   RedistPlan::total_planned_bytes;
//   ours a=0  the same planned with CostModel::latency_s = 0 (only for pairs where ours is
//          above the bound: there the planner trades bytes for fewer messages, and a=0 shows
//          what it reaches on bytes alone);
//   naive  all-reduce the partial sums, all-gather to a fully replicated tensor, slice locally;
//   rules  a per-dimension split / concat rule loop modelled on MindSpore's
//          RedistributionOperatorInfer, without its all-to-all rule (RulesLoopRecv below);
//   bound  RedistPlan::total_lower_bound_bytes (RedistributionLowerBound).
// Collective traffic is counted like the communicator counts it (communicator.h): an
// all-gather of s elements per rank over k ranks receives (k-1)s, an all-reduce of s elements
// over p ranks receives AllReduceTraffic(s, p, index) (the ring formula 2(p-1)/p s up to
// balanced-block rounding). Ratios are sum(bytes) / sum(bound) over the pairs of a class.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/redistribution/redistribution.h"

namespace {

using namespace shardscope;

// Command-line knobs (parsed before Google Benchmark sees the arguments).
int g_pairs = 200;       // pairs per (devices, axes) class
int g_visits = 0;        // timed calls per pair; 0: 5 up to 64 devices, 3 from 512 (see Visits)
int g_slowest = 5;       // slowest pairs listed per size class
int g_median_pairs = 0;  // --median-pairs=K: also list the K pairs around each class's median
bool g_bytes = true;     // --bytes=0: timing only
bool g_digest = false;   // --digest: per class, a hash of every plan's JSON (transfers included)
std::string g_explain;   // "devices/axes/index": print that pair's plan and references, exit
int g_repeat = 0;        // --explain: plan the pair this many more times (profiling; median CPU)
constexpr int64_t kElementBytes = 4;

// Timed calls per pair: --visits, or 5 for classes up to 64 devices and 3 above (the slowest
// pairs there take up to a second, and the run would otherwise take many minutes).
int Visits(int devices) {
  if (g_visits > 0) return g_visits;
  return devices <= 64 ? 5 : 3;
}

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

struct Pair {
  Layout from;
  Layout to;
  bool regrouped = false;  // the target mesh merges two source axes
};

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

const std::vector<Pair>& Suite(int devices, int axes) {
  static std::map<std::pair<int, int>, std::vector<Pair>> suites;
  auto it = suites.find({devices, axes});
  if (it == suites.end())
    it = suites.emplace(std::make_pair(devices, axes), MakeSuite(devices, axes)).first;
  return it->second;
}

// ---------------------------------------------------------------------------------------
// Reference plans. Both work on the two layouts expressed on one mesh (the unified mesh when
// the meshes differ), so that "the same axis" means the same thing in both.

struct Unified {
  Layout from;
  Layout to;
};

Unified Unify(const Layout& from, const Layout& to) {
  if (from.mesh() == to.mesh()) return {from, to};
  auto u = UnifyMeshes(from.mesh(), to.mesh());
  if (!u.ok()) std::abort();
  auto a = ExpressOnMesh(from, u->mesh, u->axes_of_a);
  auto b = ExpressOnMesh(to, u->mesh, u->axes_of_b);
  if (!a.ok() || !b.ok()) std::abort();
  return {*a, *b};
}

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

// Partial axes of `from` that `to` does not keep partial: they must be reduced.
std::vector<int> AxesToReduce(const Layout& from, const Layout& to) {
  std::vector<int> axes;
  for (int a : from.partial_axes()) {
    if (!to.IsPartialOver(a)) axes.push_back(a);
  }
  return axes;
}

// Naive plan: all-reduce the partial sums (on the source shard), all-gather the tensor to a
// full copy on every rank, slice the target shard locally (free; new partial axes of the
// target become zero addends, also free).
RecvTally NaiveRecv(const Unified& u) {
  RecvTally t(u.from.mesh());
  const int64_t shard = NumElements(u.from.ShardShape());
  t.AllReduce(shard, AxesToReduce(u.from, u.to));
  const int64_t blocks = u.from.NumBlocks();
  t.AllGather(shard, blocks);  // receives (blocks-1) shards = the whole tensor minus its own
  return t;
}

// A per-dimension rule loop modelled on MindSpore's redistribution
// (RedistributionOperatorInfer::InferRedistributionOperator: repeat { InferSplitByAxis;
// InferPermuteByAxis; InferConcatByAxis } until the tensor map is the target's), with the
// all-to-all rule (PermuteByAxis) left out, as issue 3 specifies:
//   0. partial sums are all-reduced first, on the source shard (MindSpore inserts the
//      AllReduce at the producing operator's output);
//   1. split: a dimension whose current axes are a prefix of its target axes and whose next
//      target axis is free (used by no dimension) is sliced locally along it (no traffic);
//      repeated until nothing more can be split;
//   2. concat: otherwise the first dimension whose current axes are not a prefix of its
//      target's gives up its last (least significant) axis by an all-gather along it; back
//      to 1.
// So a dimension that changes axes (or an axis that moves to another dimension) is gathered
// and then split again: no all-to-all, no irregular exchange, nothing across dimensions.
RecvTally RulesLoopRecv(const Unified& u) {
  const DeviceMesh& mesh = u.from.mesh();
  RecvTally t(mesh);
  int64_t shard = NumElements(u.from.ShardShape());
  t.AllReduce(shard, AxesToReduce(u.from, u.to));
  DimAxes cur = u.from.dims_axes();
  const DimAxes& target = u.to.dims_axes();
  auto is_prefix = [&](int d) {
    return cur[d].size() <= target[d].size() &&
           std::equal(cur[d].begin(), cur[d].end(), target[d].begin());
  };
  auto used = [&](int axis) {
    for (const auto& d : cur) {
      if (std::find(d.begin(), d.end(), axis) != d.end()) return true;
    }
    return false;
  };
  const int rank = u.from.rank();
  while (cur != target) {
    bool progress = true;
    while (progress) {  // 1. split
      progress = false;
      for (int d = 0; d < rank; ++d) {
        if (!is_prefix(d) || cur[d].size() == target[d].size()) continue;
        const int axis = target[d][cur[d].size()];
        if (used(axis)) continue;
        cur[d].push_back(axis);
        shard /= mesh.axis_size(axis);
        progress = true;
      }
    }
    if (cur == target) break;
    for (int d = 0; d < rank; ++d) {  // 2. concat
      if (is_prefix(d)) continue;
      const int axis = cur[d].back();
      t.AllGather(shard, mesh.axis_size(axis));
      shard *= mesh.axis_size(axis);
      cur[d].pop_back();
      break;
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// Timing.

struct TimingResult {
  int pairs = 0;
  double median_us = 0, p99_us = 0, max_us = 0, mean_us = 0;  // wall clock
  double cpu_median_us = 0, cpu_p99_us = 0, cpu_max_us = 0;   // thread CPU time
  std::vector<std::pair<double, int>> slowest;  // (CPU µs, pair index), slowest first
  std::vector<std::pair<double, int>> all;      // (CPU µs, pair index), every timed pair
};
std::map<std::pair<int, int>, TimingResult>& Timings() {
  static std::map<std::pair<int, int>, TimingResult> t;
  return t;
}

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return 1e6 * static_cast<double>(ts.tv_sec) + 1e-3 * static_cast<double>(ts.tv_nsec);
}

double Percentile(std::vector<double> v, double q) {  // nearest-rank
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  k = std::clamp<size_t>(k, 1, v.size());
  return v[k - 1];
}

void BM_Plan(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  const int axes = static_cast<int>(state.range(1));
  const std::vector<Pair>& suite = Suite(devices, axes);
  const CostModel cost{};
  const RedistOptions options{};
  std::vector<std::vector<double>> per_pair(suite.size()), per_pair_cpu(suite.size());
  size_t i = 0;
  double total_us = 0;
  int64_t calls = 0;
  for (auto _ : state) {
    const double c0 = ThreadCpuMicros();
    const auto t0 = std::chrono::steady_clock::now();
    {
      auto plan = PlanRedistribution(suite[i].from, suite[i].to, cost, options);
      if (!plan.ok()) {
        state.SkipWithError(plan.status().message().c_str());
        break;
      }
      benchmark::DoNotOptimize(plan);
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    per_pair[i].push_back(us);
    per_pair_cpu[i].push_back(ThreadCpuMicros() - c0);
    total_us += us;
    ++calls;
    i = (i + 1) % suite.size();
  }
  TimingResult r;
  std::vector<double> pair_us, pair_cpu_us;
  for (size_t p = 0; p < per_pair.size(); ++p) {
    if (per_pair[p].empty()) continue;
    const double m = Percentile(per_pair[p], 0.5);
    pair_us.push_back(m);
    pair_cpu_us.push_back(Percentile(per_pair_cpu[p], 0.5));
    r.slowest.emplace_back(pair_cpu_us.back(), static_cast<int>(p));
  }
  std::sort(r.slowest.rbegin(), r.slowest.rend());
  r.all = r.slowest;
  if (static_cast<int>(r.slowest.size()) > g_slowest) r.slowest.resize(g_slowest);
  r.pairs = static_cast<int>(pair_us.size());
  r.median_us = Percentile(pair_us, 0.5);
  r.p99_us = Percentile(pair_us, 0.99);
  r.max_us = pair_us.empty() ? 0 : *std::max_element(pair_us.begin(), pair_us.end());
  r.mean_us = calls ? total_us / static_cast<double>(calls) : 0;
  r.cpu_median_us = Percentile(pair_cpu_us, 0.5);
  r.cpu_p99_us = Percentile(pair_cpu_us, 0.99);
  r.cpu_max_us =
      pair_cpu_us.empty() ? 0 : *std::max_element(pair_cpu_us.begin(), pair_cpu_us.end());
  state.counters["pairs"] = r.pairs;
  state.counters["median_us"] = r.median_us;
  state.counters["p99_us"] = r.p99_us;
  state.counters["cpu_median_us"] = r.cpu_median_us;
  state.counters["cpu_p99_us"] = r.cpu_p99_us;
  Timings()[{devices, axes}] = std::move(r);
}

void RegisterBenchmarks() {
  for (const auto& [devices, axes] : Classes()) {
    benchmark::RegisterBenchmark("BM_Plan", BM_Plan)
        ->Args({devices, axes})
        ->Iterations(static_cast<int64_t>(g_pairs) * Visits(devices))
        ->Unit(benchmark::kMicrosecond);
  }
}

void PrintTimingTable() {
  if (Timings().empty()) return;
  std::printf(
      "\nPlanning time per layout pair, µs (a pair's time: the median of its visits; wall =\n"
      "steady clock, cpu = this thread's CPU time; mean = Google Benchmark's, over all calls)\n");
  std::printf("%8s %5s %6s %7s %10s %10s %10s %10s %10s %10s %10s\n", "devices", "axes", "pairs",
              "visits", "median", "p99", "max", "cpu median", "cpu p99", "cpu max", "mean");
  for (const auto& [key, r] : Timings()) {
    std::printf("%8d %5d %6d %7d %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", key.first,
                key.second, r.pairs, Visits(key.first), r.median_us, r.p99_us, r.max_us,
                r.cpu_median_us, r.cpu_p99_us, r.cpu_max_us, r.mean_us);
  }
  // Every pair of every class run, as one suite (each pair counted once).
  std::vector<double> every_pair;
  for (const auto& [key, r] : Timings()) {
    for (const auto& [us, index] : r.all) every_pair.push_back(us);
  }
  const auto at_most_20 =
      std::count_if(every_pair.begin(), every_pair.end(), [](double us) { return us <= 20; });
  std::printf(
      "%8s %5s %6zu %7s %10s %10s %10s %10.1f %10.1f %10.1f   (%td of %zu pairs <= 20 us)\n", "all",
      "all", every_pair.size(), "", "", "", "", Percentile(every_pair, 0.5),
      Percentile(every_pair, 0.99), Percentile(every_pair, 1.0), at_most_20, every_pair.size());
  // Which pairs are slow: pairs above 20 µs / 1 ms / 100 ms (CPU), and the pairs above 1 ms by
  // what their plan needs: an irregular exchange (all-to-all-v, reduce-scatter-v, direct
  // all-reduce, permute), else partial sums to reduce, else neither.
  std::printf(
      "\nPairs above 20 µs / 1 ms / 100 ms (cpu), and the pairs above 1 ms by plan: with an\n"
      "irregular exchange / else with partial sums in the source / other\n");
  std::printf("%8s %5s %8s %8s %8s %12s %8s %8s\n", "devices", "axes", ">20us", ">1ms", ">100ms",
              "irregular", "partial", "other");
  for (const auto& [key, r] : Timings()) {
    const std::vector<Pair>& suite = Suite(key.first, key.second);
    int over20 = 0, over1ms = 0, over100ms = 0, irregular = 0, partial = 0, other = 0;
    for (const auto& [us, index] : r.all) {
      over20 += us > 20;
      over100ms += us > 1e5;
      if (us <= 1e3) continue;
      ++over1ms;
      const Pair& p = suite[index];
      auto plan = PlanRedistribution(p.from, p.to, CostModel{}, RedistOptions{});
      bool irr = false;
      if (plan.ok()) {
        for (const RedistStep& st : plan->steps) irr = irr || st.irregular();
      }
      if (irr) {
        ++irregular;
      } else if (p.from.is_partial()) {
        ++partial;
      } else {
        ++other;
      }
    }
    std::printf("%8d %5d %8d %8d %8d %12d %8d %8d\n", key.first, key.second, over20, over1ms,
                over100ms, irregular, partial, other);
  }
  const CostModel cost{};
  auto print_pair = [&cost](int devices, int axes, int index, double us) {
    const Pair& p = Suite(devices, axes)[index];
    auto plan = PlanRedistribution(p.from, p.to, cost, RedistOptions{});
    std::string shape;
    for (int64_t s : p.from.shape()) shape += (shape.empty() ? "" : "x") + std::to_string(s);
    std::printf("  %4d/%d #%-3d %9.1f %5d %2zu  %s %s -> %s %s [%s]%s\n", devices, axes, index, us,
                plan.ok() ? plan->states_explored : -1, plan.ok() ? plan->steps.size() : 0,
                p.from.mesh().ToString().c_str(), p.from.ToString().c_str(),
                p.regrouped ? p.to.mesh().ToString().c_str() : "", p.to.ToString().c_str(),
                shape.c_str(), plan.ok() && !plan->byte_optimal ? " (not byte-optimal)" : "");
  };
  std::printf("\nSlowest pairs per class (cpu µs, states explored, steps: from -> to, shape)\n");
  for (const auto& [key, r] : Timings()) {
    for (const auto& [us, index] : r.slowest) print_pair(key.first, key.second, index, us);
  }
  if (g_median_pairs <= 0) return;
  std::printf("\nThe %d pairs around each class's median (cpu µs, as above)\n", g_median_pairs);
  for (const auto& [key, r] : Timings()) {
    const int mid = static_cast<int>(r.all.size()) / 2;
    const int first = std::max(0, mid - g_median_pairs / 2);
    const int last = std::min(static_cast<int>(r.all.size()), first + g_median_pairs);
    for (int k = first; k < last; ++k)
      print_pair(key.first, key.second, r.all[k].second, r.all[k].first);
  }
}

// ---------------------------------------------------------------------------------------
// Bytes.

struct ByteRow {
  int pairs = 0;
  int zero_bound = 0;         // pairs whose bound is 0 (local slices only)
  int ours_at_bound = 0;      // total_planned == total_lower_bound
  int ours_byte_optimal = 0;  // RedistPlan::byte_optimal
  int ours_beats_rules = 0, ours_ties_rules = 0, rules_beat_ours = 0;
  int rules_beat_ours0 = 0;  // the same against the plan with latency 0
  double bound = 0, ours = 0, ours0 = 0, naive = 0, rules = 0;       // sums over ranks and pairs
  double bound_max = 0, ours_max = 0, naive_max = 0, rules_max = 0;  // sums of max-over-ranks
  double worst_ours_ratio = 1;  // max over pairs with bound > 0 of ours / bound
};

void Accumulate(ByteRow& row, const ByteRow& r) {
  row.pairs += r.pairs;
  row.zero_bound += r.zero_bound;
  row.ours_at_bound += r.ours_at_bound;
  row.ours_byte_optimal += r.ours_byte_optimal;
  row.ours_beats_rules += r.ours_beats_rules;
  row.ours_ties_rules += r.ours_ties_rules;
  row.rules_beat_ours += r.rules_beat_ours;
  row.rules_beat_ours0 += r.rules_beat_ours0;
  row.ours0 += r.ours0;
  row.bound += r.bound;
  row.ours += r.ours;
  row.naive += r.naive;
  row.rules += r.rules;
  row.bound_max += r.bound_max;
  row.ours_max += r.ours_max;
  row.naive_max += r.naive_max;
  row.rules_max += r.rules_max;
  row.worst_ours_ratio = std::max(row.worst_ours_ratio, r.worst_ours_ratio);
}

struct RulesWin {
  int devices, axes, index;
  int64_t ours, rules, bound;
};

ByteRow MeasureBytes(int devices, int axes, std::vector<RulesWin>* rules_wins) {
  ByteRow row;
  const std::vector<Pair>& suite = Suite(devices, axes);
  for (size_t i = 0; i < suite.size(); ++i) {
    const Pair& p = suite[i];
    auto plan = PlanRedistribution(p.from, p.to, CostModel{}, RedistOptions{});
    if (!plan.ok()) {
      std::fprintf(stderr, "plan %d/%d #%zu: %s\n", devices, axes, i,
                   plan.status().message().c_str());
      continue;
    }
    const Unified u = Unify(p.from, p.to);
    const RecvTally naive = NaiveRecv(u);
    const RecvTally rules = RulesLoopRecv(u);
    ++row.pairs;
    const int64_t bound = plan->total_lower_bound_bytes, ours = plan->total_planned_bytes;
    // Above the bound, the choice may be the cost model's (latency against bytes): plan again
    // with latency 0, where the cheapest plan is the one moving the fewest bytes. With a
    // partial source the bound holds for the busiest rank only, not for the sum over ranks.
    int64_t ours0 = ours;
    if (ours > bound || p.from.is_partial()) {
      CostModel bandwidth_only;
      bandwidth_only.latency_s = 0;
      auto plan0 = PlanRedistribution(p.from, p.to, bandwidth_only, RedistOptions{});
      if (plan0.ok()) ours0 = plan0->total_planned_bytes;
    }
    row.ours0 += static_cast<double>(ours0);
    if (ours0 > rules.Total()) ++row.rules_beat_ours0;
    if (bound == 0) ++row.zero_bound;
    if (ours == bound) ++row.ours_at_bound;
    if (plan->byte_optimal) ++row.ours_byte_optimal;
    if (ours < rules.Total()) ++row.ours_beats_rules;
    if (ours == rules.Total()) ++row.ours_ties_rules;
    if (ours > rules.Total()) {
      ++row.rules_beat_ours;
      rules_wins->push_back({devices, axes, static_cast<int>(i), ours, rules.Total(), bound});
    }
    row.bound += static_cast<double>(bound);
    row.ours += static_cast<double>(ours);
    row.naive += static_cast<double>(naive.Total());
    row.rules += static_cast<double>(rules.Total());
    row.bound_max += static_cast<double>(plan->lower_bound_bytes);
    row.ours_max += static_cast<double>(plan->planned_bytes);
    row.naive_max += static_cast<double>(naive.Max());
    row.rules_max += static_cast<double>(rules.Max());
    if (bound > 0) {
      row.worst_ours_ratio =
          std::max(row.worst_ours_ratio, static_cast<double>(ours) / static_cast<double>(bound));
    }
  }
  return row;
}

void PrintSuiteSummary() {
  int pairs = 0, from_partial = 0, to_partial = 0, regrouped = 0, multi_axis_dim = 0;
  int by_rank[5] = {0, 0, 0, 0, 0};
  for (const auto& [devices, axes] : Classes()) {
    for (const Pair& p : Suite(devices, axes)) {
      ++pairs;
      from_partial += p.from.is_partial();
      to_partial += p.to.is_partial();
      regrouped += p.regrouped;
      ++by_rank[p.from.rank()];
      bool multi = false;
      for (const Layout* l : {&p.from, &p.to}) {
        for (const auto& d : l->dims_axes()) multi = multi || d.size() > 1;
      }
      multi_axis_dim += multi;
    }
  }
  std::printf(
      "\nSuite: %d pairs; %d with partial sums in the source, %d in the target; %d on a\n"
      "regrouped target mesh; %d with a dimension split over several axes; tensors of 1/2/3/4\n"
      "dimensions: %d/%d/%d/%d\n",
      pairs, from_partial, to_partial, regrouped, multi_axis_dim, by_rank[1], by_rank[2],
      by_rank[3], by_rank[4]);
}

void PrintBytesTable() {
  PrintSuiteSummary();
  std::printf(
      "\nBytes received on the suite (sum over ranks and pairs), as ratios to the lower bound\n"
      "(ours = PlanRedistribution; naive = all-reduce, all-gather to full, slice; rules =\n"
      "per-dimension split/concat loop without all-to-all; ratio columns = sum(bytes) /\n"
      "sum(bound); 'ours a=0': ours planned with latency 0, i.e. for bytes alone; 'max'\n"
      "columns: the same ratios with each pair's busiest rank)\n");
  std::printf("%8s %5s %6s %5s %11s %7s %8s %7s %7s %9s %8s %8s %8s %10s %14s %7s\n", "devices",
              "axes", "pairs", "LB=0", "bound MiB", "ours", "ours a=0", "naive", "rules", "ours@LB",
              "ours max", "naiv max", "rule max", "worst ours", "ours<=>rules", "rules<a0");
  std::vector<RulesWin> rules_wins;
  ByteRow all;
  auto print = [](const char* devices, const char* axes, const ByteRow& r) {
    const double mib = 1024.0 * 1024.0;
    char cmp[32];
    std::snprintf(cmp, sizeof cmp, "%d/%d/%d", r.ours_beats_rules, r.ours_ties_rules,
                  r.rules_beat_ours);
    std::printf(
        "%8s %5s %6d %5d %11.1f %7.3f %8.3f %7.2f %7.2f %5d/%-3d %8.3f %8.2f %8.2f %10.3f %14s "
        "%7d\n",
        devices, axes, r.pairs, r.zero_bound, r.bound / mib, r.ours / r.bound, r.ours0 / r.bound,
        r.naive / r.bound, r.rules / r.bound, r.ours_at_bound, r.pairs, r.ours_max / r.bound_max,
        r.naive_max / r.bound_max, r.rules_max / r.bound_max, r.worst_ours_ratio, cmp,
        r.rules_beat_ours0);
  };
  int current = -1;
  ByteRow per_devices;
  for (const auto& [devices, axes] : Classes()) {
    if (devices != current && current != -1) {
      print(std::to_string(current).c_str(), "all", per_devices);
      per_devices = ByteRow{};
    }
    current = devices;
    const ByteRow r = MeasureBytes(devices, axes, &rules_wins);
    print(std::to_string(devices).c_str(), std::to_string(axes).c_str(), r);
    Accumulate(per_devices, r);
    Accumulate(all, r);
  }
  print(std::to_string(current).c_str(), "all", per_devices);
  print("all", "all", all);
  std::printf(
      "(ours@LB: pairs whose plan receives exactly the bound in all; ours<=>rules: pairs where\n"
      " ours receives fewer / the same / more bytes than the rule loop; rules<a0: pairs where\n"
      " the rule loop receives fewer bytes than ours planned with latency 0)\n");
  if (!rules_wins.empty()) {
    std::printf("\nPairs where the rule loop receives fewer bytes than ours:\n");
    for (const RulesWin& w : rules_wins) {
      const Pair& p = Suite(w.devices, w.axes)[w.index];
      std::printf("  %d/%d #%d ours %" PRId64 " rules %" PRId64 " bound %" PRId64 ": %s -> %s\n",
                  w.devices, w.axes, w.index, w.ours, w.rules, w.bound,
                  p.from.DebugString().c_str(), p.to.DebugString().c_str());
    }
  }
}

// Removes --pairs=, --visits=, --slowest=, --median-pairs=, --bytes=, --explain=, --repeat= from
// argv (Google Benchmark rejects unknown flags).
void ParseOwnFlags(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    int value = 0;
    if (std::sscanf(argv[i], "--pairs=%d", &value) == 1) {
      g_pairs = std::max(1, value);
    } else if (std::sscanf(argv[i], "--visits=%d", &value) == 1) {
      g_visits = std::max(1, value);
    } else if (std::sscanf(argv[i], "--median-pairs=%d", &value) == 1) {
      g_median_pairs = value;
    } else if (std::sscanf(argv[i], "--slowest=%d", &value) == 1) {
      g_slowest = std::max(0, value);
    } else if (std::strcmp(argv[i], "--digest") == 0) {
      g_digest = true;
    } else if (std::sscanf(argv[i], "--bytes=%d", &value) == 1) {
      g_bytes = value != 0;
    } else if (std::sscanf(argv[i], "--repeat=%d", &value) == 1) {
      g_repeat = std::max(0, value);
    } else if (std::strncmp(argv[i], "--explain=", 10) == 0) {
      g_explain = argv[i] + 10;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
}

// --digest: per class, an FNV-1a hash of the JSON of every pair's plan (steps, groups, per-rank
// bytes, transfers: the whole plan), so that two builds of the planner can be compared plan for
// plan (same hash = same plans); and a hash of the steps alone (kinds, axes, dimensions, bytes
// received per rank, layouts after, transfers), which a change of the lower bound leaves alone.
int Digest() {
  auto fnv = [](uint64_t hash, const std::string& text) {
    for (unsigned char ch : text) hash = (hash ^ ch) * 1099511628211ULL;
    return hash;
  };
  for (const auto& [devices, axes] : Classes()) {
    uint64_t hash = 1469598103934665603ULL;
    uint64_t steps_hash = hash;
    int64_t transfers = 0;
    for (const Pair& p : Suite(devices, axes)) {
      auto plan = PlanRedistribution(p.from, p.to, CostModel{}, RedistOptions{});
      hash = fnv(hash, plan.ok() ? plan->ToJson() : plan.status().message());
      if (!plan.ok()) continue;
      for (const RedistStep& st : plan->steps) {
        transfers += st.transfers.size();
        std::string text = st.KindName() + " " + st.after.ToString();
        for (int a : st.axes) text += " a" + std::to_string(a);
        text += " d" + std::to_string(st.dim) + " " + std::to_string(st.dim_to);
        for (int64_t b : st.bytes_recv) text += " " + std::to_string(b);
        for (const RedistTransfer& t : st.transfers) {
          text += " t" + std::to_string(t.src) + ">" + std::to_string(t.dst);
          for (int64_t x : t.offset) text += "," + std::to_string(x);
          for (int64_t x : t.extent) text += ":" + std::to_string(x);
        }
        steps_hash = fnv(steps_hash, text + ";");
      }
      steps_hash = fnv(steps_hash, "|");
    }
    std::printf("%5d %2d %016" PRIx64 " steps %016" PRIx64 " %" PRId64 " transfers\n", devices,
                axes, hash, steps_hash, transfers);
    std::fflush(stdout);
  }
  return 0;
}

// --explain=devices/axes/index[,devices/axes/index...]: pairs of the suite, each plan and the
// references. With --repeat=K, the pairs are planned K more times in turn (for a profiler:
// a mix such as the pairs around a class's median) and each prints its median CPU time.
int Explain() {
  struct Chosen {
    const Pair* pair;
    std::vector<double> times;
  };
  std::vector<Chosen> chosen;
  for (size_t at = 0; at < g_explain.size();) {
    size_t end = g_explain.find(',', at);
    if (end == std::string::npos) end = g_explain.size();
    int devices = 0, axes = 0, index = 0;
    if (std::sscanf(g_explain.substr(at, end - at).c_str(), "%d/%d/%d", &devices, &axes, &index) !=
        3) {
      std::printf("error: --explain wants devices/axes/index, got '%s'\n",
                  g_explain.substr(at, end - at).c_str());
      return 1;
    }
    const std::vector<Pair>& suite = Suite(devices, axes);
    if (index < 0 || index >= static_cast<int>(suite.size())) {
      std::printf("error: --explain: class %d/%d has pairs 0..%zu\n", devices, axes,
                  suite.size() - 1);
      return 1;
    }
    chosen.push_back({&suite[index], {}});
    at = end + 1;
  }
  for (Chosen& c : chosen) {
    const double c0 = ThreadCpuMicros();
    benchmark::DoNotOptimize(
        PlanRedistribution(c.pair->from, c.pair->to, CostModel{}, RedistOptions{}));
    c.times.push_back(ThreadCpuMicros() - c0);
  }
  for (int k = 0; k < g_repeat; ++k) {  // --repeat=K: K more plans of each, in turn
    for (Chosen& c : chosen) {
      const double c0 = ThreadCpuMicros();
      benchmark::DoNotOptimize(
          PlanRedistribution(c.pair->from, c.pair->to, CostModel{}, RedistOptions{}));
      c.times.push_back(ThreadCpuMicros() - c0);
    }
  }
  for (Chosen& c : chosen) {
    const Pair& p = *c.pair;
    auto plan = PlanRedistribution(p.from, p.to, CostModel{}, RedistOptions{});
    if (!plan.ok()) {
      std::printf("error: %s\n", plan.status().message().c_str());
      return 1;
    }
    const double cpu_us = g_repeat > 0 ? Percentile(c.times, 0.5) : c.times[0];
    const Unified u = Unify(p.from, p.to);
    std::printf("%s\nbound total %" PRId64 " B, naive %" PRId64 " B, rules %" PRId64
                " B; planned in %.1f µs (CPU), %d states explored\n",
                plan->ToString().c_str(), plan->total_lower_bound_bytes, NaiveRecv(u).Total(),
                RulesLoopRecv(u).Total(), cpu_us, plan->states_explored);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ParseOwnFlags(&argc, argv);
  if (!g_explain.empty()) return Explain();
  if (g_digest) return Digest();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RegisterBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintTimingTable();
  if (g_bytes) PrintBytesTable();
  return 0;
}
