// Memory as the searches weigh it (search_graph.h, docs/memory.md): a rank's memory estimate
// per operator under a memory option (ZeRO stage, recomputed scopes), and the search within a
// budget by a memory weight (a Lagrange multiplier): the price plus weight x memory is
// minimised, the least weight whose strategies fit is kept, per option, and the cheapest
// option wins.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "search/search_graph.h"
#include "shardscope/autodiff.h"
#include "shardscope/base/format.h"
#include "shardscope/memory_fit.h"

namespace shardscope::search_internal {
namespace {

// Whether `name` lies in scope `scope` ("*": any top-level scope; a name without a dot is
// its own, as the partitioner's replays take it).
bool InScope(const std::string& name, const std::string& scope) {
  if (scope == "*") return true;
  return name.size() > scope.size() && name.compare(0, scope.size(), scope) == 0 &&
         name[scope.size()] == '.';
}

// The scope an operator is recomputed in: its index in `scopes`, or for "*" its top-level
// scope's hash; -1 when none.
int ScopeOf(const std::string& name, const std::vector<std::string>& scopes) {
  for (size_t s = 0; s < scopes.size(); ++s) {
    if (!InScope(name, scopes[s])) continue;
    if (scopes[s] != "*") return static_cast<int>(s);
    return static_cast<int>(std::hash<std::string>()(name.substr(0, name.find('.'))) & 0x3fffffff);
  }
  return -1;
}

// Which values a backward operator reads, so are held from the forward to the backward: from
// the graph's backward when it has one, else from BuildBackward on a copy (the loss: a scalar
// nothing reads). Without a loss or a gradient rule: every value.
std::vector<char> ValuesReadByBackward(const Graph& forward) {
  std::vector<char> read(forward.num_values(), 1);
  const Graph* with_backward = &forward;
  Graph copy;
  const bool has_backward = std::any_of(forward.nodes().begin(), forward.nodes().end(),
                                        [](const Node& n) { return n.is_backward; });
  if (!has_backward) {
    const std::vector<std::vector<NodeId>> consumers = forward.Consumers();
    ValueId loss = kNoValue;
    for (const Node& n : forward.nodes()) {
      for (ValueId v : n.outputs)
        if (consumers[v].empty() && NumElements(forward.value(v).shape) == 1) loss = v;
    }
    if (loss == kNoValue) return read;
    copy = forward;
    if (!BuildBackward(copy, loss, copy.Parameters()).ok()) return read;
    with_backward = &copy;
  }
  std::fill(read.begin(), read.end(), 0);
  for (const Node& n : with_backward->nodes()) {
    if (!n.is_backward) continue;
    for (ValueId v : n.inputs)
      if (v < forward.num_values()) read[v] = 1;
  }
  return read;
}

// Weight x memory = price at this weight: memory then counts as much as the step.
double BaseWeight(const SearchGraph& g, const Assignment& a) {
  const double memory = std::max(1.0, g.AssignmentMemory(a.parts));
  return std::max(1e-30, g.Total(a.parts)) / memory;
}

}  // namespace

void SearchGraph::SetMemoryObjective(const MemoryOption& option, double weight) {
  if (saved_output_.empty()) {
    const std::vector<char> read = ValuesReadByBackward(*graph_);
    for (const SearchOp& op : ops_) {
      saved_output_.emplace_back();
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        const ValueId v = graph_->node(op.node).outputs[k];
        saved_output_.back().push_back(read[v] || !op.outputs[k].read ? 1 : 0);
      }
    }
  }
  // Own costs depend on the option only through a positive weight (SearchCost).
  const bool costs_change = weight > 0 || memory_weight_ > 0;
  memory_option_ = option;
  memory_weight_ = weight;
  recompute_scope_.assign(ops_.size(), -1);
  kept_output_ = saved_output_;
  for (size_t i = 0; i < ops_.size(); ++i)
    recompute_scope_[i] = ScopeOf(ops_[i].name, option.recompute);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (recompute_scope_[i] < 0) continue;
    for (size_t k = 0; k < ops_[i].outputs.size(); ++k) {
      if (!ops_[i].outputs[k].read) continue;  // the loss, an unread result: kept
      bool outside = false;
      for (int e : ops_[i].edges) {
        const SearchEdge& edge = edges_[e];
        if (edge.producer == static_cast<int>(i) && edge.output == static_cast<int>(k))
          outside = outside || recompute_scope_[edge.consumer] != recompute_scope_[i];
      }
      kept_output_[i][k] = outside ? 1 : 0;  // a boundary is kept, read by backward or not
    }
  }
  own_costs_stale_ = own_costs_stale_ || costs_change;
}

