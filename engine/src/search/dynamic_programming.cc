// dynamic_programming (search.h): the exact optimum of a pairwise cost (operator costs plus
// each reader's 1/fanout share of its value's redistribution) by eliminating operators of
// degree <= 2 — leaves fold into their neighbour, series operators become an edge between
// their two neighbours, parallel edges add up — then assigning in reverse elimination order;
// then a descent on the exact price (DescendExact).
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

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

// What EdgeCost reads of an edge and its ends: equal keys give equal cost matrices.
struct EdgeKey {
  std::vector<int> src, dst, summed, grad_summed;
  double bytes = 0;
  int fanout = 1, producer_kind = 0, consumer_kind = 0;
  bool producer_low = true, needs_grad = true;
  auto Tie() const {
    return std::tie(src, dst, summed, grad_summed, bytes, fanout, producer_kind, consumer_kind,
                    producer_low, needs_grad);
  }
  bool operator<(const EdgeKey& o) const { return Tie() < o.Tie(); }
};

// Operators alike for EdgeCost (the same candidates and computation before a collective
// under each) share a kind: a decoder's layers then share their edges' matrices.
std::vector<int> OperatorKinds(const SearchGraph& g) {
  std::map<std::pair<std::vector<Parts>, std::vector<double>>, int> kinds;
  std::vector<int> kind;
  for (size_t v = 0; v < g.ops().size(); ++v) {
    std::vector<double> before;
    for (const Parts& p : g.ops()[v].candidates)
      before.push_back(g.ComputeBeforeCollective(static_cast<int>(v), p));
    const int next = static_cast<int>(kinds.size());
    kind.push_back(
        kinds.emplace(std::make_pair(g.ops()[v].candidates, before), next).first->second);
  }
  return kind;
}

// The cost matrix between x and y with x's candidates as rows.
Matrix Oriented(const std::map<std::pair<int, int>, Matrix>& edges, int x, int y) {
  if (x < y) return edges.at({x, y});
  const Matrix& m = edges.at({y, x});
  Matrix t{m.cols, m.rows, std::vector<double>(m.a.size())};
  for (int i = 0; i < m.rows; ++i) {
    for (int j = 0; j < m.cols; ++j) t.a[static_cast<size_t>(j) * m.rows + i] = m.at(i, j);
  }
  return t;
}

// Series elimination of v between u and w: out(i, k) = min_j node(j) + uv(i, j) + vw(j, k),
// the first minimal j in `choice` (rows of w innermost: the loop runs over contiguous costs).
Matrix MinPlus(const std::vector<double>& node, const Matrix& uv, const Matrix& vw,
               std::vector<int>* choice) {
  Matrix out{uv.rows, vw.cols, std::vector<double>(static_cast<size_t>(uv.rows) * vw.cols)};
  choice->assign(out.a.size(), 0);
  for (int i = 0; i < uv.rows; ++i) {
    double* best = &out.a[static_cast<size_t>(i) * vw.cols];
    int* arg = &(*choice)[static_cast<size_t>(i) * vw.cols];
    for (int j = 0; j < uv.cols; ++j) {
      const double a = node[j] + uv.at(i, j);
      const double* row = &vw.a[static_cast<size_t>(j) * vw.cols];
      for (int k = 0; k < vw.cols; ++k) {
        const double c = a + row[k];
        if (j == 0 || c < best[k]) {
          best[k] = c;
          arg[k] = j;
        }
      }
    }
  }
  return out;
}

Status OverBudget(const SearchGraph& g, double work, double budget) {
  char text[200];
  std::snprintf(text, sizeof text,
                "dynamic_programming: the elimination outgrows its effort budget (%.3g candidate "
                "combinations visited, budget %.3g, %zu operators)",
                work, budget, g.ops().size());
  return Status::Invalid(std::string(text) + "; use fewer devices or recursive_programming");
}

}  // namespace

