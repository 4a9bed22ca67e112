// Irregular exchanges enumerated rank by rank (ComputeExchange, redistribution_internal.h),
// their lazy transfer and group lists, and the rank groups of collectives along mesh axes.
#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope {

using redist_internal::AxesMask;
using redist_internal::AxisList;
using redist_internal::Boxes;
using redist_internal::BoxesOf;
using redist_internal::BoxVolume;
using redist_internal::Exchange;
using redist_internal::GroupsAlong;
using redist_internal::MaskAxes;
using redist_internal::Problem;
using redist_internal::State;

namespace {

// Union-find over ranks 0..n-1.
class RankSets {
 public:
  explicit RankSets(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    int root = x;
    while (parent_[root] != root) root = parent_[root];
    while (parent_[x] != root) {
      const int next = parent_[x];
      parent_[x] = root;
      x = next;
    }
    return root;
  }
  void Join(int a, int b) { parent_[Find(a)] = Find(b); }
  // The sets of at least two ranks with involved[r] != 0, each ascending, sorted.
  std::vector<std::vector<int>> Groups(const std::vector<char>& involved) {
    const int n = static_cast<int>(parent_.size());
    std::vector<std::vector<int>> by_root(n);
    for (int r = 0; r < n; ++r) {
      if (involved[r]) by_root[Find(r)].push_back(r);
    }
    std::vector<std::vector<int>> out;
    for (auto& g : by_root) {
      if (g.size() >= 2) out.push_back(std::move(g));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::vector<int> parent_;
};

}  // namespace

namespace redist_internal {

Exchange ComputeExchange(const Problem& p, const State& s, const Boxes& cur,
                         const std::vector<int64_t>& tlo, const std::vector<int64_t>& thi,
                         const std::vector<char>& want, bool record, bool with_groups) {
  const int d = p.num_dims;
  const int n = p.num_ranks;
  Exchange ex;
  // Connected sets of communicating ranks (they do not depend on the order of the joins).
  RankSets sets(with_groups ? n : 0);
  ex.recv.assign(n, 0);
  ex.sent.assign(n, 0);
  // The owner of block idx nearest to rank r has r's coordinates on every axis that splits no
  // dimension of s, and idx's digits on the others: its grid position is r's with the
  // contribution of r's own block replaced by idx's. block_pos[i][b]: the grid-position
  // contribution of block index b along dimension i (mixed radix over s.dims[i]).
  std::vector<std::vector<int64_t>> block_pos(d);
  uint32_t used_mask = 0;
  for (int i = 0; i < d; ++i) {
    const AxisList& axes = s.dims[i];
    used_mask |= AxesMask(axes);
    block_pos[i].assign(cur.blocks[i], 0);
    std::vector<int64_t> digit(axes.size(), 0);
    for (int64_t b = 0; b < cur.blocks[i]; ++b) {
      int64_t off = 0;
      for (size_t k = 0; k < axes.size(); ++k) off += digit[k] * p.pos_stride[axes[k]];
      block_pos[i][b] = off;
      for (int k = static_cast<int>(axes.size()) - 1; k >= 0; --k) {
        if (++digit[k] < p.axis_size[axes[k]]) break;
        digit[k] = 0;
      }
    }
  }
  const std::vector<int> used = MaskAxes(used_mask);
  if (record) {
    // Reserve the transfer list: one per (rank, other block its target box meets).
    size_t count = 0;
    for (int r = 0; r < n; ++r) {
      if (!want[r]) continue;
      const int64_t* rlo = tlo.data() + r * d;
      const int64_t* rhi = thi.data() + r * d;
      if (BoxVolume(rlo, rhi, d) == 0) continue;
      size_t blocks = 1;
      for (int i = 0; i < d; ++i) {
        blocks *=
            static_cast<size_t>((rhi[i] - 1) / cur.block_size[i] - rlo[i] / cur.block_size[i] + 1);
      }
      count += blocks;
    }
    ex.transfers.reserve(count);
  }
  std::vector<int> recv_count(n, 0), send_count(n, 0);
  std::vector<int64_t> first(d), last(d), own(d), k(d);
  // Per rank, per dimension i, per block j in [first[i], last[i]] (entry seg[i] + j - first[i]):
  // the piece of the target box in that block (start, length) and the block's grid-position
  // contribution. The blocks are visited as an odometer (last dimension fastest) with prefix
  // products, so a transfer costs O(1) amortised instead of O(d).
  std::vector<int64_t> seg(d + 1), seg_lo, seg_len, seg_pos;
  std::vector<int64_t> pvol(d + 1), ppos(d + 1);
  std::vector<char> pown(d + 1);
  bool permute = true;
  for (int r = 0; r < n; ++r) {
    if (!want[r]) continue;
    const int64_t* rlo = tlo.data() + r * d;
    const int64_t* rhi = thi.data() + r * d;
    const int64_t need = BoxVolume(rlo, rhi, d);
    if (need == 0) continue;
    int64_t base = p.pos_of_rank[r];
    seg[0] = 0;
    for (int i = 0; i < d; ++i) {
      own[i] = cur.lo[r * d + i] / cur.block_size[i];
      base -= block_pos[i][own[i]];
      first[i] = rlo[i] / cur.block_size[i];
      last[i] = (rhi[i] - 1) / cur.block_size[i];
      k[i] = 0;
      seg[i + 1] = seg[i] + last[i] - first[i] + 1;
    }
    seg_lo.resize(seg[d]);
    seg_len.resize(seg[d]);
    seg_pos.resize(seg[d]);
    for (int i = 0; i < d; ++i) {
      for (int64_t j = first[i]; j <= last[i]; ++j) {
        const int64_t e = seg[i] + j - first[i];
        seg_lo[e] = std::max(rlo[i], j * cur.block_size[i]);
        seg_len[e] = std::min(rhi[i], (j + 1) * cur.block_size[i]) - seg_lo[e];
        seg_pos[e] = block_pos[i][j];
      }
    }
    pvol[0] = 1;
    ppos[0] = base;
    pown[0] = 1;
    int from = 0;  // the first dimension whose prefix is stale
    while (true) {
      for (int i = from; i < d; ++i) {
        const int64_t e = seg[i] + k[i];
        pvol[i + 1] = pvol[i] * seg_len[e];
        ppos[i + 1] = ppos[i] + seg_pos[e];
        pown[i + 1] = pown[i] && first[i] + k[i] == own[i];
      }
      if (!pown[d]) {
        const int64_t vol = pvol[d];
        const int q = p.rank_of_pos[ppos[d]];
        const int64_t bytes = vol * p.elem;
        // A permute moves whole blocks, each one a rank's entire new shard.
        if (vol != cur.shard_elems || vol != need) permute = false;
        ex.recv[r] += bytes;
        ex.sent[q] += bytes;
        ++recv_count[r];
        ++send_count[q];
        if (ex.axes_mask != used_mask) {
          for (int a : used) {
            if (p.coord(q, a) != p.coord(r, a)) ex.axes_mask |= 1u << a;
          }
        }
        ++ex.num_transfers;
        if (with_groups) sets.Join(q, r);
        if (record) {
          RedistTransfer t;
          t.src = q;
          t.dst = r;
          t.offset.resize(d);
          t.extent.resize(d);
          for (int i = 0; i < d; ++i) {
            t.offset[i] = seg_lo[seg[i] + k[i]];
            t.extent[i] = seg_len[seg[i] + k[i]];
          }
          ex.transfers.push_back(std::move(t));
        }
      }
      int i = d - 1;
      while (i >= 0 && first[i] + k[i] == last[i]) {
        k[i] = 0;
        --i;
      }
      if (i < 0) break;
      ++k[i];
      from = i;
    }
  }
  permute = permute && ex.num_transfers > 0;
  for (int r = 0; r < n; ++r) {
    ex.max_recv = std::max(ex.max_recv, ex.recv[r]);
    ex.max_sent = std::max(ex.max_sent, ex.sent[r]);
    ex.messages = std::max<int64_t>(ex.messages, std::max(recv_count[r], send_count[r]));
    ex.max_recv_peers = std::max<int64_t>(ex.max_recv_peers, recv_count[r]);
    if (recv_count[r] > 1 || send_count[r] > 1) permute = false;
  }
  ex.is_permute = permute;
  if (with_groups) {
    std::vector<char> involved(n, 0);
    for (int r = 0; r < n; ++r) involved[r] = recv_count[r] > 0 || send_count[r] > 0;
    ex.groups = sets.Groups(involved);
  }
  return ex;
}

void SetLazyExchangeLists(const Problem& p, const State& s, const State* into,
                          const Boxes* into_boxes, const std::vector<char>& want, int64_t count,
                          RedistStep* step) {
  // What the expansion needs, small: the per-rank data (coordinates, boxes) are rebuilt from
  // the mesh and the states then, rather than copied now (about 100 KiB at 1024 ranks).
  struct Args {
    DeviceMesh mesh;
    Shape shape;
    int64_t elem = 4;
    State s;
    std::optional<State> into;
    std::vector<int64_t> tlo, thi;  // when the landing is not a state on the mesh
    std::vector<char> want;
    Exchange Compute(bool record, bool with_groups) const {
      Problem q;
      q.mesh = mesh;
      q.shape = shape;
      q.num_dims = static_cast<int>(shape.size());
      q.elem = elem;
      FillRankGrid(&q);
      const Boxes cur = BoxesOf(q, s);
      if (!into) return ComputeExchange(q, s, cur, tlo, thi, want, record, with_groups);
      const Boxes target = BoxesOf(q, *into);
      return ComputeExchange(q, s, cur, target.lo, target.hi, want, record, with_groups);
    }
  };
  auto args = std::make_shared<Args>();
  args->mesh = p.mesh;
  args->shape = p.shape;
  args->elem = p.elem;
  args->s = s;
  if (into) {
    args->into = *into;
  } else {
    args->tlo = into_boxes->lo;
    args->thi = into_boxes->hi;
  }
  args->want = want;
  std::shared_ptr<const Args> shared = std::move(args);
  step->transfers = RedistTransfers::Lazy(
      count, [shared] { return shared->Compute(/*record=*/true, false).transfers; });
  step->groups = RedistGroups::Lazy(count == 0, [shared] {
    return shared->Compute(/*record=*/false, /*with_groups=*/true).groups;
  });
}

RedistGroups LazyGroupsAlong(const DeviceMesh& mesh, const std::vector<int>& axes) {
  auto args = std::make_shared<const std::pair<DeviceMesh, std::vector<int>>>(mesh, axes);
  return RedistGroups::Lazy(false, [args] { return GroupsAlong(args->first, args->second); });
}

std::vector<std::vector<int>> GroupsAlong(const DeviceMesh& mesh, const std::vector<int>& axes) {
  const int na = mesh.num_axes();
  std::vector<int64_t> stride(na, 1);
  for (int a = na - 2; a >= 0; --a) stride[a] = stride[a + 1] * mesh.axis_size(a + 1);
  std::vector<char> in_group(na, 0);
  for (int a : axes) in_group[a] = 1;
  std::vector<int> others;
  for (int a = 0; a < na; ++a) {
    if (!in_group[a]) others.push_back(a);
  }
  // Grid-position offset of every member (mixed radix over `axes`, first most significant)
  // and of every group (row-major over the other axes), both by odometer.
  auto offsets = [&](const std::vector<int>& list) {
    int64_t count = 1;
    for (int a : list) count *= mesh.axis_size(a);
    std::vector<int64_t> out(count, 0);
    std::vector<int64_t> digit(list.size(), 0);
    int64_t off = 0;
    for (int64_t i = 0; i < count; ++i) {
      out[i] = off;
      for (int k = static_cast<int>(list.size()) - 1; k >= 0; --k) {
        const int a = list[k];
        if (++digit[k] < mesh.axis_size(a)) {
          off += stride[a];
          break;
        }
        off -= (digit[k] - 1) * stride[a];
        digit[k] = 0;
      }
    }
    return out;
  };
  const std::vector<int64_t> member = offsets(axes);
  const std::vector<int64_t> group = offsets(others);
  std::vector<int> ranks;
  if (mesh.has_explicit_ranks()) ranks = mesh.rank_list();
  std::vector<std::vector<int>> out(group.size());
  for (size_t g = 0; g < group.size(); ++g) {
    std::vector<int>& members = out[g];
    members.resize(member.size());
    for (size_t m = 0; m < member.size(); ++m) {
      const int64_t pos = group[g] + member[m];
      members[m] = ranks.empty() ? static_cast<int>(pos) : ranks[pos];
    }
  }
  return out;
}

}  // namespace redist_internal

}  // namespace shardscope