void SearchGraph::RefreshOwnCosts() {
  if (!own_costs_stale_) return;
  CacheOwnCosts();
  own_costs_stale_ = false;
}

double SearchGraph::OpMemoryUnder(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  const int zero = memory_option_.zero;
  const double narrow = PrecisionBytes(options_.dtype);
  const double wide =
      4.0 * (options_.optimizer_states + (options_.dtype == Precision::kF32 ? 0 : 1));
  double bytes = 0;
  for (const SearchOperand& in : o.inputs) {
    if (in.kind != ValueKind::kParameter) continue;
    const double shard = in.bytes / in.Parts(parts);
    const double replicas = std::max(1.0, options_.devices / in.Parts(parts));
    const double slice = zero >= 1 ? 1.0 / replicas : 1.0;
    bytes += (zero == 3 ? shard / replicas : shard) + shard;  // the weight, its gradient
    bytes += shard / narrow * wide * slice;                   // states and master copy
  }
  for (size_t k = 0; k < o.outputs.size(); ++k) {
    if (!kept_output_.empty() && !kept_output_[op][k]) continue;
    bytes += o.outputs[k].bytes / o.outputs[k].Parts(parts);
  }
  return bytes;
}

double SearchGraph::AssignmentMemory(const std::vector<Parts>& assignment, std::string* largest,
                                     double* largest_bytes) const {
  double total = 0, most = -1, init = 0;
  std::map<int, double> replay;  // per recomputed scope: what its replay makes again
  for (size_t i = 0; i < ops_.size(); ++i) {
    const int v = static_cast<int>(i);
    const double m = OpMemoryUnder(v, assignment[i]);
    total += m;
    if (m > most) {
      most = m;
      if (largest != nullptr) *largest = ops_[i].name;
    }
    for (const SearchOperand& in : ops_[i].inputs)
      if (in.kind == ValueKind::kParameter)
        init = std::max(init, in.bytes / PrecisionBytes(options_.dtype) * 4);
    if (kept_output_.empty() || recompute_scope_[i] < 0) continue;
    for (size_t k = 0; k < ops_[i].outputs.size(); ++k) {
      if (saved_output_[i][k] && !kept_output_[i][k])
        replay[recompute_scope_[i]] +=
            ops_[i].outputs[k].bytes / ops_[i].outputs[k].Parts(assignment[i]);
    }
  }
  double worst_replay = 0;
  for (const auto& [scope, bytes] : replay) worst_replay = std::max(worst_replay, bytes);
  if (largest_bytes != nullptr) *largest_bytes = most;
  return total + init + worst_replay;
}

double SearchGraph::ScatteredGradientSeconds(int op, const Parts& parts, int input) const {
  const SearchOperand& in = ops_[op].inputs[input];
  const CostModel& cm = options_.cost;
  const double shard = in.bytes / in.Parts(parts);
  const auto replicas = static_cast<int64_t>(options_.devices / in.Parts(parts));
  if (replicas <= 1) return 0.0;
  const Link link = GroupLink(parts, in.missing);
  const double share = cm.GradientBucketShare(shard);
  return share * cm.SearchCollectiveSeconds(CollectiveKind::kReduceScatter, shard / share, replicas,
                                            link.bandwidth, link.latency);
}

