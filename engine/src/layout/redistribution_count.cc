// The counts of an irregular exchange (redistribution_internal.h, CountExchange) in closed
// form: O(ranks x dims x axes), without visiting (rank, peer) pairs.
//
// Setting. The source state s and the landing state x are layouts on the planning mesh M, so
// every block is an interval per dimension, indexed by the mixed-radix digits of the axes that
// split it. V = the axes splitting a dimension of s, U = the others. Rank r receives the part
// of its landing box X(r) outside its source box S(r) from the owners of the source blocks X(r)
// meets: the owner of block j has r's coordinates on U and j's digits on V
// (ComputeExchange), so r and its peers agree on U and differ on V.
//
// Receiving (per rank r): bytes = |X(r)| - |X(r) n S(r)|; peers = the product over dimensions
// of the source blocks X(r) meets, minus its own block when X(r) meets S(r).
//
// Sending (per rank q): q sends to every wanting rank r != q with r's U coordinates and
// X(r) n S(q) != 0, the part |X(r) n S(q)|. Those r are q's U coordinates with every choice
// of V coordinates; along dimension i, X_i(r) depends only on the coordinates of the axes
// splitting dimension i of x, of which those in U are fixed (q's) and those in V are free; the
// V axes splitting no dimension of x only multiply. So the number of receivers and the
// elements sent factor by dimension: along dimension i, the landing blocks meeting S_i(q)
// (a range [bx, by] of block indices) whose U digits equal q's, counted by a digit recurrence,
// and their overlaps with S_i(q) (every block inside the range whole, the two ends clipped).
// q itself is among them exactly when it wants and X(q) meets S(q); it is taken out.
// Wanting ranks: those with coordinate 0 on the axes of `zero_mask` (new partial sums); such
// an axis in U decides for all of q's receivers at once, one in V fixes that coordinate.
//
// Axes: an axis a of V (in dimension i of s) separates r from some peer when the source blocks
// X_i(r) meets do not all have r's digit on a.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "redistribution_internal.h"

namespace shardscope::redist_internal {

namespace {

constexpr int kMaxDigits = 32;

// The digits of one dimension's block index: sizes of its axes (most significant first),
// and per digit the value it must have, or -1 when free.
struct Digits {
  int k = 0;
  int64_t size[kMaxDigits];
  int64_t fixed[kMaxDigits];
  int64_t free_below[kMaxDigits + 1];  // product of the free sizes after each digit
  int64_t total = 1;                   // number of blocks
  bool any_fixed = false;

