// The placement pass (placement.h): per-worker programs joined by send/receive.
#include "shardscope/placement.h"

#include <algorithm>
#include <sstream>

namespace shardscope {
namespace {

int64_t ValueBytes(const Value& v) { return NumElements(v.shape) * 4; }

// The worker of each node: its placement, its forward node's, or the unplaced policy's.
Result<std::vector<int>> AssignWorkers(const Graph& g, const std::vector<bool>& needed, int workers,
                                       UnplacedPolicy unplaced) {
  std::vector<int> worker(g.num_nodes(), -1);
  for (const Node& n : g.nodes()) {
    if (!needed[n.id]) continue;
    if (n.is_backward && n.forward_node != kNoNode) {
      const NodeId f = n.forward_node;  // earlier in graph order: assigned already
      worker[n.id] = worker[f] >= 0 ? worker[f] : std::max(0, g.node(f).annotations.worker);
      continue;
    }
    const OpAnnotations& a = n.annotations;
    if (a.worker >= 0 && (!a.in_strategy.empty() || !a.out_strategy.empty())) {
      return Status::NotImplemented(
          "operator '" + n.name + "': place(\"worker\", " + std::to_string(a.worker) +
          ") together with a sharding strategy " + a.in_strategy +
          " is not supported: a placed operator runs whole on one worker (sharding a placed "
          "block over a sub-mesh of ranks is not implemented); drop the strategy or the place");
    }
    if (a.worker >= workers) {
      return Status::Invalid("operator '" + n.name + "' is placed on worker " +
                             std::to_string(a.worker) + " but the run has " +
                             std::to_string(workers) + " device(s); use --devices " +
                             std::to_string(a.worker + 1) + " or more");
    }
    worker[n.id] = std::max(0, a.worker);
    if (a.worker >= 0 || unplaced != UnplacedPolicy::kWithProducer) continue;
    for (ValueId v : n.inputs) {
      const NodeId producer = g.value(v).producer;
      if (producer == kNoNode || worker[producer] < 0) continue;
      worker[n.id] = worker[producer];
      break;
    }
  }
  return worker;
}

std::string NodeLabel(const Graph& g, NodeId n) { return g.node(n).name; }

}  // namespace

const char* UnplacedPolicyName(UnplacedPolicy policy) {
  return policy == UnplacedPolicy::kWorkerZero ? "worker0" : "producer";
}

Result<UnplacedPolicy> ParseUnplacedPolicy(const std::string& name) {
  if (name == "worker0") return UnplacedPolicy::kWorkerZero;
  if (name == "producer") return UnplacedPolicy::kWithProducer;
  return Status::Invalid("unknown placement of unplaced operators '" + name +
                         "' (worker0, producer)");
}

bool HasPlacement(const Graph& graph) { return HighestWorker(graph) >= 0; }

int HighestWorker(const Graph& graph) {
  int highest = -1;
  for (const Node& n : graph.nodes()) highest = std::max(highest, n.annotations.worker);
  return highest;
}

Result<PlacedProgram> PlaceGraph(const Graph& g, const std::vector<ValueId>& targets,
                                 const std::vector<ValueId>& params,
                                 const std::vector<ValueId>& grads, int workers,
                                 UnplacedPolicy unplaced) {
  if (workers < 1) return Status::Invalid("placement needs at least one worker");
  if (params.size() != grads.size())
    return Status::Invalid("placement: parameters and gradients differ in number");
  std::vector<ValueId> all_targets = targets;
  all_targets.insert(all_targets.end(), grads.begin(), grads.end());
  const std::vector<bool> needed = NodesNeededFor(g, all_targets);
  PlacedProgram p;
  p.workers = workers;
  SHARDSCOPE_ASSIGN_OR_RETURN(p.node_worker, AssignWorkers(g, needed, workers, unplaced));
  p.programs.resize(workers);

  // Parameters live with the operators reading them; all of those must share one worker.
  std::vector<int> param_worker(g.num_values(), -1);
  std::vector<NodeId> param_reader(g.num_values(), kNoNode);
  // Cut edges, found in graph order of their first consumer; per (value, worker) once.
  std::vector<std::vector<int>> edges_of_value(g.num_values());
  std::vector<std::vector<int>> sends_after(g.num_nodes()), recvs_before(g.num_nodes());
  for (const Node& n : g.nodes()) {
    if (!needed[n.id]) continue;
    const int w = p.node_worker[n.id];
    for (ValueId v : n.inputs) {
      const Value& val = g.value(v);
      if (val.kind == ValueKind::kInput) p.programs[w].reads_input = true;
      if (val.kind == ValueKind::kLabel) p.programs[w].reads_labels = true;
      if (val.kind == ValueKind::kParameter) {
        if (param_worker[v] < 0) {
          param_worker[v] = w;
          param_reader[v] = n.id;
        } else if (param_worker[v] != w) {
          return Status::NotImplemented(
              "parameter '" + val.name + "' is read by operator '" + NodeLabel(g, param_reader[v]) +
              "' on worker " + std::to_string(param_worker[v]) + " and by '" + n.name +
              "' on worker " + std::to_string(w) +
              ": a parameter shared across workers is not supported; place both on one worker");
        }
        continue;
      }
      if (val.producer == kNoNode) continue;  // inputs, labels, constants: read locally
      const int src = p.node_worker[val.producer];
      if (src == w) continue;
      bool known = false;
      for (int e : edges_of_value[v]) known = known || p.edges[e].dst_worker == w;
      if (known) continue;
      CutEdge e;
      e.value = v;
      e.src_worker = src;
      e.dst_worker = w;
      e.src_node = val.producer;
      e.dst_node = n.id;
      e.is_backward = g.node(val.producer).is_backward;
      e.bytes = ValueBytes(val);
      const int index = static_cast<int>(p.edges.size());
      p.edges.push_back(e);
      edges_of_value[v].push_back(index);
      sends_after[val.producer].push_back(index);
      recvs_before[n.id].push_back(index);
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (param_worker[params[i]] < 0) continue;  // not needed for these targets
    WorkerProgram& wp = p.programs[param_worker[params[i]]];
    wp.params.push_back(params[i]);
    wp.grads.push_back(grads[i]);
  }

  // Each worker's instructions in graph order (the deadlock-free order, see the header).
  for (const Node& n : g.nodes()) {
    if (!needed[n.id]) continue;
    const int w = p.node_worker[n.id];
    auto& dst = n.is_backward ? p.programs[w].backward : p.programs[w].forward;
    for (int e : recvs_before[n.id]) dst.push_back({PlacedInstr::Kind::kRecv, kNoNode, e});
    dst.push_back({PlacedInstr::Kind::kCompute, n.id, -1});
    for (int e : sends_after[n.id]) dst.push_back({PlacedInstr::Kind::kSend, kNoNode, e});
  }
  // Stages: workers in order of their first forward operator.
  p.stage.assign(workers, -1);
  for (const Node& n : g.nodes()) {
    if (!needed[n.id] || n.is_backward) continue;
    int& s = p.stage[p.node_worker[n.id]];
    if (s < 0) s = p.num_stages++;
  }
  for (ValueId t : targets) {
    const NodeId producer = g.value(t).producer;
    p.target_worker.push_back(producer == kNoNode ? 0 : p.node_worker[producer]);
  }
  return p;
}

int64_t PlacedProgram::SentBytes(int worker) const {
  int64_t bytes = 0;
  for (const CutEdge& e : edges) bytes += e.src_worker == worker ? e.bytes : 0;
  return bytes;
}

int64_t PlacedProgram::ReceivedBytes(int worker) const {
  int64_t bytes = 0;
  for (const CutEdge& e : edges) bytes += e.dst_worker == worker ? e.bytes : 0;
  return bytes;
}

std::string PlacedProgram::WorkerText(const Graph& g, int worker) const {
  std::ostringstream out;
  const WorkerProgram& wp = programs[worker];
  out << "worker " << worker << " (stage " << stage[worker] << "): " << wp.params.size()
      << " parameter(s), sends " << SentBytes(worker) << " B, receives " << ReceivedBytes(worker)
      << " B per batch\n";
  for (int phase = 0; phase < 2; ++phase) {
    out << (phase == 0 ? "  forward:\n" : "  backward:\n");
    for (const PlacedInstr& in : phase == 0 ? wp.forward : wp.backward) {
      if (in.kind == PlacedInstr::Kind::kCompute) {
        out << "    " << g.node(in.node).name << " = " << OpName(g.node(in.node).op) << "\n";
        continue;
      }
      const CutEdge& e = edges[in.edge];
      const bool send = in.kind == PlacedInstr::Kind::kSend;
      out << "    " << (send ? "send " : "recv ") << g.value(e.value).name
          << (send ? " -> worker " : " <- worker ") << (send ? e.dst_worker : e.src_worker) << " ("
          << e.bytes << " B, edge " << in.edge << ")\n";
    }
  }
  return out.str();
}

std::string PlacedProgram::ToText(const Graph& g) const {
  std::ostringstream out;
  out << "placement: " << workers << " worker(s), " << edges.size() << " cut edge(s)\n";
  for (const CutEdge& e : edges) {
    out << "  " << g.value(e.value).name << ": worker " << e.src_worker << " -> " << e.dst_worker
        << " (" << e.bytes << " B, " << (e.is_backward ? "gradient" : "activation") << ", "
        << g.node(e.src_node).name << " -> " << g.node(e.dst_node).name << ")\n";
  }
  for (int w = 0; w < workers; ++w) out << WorkerText(g, w);
  return out.str();
}

}  // namespace shardscope
