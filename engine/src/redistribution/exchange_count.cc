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
// (a range [bx, by] of block indices) whose U digits equal q's, and their overlaps with
// S_i(q).
// q itself is among them exactly when it wants and X(q) meets S(q); it is taken out.
// Wanting ranks: those with coordinate 0 on the axes of `zero_mask` (new partial sums); such
// an axis in U decides for all of q's receivers at once, one in V fixes that coordinate.
//
// Axes: an axis a of V (in dimension i of s) separates r from some peer when the source blocks
// X_i(r) meets do not all have r's digit on a.
//
// Cost. Every per-rank quantity above is a product over dimensions of a factor that depends
// only on the rank's coordinates on the axes indexing that dimension in s or x. So each
// dimension gets a table of its factors over those coordinates (DimTable: usually far fewer
// entries than ranks; built with tables per block index instead of divisions, and the
// sending counts filled one source block at a time), and one walk over the ranks in grid
// order multiplies one entry per dimension: the largest axis innermost, where only its one or
// two dimensions' entries move. On nested blocks (every axis a power of two long) every factor
// is one of two values, so an entry is a flag byte, the walk ANDs them, and a rank's counts
// come from 16-entry tables indexed by its flags. At 1024 ranks a call takes a few
// microseconds.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "exchange_count_tables.h"

