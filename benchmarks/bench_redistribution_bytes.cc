// The bytes table of the redistribution benchmark (bench_redistribution_bytes.h).
#include "bench_redistribution_bytes.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_redistribution_references.h"
#include "bench_redistribution_suite.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::bench_redist {
namespace {

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

}  // namespace

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

}  // namespace shardscope::bench_redist
