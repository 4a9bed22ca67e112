#include "shardscope/memory_liveness.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/sharded_update.h"
#include "shardscope/base/format.h"
#include "shardscope/checked_math.h"
#include "shardscope/dist_trainer.h"

namespace shardscope {
namespace {

enum class Kind { kParameter, kGradient, kActivation };

// Sums that must stay within 63 bits (each value's bytes fit: Graph::CheckNewValue).
struct Sum {
  std::optional<int64_t> bytes = 0;
  void Add(int64_t b) { bytes = bytes ? CheckedAdd(*bytes, b) : std::nullopt; }
};

}  // namespace

Result<RankMemory> PlanRankMemory(const Graph& graph, const DistProgram& program,
                                  int optimizer_states, int float_bytes) {
  const size_t n = program.values.size();
  auto bytes_of = [&](int v) {
    const DType dtype = graph.value(program.values[v].global).dtype;
    return NumElements(program.values[v].layout.ShardShape()) *
           (dtype == DType::kF32 ? float_bytes : DTypeBytes(dtype));
  };
  std::vector<Kind> kind(n, Kind::kActivation);
  for (const auto& [param, grad] : program.param_grads) {
    kind[param] = Kind::kParameter;
    kind[grad] = Kind::kGradient;
  }
  auto transient = [&](size_t v) { return !program.transient.empty() && program.transient[v]; };
  // Kept for the whole step: every buffer not allocated while live, as DistExecutor does.
  Sum kept[3];
  for (size_t v = 0; v < n; ++v)
    if (!transient(v)) kept[static_cast<int>(kind[v])].Add(bytes_of(static_cast<int>(v)));
  // The rest over the schedule, as DistExecutor::Run allocates (before the instruction that
  // writes them; stage-3 parameters before the one that reads them) and frees them.
  std::vector<int> order = program.schedule;
  if (order.empty())
    for (size_t i = 0; i < program.instrs.size(); ++i) order.push_back(static_cast<int>(i));
  // ZeRO 2/3 buckets of several gradients hold copies of them while they fill (ShardedUpdate):
  // each is counted from its first member's release to its last's; overlapped (every bucket a
  // copy) until the next bucket's last member's release has started that one.
  auto bucket_bytes = [&](const ScatterBucket& b) {
    return b.params.size() > 1 || program.scatter_overlap ? b.group_size * b.slice * float_bytes
                                                          : int64_t{0};
  };
  // Walks the schedule up to `stop` (all of it: npos) and its release `stop_release` (-1: none);
  // returns the position and release of the peak and leaves `live` and `held` (bytes in open
  // buckets) as they are there, as DistExecutor::Run measures it.
  std::vector<bool> live;
  int64_t held = 0;
  auto walk = [&](size_t stop, int stop_release) {
    live.assign(n, false);
    held = 0;
    std::vector<size_t> joined(program.scatter_buckets.size(), 0);
    int in_flight = -1;  // the overlapped bucket started last
    int64_t now = 0, peak = -1;
    size_t peak_pos = 0;
    int peak_release = -1;
    const auto sample = [&](size_t pos, int release) {
      if (now + held <= peak) return;
      peak = now + held;
      peak_pos = pos;
      peak_release = release;
    };
    for (size_t pos = 0; pos < order.size(); ++pos) {
      const DistInstr& in = program.instrs[order[pos]];
      auto take = [&](int v) {
        live[v] = true;
        now += bytes_of(v);
      };
      for (int v : in.outputs)
        if (transient(v) && !live[v]) take(v);
      for (int v : in.inputs)
        if (!program.gathered_param.empty() && program.gathered_param[v] >= 0 && !live[v]) take(v);
      sample(pos, -1);
      if (pos == stop && stop_release < 0) break;
      if (pos >= program.release_after.size()) continue;
      const std::vector<int>& freed = program.release_after[pos];
      for (size_t k = 0; k < freed.size(); ++k) {
        const int v = freed[k];
        const int param = program.scattered_grad.empty() ? -1 : program.scattered_grad[v];
        if (param >= 0) {
          const int b = program.param_sharding[param].bucket;
          const ScatterBucket& bucket = program.scatter_buckets[b];
          if (joined[b]++ == 0) held += bucket_bytes(bucket);
          sample(pos, static_cast<int>(k));
          if (pos == stop && static_cast<int>(k) == stop_release)
            return std::pair(pos, stop_release);
          if (joined[b] == bucket.params.size()) {
            const int freed_bucket = program.scatter_overlap ? std::exchange(in_flight, b) : b;
            if (freed_bucket >= 0) held -= bucket_bytes(program.scatter_buckets[freed_bucket]);
          }
        }
        if (live[v]) now -= bytes_of(v);
        live[v] = false;
      }
    }
    return std::pair(peak_pos, peak_release);
  };
  const auto [peak_pos, peak_release] = walk(std::string::npos, -1);
  walk(peak_pos, peak_release);
  std::vector<int> at_peak;  // the values live at the peak
  for (size_t v = 0; v < n; ++v)
    if (live[v] && !order.empty()) at_peak.push_back(static_cast<int>(v));
  Sum by_kind[3];
  for (int k = 0; k < 3; ++k) by_kind[k].Add(kept[k].bytes.value_or(0));
  RankMemory m;
  auto consider = [&](const std::string& what, int64_t bytes) {
    if (bytes > m.largest_bytes) {
      m.largest_bytes = bytes;
      m.largest = what;
    }
  };
  static const char* const kKindName[] = {"parameter", "gradient", "activation"};
  for (size_t v = 0; v < n; ++v) {
    if (!transient(v))
      consider(
          std::string(kKindName[static_cast<int>(kind[v])]) + " '" + program.values[v].name + "'",
          bytes_of(static_cast<int>(v)));
  }
  by_kind[static_cast<int>(Kind::kGradient)].Add(held);  // copies in open buckets
  for (int v : at_peak) {
    by_kind[static_cast<int>(kind[v])].Add(bytes_of(v));
    consider(
        std::string(kKindName[static_cast<int>(kind[v])]) + " '" + program.values[v].name + "'",
        bytes_of(v));
  }
  if (!order.empty()) {
    const DistInstr& in = program.instrs[order[peak_pos]];
    if (in.kind == DistInstr::Kind::kCompute) {
      m.peak_at = graph.node(in.node).name;
      m.peak_in_backward = graph.node(in.node).is_backward;
    } else {
      m.peak_at = "redistribution of " + program.values[in.inputs[0]].name;
      // A redistribution after the first backward operator belongs to the backward pass.
      for (size_t p = 0; p <= peak_pos && !m.peak_in_backward; ++p) {
        const DistInstr& q = program.instrs[order[p]];
        m.peak_in_backward = q.kind == DistInstr::Kind::kCompute && graph.node(q.node).is_backward;
      }
    }
  }
  // Optimizer states: per slice when sharded (ZeRO); bf16/fp16 keep an fp32 master copy.
  Sum states;
  const int master_copies = float_bytes < 4 ? 1 : 0;
  int64_t largest_param = 0;
  for (size_t i = 0; i < program.param_grads.size(); ++i) {
    const DistValue& v = program.values[program.param_grads[i].first];
    const int64_t elements = i < program.param_sharding.size() ? program.param_sharding[i].chunk
                                                               : NumElements(v.layout.ShardShape());
    const int64_t one = elements * 4 * (optimizer_states + master_copies);
    states.Add(one);
    if (optimizer_states + master_copies > 0) consider("optimizer states of '" + v.name + "'", one);
    largest_param = std::max(largest_param, NumElements(graph.value(v.global).shape) * 4);
  }
  // ZeRO 2/3: each gradient's slice is kept (the whole one lives from its writer until it is
  // reduce-scattered, walked above); the other slices and scratch count with the states.
  const int64_t grad_slices = ShardedUpdate::PlannedGradientSliceBytes(program, float_bytes);
  by_kind[static_cast<int>(Kind::kGradient)].Add(grad_slices);
  states.Add(ShardedUpdate::PlannedBytes(program, float_bytes) - grad_slices);
  Sum total;
  for (const Sum* s : {&by_kind[0], &by_kind[1], &by_kind[2], &states})
    total.Add(s->bytes.value_or(-1));
  total.Add(largest_param);
  bool fits = total.bytes.has_value() && states.bytes.has_value();
  for (const Sum& s : by_kind) fits = fits && s.bytes.has_value();
  for (const Sum& s : kept) fits = fits && s.bytes.has_value();
  if (!fits) return Status::Invalid("the memory of one rank does not fit in 63 bits");
  m.parameters = *by_kind[0].bytes;
  m.gradients = *by_kind[1].bytes;
  m.activations = *by_kind[2].bytes;
  m.optimizer_states = *states.bytes;
  m.initialisation = largest_param;
  m.total = *total.bytes;
  return m;
}

Result<int64_t> RankMemoryBytes(const Graph& graph, const DistProgram& program,
                                int optimizer_states, int float_bytes) {
  SHARDSCOPE_ASSIGN_OR_RETURN(RankMemory m,
                              PlanRankMemory(graph, program, optimizer_states, float_bytes));
  return m.total;
}

std::string RankMemoryText(const RankMemory& m) {
  auto b = [](int64_t bytes) { return FormatBytes(static_cast<double>(bytes)); };
  std::string text = "params " + b(m.parameters) + ", grads " + b(m.gradients) +
                     ", optimizer states " + b(m.optimizer_states) + ", activations " +
                     b(m.activations);
  if (!m.peak_at.empty())
    text += " at " + m.peak_at + (m.peak_in_backward ? " (backward)" : " (forward)");
  if (m.initialisation > 0) text += ", init draw " + b(m.initialisation);
  return text;
}

}  // namespace shardscope
