// dynamic_programming (search.h): the exact optimum of a pairwise cost (operator costs plus
// edge costs) by eliminating operators of degree <= 2 — leaves fold into their neighbour,
// series operators become an edge between their two neighbours, parallel edges add up —
// then assigning in reverse elimination order.
#include <map>
#include <set>

#include "search/search_graph.h"

namespace shardscope::search_internal {
namespace {

// A cost matrix over the candidates of (lo, hi), lo < hi.
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<double> a;
  double at(int i, int j) const { return a[static_cast<size_t>(i) * cols + j]; }
};

struct Step {
  int v = -1, u = -1, w = -1;  // eliminated op and its neighbours then (-1: none)
  std::vector<int> choice;     // v's candidate per assignment of u (and w)
};

constexpr double kMaxWork = 4e8;  // candidate triples one series elimination may visit

}  // namespace

Result<Assignment> RunDynamicProgramming(const SearchGraph& g) {
  const int n = static_cast<int>(g.ops().size());
  if (n > g.options().max_dp_operators) {
    return Status::Invalid("dynamic_programming: the graph has " + std::to_string(n) +
                           " operators, beyond its bound of " +
                           std::to_string(g.options().max_dp_operators) +
                           "; use recursive_programming or sharding_propagation");
  }
  std::vector<std::vector<double>> node(n);
  std::vector<int> size(n);
  for (int v = 0; v < n; ++v) {
    size[v] = static_cast<int>(g.ops()[v].candidates.size());
    node[v] = g.ops()[v].own_cost;
  }
  std::map<std::pair<int, int>, Matrix> edges;
  std::vector<std::set<int>> adj(n);
  auto add_matrix = [&](int lo, int hi, Matrix m) {
    auto [it, fresh] = edges.emplace(std::make_pair(lo, hi), std::move(m));
    if (!fresh) {  // parallel edges: costs add up
      for (size_t i = 0; i < it->second.a.size(); ++i) it->second.a[i] += m.a[i];
    }
    adj[lo].insert(hi);
    adj[hi].insert(lo);
  };
  for (size_t e = 0; e < g.edges().size(); ++e) {
    const int p = g.edges()[e].producer, c = g.edges()[e].consumer;
    const int lo = std::min(p, c), hi = std::max(p, c);
    Matrix m{size[lo], size[hi], std::vector<double>(static_cast<size_t>(size[lo]) * size[hi])};
    for (int i = 0; i < size[lo]; ++i) {
      for (int j = 0; j < size[hi]; ++j) {
        const Parts& pl = g.ops()[lo].candidates[i];
        const Parts& ph = g.ops()[hi].candidates[j];
        m.a[static_cast<size_t>(i) * size[hi] + j] = p == lo
                                                         ? g.EdgeCost(static_cast<int>(e), pl, ph)
                                                         : g.EdgeCost(static_cast<int>(e), ph, pl);
      }
    }
    add_matrix(lo, hi, std::move(m));
  }
  // Cost between candidate i of x and j of y, whatever their order.
  auto cost = [&](int x, int y, int i, int j) {
    return x < y ? edges.at({x, y}).at(i, j) : edges.at({y, x}).at(j, i);
  };
  auto drop = [&](int x, int y) {
    edges.erase({std::min(x, y), std::max(x, y)});
    adj[x].erase(y);
    adj[y].erase(x);
  };
  std::set<int> ready;
  for (int v = 0; v < n; ++v) {
    if (adj[v].size() <= 2) ready.insert(v);
  }
  std::vector<bool> alive(n, true);
  std::vector<Step> steps;
  int remaining = n;
  while (remaining > 0) {
    if (ready.empty()) {
      int worst = -1;
      for (int v = 0; v < n; ++v) {
        if (alive[v] && (worst < 0 || adj[v].size() < adj[worst].size())) worst = v;
      }
      return Status::Invalid(
          "dynamic_programming: the graph does not reduce by leaf, series and parallel "
          "elimination (" +
          std::to_string(remaining) +
          " operators remain, each with 3 or "
          "more neighbours, e.g. '" +
          g.ops()[worst].name + "' with " + std::to_string(adj[worst].size()) +
          "); use recursive_programming or "
          "sharding_propagation");
    }
    const int v = *ready.begin();
    ready.erase(ready.begin());
    alive[v] = false;
    --remaining;
    Step s;
    s.v = v;
    std::vector<int> nb(adj[v].begin(), adj[v].end());
    if (nb.size() == 1) {
      const int u = nb[0];
      s.u = u;
      s.choice.resize(size[u]);
      for (int i = 0; i < size[u]; ++i) {
        double best = 0;
        for (int j = 0; j < size[v]; ++j) {
          const double c = node[v][j] + cost(u, v, i, j);
          if (j == 0 || c < best) {
            best = c;
            s.choice[i] = j;
          }
        }
        node[u][i] += best;
      }
      drop(u, v);
      if (adj[u].size() <= 2) ready.insert(u);
    } else if (nb.size() == 2) {
      const int u = nb[0], w = nb[1];
      s.u = u;
      s.w = w;
      if (static_cast<double>(size[u]) * size[v] * size[w] > kMaxWork) {
        return Status::Invalid("dynamic_programming: operators '" + g.ops()[u].name + "', '" +
                               g.ops()[v].name + "', '" + g.ops()[w].name + "' have " +
                               std::to_string(size[u]) + " x " + std::to_string(size[v]) + " x " +
                               std::to_string(size[w]) +
                               " candidate combinations, beyond its size bound; use fewer "
                               "devices or recursive_programming");
      }
      Matrix m{size[u], size[w], std::vector<double>(static_cast<size_t>(size[u]) * size[w])};
      s.choice.resize(m.a.size());
      for (int i = 0; i < size[u]; ++i) {
        for (int k = 0; k < size[w]; ++k) {
          double best = 0;
          int arg = 0;
          for (int j = 0; j < size[v]; ++j) {
            const double c = node[v][j] + cost(u, v, i, j) + cost(v, w, j, k);
            if (j == 0 || c < best) {
              best = c;
              arg = j;
            }
          }
          m.a[static_cast<size_t>(i) * size[w] + k] = best;
          s.choice[static_cast<size_t>(i) * size[w] + k] = arg;
        }
      }
      drop(u, v);
      drop(v, w);
      add_matrix(u, w, std::move(m));  // u < w: nb is sorted
      for (int x : {u, w}) {
        if (adj[x].size() <= 2) ready.insert(x);
      }
    }
    steps.push_back(std::move(s));
  }
  std::vector<int> pick(n, 0);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Step& s = *it;
    if (s.u < 0) {
      for (int j = 1; j < size[s.v]; ++j) {
        if (node[s.v][j] < node[s.v][pick[s.v]]) pick[s.v] = j;
      }
    } else if (s.w < 0) {
      pick[s.v] = s.choice[pick[s.u]];
    } else {
      pick[s.v] = s.choice[static_cast<size_t>(pick[s.u]) * size[s.w] + pick[s.w]];
    }
  }
  std::vector<const Step*> step_of(n);
  for (const Step& s : steps) step_of[s.v] = &s;
  Assignment a;
  for (int v = 0; v < n; ++v) {
    a.parts.push_back(g.ops()[v].candidates[pick[v]]);
    const Step* how = step_of[v];
    std::string why = "dynamic_programming: exact optimum; ";
    if (g.ops()[v].fixed) {
      why = g.ops()[v].fixed_provenance;
    } else if (how->u < 0) {
      why += "the last operator of its component, its best total";
    } else if (how->w < 0) {
      why += "eliminated as a leaf of '" + g.ops()[how->u].name + "'";
    } else {
      why += "eliminated in series between '" + g.ops()[how->u].name + "' and '" +
             g.ops()[how->w].name + "'";
    }
    a.provenance.push_back(why);
  }
  return a;
}

}  // namespace shardscope::search_internal
