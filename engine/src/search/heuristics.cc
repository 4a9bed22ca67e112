// sharding_propagation and recursive_programming (search.h).
#include <algorithm>
#include <deque>

#include "search/search_graph.h"

namespace shardscope::search_internal {
namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The candidate of `v` with the least own cost plus redistribution to decided neighbours.
const Parts& BestGivenNeighbours(const SearchGraph& g, int v, const std::vector<Parts>& parts,
                                 const std::vector<bool>& done) {
  const SearchOp& op = g.ops()[v];
  size_t best = 0;
  double best_cost = 0;
  for (size_t c = 0; c < op.candidates.size(); ++c) {
    double cost = g.OpCost(v, op.candidates[c]);
    for (int e : op.edges) {
      const int w = g.Other(e, v);
      if (done[w]) cost += g.EdgeCostFrom(e, v, op.candidates[c], parts[w]);
    }
    if (c == 0 || cost < best_cost) {
      best = c;
      best_cost = cost;
    }
  }
  return op.candidates[best];
}

}  // namespace

Assignment RunPropagation(const SearchGraph& g) {
  const int n = static_cast<int>(g.ops().size());
  Assignment a;
  a.parts.resize(n);
  a.provenance.resize(n);
  std::vector<bool> done(n, false);
  std::deque<int> queue;
  for (int i = 0; i < n; ++i) {
    if (!g.ops()[i].fixed) continue;
    a.parts[i] = *g.ops()[i].fixed;
    a.provenance[i] = "user: " + g.ops()[i].fixed_text;
    done[i] = true;
    queue.push_back(i);
  }
  while (true) {
    while (!queue.empty()) {
      const int u = queue.front();
      queue.pop_front();
      for (int e : g.ops()[u].edges) {
        const int v = g.Other(e, u);
        if (done[v]) continue;
        a.parts[v] = BestGivenNeighbours(g, v, a.parts, done);
        a.provenance[v] = "sharding_propagation: propagated from operator " +
                          Quote(g.ops()[u].name) + " over edge " +
                          Quote(g.graph().value(g.edges()[e].value).name);
        done[v] = true;
        queue.push_back(v);
      }
    }
    // Nothing configured reaches the rest: start again from its heaviest operator.
    int start = -1;
    for (int i = 0; i < n; ++i) {
      if (!done[i] && (start < 0 || g.ops()[i].weight > g.ops()[start].weight)) start = i;
    }
    if (start < 0) break;
    a.parts[start] = BestGivenNeighbours(g, start, a.parts, done);
    a.provenance[start] =
        "sharding_propagation: reasoned default: the heaviest operator no configured operator "
        "reaches takes its cheapest strategy on its own cost (computation + gradient "
        "reduction)";
    done[start] = true;
    queue.push_back(start);
  }
  return a;
}

Assignment RunRecursive(const SearchGraph& g) {
  const int n = static_cast<int>(g.ops().size());
  Assignment a;
  a.parts.resize(n);
  a.provenance.resize(n);
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    const SearchOp& op = g.ops()[i];
    if (op.fixed) {
      a.parts[i] = *op.fixed;
      a.provenance[i] = "user: " + op.fixed_text;
    } else {
      a.parts[i] = Parts(op.letters.size(), 1);
      a.provenance[i] = "recursive_programming:";
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return g.ops()[x].weight > g.ops()[y].weight; });
  const std::vector<int> factors = PrimeFactorsDescending(g.options().devices);
  for (size_t round = 0; round < factors.size(); ++round) {
    const int64_t f = factors[round];
    const bool last = round + 1 == factors.size();
    for (int v : order) {
      const SearchOp& op = g.ops()[v];
      int best = -1;
      double best_cost = 0;
      Parts trial = a.parts[v];
      for (size_t l = 0; l < op.letters.size(); ++l) {
        if (op.letter_size[l] % (a.parts[v][l] * f) != 0) continue;
        trial[l] *= f;
        double cost = g.OpCost(v, trial);
        for (int e : op.edges) cost += g.EdgeCostFrom(e, v, trial, a.parts[g.Other(e, v)]);
        // The memory budget binds on the final strategy.
        if (last && g.OpMemory(v, trial) > op.memory_allowance) cost += 1e9;
        trial[l] /= f;
        if (best < 0 || cost < best_cost) {
          best = static_cast<int>(l);
          best_cost = cost;
        }
      }
      std::string step = " round " + std::to_string(round + 1) + "/" +
                         std::to_string(factors.size()) + " (x" + std::to_string(f) + ") ";
      if (best < 0) {
        step += "no dimension divides: replicated";
      } else {
        a.parts[v][best] *= f;
        step += "split " + std::string(1, op.letters[best]);
      }
      a.provenance[v] += step + (last ? "" : ";");
    }
  }
  return a;
}

}  // namespace shardscope::search_internal
