// The per-dimension tables behind the closed-form exchange counts (exchange_count.cc):
// block indices from coordinates, the factors of each rank's counts by the coordinates that
// index a dimension's blocks, and their bit-test form on nested blocks. Internal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "redistribution_internal.h"

namespace shardscope::redist_internal::count_detail {

// Bound on mesh axes, tensor dimensions and axes per dimension (masks are 32-bit).
constexpr int kMaxAxes = 32;

// One tensor dimension: how a rank's source and landing block indices follow from its
// coordinates (index = sum of coordinate x weight over the dimension's axes), and tables over
// block indices, so that the per-rank loop does no division.
struct Dim {
  int64_t bs = 1;                                              // source block size
  int64_t t = 1;                                               // landing block size
  int64_t into_blocks = 1;                                     // landing blocks
  std::vector<std::pair<int, int64_t>> src_terms, into_terms;  // (axis, weight)
  std::vector<std::pair<int, int64_t>> fixed_terms;  // landing axes in U: (axis, weight in key)
  int64_t fixed_combos = 1;
  // Per source block: the landing blocks it meets, [bx, by].
  std::vector<int64_t> bx, by;
  // Per landing block: its fixed digits as one index (mixed radix over fixed_terms' axes).
  std::vector<int64_t> fixed_key;
  // Per landing block: the source blocks it meets (last - first + 1).
  std::vector<int64_t> blocks_met;
  // Per (source block, fixed digits), with senders: (count, overlap), the sending factor (see
  // FillSendFactors).
  std::vector<int64_t> send;
  // Per source axis (size > 1) and landing block: see BuildTable.
  std::vector<int64_t> digit_of;

  // Nested blocks (every mesh axis a power of two; see NestedFactors): the landing blocks are
  // 2^shift times finer than the source blocks (finer) or coarser, and every factor above is
  // a bit test on the block indices instead of a table.
  bool nested = false;
  bool finer = true;
  int shift = 0;
  int64_t own_have = 0;        // the overlap of a rank's landing block with its own source block
  int64_t nested_blocks = 1;   // source blocks a landing block meets
  int64_t free_sends = 1;      // landing blocks per source block, over the landing axes in V
  int64_t sent_per_block = 0;  // elements a source block gives each landing block it meets
  // A landing axis in U whose digit a source block's landing blocks fix (wholly or in part):
  // they match the sender's coordinate c on it when
  // ((source block >> shift) & mask) == (c >> coord_shift).
  struct FixedCheck {
    int axis;
    int shift;
    int64_t mask;
    int coord_shift;
  };
  FixedCheck checks[kMaxAxes];
  int num_checks = 0;
  // The source axes along which some wanting rank differs from a peer it receives from.
  uint32_t separating_union = 0;

