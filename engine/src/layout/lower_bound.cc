// The lower bound of a redistribution (redistribution.h, "Lower bound") and the planning
// problem it is computed on: both layouts on one mesh, per-rank boxes.
#include <algorithm>
#include <cassert>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/redistribution.h"

namespace shardscope::redist_internal {

std::string State::Key() const {
  std::string key;
  for (const std::vector<int>& axes : dims) {
    for (int a : axes) key.push_back(static_cast<char>('a' + a));
    key.push_back('|');
  }
  key += std::to_string(reduce_mask);
  return key;
}

std::vector<int> MaskAxes(uint32_t mask) {
  std::vector<int> out;
  for (int a = 0; a < 32; ++a) {
    if (mask & (1u << a)) out.push_back(a);
  }
  return out;
}

uint32_t AxesMask(const std::vector<int>& axes) {
  uint32_t m = 0;
  for (int a : axes) m |= 1u << a;
  return m;
}

int64_t BoxVolume(const int64_t* lo, const int64_t* hi, int d) {
  int64_t v = 1;
  for (int i = 0; i < d; ++i) v *= std::max<int64_t>(0, hi[i] - lo[i]);
  return v;
}

int64_t IntersectVolume(const int64_t* alo, const int64_t* ahi, const int64_t* blo,
                        const int64_t* bhi, int d) {
  int64_t v = 1;
  for (int i = 0; i < d; ++i) {
    const int64_t len = std::min(ahi[i], bhi[i]) - std::max(alo[i], blo[i]);
    if (len <= 0) return 0;
    v *= len;
  }
  return v;
}

Boxes BoxesOfLayout(const Layout& layout) {
  Boxes b;
  const int d = layout.rank();
  const int n = layout.mesh().size();
  b.num_dims = d;
  b.blocks = layout.BlocksPerDim();
  const Shape shard = layout.ShardShape();
  b.block_size = shard;
  b.shard_elems = NumElements(shard);
  b.lo.resize(static_cast<size_t>(n) * d);
  b.hi.resize(static_cast<size_t>(n) * d);
  b.block_id.resize(n);
  for (int r = 0; r < n; ++r) {
    const std::vector<int64_t> idx = layout.BlockIndex(r);
    int64_t id = 0;
    for (int i = 0; i < d; ++i) {
      b.lo[r * d + i] = idx[i] * shard[i];
      b.hi[r * d + i] = (idx[i] + 1) * shard[i];
      id = id * b.blocks[i] + idx[i];
    }
    b.block_id[r] = id;
  }
  return b;
}

Boxes BoxesOf(const Problem& p, const State& s) {
  Boxes b;
  const int d = p.num_dims;
  b.num_dims = d;
  b.blocks.assign(d, 1);
  b.block_size.assign(d, 0);
  b.shard_elems = 1;
  for (int i = 0; i < d; ++i) {
    for (int a : s.dims[i]) b.blocks[i] *= p.axis_size[a];
    b.block_size[i] = p.shape[i] / b.blocks[i];
    b.shard_elems *= b.block_size[i];
  }
  b.lo.resize(static_cast<size_t>(p.num_ranks) * d);
  b.hi.resize(static_cast<size_t>(p.num_ranks) * d);
  b.block_id.resize(p.num_ranks);
  for (int r = 0; r < p.num_ranks; ++r) {
    int64_t id = 0;
    for (int i = 0; i < d; ++i) {
      int64_t idx = 0;
      for (int a : s.dims[i]) idx = idx * p.axis_size[a] + p.coord(r, a);
      b.lo[r * d + i] = idx * b.block_size[i];
      b.hi[r * d + i] = (idx + 1) * b.block_size[i];
      id = id * b.blocks[i] + idx;
    }
    b.block_id[r] = id;
  }
  return b;
}

Result<Layout> LayoutOf(const Problem& p, const State& s) {
  std::vector<int> partial = MaskAxes(s.reduce_mask | p.kept_mask);
  return Layout::Create(p.mesh, s.dims, partial, p.shape);
}

namespace {

State StateOf(const Layout& layout, uint32_t reduce_mask) {
  State s;
  s.dims = layout.dims_axes();
  s.reduce_mask = reduce_mask;
  return s;
}

}  // namespace

Result<Setup> MakeSetup(const Layout& from, const Layout& to, int64_t element_bytes) {
  if (from.shape() != to.shape()) {
    return Status::Invalid("redistribution of a tensor of shape " + ShapeToString(from.shape()) +
                           " into a layout of shape " + ShapeToString(to.shape()) +
                           ": the global shapes must be equal");
  }
  if (from.mesh().size() != to.mesh().size()) {
    return Status::Invalid("redistribution from " + from.mesh().ToString() + " (" +
                           std::to_string(from.mesh().size()) + " devices) to " +
                           to.mesh().ToString() + " (" + std::to_string(to.mesh().size()) +
                           " devices): the layouts must cover the same ranks");
  }
  if (element_bytes < 1) {
    return Status::Invalid("element size must be >= 1 byte, got " + std::to_string(element_bytes));
  }
  Setup s;
  s.from = from;
  s.to = to;
  s.elem = element_bytes;
  Result<MeshUnification> u = UnifyMeshes(from.mesh(), to.mesh());
  if (u.ok() && u->mesh.num_axes() <= 30) {
    s.unified = true;
    s.mesh = std::move(u->mesh);
    s.axes_of_from = std::move(u->axes_of_a);
    s.axes_of_to = std::move(u->axes_of_b);
    SHARDSCOPE_ASSIGN_OR_RETURN(s.from_m, ExpressOnMesh(from, s.mesh, s.axes_of_from));
    SHARDSCOPE_ASSIGN_OR_RETURN(s.to_m, ExpressOnMesh(to, s.mesh, s.axes_of_to));
  } else {
    s.unified = false;
    s.mesh = from.mesh();
    if (s.mesh.num_axes() > 30) return Status::Invalid("mesh has too many axes to plan on");
    s.from_m = from;
    s.to_m = to;
  }
  return s;
}

Result<Problem> MakeProblem(const Setup& setup) {
  Problem p;
  p.from = setup.from;
  p.to = setup.to;
  p.shape = setup.from.shape();
  p.num_dims = setup.from.rank();
  p.num_ranks = setup.from.mesh().size();
  p.elem = setup.elem;
  p.unified = setup.unified;
  p.mesh = setup.mesh;
  p.axes_of_from = setup.axes_of_from;
  p.axes_of_to = setup.axes_of_to;
  const Layout& from_m = setup.from_m;
  const Layout& to_m = setup.to_m;
  const int n = p.num_ranks;
  const int na = p.mesh.num_axes();
  p.num_axes = na;
  for (int a = 0; a < na; ++a) p.axis_size.push_back(p.mesh.axis_size(a));
  p.pos_stride.assign(na, 1);
  for (int a = na - 2; a >= 0; --a) p.pos_stride[a] = p.pos_stride[a + 1] * p.axis_size[a + 1];
  p.rank_of_pos = p.mesh.rank_list();
  p.pos_of_rank.resize(n);
  for (int pos = 0; pos < n; ++pos) p.pos_of_rank[p.rank_of_pos[pos]] = pos;
  // Coordinates: an odometer over grid positions (no divisions).
  p.coords.assign(static_cast<size_t>(n) * na, 0);
  {
    std::vector<int64_t> c(na, 0);
    for (int pos = 0; pos < n; ++pos) {
      const int r = p.rank_of_pos[pos];
      for (int a = 0; a < na; ++a) p.coords[static_cast<size_t>(r) * na + a] = c[a];
      for (int a = na - 1; a >= 0; --a) {
        if (++c[a] < p.axis_size[a]) break;
        c[a] = 0;
      }
    }
  }

  const uint32_t from_partial = AxesMask(from_m.partial_axes());
  p.active.assign(n, 1);
  if (p.unified) {
    const uint32_t to_partial = AxesMask(to_m.partial_axes());
    p.kept_mask = from_partial & to_partial;
    p.new_partial_mask = to_partial & ~from_partial;
    p.src = StateOf(from_m, from_partial & ~to_partial);
    p.tgt = StateOf(to_m, 0);
    p.has_target_state = true;
    if (p.new_partial_mask) {
      const std::vector<int> np = MaskAxes(p.new_partial_mask);
      for (int r = 0; r < n; ++r) {
        for (int a : np) {
          if (p.coord(r, a) != 0) p.active[r] = 0;
        }
      }
    }
  } else {
    p.src = StateOf(from_m, from_partial);
    const std::vector<int>& tp = to_m.partial_axes();
    if (!tp.empty()) {
      for (int r = 0; r < n; ++r) {
        const std::vector<int64_t> c = to_m.mesh().coords_of(r);
        for (int a : tp) {
          if (c[a] != 0) p.active[r] = 0;
        }
      }
    }
  }
  p.target = p.unified ? BoxesOf(p, p.tgt) : BoxesOfLayout(to_m);
  p.target_block.resize(n);
  for (int r = 0; r < n; ++r) {
    p.target_block[r] = p.active[r] ? p.target.block_id[r] : -1;
    if (!p.active[r]) p.zero_ranks.push_back(r);
  }
  p.max_shard_elems =
      std::max(NumElements(setup.from.ShardShape()), NumElements(setup.to.ShardShape()));
  return p;
}

Result<Problem> MakeProblem(const Layout& from, const Layout& to, int64_t element_bytes) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Setup setup, MakeSetup(from, to, element_bytes));
  return MakeProblem(setup);
}