double SearchGraph::OptionSeconds(const std::vector<Parts>& assignment) const {
  const int zero = memory_option_.zero;
  const CostModel& cm = options_.cost;
  const bool recompute = !kept_output_.empty();
  // A scope is replayed when it drops a value the backward reads: an output, or the copy a
  // redistribution into it made (the partitioner replays no other, and the whole scope).
  std::map<int, bool> replayed;
  std::vector<double> moves(recompute ? edges_.size() : 0, 0.0);
  for (size_t i = 0; recompute && i < ops_.size(); ++i) {
    const int scope = recompute_scope_[i];
    if (scope < 0) continue;
    for (size_t k = 0; k < kept_output_[i].size(); ++k)
      replayed[scope] |= saved_output_[i][k] && !kept_output_[i][k];
  }
  for (size_t e = 0; e < moves.size(); ++e) {
    const SearchEdge& edge = edges_[e];
    if (recompute_scope_[edge.consumer] < 0) continue;
    moves[e] = EdgePrice(static_cast<int>(e), assignment[edge.producer], assignment[edge.consumer],
                         1.0 / edge.fanout, nullptr, kForward);
    replayed[recompute_scope_[edge.consumer]] |=
        moves[e] > 0 && saved_output_[edge.producer][edge.output];
  }
  const auto replays = [&](int op) {
    const int scope = recompute ? recompute_scope_[op] : -1;
    return scope >= 0 && replayed[scope];
  };
  double seconds = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Parts& parts = assignment[i];
    if (replays(static_cast<int>(i))) seconds += OpForward(static_cast<int>(i), parts);
    if (zero == 0) continue;
    for (size_t k = 0; k < ops_[i].inputs.size(); ++k) {
      const SearchOperand& in = ops_[i].inputs[k];
      if (in.kind != ValueKind::kParameter) continue;
      const double shard = in.bytes / in.Parts(parts);
      const auto replicas = static_cast<int64_t>(options_.devices / in.Parts(parts));
      if (replicas <= 1) continue;
      const Link link = GroupLink(parts, in.missing);
      // Stage 1 gathers the updated slices, 3 a weight before its forward and its backward (a
      // bias, read once, before one): serial, after the update or before the read.
      const double gathers = zero == 3 ? (in.letter.size() > 1 ? 2 : 1) : 1;
      seconds += gathers * cm.SearchCollectiveSeconds(CollectiveKind::kAllGather, shard, replicas,
                                                      link.bandwidth, link.latency);
      // Stages 2 and 3 reduce-scatter instead of all-reducing, in buckets: without the overlap,
      // the difference (with it, below).
      const double share = cm.GradientBucketShare(shard);
      if (zero >= 2 && !cm.overlap_gradients)
        seconds += ScatteredGradientSeconds(static_cast<int>(i), parts, static_cast<int>(k)) -
                   share * cm.SearchCollectiveSeconds(CollectiveKind::kAllReduce, shard / share,
                                                      replicas, link.bandwidth, link.latency);
    }
  }
  // The reduce-scatters on the overlap stream in place of the all-reduces: what more runs past
  // the backward (Total holds the all-reduces' exposed tail).
  if (zero >= 2 && cm.overlap_gradients) {
    double serial = 0;
    seconds += Overlap(assignment, &serial, true).exposed_seconds() -
               Overlap(assignment, &serial).exposed_seconds();
  }
  // A replay runs the forward redistributions into its scope again: each reader's share of
  // its value's forward move.
  for (size_t e = 0; e < moves.size(); ++e)
    if (replays(edges_[e].consumer)) seconds += moves[e];
  return seconds;
}

std::vector<MemoryOptionEstimate> EstimateMemoryOptions(SearchGraph& g,
                                                        const std::vector<Parts>& assignment) {
  const MemoryOption kept = g.memory_option();
  std::vector<MemoryOptionEstimate> out;
  for (const std::vector<std::string>& recompute : g.options().recompute_options) {
    for (int zero : g.options().optimizer_sharding_options) {
      g.SetMemoryObjective({zero, recompute}, 0);
      out.push_back({zero, recompute, g.AssignmentMemory(assignment), g.OptionSeconds(assignment)});
    }
  }
  g.SetMemoryObjective(kept, 0);
  return out;
}

