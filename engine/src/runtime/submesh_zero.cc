// ZeRO 2 and 3 inside pipeline stages (submesh_pipeline.h): each stage reduce-scatters the
// gradients it owns in buckets of its own, and frees its gathered parameters per phase.
#include <algorithm>

#include "shardscope/submesh_pipeline.h"

namespace shardscope {

std::vector<ScatterBucket> StageScatterBuckets(const SubMeshPlan& plan, int stage) {
  const DistProgram& p = plan.program;
  std::vector<ScatterBucket> out;
  for (const ScatterBucket& b : p.scatter_buckets) {
    ScatterBucket mine;
    mine.group_size = b.group_size;
    mine.after = b.after;
    for (int i : b.params) {
      if (plan.param_stage[i] != stage) continue;
      mine.params.push_back(i);
      mine.slice += p.param_sharding[i].chunk;
    }
    if (!mine.params.empty()) out.push_back(std::move(mine));
  }
  return out;
}

void KeepStageSharding(const SubMeshPlan& plan, int stage, DistProgram* p) {
  std::vector<ScatterBucket> buckets = StageScatterBuckets(plan, stage);
  for (size_t i = 0; i < p->param_sharding.size(); ++i) {
    ParamSharding& s = p->param_sharding[i];
    if (plan.param_stage[i] == stage) continue;
    ParamSharding whole;  // another stage's: this rank neither updates nor gathers it
    whole.elements = whole.chunk = s.elements;
    s = whole;
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    int64_t offset = 0;
    for (int i : buckets[b].params) {
      p->param_sharding[i].bucket = static_cast<int>(b);
      p->param_sharding[i].bucket_offset = offset;
      offset += p->param_sharding[i].chunk;
    }
  }
  p->scatter_buckets = std::move(buckets);
}

std::vector<std::vector<int>> PhaseReleases(const DistProgram& p,
                                            const std::vector<StageItem>& items) {
  std::vector<std::vector<int>> release(items.size());
  if (p.gathered_param.empty()) return release;
  std::vector<int> last(p.values.size(), -1);
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].kind != StageItem::Kind::kRun) continue;
    for (int v : p.instrs[items[k].index].inputs)
      if (p.gathered_param[v] >= 0) last[v] = static_cast<int>(k);
  }
  for (size_t v = 0; v < last.size(); ++v)
    if (last[v] >= 0) release[last[v]].push_back(static_cast<int>(v));
  return release;
}

int64_t PhaseGatheredBytes(const DistProgram& p, const std::vector<StageItem>& items) {
  if (p.gathered_param.empty()) return 0;
  const std::vector<std::vector<int>> release = PhaseReleases(p, items);
  std::vector<bool> live(p.values.size(), false);
  int64_t now = 0, peak = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].kind != StageItem::Kind::kRun) continue;
    for (int v : p.instrs[items[k].index].inputs) {
      if (p.gathered_param[v] < 0 || live[v]) continue;
      live[v] = true;
      now += NumElements(p.values[v].layout.ShardShape()) * 4;
    }
    peak = std::max(peak, now);
    for (int v : release[k]) {
      live[v] = false;
      now -= NumElements(p.values[v].layout.ShardShape()) * 4;
    }
  }
  return peak;
}

}  // namespace shardscope