std::vector<int64_t> LowerBound(const Problem& p, const State& s, const Boxes& b,
                                std::vector<int64_t>* move_out, std::vector<int64_t>* reduce_out) {
  const int d = p.num_dims;
  const int n = p.num_ranks;
  std::vector<int64_t> move(n, 0), reduce(n, 0);
  const int64_t* tlo = p.target.lo.data();
  const int64_t* thi = p.target.hi.data();
  for (int r = 0; r < n; ++r) {
    if (!p.active[r]) continue;
    const int64_t need = BoxVolume(tlo + r * d, thi + r * d, d);
    const int64_t have =
        IntersectVolume(tlo + r * d, thi + r * d, b.lo.data() + r * d, b.hi.data() + r * d, d);
    move[r] = (need - have) * p.elem;
  }
  if (s.reduce_mask) {
    // Reduction groups: ranks equal on every axis but the reduce axes. Addend classes: ranks
    // equal on the kept partial axes (they hold and need the same addend index).
    auto kept_key = [&](int r) {
      int64_t k = 0;
      for (int a = 0; a < p.num_axes; ++a) {
        if (p.kept_mask & (1u << a)) k = k * p.axis_size[a] + p.coord(r, a);
      }
      return k;
    };
    // Distinct target blocks needed per addend class (one representative rank each).
    std::map<int64_t, std::vector<int>> needed_blocks;
    {
      std::map<std::pair<int64_t, int64_t>, bool> seen;
      for (int r = 0; r < n; ++r) {
        if (p.target_block[r] < 0) continue;
        const int64_t k = kept_key(r);
        if (!seen.emplace(std::make_pair(k, p.target_block[r]), true).second) continue;
        needed_blocks[k].push_back(r);
      }
    }
    std::map<std::vector<int64_t>, std::vector<int>> groups;
    for (int r = 0; r < n; ++r) {
      std::vector<int64_t> key;
      for (int a = 0; a < p.num_axes; ++a) {
        if (!(s.reduce_mask & (1u << a))) key.push_back(p.coord(r, a));
      }
      groups[key].push_back(r);
    }
    // Per group: its block, the distinct target blocks its members need (its "need").
    struct GroupInfo {
      int64_t kk = 0, block = 0;
      std::vector<int64_t> need;
    };
    std::vector<GroupInfo> infos;
    std::map<std::pair<int64_t, int64_t>, int64_t> holders;                         // rho_all
    std::map<std::tuple<int64_t, int64_t, std::vector<int64_t>>, int64_t> sharers;  // rho_need
    for (const auto& [key, members] : groups) {
      GroupInfo gi;
      gi.kk = kept_key(members[0]);
      gi.block = b.block_id[members[0]];
      for (int q : members) {
        if (p.target_block[q] >= 0) gi.need.push_back(p.target_block[q]);
      }
      std::sort(gi.need.begin(), gi.need.end());
      gi.need.erase(std::unique(gi.need.begin(), gi.need.end()), gi.need.end());
      holders[{gi.kk, gi.block}]++;
      sharers[{gi.kk, gi.block, gi.need}]++;
      infos.push_back(std::move(gi));
    }
    size_t gi_index = 0;
    for (const auto& [key, members] : groups) {
      const GroupInfo& gi = infos[gi_index++];
      const int first = members[0];
      const int64_t* slo = b.lo.data() + first * d;
      const int64_t* shi = b.hi.data() + first * d;
      const int64_t size = static_cast<int64_t>(members.size());
      int64_t needed = 0;   // n_G: distinct elements of the block some member needs
      int64_t counted = 0;  // c: the same with multiplicity
      std::vector<int64_t> seen;
      for (int q : members) {
        if (p.target_block[q] < 0) continue;
        const int64_t v = IntersectVolume(tlo + q * d, thi + q * d, slo, shi, d);
        counted += v;
        if (std::find(seen.begin(), seen.end(), p.target_block[q]) == seen.end()) {
          seen.push_back(p.target_block[q]);
          needed += v;
        }
      }
      // n_all: elements of the block anyone (of this addend class) needs; they must be
      // reduced by one of the rho_all groups holding the block.
      int64_t needed_all = 0;
      for (int q : needed_blocks[gi.kk]) {
        needed_all += IntersectVolume(tlo + q * d, thi + q * d, slo, shi, d);
      }
      const int64_t rho_all = holders[{gi.kk, gi.block}];
      // Groups holding the same block and needing the same blocks can share the work: each
      // reduces 1/rho_need of the need, and members fetch the rest, reduced, from the others.
      const int64_t rho = sharers[{gi.kk, gi.block, gi.need}];
      const int64_t reduced =
          std::max((needed + rho - 1) / rho, (needed_all + rho_all - 1) / rho_all);
      // Reduce-scatter of `reduced` elements, then delivery to the members needing the same
      // element: ((p - 1) reduced + (c - n_G) / rho) / p; plus the shared part.
      const int64_t num = (reduced * (size - 1) * rho + counted - needed) * p.elem;
      const int64_t den = size * rho;
      const int64_t red = num <= 0 ? 0 : (num + den - 1) / den;
      for (int q : members) {
        int64_t share = 0;
        if (rho > 1 && p.target_block[q] >= 0) {
          const int64_t mine = IntersectVolume(tlo + q * d, thi + q * d, slo, shi, d) * p.elem;
          share = (mine * (rho - 1) + rho - 1) / rho;
        }
        reduce[q] = red + share;
      }
    }
  }
  std::vector<int64_t> out(n);
  for (int r = 0; r < n; ++r) out[r] = move[r] + reduce[r];
  if (move_out) *move_out = std::move(move);
  if (reduce_out) *reduce_out = std::move(reduce);
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
  const redist_internal::Boxes b = redist_internal::BoxesOf(p, p.src);
  lb.per_rank = redist_internal::LowerBound(p, p.src, b, &lb.move_per_rank, &lb.reduce_per_rank);
  for (int64_t v : lb.per_rank) {
    lb.max_bytes = std::max(lb.max_bytes, v);
    lb.total_bytes += v;
  }
  return lb;
}

}  // namespace shardscope