Result<Assignment> RunDynamicProgramming(const SearchGraph& g) {
  const int n = static_cast<int>(g.ops().size());
  if (n > g.options().max_dp_operators) {
    return Status::Invalid("dynamic_programming: the graph has " + std::to_string(n) +
                           " operators, beyond its bound of " +
                           std::to_string(g.options().max_dp_operators) +
                           "; use recursive_programming or sharding_propagation");
  }
  // Candidate pairs and triples the elimination visits, against SearchOptions::max_dp_work.
  double work = 0;
  const double budget = g.options().max_dp_work;
  std::vector<std::vector<double>> node(n);
  std::vector<int> size(n);
  for (int v = 0; v < n; ++v) {
    size[v] = static_cast<int>(g.ops()[v].candidates.size());
    node[v] = g.ops()[v].own_cost;
  }
  std::map<std::pair<int, int>, Matrix> edges;
  std::vector<std::set<int>> adj(n);
  auto add_matrix = [&](int lo, int hi, const Matrix& m) {
    auto [it, fresh] = edges.emplace(std::make_pair(lo, hi), m);
    if (!fresh) {  // parallel edges: costs add up
      for (size_t i = 0; i < it->second.a.size(); ++i) it->second.a[i] += m.a[i];
    }
    adj[lo].insert(hi);
    adj[hi].insert(lo);
  };
  // Repeated layers repeat their edges: one matrix per distinct edge (EdgeCost is the cost).
  const std::vector<int> kind = OperatorKinds(g);
  std::map<EdgeKey, Matrix> built;
  for (size_t e = 0; e < g.edges().size(); ++e) {
    const SearchEdge& edge = g.edges()[e];
    const int p = edge.producer, c = edge.consumer;
    const int lo = std::min(p, c), hi = std::max(p, c);
    const EdgeKey key{edge.src_letter,
                      edge.dst_letter,
                      edge.summed_letter,
                      edge.grad_summed_letter,
                      edge.bytes,
                      edge.fanout,
                      kind[p],
                      kind[c],
                      p == lo,
                      edge.needs_grad};
    auto it = built.find(key);
    if (it == built.end()) {
      work += static_cast<double>(size[lo]) * size[hi];
      if (work > budget) return OverBudget(g, work, budget);
      Matrix m{size[lo], size[hi], std::vector<double>(static_cast<size_t>(size[lo]) * size[hi])};
      for (int i = 0; i < size[lo]; ++i) {
        for (int j = 0; j < size[hi]; ++j) {
          const Parts& pl = g.ops()[lo].candidates[i];
          const Parts& ph = g.ops()[hi].candidates[j];
          m.a[static_cast<size_t>(i) * size[hi] + j] =
              p == lo ? g.EdgeCost(static_cast<int>(e), pl, ph)
                      : g.EdgeCost(static_cast<int>(e), ph, pl);
        }
      }
      it = built.emplace(key, std::move(m)).first;
    }
    add_matrix(lo, hi, it->second);
  }
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
      const Matrix uv = Oriented(edges, u, v);
      work += static_cast<double>(size[u]) * size[v];
      for (int i = 0; i < size[u]; ++i) {
        double best = 0;
        for (int j = 0; j < size[v]; ++j) {
          const double c = node[v][j] + uv.at(i, j);
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
      work += static_cast<double>(size[u]) * size[v] * size[w];
      if (work > budget) return OverBudget(g, work, budget);
      Matrix m = MinPlus(node[v], Oriented(edges, u, v), Oriented(edges, v, w), &s.choice);
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
    std::string why = "dynamic_programming: optimum of the pairwise objective; ";
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
  // Readers of one value in several layouts make the exact price no pairwise sum: from the
  // pairwise optimum, descend on it.
  DescendExact(g, &a, g.options().memory_budget_bytes * g.options().memory_target, 4);
  return a;
}

}  // namespace shardscope::search_internal
