// DescendExact (search_graph.h): dynamic_programming's pairwise optimum moved, one operator at
// a time, to lower the exact objective its edges' 1/fanout shares only approximate.
#include <algorithm>
#include <cmath>

#include "search/search_graph.h"

namespace shardscope::search_internal {
namespace {

// What the descent minimizes: Total, plus the memory weight's term while one is set.
double Objective(const SearchGraph& g, const std::vector<Parts>& a) {
  double total = g.Total(a);
  if (g.memory_weight() > 0) {
    for (size_t v = 0; v < a.size(); ++v)
      total += g.memory_weight() * g.OpMemoryUnder(static_cast<int>(v), a[v]);
  }
  return total;
}

}  // namespace

int DescendExact(const SearchGraph& g, Assignment* a, double memory_cap, int passes) {
  const int n = static_cast<int>(g.ops().size());
  // Without the overlap the objective is a sum of SearchCost and ValuePrice terms, so an
  // operator's local price moves exactly as the objective does; with it, a move is checked
  // against the whole objective (the overlap's exposed tail is no sum).
  const bool additive = !g.options().cost.overlap_gradients;
  std::vector<Parts>& parts = a->parts;
  double objective = Objective(g, parts);
  const bool fits = memory_cap <= 0 || g.AssignmentMemory(parts) <= memory_cap;
  // Per operator, the values its choice prices (each by the first edge reading it) and the
  // readers of those values, whose shared Add gradients it may change.
  std::vector<std::vector<int>> values(n), readers(n);
  const auto add = [](std::vector<int>& list, int x) {
    if (std::find(list.begin(), list.end(), x) == list.end()) list.push_back(x);
  };
  for (int v = 0; v < n; ++v) {
    add(readers[v], v);
    for (int e : g.ops()[v].edges) {
      const std::vector<int>& s = g.edges()[e].siblings;
      add(values[v], s.empty() ? e : std::min(e, s[0]));
      add(readers[v], g.edges()[e].consumer);
      for (int x : s) add(readers[v], g.edges()[x].consumer);
    }
  }
  int moved = 0;
  for (int pass = 0; pass < passes; ++pass) {
    bool improved = false;
    for (int v = 0; v < n; ++v) {
      const SearchOp& op = g.ops()[v];
      if (op.fixed || op.candidates.size() < 2) continue;
      const Parts current = parts[v];
      const auto local = [&](const Parts& p) {
        parts[v] = p;
        double c = g.SearchCost(v, p);
        for (int e : values[v]) c += g.ValuePrice(e, parts);
        for (int r : readers[v]) c -= g.SharedAddGradient(r, parts);
        return c;
      };
      const double now = local(current);
      double best = now;
      size_t pick = op.candidates.size();
      for (size_t c = 0; c < op.candidates.size(); ++c) {
        if (op.candidates[c] == current) continue;
        const double price = local(op.candidates[c]);
        if (price < best) {
          best = price;
          pick = c;
        }
      }
      parts[v] = current;
      // Strict improvements only, beyond rounding: the descent ends.
      if (pick == op.candidates.size() || best >= now - 1e-12 * std::abs(now)) continue;
      parts[v] = op.candidates[pick];
      const double next = additive ? objective + (best - now) : Objective(g, parts);
      if (next >= objective - 1e-12 * std::abs(objective) ||
          (fits && memory_cap > 0 && g.AssignmentMemory(parts) > memory_cap)) {
        parts[v] = current;
        continue;
      }
      objective = next;
      improved = true;
      ++moved;
      a->provenance[v] = "dynamic_programming: the pairwise optimum's " + g.Notation(v, current) +
                         " moved by the descent on the exact price (readers in several layouts)";
    }
    if (!improved) break;
  }
  return moved;
}

}  // namespace shardscope::search_internal
