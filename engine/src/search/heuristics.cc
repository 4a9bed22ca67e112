// sharding_propagation and recursive_programming (search.h).
#include <algorithm>
#include <deque>

#include "search/search_graph.h"

namespace shardscope::search_internal {
namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Lookahead is skipped on edges whose candidate pairs exceed this (large device counts),
// keeping propagation linear in the graph.
constexpr size_t kLookaheadPairs = 4096;

// What an undecided neighbour `w` would add at best if `v` took `p`: its own cost plus
// the edge, minimised over its candidates.
// `p`: the index of v's candidate.
double BestResponse(const SearchGraph& g, int e, int v, size_t p, int w) {
  double best = 0;
  const auto& cands = g.ops()[w].candidates;
  const bool produces = g.edges()[e].producer == v;
  for (size_t c = 0; c < cands.size(); ++c) {
    const double cost = g.ops()[w].own_cost[c] +
                        (produces ? g.CandidateEdgeCost(e, p, c) : g.CandidateEdgeCost(e, c, p));
    if (c == 0 || cost < best) best = cost;
  }
  return best;
}

// The candidate of `v` with the least own cost plus redistribution to decided neighbours
// plus, one step ahead, the best each undecided neighbour could answer with.
const Parts& BestGivenNeighbours(const SearchGraph& g, int v, const std::vector<Parts>& parts,
                                 const std::vector<bool>& done) {
  const SearchOp& op = g.ops()[v];
  size_t best = 0;
  double best_cost = 0;
  for (size_t c = 0; c < op.candidates.size(); ++c) {
    double cost = op.own_cost[c];
    for (int e : op.edges) {
      const int w = g.Other(e, v);
      if (done[w]) {
        cost += g.EdgeCostAmong(e, v, op.candidates[c], parts, &done);
      } else if (op.candidates.size() * g.ops()[w].candidates.size() <= kLookaheadPairs) {
        cost += BestResponse(g, e, v, c, w);
      }
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
    a.provenance[i] = g.ops()[i].fixed_provenance;
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

namespace {

// What a neighbour `w` not yet visited this round could answer with if `v` took `p`: its
// own cost plus the edge, minimised over multiplying one of its letters by `f`.
double RoundResponse(const SearchGraph& g, int e, int v, const Parts& p, int w, Parts mine,
                     int64_t f) {
  const SearchOp& op = g.ops()[w];
  double best = -1;
  for (size_t l = 0; l < op.letters.size(); ++l) {
    if (op.letter_size[l] % (mine[l] * f) != 0) continue;
    mine[l] *= f;
    if (!g.Reaches(w, mine)) {
      mine[l] /= f;
      continue;
    }
    const double cost = g.SearchCost(w, mine) + g.EdgeCostFrom(e, v, p, mine);
    mine[l] /= f;
    if (best < 0 || cost < best) best = cost;
  }
  return best < 0 ? g.SearchCost(w, mine) + g.EdgeCostFrom(e, v, p, mine) : best;
}

}  // namespace

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
      a.provenance[i] = op.fixed_provenance;
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
    std::vector<bool> done_round(n, false);
    for (int i = 0; i < n; ++i) done_round[i] = g.ops()[i].fixed.has_value();
    for (int v : order) {
      done_round[v] = true;
      const SearchOp& op = g.ops()[v];
      int best = -1;
      double best_cost = 0;
      Parts trial = a.parts[v];
      for (size_t l = 0; l < op.letters.size(); ++l) {
        if (op.letter_size[l] % (a.parts[v][l] * f) != 0) continue;
        trial[l] *= f;
        if (!g.Reaches(v, trial)) {
          trial[l] /= f;
          continue;
        }
        double cost = g.SearchCost(v, trial);
        for (int e : op.edges) {
          const int w = g.Other(e, v);
          cost += done_round[w] ? g.EdgeCostAmong(e, v, trial, a.parts, nullptr)
                                : RoundResponse(g, e, v, trial, w, a.parts[w], f);
        }
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
  // One sweep of factor moves: an operator may move one prime factor from a letter to
  // another when that lowers its own cost plus redistribution to its neighbours (the
  // rounds decide each factor with later neighbours only guessed).
  for (int v : order) {
    const SearchOp& op = g.ops()[v];
    auto local = [&](const Parts& p) {
      double c = g.SearchCost(v, p);
      for (int e : op.edges) c += g.EdgeCostAmong(e, v, p, a.parts, nullptr);
      return c;
    };
    double best = local(a.parts[v]);
    Parts best_parts = a.parts[v];
    std::string move;
    for (size_t from = 0; from < op.letters.size(); ++from) {
      for (int f : PrimeFactorsDescending(static_cast<int>(a.parts[v][from]))) {
        for (size_t to = 0; to < op.letters.size(); ++to) {
          if (to == from || op.letter_size[to] % (a.parts[v][to] * f) != 0) continue;
          Parts p = a.parts[v];
          p[from] /= f;
          p[to] *= f;
          if (!g.Reaches(v, p)) continue;
          const double c = local(p);
          if (c < best) {
            best = c;
            best_parts = p;
            move = std::string("; sweep: moved x") + std::to_string(f) + " from " +
                   op.letters[from] + " to " + op.letters[to];
          }
        }
      }
    }
    a.parts[v] = best_parts;
    a.provenance[v] += move;
  }
  // A shard block's operator whose rounds found no way into its candidates (a prime factor
  // no allowed letter takes) takes the cheapest candidate against its neighbours.
  for (int v : order) {
    const SearchOp& op = g.ops()[v];
    if (!op.narrowed ||
        std::find(op.candidates.begin(), op.candidates.end(), a.parts[v]) != op.candidates.end())
      continue;
    double best = -1;
    for (const Parts& p : op.candidates) {
      double c = g.SearchCost(v, p);
      for (int e : op.edges) c += g.EdgeCostAmong(e, v, p, a.parts, nullptr);
      if (best < 0 || c < best) {
        best = c;
        a.parts[v] = p;
      }
    }
    a.provenance[v] += "; shard block: its cheapest allowed strategy";
  }
  return a;
}

}  // namespace shardscope::search_internal