Result<MemoryChoice> SearchWithinMemory(SearchGraph& g, const RunSearch& search) {
  const auto run = [&search](SearchGraph& graph) {
    graph.RefreshOwnCosts();
    return search(graph);
  };
  const SearchOptions& o = g.options();
  const double cap = o.memory_budget_bytes * o.memory_target;
  std::vector<MemoryOption> options;
  for (const std::vector<std::string>& recompute : o.recompute_options)
    for (int zero : o.optimizer_sharding_options) options.push_back({zero, recompute});
  if (options.empty()) options.push_back({});
  MemoryChoice best;
  g.SetMemoryObjective(options[0], 0);
  SHARDSCOPE_ASSIGN_OR_RETURN(best.assignment, run(g));
  best.option = options[0];
  best.memory_bytes = g.AssignmentMemory(best.assignment.parts);
  best.fits = cap <= 0 || best.memory_bytes <= cap;
  if (best.fits || o.mode == SearchMode::kSemiAuto) return best;  // semi_auto: no choice
  const Assignment asked = best.assignment;
  double best_price = 0;
  bool found = false;
  MemoryChoice least = best;  // none fits: the least memory seen
  MemoryChoice roomless;      // none fits the target: the cheapest within the whole budget
  double roomless_price = -1;
  // The weight only steers the searches (own costs are priced again before one runs): memory
  // and the price here do not read it.
  auto consider = [&](const Assignment& a, const MemoryOption& option) {
    const double memory = g.AssignmentMemory(a.parts);
    if (memory < least.memory_bytes) least = {a, option, memory, false, ""};
    const double price = g.Total(a.parts) + g.OptionSeconds(a.parts);
    if (memory <= o.memory_budget_bytes && (roomless_price < 0 || price < roomless_price)) {
      roomless = {a, option, memory, true, ""};
      roomless_price = price;
    }
    if (memory > cap) return false;
    if (!found || price < best_price) {
      best = {a, option, memory, true, ""};
      best_price = price;
      found = true;
    }
    return true;
  };
  for (const MemoryOption& option : options) {
    g.SetMemoryObjective(option, 0);
    if (consider(asked, option)) continue;  // the strategies as searched fit with this option
    // The least memory this option reaches: a weight far above the step's.
    const double base = BaseWeight(g, asked);
    g.SetMemoryObjective(option, base * 1e6);
    SHARDSCOPE_ASSIGN_OR_RETURN(Assignment heavy, run(g));
    if (!consider(heavy, option)) continue;  // this option fits nowhere
    // The least weight whose strategies fit, by doubling then bisection (geometric).
    double lo = 0, hi = base * 1e6;
    for (double w = base / 8; w < hi; w *= 16) {
      g.SetMemoryObjective(option, w);
      SHARDSCOPE_ASSIGN_OR_RETURN(Assignment a, run(g));
      if (consider(a, option)) {
        hi = w;
        break;
      }
      lo = w;
    }
    for (int step = 0; step < 3 && lo > 0; ++step) {
      const double w = std::sqrt(lo * hi);
      g.SetMemoryObjective(option, w);
      SHARDSCOPE_ASSIGN_OR_RETURN(Assignment a, run(g));
      if (consider(a, option)) {
        hi = w;
      } else {
        lo = w;
      }
    }
  }
  if (!found && roomless_price >= 0) {
    best = roomless;
  } else if (!found) {
    best = least;
    g.SetMemoryObjective(best.option, 0);
    std::string consumer;
    double consumer_bytes = 0;
    g.AssignmentMemory(best.assignment.parts, &consumer, &consumer_bytes);
    MemoryCandidate label{best.option.zero, best.option.recompute, {}, 0, false};
    best.note = std::string(SearchModeName(o.mode)) + ": no strategies fit " + FormatBytes(cap) +
                " per device (" + std::to_string(static_cast<int>(o.memory_target * 100)) +
                " % of the budget, room for temporaries): the least estimate is " +
                FormatBytes(best.memory_bytes) + " with " + label.Label() +
                "; largest consumer: operator '" + consumer + "' (" + FormatBytes(consumer_bytes) +
                ": parameters, gradients, optimizer states and the outputs it holds)";
  }
  g.SetMemoryObjective(best.option, 0);
  g.RefreshOwnCosts();
  return best;
}

}  // namespace shardscope::search_internal
