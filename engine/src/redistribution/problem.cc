// The planning problem (redistribution_internal.h): both layouts on one mesh (MakeSetup,
// MakeProblem), search states, their per-rank boxes and the rank grid.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/checked_math.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::redist_internal {

std::string State::Key() const {
  std::string key;
  for (const AxisList& axes : dims) {
    for (int a : axes) key.push_back(static_cast<char>('a' + a));
    key.push_back('|');
  }
  key += std::to_string(reduce_mask);
  return key;
}

std::vector<int> MaskAxes(uint32_t mask) {
  std::vector<int> out;
  out.reserve(__builtin_popcount(mask));  // (one allocation, none for an empty mask)
  for (; mask; mask &= mask - 1) out.push_back(__builtin_ctz(mask));
  return out;
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
  const int na = p.num_axes;
  const int n = p.num_ranks;
  b.num_dims = d;
  b.blocks.assign(d, 1);
  b.block_size.assign(d, 0);
  b.shard_elems = 1;
  for (int i = 0; i < d; ++i) {
    for (int a : s.dims[i]) b.blocks[i] *= p.axis_size[a];
    b.block_size[i] = p.shape[i] / b.blocks[i];
    b.shard_elems *= b.block_size[i];
  }
  // Ranks in grid order, by odometer: a step along axis a moves the box of the one dimension
  // a splits by a fixed offset, and the block id by a fixed amount.
  std::vector<int> dim_of(na, -1);
  std::vector<int64_t> lo_step(na, 0), id_step(na, 0);
  {
    int64_t id_stride = 1;
    for (int i = d - 1; i >= 0; --i) {
      int64_t w = 1;
      for (int k = static_cast<int>(s.dims[i].size()) - 1; k >= 0; --k) {
        const int a = s.dims[i][k];
        dim_of[a] = i;
        lo_step[a] = w * b.block_size[i];
        id_step[a] = w * id_stride;
        w *= p.axis_size[a];
      }
      id_stride *= b.blocks[i];
    }
  }
  b.lo.resize(static_cast<size_t>(n) * d);
  b.hi.resize(static_cast<size_t>(n) * d);
  b.block_id.resize(n);
  std::vector<int64_t> lo(d, 0), coord(na, 0);
  int64_t id = 0;
  for (int pos = 0; pos < n; ++pos) {
    if (pos > 0) {
      for (int a = na - 1; a >= 0; --a) {
        const int i = dim_of[a];
        if (++coord[a] < p.axis_size[a]) {
          if (i >= 0) lo[i] += lo_step[a];
          id += id_step[a];
          break;
        }
        if (i >= 0) lo[i] -= (coord[a] - 1) * lo_step[a];
        id -= (coord[a] - 1) * id_step[a];
        coord[a] = 0;
      }
    }
    const int r = p.rank_of_pos[pos];
    int64_t* rlo = b.lo.data() + static_cast<size_t>(r) * d;
    int64_t* rhi = b.hi.data() + static_cast<size_t>(r) * d;
    for (int i = 0; i < d; ++i) {
      rlo[i] = lo[i];
      rhi[i] = lo[i] + b.block_size[i];
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

namespace {

// Every byte figure of a plan or bound is at most a few times the tensor's bytes per rank
// and step, summed over ranks: tensor bytes x ranks within kMaxTensorBytes (2^7 below 2^63)
// keeps every one of them in 63 bits without checking each sum.
Status CheckPlanBytes(const Shape& shape, int64_t element_bytes, int ranks) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckTensorSize(shape, element_bytes, "the redistributed tensor"));
  const auto all_ranks = CheckedMul(*CheckedBytes(shape, element_bytes), ranks);
  if (!all_ranks || *all_ranks > kMaxTensorBytes) {
    return Status::Invalid("redistribution of shape " + ShapeToString(shape) + " (" +
                           std::to_string(element_bytes) + " B/element) over " +
                           std::to_string(ranks) + " ranks: its bytes times the ranks exceed " +
                           "2^56, beyond what byte counts over all ranks may reach");
  }
  return Status::Ok();
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
  SHARDSCOPE_RETURN_IF_ERROR(CheckPlanBytes(from.shape(), element_bytes, from.mesh().size()));
  Setup s;
  s.from = &from;
  s.to = &to;
  s.elem = element_bytes;
  Result<MeshUnification> u = UnifyMeshes(from.mesh(), to.mesh());
  if (u.ok() && u->mesh.num_axes() <= 30) {
    s.unified = true;
    s.mesh = std::move(u->mesh);
    s.axes_of_from = std::move(u->axes_of_a);
    s.axes_of_to = std::move(u->axes_of_b);
    // A layout whose mesh is M itself (axis x of its mesh is axis x of M) needs no rewriting.
    auto identity = [&](const Layout& l, const std::vector<std::vector<int>>& map) {
      for (size_t x = 0; x < map.size(); ++x) {
        if (map[x].size() != 1 || map[x][0] != static_cast<int>(x)) return false;
      }
      return l.mesh() == s.mesh;
    };
    s.from_is_m = identity(from, s.axes_of_from);
    s.to_is_m = identity(to, s.axes_of_to);
    if (!s.from_is_m) {
      SHARDSCOPE_ASSIGN_OR_RETURN(s.from_on_m, ExpressOnMesh(from, s.mesh, s.axes_of_from));
    }
    if (!s.to_is_m) {
      SHARDSCOPE_ASSIGN_OR_RETURN(s.to_on_m, ExpressOnMesh(to, s.mesh, s.axes_of_to));
    }
  } else {
    s.unified = false;
    s.mesh = from.mesh();
    if (s.mesh.num_axes() > 30) return Status::Invalid("mesh has too many axes to plan on");
  }
  return s;
}

RankTable RankTable::Identity(int n) {
  // One shared table up to a size that covers the meshes planned in practice (read-only
  // after its thread-safe initialisation); larger ones get their own.
  constexpr int kShared = 1 << 16;
  static const std::vector<int> shared = [] {
    std::vector<int> v(kShared);
    for (int i = 0; i < kShared; ++i) v[i] = i;
    return v;
  }();
  if (n <= kShared) return RankTable(shared.data());
  auto own = std::make_shared<std::vector<int>>(n);
  for (int i = 0; i < n; ++i) (*own)[i] = i;
  RankTable t(own->data());
  t.owned_ = std::move(own);
  return t;
}

void FillRankGrid(Problem* problem) {
  Problem& p = *problem;
  const int n = p.mesh.size();
  p.num_ranks = n;
  const int na = p.mesh.num_axes();
  p.num_axes = na;
  p.axis_size.assign(p.mesh.shape().begin(), p.mesh.shape().end());
  p.pos_stride.assign(na, 1);
  for (int a = na - 2; a >= 0; --a) p.pos_stride[a] = p.pos_stride[a + 1] * p.axis_size[a + 1];
  // (Views: the problem owns the mesh, whose tables outlive it.)
  if (p.mesh.has_explicit_ranks()) {
    p.rank_of_pos = RankTable::Of(p.mesh.explicit_ranks());
    p.pos_of_rank = RankTable::Of(p.mesh.explicit_positions());
  } else {
    p.rank_of_pos = RankTable::Identity(n);
    p.pos_of_rank = p.rank_of_pos;
  }
  p.coords.clear();  // filled on first use
}

void Problem::FillCoords() const {
  const int n = num_ranks;
  const int na = num_axes;
  // An odometer over grid positions (no divisions).
  coords.assign(static_cast<size_t>(n) * na, 0);
  std::vector<int64_t> c(na, 0);
  for (int pos = 0; pos < n; ++pos) {
    const int r = rank_of_pos[pos];
    for (int a = 0; a < na; ++a) coords[static_cast<size_t>(r) * na + a] = c[a];
    for (int a = na - 1; a >= 0; --a) {
      if (++c[a] < axis_size[a]) break;
      c[a] = 0;
    }
  }
}

void Problem::FillSource() const {
  source_ = BoxesOf(*this, src);
  source_ready_ = true;
}

void Problem::FillTarget() const {
  target_ = unified ? BoxesOf(*this, tgt) : BoxesOfLayout(*to);  // else on its own mesh
  target_block_.resize(num_ranks);
  for (int r = 0; r < num_ranks; ++r) target_block_[r] = active[r] ? target_.block_id[r] : -1;
  target_ready_ = true;
}

Result<Problem> MakeProblem(Setup setup) {
  Problem p;
  p.from = setup.from;
  p.to = setup.to;
  p.shape = setup.from->shape();
  p.num_dims = setup.from->rank();
  p.num_ranks = setup.from->mesh().size();
  p.elem = setup.elem;
  p.unified = setup.unified;
  p.mesh = std::move(setup.mesh);
  p.axes_of_from = std::move(setup.axes_of_from);
  p.axes_of_to = std::move(setup.axes_of_to);
  const Layout& from_m = setup.from_m();
  const Layout& to_m = setup.to_m();
  // Search states hold their axes inline (DimList); axis sets are 32-bit masks.
  if (p.mesh.num_axes() > 32) {
    return Status::NotImplemented("redistribution planner: meshes of at most 32 axes (got " +
                                  std::to_string(p.mesh.num_axes()) + ")");
  }
  if (p.num_dims > static_cast<int>(DimList::kCapacity)) {
    return Status::NotImplemented("redistribution planner: tensors of at most " +
                                  std::to_string(DimList::kCapacity) + " dimensions (got " +
                                  std::to_string(p.num_dims) + ")");
  }
  for (const Layout* l : {&from_m, &to_m}) {
    for (const std::vector<int>& axes : l->dims_axes()) {
      if (axes.size() > AxisList::kCapacity) {
        return Status::NotImplemented(
            "redistribution planner: at most " + std::to_string(AxisList::kCapacity) +
            " mesh axes per tensor dimension (layout " + l->ToString() + ")");
      }
    }
  }
  FillRankGrid(&p);
  const int n = p.num_ranks;

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
      // Active: coordinate 0 on every new partial axis; the grid positions of those ranks by
      // odometer over the other axes (the per-rank coordinate table is not needed by the
      // common paths).
      std::fill(p.active.begin(), p.active.end(), 0);
      const int na = p.num_axes;
      int64_t c[32] = {};  // (masks bound the axes to 32)
      int64_t pos = 0;
      for (;;) {
        p.active[p.rank_of_pos[pos]] = 1;
        int a = na - 1;
        for (; a >= 0; --a) {
          if (p.new_partial_mask & (1u << a)) continue;
          if (++c[a] < p.axis_size[a]) {
            pos += p.pos_stride[a];
            break;
          }
          pos -= (c[a] - 1) * p.pos_stride[a];
          c[a] = 0;
        }
        if (a < 0) break;
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
  // (Ranks become inactive only in the two partial-target cases above.)
  const bool some_inactive = p.unified ? p.new_partial_mask != 0 : !to_m.partial_axes().empty();
  if (some_inactive) {  // (compacted without a branch: most ranks are inactive here)
    p.zero_ranks.resize(n);
    int count = 0;
    for (int r = 0; r < n; ++r) {
      p.zero_ranks[count] = r;
      count += !p.active[r];
    }
    p.zero_ranks.resize(count);
  }
  p.max_shard_elems =
      std::max(NumElements(setup.from->ShardShape()), NumElements(setup.to->ShardShape()));
  return p;
}

Result<Problem> MakeProblem(const Layout& from, const Layout& to, int64_t element_bytes) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Setup setup, MakeSetup(from, to, element_bytes));
  return MakeProblem(std::move(setup));
}

}  // namespace shardscope::redist_internal
