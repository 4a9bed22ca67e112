// The tables of the closed-form exchange counts (exchange_count_tables.h; the derivation is at
// the top of exchange_count.cc).

#include "exchange_count_tables.h"

namespace shardscope::redist_internal::count_detail {

// out[k] = floor((start + k step) / div) for k = 0 .. count-1.
void FloorSteps(int64_t start, int64_t step, int64_t div, int64_t count,
                std::vector<int64_t>* out_vector) {
  GrowTo(out_vector, count);
  int64_t* out = out_vector->data();
  FloorStepper f(start, step, div);
  for (int64_t k = 0; k < count; ++k, f.Next()) out[k] = f.q;
}

// out[k] = the blocks of size `bs` that the k-th interval of size `t` meets:
// floor((k t + t - 1) / bs) - floor(k t / bs) + 1.
void BlocksMet(int64_t t, int64_t bs, int64_t count, std::vector<int64_t>* out_vector) {
  GrowTo(out_vector, count);
  int64_t* out = out_vector->data();
  FloorStepper first(0, t, bs), last(t - 1, t, bs);
  for (int64_t k = 0; k < count; ++k, first.Next(), last.Next()) out[k] = last.q - first.q + 1;
}

// The sending factors of a dimension: for a sender with source block sb and fixed digits f
// (their index over the dimension's fixed axes), the landing blocks with those digits that
// meet the source block, and their overlap with it, at send[2 (sb fixed_combos + f)]. One
// pass over the landing blocks each source block meets fills its row for every f.
void FillSendFactors(int64_t src_blocks, bool with_fixed, Dim* g) {
  g->send.assign(2 * src_blocks * g->fixed_combos, 0);
  for (int64_t sb = 0; sb < src_blocks; ++sb) {
    int64_t* row = g->send.data() + 2 * sb * g->fixed_combos;
    for (int64_t b = g->bx[sb]; b <= g->by[sb]; ++b) {
      int64_t* cell = row + (with_fixed ? 2 * g->fixed_key[b] : 0);
      ++cell[0];
      cell[1] += g->Overlap(sb, b);
    }
  }
}

// Fills dimension i's table (see DimTable) by odometer over its key. separating_per_entry =
// false: the entries' separating axes are left 0 and only their union is kept
// (t->separating_any), which the count reads when every rank wants (see Count).
void BuildTable(const Problem& p, bool with_senders, bool separating_per_entry, Dim* g,
                DimTable* t) {
  const int na = p.num_axes;
  // Per mesh axis: its weight in the source block index, the landing block index and the
  // fixed key of this dimension (0 when it has none).
  int64_t sw[kMaxAxes] = {}, tw[kMaxAxes] = {}, fw[kMaxAxes] = {};
  for (const auto& [a, w] : g->src_terms) sw[a] = w;
  for (const auto& [a, w] : g->into_terms) tw[a] = w;
  for (const auto& [a, w] : g->fixed_terms) fw[a] = w;
  std::fill(t->key_weight, t->key_weight + kMaxAxes, -1);
  t->axes.clear();
  for (int a = 0; a < na; ++a) {
    if (p.axis_size[a] > 1 && (sw[a] || tw[a])) t->axes.push_back(a);
  }
  // The longest axis last (weight 1): the inner loop below runs along it, and the odometer
  // between rows costs more than an entry.
  if (t->axes.size() > 1) {
    auto longest = std::max_element(t->axes.begin(), t->axes.end(),
                                    [&p](int a, int b) { return p.axis_size[a] < p.axis_size[b]; });
    std::rotate(longest, longest + 1, t->axes.end());
  }
  int64_t size = 1;
  for (int j = static_cast<int>(t->axes.size()) - 1; j >= 0; --j) {
    t->key_weight[t->axes[j]] = size;
    size *= p.axis_size[t->axes[j]];
  }
  if (g->nested) {
    GrowTo(&t->nested_flags, size);
  } else {
    GrowTo(&t->entries, size);
  }
  // Per source axis of the dimension (size > 1) and landing block: the axis's digit shared by
  // every source block the landing block meets, or -1 when they differ along it.
  const int64_t into_blocks = g->into_blocks;
  int source_axes[kMaxAxes];
  int num_source_axes = 0;
  if (with_senders && !g->nested) {
    GrowTo(&g->digit_of, static_cast<int64_t>(g->src_terms.size()) * into_blocks);
    for (const auto& [a, w] : g->src_terms) {
      if (p.axis_size[a] <= 1) continue;
      // The axis's digit of the first and last source block a landing block meets:
      // floor(tb t / (bs w)) and floor((tb t + t - 1) / (bs w)), stepped, the first one's
      // digit kept modulo the axis size (no division per block: they were most of the
      // table's time).
      int64_t* digits = g->digit_of.data() + num_source_axes * into_blocks;
      const int64_t size_a = p.axis_size[a];
      FloorStepper first(0, g->t, g->bs * w), last(g->t - 1, g->t, g->bs * w);
      const int64_t digit_step = first.q_step % size_a;
      int64_t digit = 0;
      for (int64_t tb = 0; tb < into_blocks; ++tb, last.Next()) {
        digits[tb] = first.q == last.q ? digit : -1;
        digit += digit_step + first.Next();
        if (digit >= size_a) digit -= size_a;
      }
      source_axes[num_source_axes++] = a;
    }
  }
  uint32_t all_source_bits = 0;  // once the union has them all, no entry can add to it
  for (int j = 0; j < num_source_axes; ++j) all_source_bits |= 1u << source_axes[j];
  t->separating_any = 0;
  // The key's last axis (weight 1) in an inner loop that only steps the indices; the others
  // by odometer between rows.
  const int num_key_axes = static_cast<int>(t->axes.size());
  const int inner = num_key_axes > 0 ? t->axes[num_key_axes - 1] : -1;
  const int64_t row = inner >= 0 ? p.axis_size[inner] : 1;
  const int64_t s_step = inner >= 0 ? sw[inner] : 0, t_step = inner >= 0 ? tw[inner] : 0,
                f_step = inner >= 0 ? fw[inner] : 0;
  int64_t coord[kMaxAxes] = {};
  int64_t sidx = 0, tidx = 0, fidx = 0;
  DimTable::Entry* entries = t->entries.data();
  uint8_t* nested = t->nested_flags.data();
  for (int64_t base = 0; base < size; base += row) {
    if (base > 0) {
      for (int j = num_key_axes - 2; j >= 0; --j) {
        const int a = t->axes[j];
        if (++coord[a] < p.axis_size[a]) {
          sidx += sw[a];
          tidx += tw[a];
          fidx += fw[a];
          break;
        }
        const int64_t back = coord[a] - 1;
        sidx -= back * sw[a];
        tidx -= back * tw[a];
        fidx -= back * fw[a];
        coord[a] = 0;
      }
    }
    int64_t si = sidx, ti = tidx, fi = fidx;
    if (g->nested) {
      // (Only with the sending side: the receiving side alone walks without tables; and the
      // separating axes' union is Dim::separating_union. Locals: the entries' stores could
      // alias the Dim's fields. No branch on `own`: it alternates along the row.)
      assert(with_senders && !separating_per_entry);
      const int shift = g->shift;
      const bool finer = g->finer;
      // A rank keeps part of its block when (outer >> shift) == inner: the landing block
      // inside the source block, or the source block inside the landing block.
      int64_t outer_index = finer ? ti : si, inner_index = finer ? si : ti;
      const int64_t outer_step = finer ? t_step : s_step, inner_step = finer ? s_step : t_step;
      for (int64_t c = 0; c < row;
           ++c, si += s_step, outer_index += outer_step, inner_index += inner_step) {
        const uint8_t keeps = (outer_index >> shift) == inner_index;
        uint8_t sends = 1;
        for (int j = 0; j < g->num_checks; ++j) {
          const Dim::FixedCheck& k = g->checks[j];
          const int64_t digit = k.axis == inner ? c : coord[k.axis];
          sends &= ((si >> k.shift) & k.mask) == (digit >> k.coord_shift);
        }
        nested[base + c] = keeps * DimTable::kNestedKeeps | sends * DimTable::kNestedSends;
      }
      t->separating_any = g->separating_union;
      continue;
    }
    for (int64_t c = 0; c < row; ++c, si += s_step, ti += t_step, fi += f_step) {
      DimTable::Entry& e = entries[base + c];
      e.have = g->Overlap(si, ti);
      e.blocks = g->blocks_met[ti];
      if (!with_senders) continue;
      const int64_t* cell = g->send.data() + 2 * (si * g->fixed_combos + fi);
      e.sends = cell[0];
      e.sent = cell[1];
      e.separating = 0;
      if (!separating_per_entry && t->separating_any == all_source_bits) continue;
      uint32_t separating = 0;
      for (int j = 0; j < num_source_axes; ++j) {
        const int a = source_axes[j];
        const int64_t digit = a == inner ? c : coord[a];
        if (g->digit_of[j * into_blocks + ti] != digit) separating |= 1u << a;
      }
      if (separating_per_entry) {
        e.separating = separating;
      } else {
        t->separating_any |= separating;
      }
    }
  }
}

// Whether every mesh axis is a power of two long: then along every dimension the source and
// landing block counts are powers of two, and so is the ratio of their block sizes.
bool PowerOfTwoAxes(const Problem& p) {
  for (int a = 0; a < p.num_axes; ++a) {
    if (p.axis_size[a] & (p.axis_size[a] - 1)) return false;
  }
  return true;
}

// Dimension g's factors as bit tests (Dim::nested), for blocks 2^shift apart in size: a
// finer landing block lies in source block (landing >> shift); a coarser one holds source
// blocks [landing << shift, (landing + 1) << shift). Weights in the block indices are powers
// of two, so a digit is (index >> log2 weight) & (size - 1).
void NestedFactors(const Problem& p, uint32_t used_mask, uint32_t zero_mask, bool with_senders,
                   Dim* g) {
  g->nested = true;
  g->finer = g->t <= g->bs;
  g->shift = g->finer ? Log2(g->bs / g->t) : Log2(g->t / g->bs);
  g->own_have = std::min(g->bs, g->t);
  g->nested_blocks = g->finer ? 1 : int64_t{1} << g->shift;
  g->num_checks = 0;
  if (!with_senders) return;
  const int sh = g->shift;
  // Sending: the landing blocks a source block meets with the sender's digits on the landing
  // axes in U. Finer: the 2^shift blocks from (source << shift), whose low `shift` index
  // bits run over every value: an axis's digit bits below them are free (a factor 2^bits for
  // an axis in V, exactly one value for an axis in U), those above are the source block's.
  // Coarser: the one landing block (source >> shift).
  g->free_sends = 1;
  g->sent_per_block = g->finer ? g->t : g->bs;
  for (const auto& [a, w] : g->into_terms) {
    if (p.axis_size[a] <= 1) continue;
    const int lw = Log2(w), ls = Log2(p.axis_size[a]);
    const bool fixed = !(used_mask & (1u << a));
    if (!g->finer) {
      if (fixed) g->checks[g->num_checks++] = {a, sh + lw, p.axis_size[a] - 1, 0};
      continue;
    }
    const int low_bits = std::clamp(sh - lw, 0, ls);  // the digit's bits below `shift`
    if (!fixed) {
      g->free_sends <<= low_bits;
    } else if (low_bits < ls) {
      g->checks[g->num_checks++] = {a, std::max(lw - sh, 0), (int64_t{1} << (ls - low_bits)) - 1,
                                    low_bits};
    }
  }
  // Separating axes, their union over the wanting ranks in closed form. (A rank with a
  // separating axis receives: its landing block meets a source block other than its own.)
  // The source blocks a finer landing block meets are one, (landing >> shift); a coarser
  // one's share a digit on source axis a exactly when a's weight spans the 2^shift blocks it
  // holds (else a always separates). The shared digit is (landing >> digit_shift) & (size -
  // 1), within the landing block index, which the wanting ranks run over in full (new partial
  // axes split no landing dimension). It equals the rank's coordinate on a for every rank only
  // when it is that coordinate itself: a splits the landing dimension too, with weight
  // 2^digit_shift; otherwise some rank differs (the coordinates are independent and a is two
  // or more long), and a new partial axis, coordinate 0 on every wanting rank, always
  // separates some rank.
  g->separating_union = 0;
  for (const auto& [a, w] : g->src_terms) {
    if (p.axis_size[a] <= 1) continue;
    const int lw = Log2(w);
    bool separates = true;
    if ((g->finer || sh <= lw) && !(zero_mask & (1u << a))) {
      const int digit_shift = g->finer ? sh + lw : lw - sh;
      for (const auto& [b, wb] : g->into_terms) separates &= !(b == a && Log2(wb) == digit_shift);
    }
    if (separates) g->separating_union |= 1u << a;
  }
}

}  // namespace shardscope::redist_internal::count_detail
