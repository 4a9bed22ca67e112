#include "shardscope/memory_liveness.h"

#include <algorithm>
#include <optional>
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
  // Walks the schedule up to `stop` (all of it: npos); returns the position of the peak and
  // leaves `live` as it is at `stop`, before its releases.
  std::vector<bool> live;
  auto walk = [&](size_t stop) {
    live.assign(n, false);
    int64_t now = 0, peak = -1;
    size_t peak_pos = 0;
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
      if (now > peak) {
        peak = now;
        peak_pos = pos;
      }
      if (pos == stop) break;
      if (pos >= program.release_after.size()) continue;
      for (int v : program.release_after[pos]) {
        if (live[v]) now -= bytes_of(v);
        live[v] = false;
      }
    }
    return peak_pos;
  };
  const size_t peak_pos = walk(std::string::npos);
  walk(peak_pos);
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