namespace shardscope::redist_internal {

namespace {

using namespace count_detail;  // NOLINT: this file is their one user

// cap (receiving only, or null): on nested blocks the walk stops at the first rank that
// receives more than the cap allows and sets *exceeds (`out` is then incomplete).
bool Count(const Problem& p, const State& s, const State& into, uint32_t zero_mask, CountPart part,
           Exchange* out, const RecvCap* cap = nullptr, bool* exceeds = nullptr) {
  const bool with_receivers = part != CountPart::kSending;
  const bool with_senders = part != CountPart::kReceiving;
  const int d = p.num_dims;
  const int n = p.num_ranks;
  const int na = p.num_axes;
  if (s.reduce_mask || static_cast<int>(s.dims.size()) != d ||
      static_cast<int>(into.dims.size()) != d || na > kMaxAxes || d > kMaxAxes) {
    return false;
  }
  for (int i = 0; i < d; ++i) {
    if (p.shape[i] <= 0 || static_cast<int>(into.dims[i].size()) > kMaxAxes) return false;
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

  // The per-dimension tables live in a per-thread scratch reused by every call (a plan counts
  // many exchanges; their vectors keep their capacity).
  thread_local std::vector<Dim> dims_scratch;
  thread_local std::vector<DimTable> tables_scratch;
  if (static_cast<int>(dims_scratch.size()) < d) {
    dims_scratch.resize(d);
    tables_scratch.resize(d);
  }
  std::vector<Dim>& dims = dims_scratch;
  const bool nested = PowerOfTwoAxes(p);
  int64_t need = 1;         // every landing block has the same volume
  int64_t shard_elems = 1;  // and every source block
  for (int i = 0; i < d; ++i) {
    Dim& g = dims[i];
    g.bs = p.shape[i] / BlocksAlong(p, s.dims[i]);
    g.t = p.shape[i] / BlocksAlong(p, into.dims[i]);
    need *= g.t;
    shard_elems *= g.bs;
    Terms(p, s.dims[i].data(), static_cast<int>(s.dims[i].size()), &g.src_terms);
    Terms(p, into.dims[i].data(), static_cast<int>(into.dims[i].size()), &g.into_terms);
    const int64_t src_blocks = p.shape[i] / g.bs, into_blocks = p.shape[i] / g.t;
    g.into_blocks = into_blocks;
    if (nested) {
      NestedFactors(p, used_mask, zero_mask, with_senders, &g);
      g.fixed_terms.clear();
      continue;
    }
    g.nested = false;
    BlocksMet(g.t, g.bs, into_blocks, &g.blocks_met);
    if (with_senders) {
      FloorSteps(0, g.bs, g.t, src_blocks, &g.bx);
      FloorSteps(g.bs - 1, g.bs, g.t, src_blocks, &g.by);
    }
    const int k = static_cast<int>(into.dims[i].size());
    int fixed_axes[kMaxAxes];
    int num_fixed = 0;
    for (int j = 0; j < k; ++j) {
      const int a = into.dims[i][j];
      if (!(used_mask & (1u << a))) fixed_axes[num_fixed++] = a;
    }
    Terms(p, fixed_axes, num_fixed, &g.fixed_terms);
    g.fixed_combos = 1;
    for (int f = 0; f < num_fixed; ++f) g.fixed_combos *= p.axis_size[fixed_axes[f]];
    if (with_senders && num_fixed > 0) {
      // Landing blocks' fixed keys by odometer over their digits.
      int64_t weight[kMaxAxes], digit[kMaxAxes];
      for (int j = k - 1, f = num_fixed - 1; j >= 0; --j) {
        weight[j] = 0;
        digit[j] = 0;
        if (!(used_mask & (1u << into.dims[i][j]))) weight[j] = g.fixed_terms[f--].second;
      }
      GrowTo(&g.fixed_key, into_blocks);
      int64_t key = 0;
      for (int64_t tb = 0; tb < into_blocks; ++tb) {
        g.fixed_key[tb] = key;
        for (int j = k - 1; j >= 0; --j) {
          if (++digit[j] < p.axis_size[into.dims[i][j]]) {
            key += weight[j];
            break;
          }
          key -= (digit[j] - 1) * weight[j];
          digit[j] = 0;
        }
      }
    }
    if (with_senders) FillSendFactors(src_blocks, num_fixed > 0, &g);
  }
  // Per dimension, a table over the coordinates of the axes indexing its blocks in s or x:
  // the dimension's factor of every per-rank count (a rank's counts are products of one entry
  // per dimension), so the walk over the ranks only looks entries up.
  // The receiving side alone on nested blocks needs no tables: the walk
  // follows each dimension's block indices themselves (see direct_walk).
  const bool direct = nested && part == CountPart::kReceiving;
  std::vector<DimTable>& tables = tables_scratch;
  for (int i = 0; i < d && !direct; ++i) {
    // (Nested blocks know the union of the separating axes: Dim::separating_union.)
    BuildTable(p, with_senders, /*separating_per_entry=*/zero_mask != 0 && !nested, &dims[i],
               &tables[i]);
  }

  Exchange& ex = *out;
  // The sending side continues from the receiving side's counts and permute test.
  bool permute = true;
  int64_t most_messages = 0;
  if (with_receivers) {
    ex = Exchange();
    ex.recv.assign(n, 0);
  } else {
    permute = ex.is_permute;
    most_messages = ex.max_recv_peers;
  }
  ex.sent.assign(n, 0);

  // Ranks in grid order over every axis but the largest, z, by odometer (a step along an axis
  // moves the keys of the one or two dimensions it indexes); along z, an inner loop that moves
  // only the keys of z's dimensions, with the other dimensions' product fixed.
  int z = -1;  // none on a mesh without axes
  for (int a = 0; a < na; ++a) {
    if (z < 0 || p.axis_size[a] >= p.axis_size[z]) z = a;
  }
  const int64_t z_size = z >= 0 ? p.axis_size[z] : 1;
  const int64_t z_pos_stride = z >= 0 ? p.pos_stride[z] : 0;
  const uint32_t z_bit = z >= 0 ? 1u << z : 0;
  // z's dimensions (at most two: one of s, one of x) and its key weight in each.
  int z_dims[2] = {-1, -1};
  int64_t z_weights[2] = {0, 0};
  int num_z_dims = 0;
  for (int i = 0; i < d && !direct; ++i) {
    const int64_t w = z >= 0 ? tables[i].WeightOf(z) : -1;
    if (w < 0) continue;
    z_dims[num_z_dims] = i;
    z_weights[num_z_dims] = w;
    ++num_z_dims;
  }
  // Per mesh axis, the keys it moves (of the one or two dimensions whose table it indexes).
  struct KeyMove {
    int count = 0;
    int dim[2];
    int64_t weight[2];
  };
  KeyMove key_moves[kMaxAxes];
  for (int i = 0; i < d && !direct; ++i) {
    for (int a : tables[i].axes) {
      KeyMove& km = key_moves[a];
      km.dim[km.count] = i;
      km.weight[km.count] = tables[i].key_weight[a];
      ++km.count;
    }
  }
  // (direct: the "keys" are dimension i's source block index at i and landing block index at
  // d + i; an axis moves the one it splits in s and the one in x.)
  for (int i = 0; i < d && direct; ++i) {
    for (const auto& [a, w] : dims[i].src_terms) {
      KeyMove& km = key_moves[a];
      km.dim[km.count] = i;
      km.weight[km.count++] = w;
    }
    for (const auto& [a, w] : dims[i].into_terms) {
      KeyMove& km = key_moves[a];
      km.dim[km.count] = d + i;
      km.weight[km.count++] = w;
    }
  }
  auto tables_move = [&key_moves](int a, int64_t delta, int64_t* keys) {
    const KeyMove& km = key_moves[a];
    for (int j = 0; j < km.count; ++j) keys[km.dim[j]] += delta * km.weight[j];
  };
  const DimTable::Entry unit;
  // (A dimension z does not move: keeps and sends, neutral in the walk's AND.)
  const uint8_t nested_unit = DimTable::kNestedKeeps | DimTable::kNestedSends;
  // What the walk gathers besides the per-rank bytes (the permute test from them at the end).
  struct Totals {
    int64_t transfers = 0, recv_peers = 0, send_peers = 0, max_recv = 0, max_sent = 0;
    bool receiver_has_own = false;  // some receiving rank keeps part of its landing block
    uint32_t separating = 0;
  } totals;
  int64_t* recv = with_receivers ? ex.recv.data() : nullptr;
  const int64_t* recv_before = with_receivers ? nullptr : ex.recv.data();
  int64_t* sent = ex.sent.data();
  // The row of ranks along z from grid position `pos` (ZRow), in the tables `table_of(i)`
  // gives (the general entries or the nested ones), `unit_entry` standing in for a missing
  // dimension.
  auto z_row = [&](const auto& table_of, const auto& unit_entry, const int64_t* key, int64_t pos) {
    ZRow<std::remove_cvref_t<decltype(unit_entry)>> row;
    row.e0 = num_z_dims > 0 ? &table_of(z_dims[0])[key[z_dims[0]]] : &unit_entry;
    row.e1 = num_z_dims > 1 ? &table_of(z_dims[1])[key[z_dims[1]]] : &unit_entry;
    row.w0 = num_z_dims > 0 ? z_weights[0] : 0;
    row.w1 = num_z_dims > 1 ? z_weights[1] : 0;
    row.ranks = p.rank_of_pos.data() + pos;
    return row;
  };
  auto entries_of = [&](int i) -> const std::vector<DimTable::Entry>& { return tables[i].entries; };
  auto nested_flags_of = [&](int i) -> const std::vector<uint8_t>& {
    return tables[i].nested_flags;
  };
  // The next row of ranks along z: an odometer over the other axes (c: their coordinates).
  auto next_row = [&](int64_t* c, int64_t* key, int64_t* pos) {
    for (int a = na - 1; a >= 0; --a) {
      if (a == z) continue;
      if (++c[a] < p.axis_size[a]) {
        tables_move(a, 1, key);
        *pos += p.pos_stride[a];
        return;
      }
      tables_move(a, -(c[a] - 1), key);
      *pos -= (c[a] - 1) * p.pos_stride[a];
      c[a] = 0;
    }
  };
  // The walk, instantiated per case so that the common one (every rank wants, both sides)
  // tests nothing per rank but its counts.
  auto walk = [&](auto zero, auto receive, auto send) {
    constexpr bool kZero = decltype(zero)::value, kReceive = decltype(receive)::value,
                   kSend = decltype(send)::value;
    int64_t key[kMaxAxes] = {}, c[kMaxAxes] = {};
    int64_t pos = 0;
    const int64_t outer = n / z_size;
    for (int64_t o = 0; o < outer; ++o) {
      if (o > 0) next_row(c, key, &pos);
      bool wants_outer = true, receivers_outer = true;
      if constexpr (kZero) {
        for (uint32_t m = zero_mask & ~z_bit; m; m &= m - 1)
          wants_outer &= c[__builtin_ctz(m)] == 0;
        for (uint32_t m = zero_fixed & ~z_bit; m; m &= m - 1)
          receivers_outer &= c[__builtin_ctz(m)] == 0;
      }
      // The dimensions z does not move: their product.
      DimTable::Entry rest;
      rest.sends = free_factor;
      rest.sent = free_factor;
      for (int i = 0; i < d; ++i) {
        if (i == z_dims[0] || i == z_dims[1]) continue;
        rest.Multiply(tables[i].entries[key[i]], kSend);
      }
      const auto row = z_row(entries_of, unit, key, pos);
      for (int64_t cz = 0; cz < z_size; ++cz) {
        const DimTable::Entry& x0 = row.e0[cz * row.w0];
        const DimTable::Entry& x1 = row.e1[cz * row.w1];
        const int r = row.ranks[cz * z_pos_stride];
        bool wants = true, receivers = true;
        if constexpr (kZero) {
          wants = wants_outer && (cz == 0 || !(zero_mask & z_bit));
          receivers = receivers_outer && (cz == 0 || !(zero_fixed & z_bit));
        }
        const int64_t have = rest.have * x0.have * x1.have;
        // Receiving (count > 0 exactly when recv > 0: the landing box meets a source block
        // other than the rank's own exactly when it is not inside it).
        if constexpr (kReceive) {
          const int64_t count = rest.blocks * x0.blocks * x1.blocks - (have > 0 ? 1 : 0);
          if (wants && count > 0) {
            const int64_t bytes = (need - have) * p.elem;
            recv[r] = bytes;
            totals.max_recv = std::max(totals.max_recv, bytes);
            totals.transfers += count;
            totals.recv_peers = std::max(totals.recv_peers, count);
            totals.receiver_has_own |= have != 0;
            // (Separating axes are counted with the sending side: receiving-only tables
            // leave them unset. When every rank wants, the tables hold their union.)
            if constexpr (kSend && kZero) {
              totals.separating |= rest.separating | x0.separating | x1.separating;
            }
          }
        } else if constexpr (kZero) {
          if (wants && recv_before[r] > 0)
            totals.separating |= rest.separating | x0.separating | x1.separating;
        }
        // Sending.
        if constexpr (kSend) {
          int64_t count = rest.sends * x0.sends * x1.sends;
          if (!receivers || count == 0) continue;
          int64_t elems = rest.sent * x0.sent * x1.sent;
          if (wants && have > 0) {
            --count;
            elems -= have;
          }
          sent[r] = elems * p.elem;
          totals.max_sent = std::max(totals.max_sent, sent[r]);
          totals.send_peers = std::max(totals.send_peers, count);
        }
      }
    }
  };
  // Nested blocks: a wanting rank's landing block meets `all_blocks` source blocks, its own
  // among them exactly when it keeps part of it; it then receives keeper_bytes, else
  // lacking_bytes (its whole block).
  struct NestedReceiving {
    int64_t all_blocks = 1, keeper_bytes = 0, lacking_bytes = 0, kept_bytes = 0;
  };
  auto nested_receiving = [&]() {
    NestedReceiving nr;
    for (int i = 0; i < d; ++i) nr.all_blocks *= dims[i].nested_blocks;
    nr.keeper_bytes = nr.all_blocks > 1 ? (need - NestedOwnHave(dims, d)) * p.elem : 0;
    nr.lacking_bytes = need * p.elem;
    nr.kept_bytes = nr.lacking_bytes - nr.keeper_bytes;
    return nr;
  };
  // The receiving totals from how many ranks keep part of their block.
  // (Over the `wanting` ranks: every rank without new partial sums.)
  auto receiving_totals = [&](const NestedReceiving& nr, int64_t keepers, int64_t wanting) {
    const bool some_lack = keepers < wanting;
    totals.transfers = wanting * nr.all_blocks - keepers;
    totals.recv_peers = some_lack ? nr.all_blocks : (nr.all_blocks > 1 ? nr.all_blocks - 1 : 0);
    totals.max_recv = some_lack ? nr.lacking_bytes : nr.keeper_bytes;
    totals.receiver_has_own = nr.all_blocks > 1 && keepers > 0;
  };
  auto over_cap = [&](int r) {
    return cap && recv[r] + (cap->used ? cap->used[r] : 0) + (cap->more ? cap->more[r] : 0) >
                      cap->bound[r] + cap->slack;
  };
  // The walk for nested blocks (with the sending side). A rank's counts depend on four bits
  // only: it keeps part of its block (every dimension's kNestedKeeps), its source block meets
  // landing blocks with its fixed digits (every kNestedSends: it sends `all_senders` blocks of
  // `sent_per_block` elements, less what it keeps, else none), it wants (new partial sums),
  // and its receivers want. So the walk ANDs one flag byte per dimension and looks the counts
  // up in 16-entry tables, without multiplications or branches; the maxima come from the
  // flag values met (the separating axes from the tables: Dim::separating_union).
  auto nested_walk = [&](auto zero, auto receive, auto send) {
    constexpr bool kZero = decltype(zero)::value, kReceive = decltype(receive)::value,
                   kSend = decltype(send)::value;
    static_assert(kSend, "the receiving side alone is direct_walk's");
    constexpr uint32_t kKeeps = DimTable::kNestedKeeps, kSends = DimTable::kNestedSends;
    constexpr uint32_t kWants = 4, kReceivers = 8;
    const NestedReceiving nr = nested_receiving();
    int64_t sent_per_block = 1, all_senders = free_factor;
    for (int i = 0; i < d; ++i) {
      sent_per_block *= dims[i].sent_per_block;
      all_senders *= dims[i].free_sends;
    }
    const int64_t own_have = NestedOwnHave(dims, d);
    int64_t recv_of[16], sent_of[16], peers_of[16];
    for (uint32_t f = 0; f < 16; ++f) {
      const bool wants = f & kWants, keeps = (f & kKeeps) && wants;
      const int64_t senders = (f & kSends) && (f & kReceivers) ? all_senders : 0;
      recv_of[f] = wants ? (keeps ? nr.lacking_bytes - nr.kept_bytes : nr.lacking_bytes) : 0;
      sent_of[f] = (senders * sent_per_block - (keeps ? own_have : 0)) * p.elem;
      peers_of[f] = senders - (keeps ? 1 : 0);
    }
    // New partial sums: along z, only coordinate 0 wants (receives) when z is a new partial
    // axis, and only coordinate 0 sends when z is one in U.
    const uint32_t z_later =
        ~(((zero_mask & z_bit) ? kWants : 0u) | ((zero_fixed & z_bit) ? kReceivers : 0u));
    uint32_t seen = 0;  // bit f: some rank has flags f
    int64_t keepers = 0, wanting = 0;
    int64_t key[kMaxAxes] = {}, c[kMaxAxes] = {};
    int64_t pos = 0;
    const int64_t outer = n / z_size;
    for (int64_t o = 0; o < outer; ++o) {
      if (o > 0) next_row(c, key, &pos);
      uint32_t row_flags = kKeeps | kSends | kWants | kReceivers;
      if constexpr (kZero) {
        for (uint32_t m = zero_mask & ~z_bit; m; m &= m - 1) {
          if (c[__builtin_ctz(m)] != 0) row_flags &= ~kWants;
        }
        for (uint32_t m = zero_fixed & ~z_bit; m; m &= m - 1) {
          if (c[__builtin_ctz(m)] != 0) row_flags &= ~kReceivers;
        }
      }
      for (int i = 0; i < d; ++i) {
        if (i == z_dims[0] || i == z_dims[1]) continue;
        row_flags &= tables[i].nested_flags[key[i]] | ~(kKeeps | kSends);
      }
      const auto row = z_row(nested_flags_of, nested_unit, key, pos);
      for (int64_t cz = 0; cz < z_size; ++cz) {
        uint32_t f = row_flags & (row.e0[cz * row.w0] | ~(kKeeps | kSends)) &
                     (row.e1[cz * row.w1] | ~(kKeeps | kSends));
        if constexpr (kZero) f &= cz == 0 ? ~0u : z_later;
        const int r = row.ranks[cz * z_pos_stride];
        if constexpr (kReceive) {
          recv[r] = recv_of[f];
          keepers += (f & (kKeeps | kWants)) == (kKeeps | kWants);
          wanting += (f & kWants) != 0;
        }
        sent[r] = sent_of[f];
        seen |= 1u << f;
      }
    }
    int64_t max_sent = 0, send_peers = 0;
    for (uint32_t f = 0; f < 16; ++f) {
      if (!(seen & (1u << f))) continue;
      max_sent = std::max(max_sent, sent_of[f]);
      send_peers = std::max(send_peers, peers_of[f]);
    }
    if constexpr (kReceive) receiving_totals(nr, keepers, wanting);
    totals.max_sent = max_sent;
    totals.send_peers = send_peers;
  };
  // The receiving side without tables (direct): a rank keeps part of its landing block when
  // in every dimension (outer index >> shift) == inner index (Dim::nested); along z only the
  // indices z splits move.
  auto direct_walk = [&]() {
    const NestedReceiving nr = nested_receiving();
    // The outer and inner index of dimension i among the keys.
    auto outer_key = [&](int i) { return dims[i].finer ? d + i : i; };
    auto inner_key = [&](int i) { return dims[i].finer ? i : d + i; };
    // The (at most two) dimensions z splits, with their index steps along z; a unit one
    // (indices 0, steps 0: always keeps) fills the pair.
    struct Along {
      int dim = -1;
      int shift = 0;
      int64_t outer_step = 0, inner_step = 0;
    } along[2];
    int num_along = 0;
    bool z_moves[kMaxAxes] = {};
    if (z >= 0) {
      const KeyMove& km = key_moves[z];
      for (int j = 0; j < km.count; ++j) {
        const int i = km.dim[j] % d;
        z_moves[i] = true;
        int k = 0;
        while (k < num_along && along[k].dim != i) ++k;
        if (k == num_along) {
          along[num_along++] = {i, dims[i].shift, 0, 0};
        }
        (km.dim[j] == outer_key(i) ? along[k].outer_step : along[k].inner_step) += km.weight[j];
      }
    }
    // Wanting ranks (new partial sums): coordinate 0 on the axes of zero_mask.
    const int64_t z_zero = (zero_mask & z_bit) ? 1 : 0;
    int64_t keepers = 0, wanting = 0;
    int64_t key[2 * kMaxAxes] = {}, c[kMaxAxes] = {};
    int64_t pos = 0;
    const int64_t outer = n / z_size;
    for (int64_t o = 0; o < outer; ++o) {
      if (o > 0) next_row(c, key, &pos);
      int64_t row_wants = 1;
      for (uint32_t m = zero_mask & ~z_bit; m; m &= m - 1) row_wants &= c[__builtin_ctz(m)] == 0;
      int64_t rest_keeps = 1;
      for (int i = 0; i < d; ++i) {
        if (!z_moves[i]) rest_keeps &= (key[outer_key(i)] >> dims[i].shift) == key[inner_key(i)];
      }
      int64_t o0 = 0, i0 = 0, o1 = 0, i1 = 0;
      if (num_along > 0) o0 = key[outer_key(along[0].dim)], i0 = key[inner_key(along[0].dim)];
      if (num_along > 1) o1 = key[outer_key(along[1].dim)], i1 = key[inner_key(along[1].dim)];
      const int s0 = along[0].shift, s1 = along[1].shift;
      const int* ranks = p.rank_of_pos.data() + pos;
      for (int64_t cz = 0; cz < z_size; ++cz) {
        const int r = ranks[cz * z_pos_stride];
        const int64_t wants = row_wants & ((cz == 0) | (z_zero ^ 1));
        const int64_t keeps = rest_keeps & ((o0 >> s0) == i0) & ((o1 >> s1) == i1);
        recv[r] = (nr.lacking_bytes - (nr.kept_bytes & -keeps)) & -wants;
        keepers += keeps & wants;
        wanting += wants;
        if (over_cap(r)) {
          *exceeds = true;
          return;
        }
        o0 += along[0].outer_step;
        i0 += along[0].inner_step;
        o1 += along[1].outer_step;
        i1 += along[1].inner_step;
      }
    }
    receiving_totals(nr, keepers, wanting);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (cap) *exceeds = false;
  if (direct) {
    direct_walk();
  } else if (nested && zero_mask) {
    if (part == CountPart::kBoth) nested_walk(Yes{}, Yes{}, Yes{});
    if (part == CountPart::kSending) nested_walk(Yes{}, No{}, Yes{});
  } else if (nested) {
    if (part == CountPart::kBoth) nested_walk(No{}, Yes{}, Yes{});
    if (part == CountPart::kSending) nested_walk(No{}, No{}, Yes{});
  } else if (zero_mask) {
    if (part == CountPart::kBoth) walk(Yes{}, Yes{}, Yes{});
    if (part == CountPart::kReceiving) walk(Yes{}, Yes{}, No{});
    if (part == CountPart::kSending) walk(Yes{}, No{}, Yes{});
  } else {
    if (part == CountPart::kBoth) walk(No{}, Yes{}, Yes{});
    if (part == CountPart::kReceiving) walk(No{}, Yes{}, No{});
    if (part == CountPart::kSending) walk(No{}, No{}, Yes{});
  }
  if (cap && *exceeds) return true;
  if (with_receivers) {
    ex.num_transfers = totals.transfers;
    ex.max_recv_peers = totals.recv_peers;
    ex.max_recv = totals.max_recv;
    most_messages = totals.recv_peers;
    permute = totals.recv_peers <= 1 && !totals.receiver_has_own &&
              (totals.transfers == 0 || need == shard_elems);
  }
  if (with_senders) {
    // Without new partial sums every rank wants, so a rank receives exactly when its landing
    // block is not inside its source block, i.e. when some dimension's is not; an entry
    // whose is adds no separating axis (the one source block it meets is the rank's own).
    // So the union over the receiving ranks is the union over every table's entries.
    // On nested blocks the tables hold the union over the wanting ranks in any case.
    if (!zero_mask || nested) {
      for (int i = 0; i < d; ++i) totals.separating |= tables[i].separating_any;
    }
    ex.axes_mask = totals.separating;
    ex.max_sent = totals.max_sent;
    most_messages = std::max(most_messages, totals.send_peers);
    permute = permute && totals.send_peers <= 1;
  }
  ex.messages = most_messages;
  ex.is_permute = permute && ex.num_transfers > 0;
  return true;
}

}  // namespace

bool HasNestedBlocks(const Problem& p) { return PowerOfTwoAxes(p); }

bool CountExchange(const Problem& p, const State& s, const State* into,
                   const ExchangeCountOptions& o, Exchange* out) {
  if (into && Count(p, s, *into, o.zero_mask, o.part, out, o.cap, o.exceeds)) return true;
  if (!o.enumerate) return false;
  assert(o.part == CountPart::kBoth);
  const ExchangeBoxes& b = *o.enumerate;
  *out = ComputeExchange(p, s, *b.cur, b.into->lo, b.into->hi, *b.want, /*record=*/false);
  return true;
}

}  // namespace shardscope::redist_internal
