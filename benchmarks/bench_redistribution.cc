// Redistribution planner (issue 3): planning time per layout pair and bytes planned, on a fixed
// seeded suite of random layout pairs for meshes of 8, 64, 512 and 1024 devices with 1 to 4
// axes (see benchmarks/README.md for the figures).
//
// Usage: kUsage below (--help prints it, then Google Benchmark's flags).
//
// The suite: bench_redistribution_suite.h; the bytes table and its references:
// bench_redistribution_bytes.h, bench_redistribution_references.h.
//
// Timing. Each benchmark iteration plans one pair of its class (cycling over the suite), with
// the planner's defaults (CostModel{}, RedistOptions{}); every call (plan built and destroyed)
// is timed by the steady clock and by the thread's CPU clock (the machine is shared: CPU
// time is the robust figure). A pair's time is the median of its visits (--visits; default 5
// up to 64 devices, 3 from 512); the iteration count is pairs x visits. Counters: median and
// p99 over pairs (wall and CPU); Google Benchmark's own time column is the mean over all calls.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_redistribution_bytes.h"
#include "bench_redistribution_references.h"
#include "bench_redistribution_suite.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::bench_redist {
namespace {

constexpr const char* kUsage =
    R"(bench_redistribution: the redistribution planner on a seeded suite of
3,000 random layout pairs (meshes of 8, 64, 512 and 1024 devices, 1 to 4 axes).

  bench_redistribution                                  # timing + bytes tables
  bench_redistribution --benchmark_filter='/1024/'      # one size class
  bench_redistribution --visits=9 --slowest=10          # more samples per pair
  bench_redistribution --bytes=0                        # timing table only
  bench_redistribution --benchmark_filter=NONE          # bytes table only (bytes / bound)
  bench_redistribution --digest                         # per class: hash of every plan
  bench_redistribution --explain=1024/4/56              # one pair: plan, references
  bench_redistribution --explain=1024/4/56,512/4/3 --repeat=1000  # a mix, for perf
  bench_redistribution --median-pairs=10                # also the pairs at the median

Own flags: --pairs=N (per class, default 200), --visits=N, --slowest=N, --median-pairs=K,
--bytes=0|1, --digest, --explain=devices/axes/index[,...], --repeat=K.
)";

// Command-line knobs (parsed before Google Benchmark sees the arguments).
int g_visits = 0;        // timed calls per pair; 0: 5 up to 64 devices, 3 from 512 (see Visits)
int g_slowest = 5;       // slowest pairs listed per size class
int g_median_pairs = 0;  // --median-pairs=K: also list the K pairs around each class's median
bool g_bytes = true;     // --bytes=0: timing only
bool g_digest = false;   // --digest: per class, a hash of every plan's JSON (transfers included)
std::string g_explain;   // "devices/axes/index": print that pair's plan and references, exit
int g_repeat = 0;        // --explain: plan the pair this many more times (profiling; median CPU)

// Timed calls per pair: --visits, or 5 for classes up to 64 devices and 3 above (the slowest
// pairs there take up to a second, and the run would otherwise take many minutes).
int Visits(int devices) {
  if (g_visits > 0) return g_visits;
  return devices <= 64 ? 5 : 3;
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
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("%s\nGoogle Benchmark's flags:\n", kUsage);
      argv[out++] = const_cast<char*>("--help");
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
}  // namespace shardscope::bench_redist

int main(int argc, char** argv) {
  using namespace shardscope::bench_redist;
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