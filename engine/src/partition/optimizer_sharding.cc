// shard-optimizer-states (partition_passes.h): which ranks share each parameter's update.
#include <algorithm>
#include <string>
#include <vector>

#include "partition/partition_passes.h"

namespace shardscope {

int64_t ParamSharding::SliceLength(int rank_in_group) const {
  const int64_t begin = static_cast<int64_t>(rank_in_group) * chunk;
  return std::clamp<int64_t>(elements - begin, 0, chunk);
}

bool GradientReduceScatters(const Layout& grad, const Layout& param) {
  if (grad.mesh().size() != param.mesh().size() || grad.dims_axes() != param.dims_axes())
    return false;
  std::vector<int> partial = grad.partial_axes();
  std::sort(partial.begin(), partial.end());
  if (partial.empty() || partial != param.replica_axes()) return false;  // both ascending
  // The same blocks and groups on every rank (meshes may differ only in their axis names).
  for (int r = 0; r < param.mesh().size(); ++r) {
    if (grad.ShardOffsets(r) != param.ShardOffsets(r)) return false;
  }
  // Each rank's PartialGroup equals its ReplicaGroup iff both meshes list the same groups;
  // Groups is linear in ranks where comparing per rank is quadratic (thousands of devices).
  std::vector<std::vector<int>> sums = grad.mesh().Groups(partial);
  std::vector<std::vector<int>> replicas = param.mesh().Groups(partial);
  std::sort(sums.begin(), sums.end());
  std::sort(replicas.begin(), replicas.end());
  return sums == replicas;
}

Status ShardOptimizerStates(const PartitionOptions& o, DistProgram* p) {
  if (o.optimizer_sharding < 0 || o.optimizer_sharding > 3) {
    return Status::Invalid("optimizer sharding stage " + std::to_string(o.optimizer_sharding) +
                           " is not a ZeRO stage (0 off, 1 optimizer states, 2 and gradients, "
                           "3 and parameters)");
  }
  p->optimizer_sharding = o.optimizer_sharding;
  p->param_sharding.assign(p->param_grads.size(), ParamSharding{});
  for (size_t i = 0; i < p->param_grads.size(); ++i) {
    const auto [param, grad] = p->param_grads[i];
    const Layout& layout = p->values[param].layout;
    ParamSharding& s = p->param_sharding[i];
    s.elements = NumElements(layout.ShardShape());
    s.chunk = s.elements;
    // A mesh over fewer devices than the run (a sub-mesh) keeps the whole update.
    if (o.optimizer_sharding == 0 || layout.mesh().size() != p->devices) continue;
    const std::vector<int> axes = layout.replica_axes();
    const int64_t group = layout.mesh().GroupSize(axes);
    if (group <= 1) continue;
    s.axes = axes;
    s.group_size = static_cast<int>(group);
    s.chunk = (s.elements + group - 1) / group;
    s.reduce_scatter = grad != param && p->values[grad].layout.is_partial();
    s.gathered = o.optimizer_sharding == 3 && s.reduce_scatter;
  }
  return Status::Ok();
}

}  // namespace shardscope
