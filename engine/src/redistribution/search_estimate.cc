// The search's pruning estimate (redistribution_internal.h, SearchEstimate): the missing
// elements plus a ring-bound heuristic for pending sums. Not a proven lower bound (that is
// lower_bound.cc); the planner's tight search keeps the plans within it.
#include <algorithm>
#include <vector>

#include "redistribution_internal.h"

namespace shardscope::redist_internal {

namespace {

// The pending-sum part of the estimate, per rank: the ring bound of a reduce-scatter of the
// data each reduction group (ranks equal on every axis but the pending ones) must reduce,
// shared among replica groups; addend classes: ranks equal on the kept partial axes.
std::vector<int64_t> ReduceEstimate(const Problem& p, const State& s, const Boxes& b) {
  const int d = p.num_dims;
  const int n = p.num_ranks;
  const int na = p.num_axes;
  const Boxes& target = p.target();
  const std::vector<int64_t>& target_block = p.target_block();
  const int64_t* tlo = target.lo.data();
  const int64_t* thi = target.hi.data();
  // Group index (mixed radix over the other axes) and addend class (over the kept axes).
  int64_t num_groups = 1, num_classes = 1;
  for (int a = 0; a < na; ++a) {
    if (!(s.reduce_mask & (1u << a))) num_groups *= p.axis_size[a];
    if (p.kept_mask & (1u << a)) num_classes *= p.axis_size[a];
  }
  std::vector<int64_t> group_of(n), class_of(n);
  for (int r = 0; r < n; ++r) {
    int64_t g = 0, k = 0;
    for (int a = 0; a < na; ++a) {
      const int64_t c = p.coord(r, a);
      if (!(s.reduce_mask & (1u << a))) g = g * p.axis_size[a] + c;
      if (p.kept_mask & (1u << a)) k = k * p.axis_size[a] + c;
    }
    group_of[r] = g;
    class_of[r] = k;
  }
  // Members of every group, ascending.
  std::vector<int> start(num_groups + 1, 0), members(n);
  for (int r = 0; r < n; ++r) ++start[group_of[r] + 1];
  for (int64_t g = 0; g < num_groups; ++g) start[g + 1] += start[g];
  {
    std::vector<int> fill(start.begin(), start.end() - 1);
    for (int r = 0; r < n; ++r) members[fill[group_of[r]]++] = r;
  }
  // Target blocks some active rank of each addend class needs (kept axes split no dimension
  // of the target, so classes x blocks <= ranks), with a rank holding each.
  int64_t num_tblocks = 1;
  for (int64_t x : target.blocks) num_tblocks *= x;
  std::vector<char> needed_set(num_classes * num_tblocks, 0);
  std::vector<int64_t> needed_count(num_classes, 0);
  std::vector<int> block_rep(num_tblocks, -1);
  for (int r = 0; r < n; ++r) {
    if (target_block[r] < 0) continue;
    const int64_t tb = target_block[r];
    if (block_rep[tb] < 0) block_rep[tb] = r;
    char& seen = needed_set[class_of[r] * num_tblocks + tb];
    if (!seen) {
      seen = 1;
      ++needed_count[class_of[r]];
    }
  }
  // Per group: its block and the distinct target blocks its members need (its "need").
  std::vector<int64_t> need_start(num_groups + 1, 0), need_vals;
  need_vals.reserve(n);
  std::vector<int64_t> stamp(num_tblocks, -1);
  for (int64_t g = 0; g < num_groups; ++g) {
    const size_t first = need_vals.size();
    for (int i = start[g]; i < start[g + 1]; ++i) {
      const int64_t tb = target_block[members[i]];
      if (tb < 0 || stamp[tb] == g) continue;
      stamp[tb] = g;
      need_vals.push_back(tb);
    }
    std::sort(need_vals.begin() + static_cast<std::ptrdiff_t>(first), need_vals.end());
    need_start[g + 1] = static_cast<int64_t>(need_vals.size());
  }
  // rho_all: groups holding the same block (per class); rho: ... and needing the same blocks.
  int64_t num_sblocks = 1;
  for (int64_t x : b.blocks) num_sblocks *= x;
  auto key_of = [&](int64_t g) {
    const int r = members[start[g]];
    return class_of[r] * num_sblocks + b.block_id[r];
  };
  std::vector<int64_t> holders(num_classes * num_sblocks, 0);
  for (int64_t g = 0; g < num_groups; ++g) ++holders[key_of(g)];
  std::vector<int64_t> order(num_groups);
  for (int64_t g = 0; g < num_groups; ++g) order[g] = g;
  auto need_less = [&](int64_t x, int64_t y) {
    return std::lexicographical_compare(
        need_vals.begin() + need_start[x], need_vals.begin() + need_start[x + 1],
        need_vals.begin() + need_start[y], need_vals.begin() + need_start[y + 1]);
  };
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    const int64_t kx = key_of(x), ky = key_of(y);
    if (kx != ky) return kx < ky;
    return need_less(x, y);
  });
  std::vector<int64_t> sharers(num_groups, 0);
  for (int64_t i = 0; i < num_groups;) {
    int64_t j = i + 1;
    while (j < num_groups && key_of(order[j]) == key_of(order[i]) && !need_less(order[i], order[j]))
      ++j;
    for (int64_t k = i; k < j; ++k) sharers[order[k]] = j - i;
    i = j;
  }

