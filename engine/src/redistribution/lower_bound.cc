// The lower bound of a redistribution (redistribution.h, "Lower bound"; proof in
// docs/redistribution.md): the bytes the busiest rank must receive, with and without a pending sum.
#include <algorithm>
#include <vector>

#include "redistribution_internal.h"

namespace shardscope::redist_internal {

namespace {

// The bound with a pending sum over P >= 2 addends (proof: docs/redistribution.md). A plan
// moves values of single elements (an addend or a sum of addends); an "item" is an element of
// one kept class. (1) A needer of an item holds at most one addend: it receives >= 1 value.
// (2) Take the first rank x to know the whole sum of an item: the values that reach it join
// P addends on distinct ranks (>= P - 1 messages, P if x holds none), and every other needer
// receives after that (>= 1 each). So an item with N needers costs >= N + P - 2 messages, + 1
// when none of them holds an addend. With need(r) from (1) and T the sum of (2), any plan's
// busiest rank receives >= max(max need, T / ranks): the water level of T over the needs.
std::vector<int64_t> PendingSumBound(const Problem& p, const Boxes& b, int64_t addends) {
  const int d = p.num_dims;
  const int n = p.num_ranks;
  const int na = p.num_axes;
  const Boxes& target = p.target();
  const std::vector<int64_t>& target_block = p.target_block();
  int64_t num_tblocks = 1, num_sblocks = 1;
  for (int64_t x : target.blocks) num_tblocks *= x;
  for (int64_t x : b.blocks) num_sblocks *= x;
  const int64_t target_elems = target.shard_elems;
  // Per active rank: need(r), and its item sets: (class, target block) -> needed items,
  // (class, source block, target block) -> items it needs and holds an addend of. Kept axes
  // split neither layout, so class x block < ranks and the keys fit.
  std::vector<int64_t> need(n, 0);
  std::vector<int64_t> needed_keys;
  std::vector<std::pair<int64_t, int>> held_keys;  // (key, a rank with it)
  needed_keys.reserve(n);
  held_keys.reserve(n);
  __int128 total = 0;  // T
  for (int r = 0; r < n; ++r) {
    if (target_block[r] < 0) continue;
    int64_t k = 0;
    for (int a = 0; a < na; ++a) {
      if (p.kept_mask & (1u << a)) k = k * p.axis_size[a] + p.coord(r, a);
    }
    need[r] = target_elems;
    total += target_elems;
    needed_keys.push_back(k * num_tblocks + target_block[r]);
    held_keys.emplace_back((k * num_sblocks + b.block_id[r]) * num_tblocks + target_block[r], r);
  }
  std::sort(needed_keys.begin(), needed_keys.end());
  needed_keys.erase(std::unique(needed_keys.begin(), needed_keys.end()), needed_keys.end());
  const __int128 items = static_cast<__int128>(needed_keys.size()) * target_elems;
  // Items some needer holds an addend of: one box per distinct (class, source, target) block.
  __int128 held = 0;
  std::sort(held_keys.begin(), held_keys.end());
  for (size_t j = 0; j < held_keys.size(); ++j) {
    if (j > 0 && held_keys[j].first == held_keys[j - 1].first) continue;
    const int q = held_keys[j].second;
    held += IntersectVolume(target.lo.data() + q * d, target.hi.data() + q * d, b.lo.data() + q * d,
                            b.hi.data() + q * d, d);
  }
  total += items * (addends - 2) + (items - held);
  // Water level: the smallest L with sum over ranks of max(need(r), L) >= T, L whole elements.
  std::vector<int64_t> sorted = need;
  std::sort(sorted.begin(), sorted.end(), std::greater<int64_t>());
  __int128 above = 0;  // needs of the ranks above the level
  int64_t level = 0;
  for (int k = 0; k < n; ++k) {
    const __int128 rest = total - above;
    if (rest >= static_cast<__int128>(sorted[k]) * (n - k)) {
      level = static_cast<int64_t>((rest + (n - k) - 1) / (n - k));
      break;
    }
    above += sorted[k];
  }
  std::vector<int64_t> out(n);
  for (int r = 0; r < n; ++r) out[r] = std::max(need[r], level) * p.elem;
  return out;
}

}  // namespace

std::vector<int64_t> MissingBytes(const Problem& p, const Boxes& b) {
  const int d = p.num_dims;
  const int n = p.num_ranks;
  std::vector<int64_t> move(n, 0);
  const int64_t* tlo = p.target().lo.data();
  const int64_t* thi = p.target().hi.data();
  for (int r = 0; r < n; ++r) {
    if (!p.active[r]) continue;
    const int64_t need = BoxVolume(tlo + r * d, thi + r * d, d);
    const int64_t have =
        IntersectVolume(tlo + r * d, thi + r * d, b.lo.data() + r * d, b.hi.data() + r * d, d);
    move[r] = (need - have) * p.elem;
  }
  return move;
}

std::vector<int64_t> LowerBound(const Problem& p, const State& s, const Boxes& b,
                                std::vector<int64_t>* move_out, std::vector<int64_t>* reduce_out) {
  const int n = p.num_ranks;
  std::vector<int64_t> move = MissingBytes(p, b);
  int64_t addends = 1;
  for (int a : MaskAxes(s.reduce_mask)) addends *= p.axis_size[a];
  std::vector<int64_t> out = addends > 1 ? PendingSumBound(p, b, addends) : move;
  if (reduce_out) {
    reduce_out->assign(n, 0);
    for (int r = 0; r < n; ++r) (*reduce_out)[r] = out[r] - move[r];
  }
  if (move_out) *move_out = std::move(move);
  return out;
}

}  // namespace shardscope::redist_internal

namespace shardscope {

Result<RedistLowerBound> RedistributionLowerBound(const Layout& from, const Layout& to,
                                                  int64_t element_bytes) {
  SHARDSCOPE_ASSIGN_OR_RETURN(redist_internal::Problem p,
                              redist_internal::MakeProblem(from, to, element_bytes));
  RedistLowerBound lb;
  lb.element_bytes = element_bytes;
  lb.per_rank =
      redist_internal::LowerBound(p, p.src, p.source(), &lb.move_per_rank, &lb.reduce_per_rank);
  for (int64_t v : lb.per_rank) {
    lb.max_bytes = std::max(lb.max_bytes, v);
    lb.total_bytes += v;
  }
  return lb;
}

}  // namespace shardscope
