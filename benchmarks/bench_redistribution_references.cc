// The reference plans of the redistribution benchmark (bench_redistribution_references.h).
#include "bench_redistribution_references.h"

#include <cstdlib>

#include "shardscope/redistribution/redistribution.h"

namespace shardscope::bench_redist {

Unified Unify(const Layout& from, const Layout& to) {
  if (from.mesh() == to.mesh()) return {from, to};
  auto u = UnifyMeshes(from.mesh(), to.mesh());
  if (!u.ok()) std::abort();
  auto a = ExpressOnMesh(from, u->mesh, u->axes_of_a);
  auto b = ExpressOnMesh(to, u->mesh, u->axes_of_b);
  if (!a.ok() || !b.ok()) std::abort();
  return {*a, *b};
}

namespace {

// Partial axes of `from` that `to` does not keep partial: they must be reduced.
std::vector<int> AxesToReduce(const Layout& from, const Layout& to) {
  std::vector<int> axes;
  for (int a : from.partial_axes()) {
    if (!to.IsPartialOver(a)) axes.push_back(a);
  }
  return axes;
}

}  // namespace

// full copy on every rank, slice the target shard locally (free; new partial axes of the
// target become zero addends, also free).
RecvTally NaiveRecv(const Unified& u) {
  RecvTally t(u.from.mesh());
  const int64_t shard = NumElements(u.from.ShardShape());
  t.AllReduce(shard, AxesToReduce(u.from, u.to));
  const int64_t blocks = u.from.NumBlocks();
  t.AllGather(shard, blocks);  // receives (blocks-1) shards = the whole tensor minus its own
  return t;
}

// A per-dimension rule loop modelled on MindSpore's redistribution
// (RedistributionOperatorInfer::InferRedistributionOperator: repeat { InferSplitByAxis;
// InferPermuteByAxis; InferConcatByAxis } until the tensor map is the target's), with the
// all-to-all rule (PermuteByAxis) left out, as issue 3 specifies:
//   0. partial sums are all-reduced first, on the source shard (MindSpore inserts the
//      AllReduce at the producing operator's output);
//   1. split: a dimension whose current axes are a prefix of its target axes and whose next
//      target axis is free (used by no dimension) is sliced locally along it (no traffic);
//      repeated until nothing more can be split;
//   2. concat: otherwise the first dimension whose current axes are not a prefix of its
//      target's gives up its last (least significant) axis by an all-gather along it; back
//      to 1.
// So a dimension that changes axes (or an axis that moves to another dimension) is gathered
// and then split again: no all-to-all, no irregular exchange, nothing across dimensions.
RecvTally RulesLoopRecv(const Unified& u) {
  const DeviceMesh& mesh = u.from.mesh();
  RecvTally t(mesh);
  int64_t shard = NumElements(u.from.ShardShape());
  t.AllReduce(shard, AxesToReduce(u.from, u.to));
  DimAxes cur = u.from.dims_axes();
  const DimAxes& target = u.to.dims_axes();
  auto is_prefix = [&](int d) {
    return cur[d].size() <= target[d].size() &&
           std::equal(cur[d].begin(), cur[d].end(), target[d].begin());
  };
  auto used = [&](int axis) {
    for (const auto& d : cur) {
      if (std::find(d.begin(), d.end(), axis) != d.end()) return true;
    }
    return false;
  };
  const int rank = u.from.rank();
  while (cur != target) {
    bool progress = true;
    while (progress) {  // 1. split
      progress = false;
      for (int d = 0; d < rank; ++d) {
        if (!is_prefix(d) || cur[d].size() == target[d].size()) continue;
        const int axis = target[d][cur[d].size()];
        if (used(axis)) continue;
        cur[d].push_back(axis);
        shard /= mesh.axis_size(axis);
        progress = true;
      }
    }
    if (cur == target) break;
    for (int d = 0; d < rank; ++d) {  // 2. concat
      if (is_prefix(d)) continue;
      const int axis = cur[d].back();
      t.AllGather(shard, mesh.axis_size(axis));
      shard *= mesh.axis_size(axis);
      cur[d].pop_back();
      break;
    }
  }
  return t;
}

}  // namespace shardscope::bench_redist