  std::vector<int64_t> reduce(n, 0);
  std::vector<int64_t> idx(d), first(d), last(d), blo(d), bhi(d);
  for (int64_t g = 0; g < num_groups; ++g) {
    const int rep = members[start[g]];
    const int64_t* slo = b.lo.data() + rep * d;
    const int64_t* shi = b.hi.data() + rep * d;
    const int64_t size = start[g + 1] - start[g];
    const int64_t kk = class_of[rep];
    int64_t needed = 0;   // n_G: distinct elements of the block some member needs
    int64_t counted = 0;  // c: the same with multiplicity
    for (int i = start[g]; i < start[g + 1]; ++i) {
      const int q = members[i];
      const int64_t tb = target_block[q];
      if (tb < 0) continue;
      const int64_t v = IntersectVolume(tlo + q * d, thi + q * d, slo, shi, d);
      counted += v;
      if (stamp[tb] != -2 - g) {
        stamp[tb] = -2 - g;
        needed += v;
      }
    }
    // n_all: elements of the block anyone (of this addend class) needs; they must be reduced
    // by one of the rho_all groups holding the block. Target blocks tile the tensor, so when
    // the class needs them all it is the whole block.
    int64_t needed_all = 0;
    if (needed_count[kk] == num_tblocks) {
      needed_all = BoxVolume(slo, shi, d);
    } else if (BoxVolume(slo, shi, d) > 0) {
      for (int i = 0; i < d; ++i) {
        first[i] = slo[i] / target.block_size[i];
        last[i] = (shi[i] - 1) / target.block_size[i];
        idx[i] = first[i];
      }
      while (true) {
        int64_t tb = 0;
        for (int i = 0; i < d; ++i) tb = tb * target.blocks[i] + idx[i];
        if (needed_set[kk * num_tblocks + tb]) {
          const int q = block_rep[tb];
          needed_all += IntersectVolume(tlo + q * d, thi + q * d, slo, shi, d);
        }
        int i = d - 1;
        while (i >= 0 && idx[i] == last[i]) {
          idx[i] = first[i];
          --i;
        }
        if (i < 0) break;
        ++idx[i];
      }
    }
    const int64_t rho_all = holders[key_of(g)];
    // Groups holding the same block and needing the same blocks can share the work: each
    // reduces 1/rho_need of the need, and members fetch the rest, reduced, from the others.
    const int64_t rho = sharers[g];
    const int64_t reduced =
        std::max((needed + rho - 1) / rho, (needed_all + rho_all - 1) / rho_all);
    // Reduce-scatter of `reduced` elements, then delivery to the members needing the same
    // element: ((p - 1) reduced + (c - n_G) / rho) / p; plus the shared part.
    const int64_t num = (reduced * (size - 1) * rho + counted - needed) * p.elem;
    const int64_t den = size * rho;
    const int64_t red = num <= 0 ? 0 : (num + den - 1) / den;
    for (int i = start[g]; i < start[g + 1]; ++i) {
      const int q = members[i];
      int64_t share = 0;
      if (rho > 1 && target_block[q] >= 0) {
        const int64_t mine = IntersectVolume(tlo + q * d, thi + q * d, slo, shi, d) * p.elem;
        share = (mine * (rho - 1) + rho - 1) / rho;
      }
      reduce[q] = red + share;
    }
  }
  return reduce;
}

}  // namespace

std::vector<int64_t> SearchEstimate(const Problem& p, const State& s, const Boxes& b) {
  std::vector<int64_t> out = MissingBytes(p, b);
  if (!s.reduce_mask) return out;
  const std::vector<int64_t> reduce = ReduceEstimate(p, s, b);
  for (int r = 0; r < p.num_ranks; ++r) out[r] += reduce[r];
  return out;
}

}  // namespace shardscope::redist_internal
