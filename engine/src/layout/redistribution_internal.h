// Internals shared by the redistribution planner (redistribution.cc), the lower bound
// (lower_bound.cc) and the executor (redistribution_executor.cc). Not a public header.
//
// Vocabulary. The planner works on one mesh M (the unified mesh, or the source mesh when the
// meshes cannot be unified). A search state is a layout on M given by its per-dimension axis
// lists plus the partial axes still to be reduced; axes that stay partial in the target
// ("kept") are fixed for the whole plan. Boxes are per-rank element boxes of the global
// tensor: [lo, hi) per dimension.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/cost_model.h"
#include "shardscope/layout.h"
#include "shardscope/mesh.h"
#include "shardscope/redistribution.h"
#include "shardscope/status.h"

namespace shardscope::redist_internal {

// A layout on the planning mesh as a search state.
struct State {
  DimAxes dims;
  uint32_t reduce_mask = 0;  // partial axes of M still to be reduced (bit = axis)
  std::string Key() const;
  friend bool operator==(const State&, const State&) = default;
};

// Per-rank boxes of a state (or of any layout), flat: rank r, dim d at [r * D + d].
struct Boxes {
  int num_dims = 0;
  std::vector<int64_t> lo, hi;
  std::vector<int64_t> block_id;    // per rank, row-major over the block grid
  std::vector<int64_t> block_size;  // per dim
  std::vector<int64_t> blocks;      // per dim (number of blocks)
  int64_t shard_elems = 0;
};

// Boxes of `layout` (any mesh over the same ranks).
Boxes BoxesOfLayout(const Layout& layout);

// The planning problem: both layouts brought onto one mesh.
struct Problem {
  Layout from;
  Layout to;
  DeviceMesh mesh;  // M
  bool unified = false;
  std::vector<std::vector<int>> axes_of_from;  // from's mesh axis -> axes of M (when unified)
  std::vector<std::vector<int>> axes_of_to;
  Shape shape;
  int num_dims = 0;
  int num_ranks = 0;
  int num_axes = 0;
  int64_t elem = 4;
  std::vector<int64_t> axis_size;  // per axis of M
  std::vector<int64_t> coords;     // rank r, axis a at [r * A + a]
  uint32_t kept_mask = 0;          // partial in both: never reduced, never moved along
  uint32_t new_partial_mask = 0;   // partial in `to` only (unified case)
  State src;
  bool has_target_state = false;  // unified: the target as a state (without new partial)
  State tgt;
  Boxes target;                       // per-rank target boxes (on to's own mesh)
  std::vector<char> active;           // ranks that must end with data (not new zero addends)
  std::vector<int64_t> target_block;  // per rank: target block id, or -1 when inactive
  std::vector<int> zero_ranks;        // inactive ranks, ascending
  int64_t max_shard_elems = 0;        // memory cap for intermediate states

  int64_t coord(int rank, int axis) const { return coords[rank * num_axes + axis]; }
};

Result<Problem> MakeProblem(const Layout& from, const Layout& to, int64_t element_bytes);

// Boxes of a state on M.
Boxes BoxesOf(const Problem& p, const State& s);
// The layout of a state on M (kept axes added back as partial).
Result<Layout> LayoutOf(const Problem& p, const State& s);
// The layout on M of `to` with its new partial axes (final layout before mapping back).

// Lower bound from state `s` (with boxes `b`) to the target, per rank, in bytes; `move` and
// `reduce` receive the two parts when not null.
std::vector<int64_t> LowerBound(const Problem& p, const State& s, const Boxes& b,
                                std::vector<int64_t>* move = nullptr,
                                std::vector<int64_t>* reduce = nullptr);

// An irregular exchange from the blocks of `cur` to target boxes `tlo/thi` for ranks with
// want[r] != 0. Owners are ranks holding a block in `cur` with the same coordinates along
// `same_mask` axes (kept partial axes: addend index must match).
struct Exchange {
  std::vector<RedistTransfer> transfers;
  std::vector<int64_t> recv, sent;  // bytes per rank
  int64_t max_recv = 0, max_sent = 0;
  int64_t messages = 0;
  uint32_t axes_mask = 0;  // axes of M along which some communicating pair differs
  bool is_permute = false;
  int64_t num_transfers = 0;
};
// With record = false only the counts are computed (no transfer list; faster).
Exchange ComputeExchange(const Problem& p, const Boxes& cur, const std::vector<int64_t>& tlo,
                         const std::vector<int64_t>& thi, const std::vector<char>& want,
                         uint32_t same_mask, bool record = true);

// Ring receive volume: what each rank of a group of p receives when n elements are reduced
// and scattered (n - floor(n / p)).
inline int64_t RingShare(int64_t n, int64_t p) { return p <= 1 ? 0 : n - n / p; }
// All-reduce of n elements over p ranks: reduce-scatter of balanced blocks + all-gather.
inline int64_t AllReduceRecv(int64_t n, int64_t p) {
  return p <= 1 ? 0 : n + (p - 2) * ((n + p - 1) / p);
}

std::vector<int> MaskAxes(uint32_t mask);
uint32_t AxesMask(const std::vector<int>& axes);

// Box helpers on flat [lo, hi) arrays of `d` dims.
int64_t BoxVolume(const int64_t* lo, const int64_t* hi, int d);
int64_t IntersectVolume(const int64_t* alo, const int64_t* ahi, const int64_t* blo,
                        const int64_t* bhi, int d);

}  // namespace shardscope::redist_internal
