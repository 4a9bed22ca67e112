// insert-recomputation (partition_passes.h): activations of the chosen name scopes are freed
// after the forward pass and made again, by replaying the scope's forward instructions, just
// before the backward needs them. Kernels are pure (dropout draws from the step and the
// shard offsets), so a replay writes the same bits as the forward did.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "partition/partition_passes.h"

namespace shardscope {
namespace {

// The scope of `options.recompute` that `name` belongs to, or "" (none). "*": its top level.
std::string ScopeOf(const std::string& name, const std::vector<std::string>& scopes) {
  for (const std::string& s : scopes) {
    if (s == "*") return name.substr(0, name.find('.'));
    if (name == s || name.rfind(s + ".", 0) == 0) return s;
  }
  return "";
}

// Per scheduled position, the DistValues whose last use before their next write (or ever) it
// is: they are freed after it. A gathered parameter (stage 3) has no writer: its first read
// in the forward pass and its first in the backward (from `backward_pos` on) gather it, and
// `gathers` counts how often.
std::vector<std::vector<int>> Releases(const DistProgram& p, size_t backward_pos,
                                       std::vector<int>* gathers) {
  std::vector<std::vector<int>> release(p.schedule.size());
  std::vector<int> last(p.values.size(), -1);  // position of the open interval's last use
  auto close = [&](int v) {
    if (last[v] >= 0) release[last[v]].push_back(v);
    last[v] = -1;
  };
  gathers->assign(p.values.size(), 0);
  for (size_t pos = 0; pos < p.schedule.size(); ++pos) {
    if (pos == backward_pos) {
      for (size_t v = 0; v < p.values.size(); ++v)
        if (p.gathered_param[v] >= 0) close(static_cast<int>(v));
    }
    const DistInstr& in = p.instrs[p.schedule[pos]];
    for (int v : in.inputs) {
      if (!p.transient[v]) continue;
      if (p.gathered_param[v] >= 0 && last[v] < 0) ++(*gathers)[v];
      last[v] = static_cast<int>(pos);
    }
    for (int v : in.outputs) {
      if (!p.transient[v]) continue;
      close(v);  // a write starts a new interval
      last[v] = static_cast<int>(pos);
    }
  }
  for (size_t v = 0; v < p.values.size(); ++v) close(static_cast<int>(v));
  for (auto& r : release) std::sort(r.begin(), r.end());
  return release;
}

}  // namespace

Status InsertRecomputation(const Graph& g, const PartitionOptions& o, DistProgram* p) {
  p->recompute.clear();
  p->schedule.clear();
  p->release_after.clear();
  p->transient.assign(p->values.size(), false);
  p->gathered_param.assign(p->values.size(), -1);
  p->scattered_grad.assign(p->values.size(), -1);
  for (size_t i = 0; i < p->param_sharding.size(); ++i) {
    if (p->param_sharding[i].reduce_scatter)
      p->scattered_grad[p->param_grads[i].second] = static_cast<int>(i);
    if (!p->param_sharding[i].gathered) continue;
    p->gathered_param[p->param_grads[i].first] = static_cast<int>(i);
    p->transient[p->param_grads[i].first] = true;
  }
  MarkActivationsTransient(p);
  const int n = static_cast<int>(p->instrs.size());
  int forward_end = n;  // the first backward instruction
  for (int i = 0; i < n && forward_end == n; ++i) {
    const DistInstr& in = p->instrs[i];
    if (in.kind == DistInstr::Kind::kCompute && g.node(in.node).is_backward) forward_end = i;
  }
  // Each forward instruction's segment: a compute by its operator's scope, a redistribution
  // by its first reader's (values several scopes read stay kept: see `dropped` below).
  std::vector<int> segment_of(n, -1);
  std::map<std::string, int> by_scope;
  for (int i = forward_end - 1; i >= 0; --i) {
    const DistInstr& in = p->instrs[i];
    if (in.kind == DistInstr::Kind::kCompute) {
      const std::string scope = ScopeOf(g.node(in.node).name, o.recompute);
      if (scope.empty()) continue;
      auto [it, added] = by_scope.emplace(scope, static_cast<int>(p->recompute.size()));
      if (added) p->recompute.push_back({scope, 0, {}, {}});
      segment_of[i] = it->second;
      continue;
    }
    for (int j = i + 1; j < forward_end && segment_of[i] < 0; ++j) {
      const auto& ins = p->instrs[j].inputs;
      if (std::find(ins.begin(), ins.end(), in.outputs[0]) != ins.end()) {
        if (p->instrs[j].kind != DistInstr::Kind::kCompute) break;
        segment_of[i] = segment_of[j];
        break;
      }
    }
  }
  for (const std::string& s : o.recompute) {
    if (s != "*" && !by_scope.count(s)) {
      return Status::Invalid("recompute: no forward operator is in scope '" + s +
                             "' (scopes are name prefixes such as 'dense1' or 'layer0.attn')");
    }
  }
  // Kept: anything a forward instruction of another segment (or none) reads, the stored
  // values, the loss and the gradients the optimizer reads.
  std::vector<bool> kept(p->values.size(), false);
  std::vector<int> writer(p->values.size(), -1);
  for (int i = 0; i < forward_end; ++i) {
    for (int v : p->instrs[i].inputs) {
      const bool inside =
          segment_of[i] >= 0 && writer[v] >= 0 && segment_of[writer[v]] == segment_of[i];
      if (!inside) kept[v] = true;
    }
    for (int v : p->instrs[i].outputs) writer[v] = i;
  }
  kept[p->loss] = true;
  for (const auto& [param, grad] : p->param_grads) kept[param] = kept[grad] = true;
  for (int v : p->batch_values) kept[v] = true;
  for (int i = 0; i < forward_end; ++i) {
    if (segment_of[i] < 0) continue;
    RecomputeSegment& seg = p->recompute[segment_of[i]];
    seg.instrs.push_back(i);
    for (int v : p->instrs[i].outputs) {
      if (kept[v]) continue;
      seg.dropped.push_back(v);
      p->transient[v] = true;
    }
  }
  std::erase_if(p->recompute, [](const RecomputeSegment& s) { return s.dropped.empty(); });
  std::reverse(p->recompute.begin(), p->recompute.end());  // forward order
  // Each replay runs before the first later instruction reading what its segment dropped.
  for (RecomputeSegment& seg : p->recompute) {
    const std::set<int> dropped(seg.dropped.begin(), seg.dropped.end());
    seg.before = n;
    for (int i = forward_end; i < n && seg.before == n; ++i) {
      for (int v : p->instrs[i].inputs)
        if (dropped.count(v)) seg.before = i;
    }
  }
  for (int i = 0; i <= n; ++i) {
    for (const RecomputeSegment& seg : p->recompute) {
      if (seg.before == i && i < n)
        p->schedule.insert(p->schedule.end(), seg.instrs.begin(), seg.instrs.end());
    }
    if (i < n) p->schedule.push_back(i);
  }
  size_t backward_pos = 0;  // the first scheduled replay or backward instruction
  while (backward_pos < p->schedule.size() && p->schedule[backward_pos] < forward_end &&
         (backward_pos == 0 || p->schedule[backward_pos] > p->schedule[backward_pos - 1]))
    ++backward_pos;
  std::vector<int> gathers;
  p->release_after = Releases(*p, backward_pos, &gathers);
  for (ParamSharding& s : p->param_sharding) s.gathers = 0;
  for (size_t v = 0; v < p->values.size(); ++v)
    if (p->gathered_param[v] >= 0) p->param_sharding[p->gathered_param[v]].gathers = gathers[v];
  return Status::Ok();
}

void AppendMemoryOptionsText(const DistProgram& p, std::ostream& out) {
  if (p.optimizer_sharding > 0) {
    int sharded = 0;
    int gathered = 0;
    for (const ParamSharding& s : p.param_sharding) {
      sharded += s.group_size > 1 ? 1 : 0;
      gathered += s.gathered ? 1 : 0;
    }
    out << "optimizer sharding: stage " << p.optimizer_sharding << ", " << sharded << " of "
        << p.param_sharding.size() << " parameters updated in slices over their replicas";
    if (p.optimizer_sharding == 3) out << ", " << gathered << " gathered before use";
    size_t scattered = 0;
    for (const ScatterBucket& b : p.scatter_buckets) scattered += b.params.size();
    if (scattered > 0)
      out << ", " << scattered << " gradients reduce-scattered in " << p.scatter_buckets.size()
          << " bucket(s)" << (p.scatter_overlap ? " beside the backward" : ", each blocking");
    out << "\n";
  }
  for (const RecomputeSegment& seg : p.recompute) {
    out << "recompute " << seg.scope << ": " << seg.dropped.size()
        << " value(s) freed after forward";
    if (seg.before < static_cast<int>(p.instrs.size()))
      out << ", " << seg.instrs.size() << " instruction(s) replayed before instruction "
          << seg.before;
    out << "\n";
  }
}

}  // namespace shardscope