  void Finish() {
    free_below[k] = 1;
    for (int j = k - 1; j >= 0; --j)
      free_below[j] = free_below[j + 1] * (fixed[j] < 0 ? size[j] : 1);
  }
  // Block indices in [0, z) whose fixed digits have their values.
  int64_t CountBelow(int64_t z) const {
    if (z >= total) return free_below[0];
    int64_t digit[kMaxDigits];
    for (int j = k - 1; j >= 0; --j) {
      digit[j] = z % size[j];
      z /= size[j];
    }
    int64_t count = 0;
    for (int j = 0; j < k; ++j) {
      if (fixed[j] < 0) {
        count += digit[j] * free_below[j + 1];
      } else {
        if (fixed[j] < digit[j]) count += free_below[j + 1];
        if (fixed[j] != digit[j]) return count;
      }
    }
    return count;
  }
  bool Matches(int64_t b) const {
    for (int j = k - 1; j >= 0; --j) {
      if (fixed[j] >= 0 && b % size[j] != fixed[j]) return false;
      b /= size[j];
    }
    return true;
  }
};

}  // namespace

bool CountExchange(const Problem& p, const State& s, const Boxes& cur, const State& into,
                   const Boxes& into_boxes, uint32_t zero_mask, Exchange* out) {
  const int d = p.num_dims;
  const int n = p.num_ranks;
  const int na = p.num_axes;
  if (s.reduce_mask || static_cast<int>(s.dims.size()) != d ||
      static_cast<int>(into.dims.size()) != d || na > kMaxDigits) {
    return false;
  }
  for (int i = 0; i < d; ++i) {
    if (p.shape[i] <= 0) return false;
  }
  uint32_t used_mask = 0;  // V
  for (int i = 0; i < d; ++i) used_mask |= AxesMask(s.dims[i]);
  uint32_t into_mask = 0;
  for (int i = 0; i < d; ++i) into_mask |= AxesMask(into.dims[i]);
  // Receivers per sender from the V axes that split no dimension of x.
  int64_t free_factor = 1;
  for (int a = 0; a < na; ++a) {
    const uint32_t bit = 1u << a;
    if ((used_mask & bit) && !(into_mask & bit) && !(zero_mask & bit))
      free_factor *= p.axis_size[a];
  }
  const uint32_t zero_fixed = zero_mask & ~used_mask;  // zero axes in U

  Exchange& ex = *out;
  ex = Exchange();
  ex.recv.assign(n, 0);
  ex.sent.assign(n, 0);
  // Per dimension of s, per axis: (weight, size) of its digit in the block index.
  struct SourceDigit {
    int axis;
    int dim;
    int64_t weight;
    int64_t size;
  };
  std::vector<SourceDigit> source_digits;
  for (int i = 0; i < d; ++i) {
    int64_t w = 1;
    for (int j = static_cast<int>(s.dims[i].size()) - 1; j >= 0; --j) {
      const int a = s.dims[i][j];
      if (p.axis_size[a] > 1) source_digits.push_back({a, i, w, p.axis_size[a]});
      w *= p.axis_size[a];
    }
  }
  const int64_t* tlo = into_boxes.lo.data();
  const int64_t* thi = into_boxes.hi.data();
  const int64_t* slo = cur.lo.data();
  const int64_t* shi = cur.hi.data();
  bool permute = true;
  int64_t most_messages = 0;
  Digits digits[kMaxDigits];
  // Receiving side.
  for (int r = 0; r < n; ++r) {
    const int64_t* c = p.coords.data() + static_cast<size_t>(r) * na;
    bool wants = true;
    for (uint32_t m = zero_mask; m; m &= m - 1) wants &= c[__builtin_ctz(m)] == 0;
    if (!wants) continue;
    int64_t need = 1, have = 1, blocks = 1;
    for (int i = 0; i < d; ++i) {
      const int64_t lo = tlo[r * d + i], hi = thi[r * d + i];
      need *= hi - lo;
      have *= std::max<int64_t>(0, std::min(hi, shi[r * d + i]) - std::max(lo, slo[r * d + i]));
      const int64_t bs = cur.block_size[i];
      blocks *= (hi - 1) / bs - lo / bs + 1;
    }
    const int64_t count = blocks - (have > 0 ? 1 : 0);
    if (count == 0) continue;
    ex.recv[r] = (need - have) * p.elem;
    ex.num_transfers += count;
    most_messages = std::max(most_messages, count);
    if (count > 1 || have != 0 || need != cur.shard_elems) permute = false;
    if (ex.axes_mask == used_mask) continue;
    for (const SourceDigit& sd : source_digits) {
      if (ex.axes_mask & (1u << sd.axis)) continue;
      const int64_t bs = cur.block_size[sd.dim];
      const int64_t first = tlo[r * d + sd.dim] / bs / sd.weight;
      const int64_t last = (thi[r * d + sd.dim] - 1) / bs / sd.weight;
      if (first != last || first % sd.size != c[sd.axis]) ex.axes_mask |= 1u << sd.axis;
    }
  }
  // Sending side.
  for (int i = 0; i < d; ++i) {
    Digits& g = digits[i];
    g.k = static_cast<int>(into.dims[i].size());
    g.total = 1;
    g.any_fixed = false;
    for (int j = 0; j < g.k; ++j) {
      const int a = into.dims[i][j];
      g.size[j] = p.axis_size[a];
      g.total *= g.size[j];
      g.fixed[j] = -1;
      g.any_fixed |= !(used_mask & (1u << a));
    }
  }
  for (int q = 0; q < n; ++q) {
    const int64_t* c = p.coords.data() + static_cast<size_t>(q) * na;
    bool receivers = true;
    for (uint32_t m = zero_fixed; m; m &= m - 1) receivers &= c[__builtin_ctz(m)] == 0;
    if (!receivers) continue;
    int64_t count = free_factor, elems = free_factor;
    for (int i = 0; i < d && count > 0; ++i) {
      const int64_t lo = slo[q * d + i], hi = shi[q * d + i];
      const int64_t t = into_boxes.block_size[i];
      const int64_t bx = lo / t, by = (hi - 1) / t;
      Digits& g = digits[i];
      if (!g.any_fixed) {
        count *= by - bx + 1;
        elems *= hi - lo;
        continue;
      }
      for (int j = 0; j < g.k; ++j) {
        const int a = into.dims[i][j];
        g.fixed[j] = (used_mask & (1u << a)) ? -1 : c[a];
      }
      g.Finish();
      const int64_t m = g.CountBelow(by + 1) - g.CountBelow(bx);
      int64_t overlap = t * m;
      if (m > 0 && g.Matches(bx)) overlap -= lo - bx * t;
      if (m > 0 && g.Matches(by)) overlap -= (by + 1) * t - hi;
      count *= m;
      elems *= overlap;
    }
    if (count == 0) continue;
    bool wants = true;
    for (uint32_t m = zero_mask; m; m &= m - 1) wants &= c[__builtin_ctz(m)] == 0;
    if (wants) {
      const int64_t own = IntersectVolume(tlo + q * d, thi + q * d, slo + q * d, shi + q * d, d);
      if (own > 0) {
        --count;
        elems -= own;
      }
    }
    ex.sent[q] = elems * p.elem;
    most_messages = std::max(most_messages, count);
    if (count > 1) permute = false;
  }
  for (int r = 0; r < n; ++r) {
    ex.max_recv = std::max(ex.max_recv, ex.recv[r]);
    ex.max_sent = std::max(ex.max_sent, ex.sent[r]);
  }
  ex.messages = most_messages;
  ex.is_permute = permute && ex.num_transfers > 0;
  return true;
}

}  // namespace shardscope::redist_internal