  int64_t Overlap(int64_t sb, int64_t tb) const {
    return std::max<int64_t>(0, std::min((sb + 1) * bs, (tb + 1) * t) - std::max(sb * bs, tb * t));
  }
};

// Grows `v` to at least n elements and never shrinks it: the scratch tables below are reused
// by every count, and a resize between sizes would initialise the new tail each time (it is
// overwritten anyway).
template <typename T>
void GrowTo(std::vector<T>* v, int64_t n) {
  if (static_cast<int64_t>(v->size()) < n) v->resize(n);
}

// q = floor((start + k step) / div) for k = 0, 1, ...: Next() moves to the next k without a
// division.
struct FloorStepper {
  FloorStepper(int64_t start, int64_t step, int64_t divisor)
      : q(start / divisor),
        r(start % divisor),
        q_step(step / divisor),
        r_step(step % divisor),
        div(divisor) {}
  // Returns what q grew by beyond q_step (0 or 1).
  int64_t Next() {
    q += q_step;
    r += r_step;
    if (r < div) return 0;
    r -= div;
    ++q;
    return 1;
  }
  int64_t q, r;
  const int64_t q_step, r_step, div;
};

// out[k] = floor((start + k step) / div) for k = 0 .. count-1.
void FloorSteps(int64_t start, int64_t step, int64_t div, int64_t count,
                std::vector<int64_t>* out_vector);

// out[k] = the blocks of size `bs` that the k-th interval of size `t` meets:
// floor((k t + t - 1) / bs) - floor(k t / bs) + 1.
void BlocksMet(int64_t t, int64_t bs, int64_t count, std::vector<int64_t>* out_vector);

// (axis, weight) of every axis of `axes` in the mixed-radix index over them.
template <typename Axis>
void Terms(const Problem& p, const Axis* axes, int count,
           std::vector<std::pair<int, int64_t>>* out) {
  out->resize(count);
  int64_t w = 1;
  for (int j = count - 1; j >= 0; --j) {
    (*out)[j] = {axes[j], w};
    w *= p.axis_size[axes[j]];
  }
}

// One dimension's factors of the per-rank counts, by the coordinates of the mesh axes that
// index its blocks in s or x (the key: mixed radix over `axes`, the last fastest).
struct DimTable {
  struct Entry {
    int64_t have = 1;    // length of the rank's landing block inside its source block
    int64_t blocks = 1;  // source blocks its landing block meets
    int64_t sends = 1;   // landing blocks with the sender's fixed digits its source block meets
    int64_t sent = 1;    // and their overlap with it
    uint32_t separating = 0;  // axes of s along which it differs from a block it receives from
    // The sending fields only when the table holds them (receiving-only tables leave them
    // as an earlier count wrote them).
    void Multiply(const Entry& e, bool with_senders) {
      have *= e.have;
      blocks *= e.blocks;
      if (!with_senders) return;
      sends *= e.sends;
      sent *= e.sent;
      separating |= e.separating;
    }
  };
  std::vector<int> axes;
  int64_t key_weight[kMaxAxes];  // per mesh axis: its weight in the key, -1 when not in it
  std::vector<Entry> entries;
  // Nested blocks (Dim::nested) fill these instead: per key two bits, all the nested walk
  // reads. Entry::have is then own_have or 0 (kNestedKeeps: the rank's landing block meets its
  // own source block) and Entry::sends free_sends or 0 (kNestedSends: its source block meets
  // landing blocks with its fixed digits); the blocks met are the same for every key, the
  // elements sent a multiple of the senders, and the separating axes known as a union.
  static constexpr uint8_t kNestedKeeps = 1, kNestedSends = 2;
  std::vector<uint8_t> nested_flags;
  // Without per-entry separating axes (BuildTable's separating_per_entry = false): the union
  // of every entry's.
  uint32_t separating_any = 0;
  int64_t WeightOf(int axis) const { return key_weight[axis]; }
};

// A row of ranks along a count's innermost mesh axis z: the table entries of z's (at most
// two) dimensions at its first rank, their strides along z, and its ranks.
template <typename Entry>
struct ZRow {
  const Entry *e0, *e1;
  int64_t w0, w1;
  const int* ranks;
};

// The sending factors of a dimension: for a sender with source block sb and fixed digits f
// (their index over the dimension's fixed axes), the landing blocks with those digits that
// meet the source block, and their overlap with it, at send[2 (sb fixed_combos + f)]. One
// pass over the landing blocks each source block meets fills its row for every f.
void FillSendFactors(int64_t src_blocks, bool with_fixed, Dim* g);

// Fills dimension i's table (see DimTable) by odometer over its key. separating_per_entry =
// false: the entries' separating axes are left 0 and only their union is kept
// (t->separating_any), which the count reads when every rank wants (see Count).
void BuildTable(const Problem& p, bool with_senders, bool separating_per_entry, Dim* g,
                DimTable* t);

// Whether every mesh axis of p is a power of two long (the nested-blocks case).
bool PowerOfTwoAxes(const Problem& p);

inline int Log2(int64_t power_of_two) {
  return __builtin_ctzll(static_cast<uint64_t>(power_of_two));
}

// Dimension g's factors as bit tests (Dim::nested), for blocks 2^shift apart in size: a
// finer landing block lies in source block (landing >> shift); a coarser one holds source
// blocks [landing << shift, (landing + 1) << shift). Weights in the block indices are powers
// of two, so a digit is (index >> log2 weight) & (size - 1).
void NestedFactors(const Problem& p, uint32_t used_mask, uint32_t zero_mask, bool with_senders,
                   Dim* g);

// The elements a rank keeps when its landing block meets its own source block in every
// dimension (nested blocks).
inline int64_t NestedOwnHave(const std::vector<Dim>& dims, int d) {
  int64_t have = 1;
  for (int i = 0; i < d; ++i) have *= dims[i].own_have;
  return have;
}

// The number of blocks a dimension split along `axes` has.
inline int64_t BlocksAlong(const Problem& p, const AxisList& axes) {
  int64_t blocks = 1;
  for (int a : axes) blocks *= p.axis_size[a];
  return blocks;
}

}  // namespace shardscope::redist_internal::count_detail
