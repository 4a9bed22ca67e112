#include "shardscope/executor.h"

#include <chrono>

#include "ops/op_registry.h"
#include "shardscope/initializer.h"

namespace shardscope {

Executor::Executor(const Graph& graph) : graph_(graph), timings_(graph.num_nodes()) {
  buffers_.reserve(graph.num_values());
  for (const Value& v : graph.values()) {
    buffers_.emplace_back(v.shape, v.dtype);
    if (v.kind == ValueKind::kConstant) buffers_.back() = InitializeValue(v, 0);
  }
}

void Executor::InitializeParameters(uint64_t seed) {
  for (const Value& v : graph_.values()) {
    if (v.kind == ValueKind::kParameter) buffers_[v.id] = InitializeValue(v, seed);
  }
}

std::vector<NodeId> Executor::Schedule(const std::vector<ValueId>& targets) const {
  const std::vector<bool> run = NodesNeededFor(graph_, targets);
  std::vector<NodeId> schedule;
  for (NodeId n = 0; n < graph_.num_nodes(); ++n) {
    if (run[n]) schedule.push_back(n);
  }
  return schedule;
}

void Executor::Run(const std::vector<NodeId>& schedule, int64_t step, bool training) {
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  for (NodeId n : schedule) {
    const Node& node = graph_.node(n);
    in.clear();
    out.clear();
    for (ValueId v : node.inputs) in.push_back(&buffers_[v]);
    for (ValueId v : node.outputs) out.push_back(&buffers_[v]);
    KernelContext ctx{node.attrs, in, out, step, training};
    if (!profiling_) {
      GetOpDef(node.op).forward(ctx);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    GetOpDef(node.op).forward(ctx);
    timings_[n].seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    timings_[n].runs++;
  }
}

int64_t Executor::BytesOf(ValueKind kind) const {
  int64_t bytes = 0;
  for (const Value& v : graph_.values()) {
    if (v.kind == kind) bytes += buffers_[v.id].size() * 4;
  }
  return bytes;
}

}  // namespace shardscope
