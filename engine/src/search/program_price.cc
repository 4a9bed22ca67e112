// PriceProgram: a partitioned program priced instruction by instruction (program_price.h).
#include "shardscope/program_price.h"

#include <algorithm>

#include "search/search_graph.h"

namespace shardscope {

using search_internal::Parts;
using search_internal::SearchGraph;

bool CommunicatesData(const RedistStep& step) {
  return step.kind != RedistStep::Kind::kLocalSlice && step.kind != RedistStep::Kind::kLocalReshape;
}

namespace {

// The split counts per letter of SearchOp::letters that `strategy` gives.
Parts PartsOf(const search_internal::SearchOp& op, const OpStrategy& strategy) {
  Parts parts(op.letters.size(), 1);
  for (size_t l = 0; l < op.letters.size(); ++l) {
    const auto it = strategy.letters.find(op.letters[l]);
    if (it != strategy.letters.end()) parts[l] = strategy.mesh.GroupSize(it->second);
  }
  return parts;
}

}  // namespace

double ShardCollectiveSeconds(const CostModel& cost, CollectiveKind kind, double bytes,
                              const ShardLink& link) {
  return cost.CollectiveSeconds(kind, bytes, link.group, link.bandwidth) +
         cost.collective_overhead_s + cost.LatencySeconds(kind, link.group, link.latency, false) -
         CostModel::LatencyMessages(kind, link.group) * cost.latency_s;
}

Result<ProgramPrice> PriceProgram(const Graph& graph, const DistProgram& program,
                                  const SearchOptions& options) {
  SearchOptions o = options;
  o.mode = SearchMode::kSemiAuto;
  o.shard_blocks.clear();  // candidates do not matter here, only the program's strategies
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchGraph g, SearchGraph::Build(graph, o));
  if (program.strategies.size() != static_cast<size_t>(graph.num_nodes()))
    return Status::Invalid("price program: the program has " +
                           std::to_string(program.strategies.size()) +
                           " operator strategies but the graph has " +
                           std::to_string(graph.num_nodes()) + " operators");
  ProgramPrice price;
  std::vector<int> op_of(graph.num_nodes(), -1);
  std::vector<Parts> parts(g.ops().size());
  price.node_seconds.assign(graph.num_nodes(), 0.0);
  price.replay_seconds.assign(graph.num_nodes(), 0.0);
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const search_internal::SearchOp& op = g.ops()[i];
    op_of[op.node] = static_cast<int>(i);
    parts[i] = PartsOf(op, program.strategies[op.node]);
    price.node_seconds[op.node] = g.OpCompute(static_cast<int>(i), parts[i]);
    price.operator_seconds += price.node_seconds[op.node];
  }
  // The search operator a compute instruction belongs to (a backward one: its forward
  // operator's), -1 for none.
  const auto op_of_instr = [&](const DistInstr& in) {
    const Node& n = graph.node(in.node);
    const NodeId forward = n.is_backward ? n.forward_node : n.id;
    return forward == kNoNode ? -1 : op_of[forward];
  };
  // OpCompute prices an operator's forward and backward together, but the program runs them
  // as separate instructions in separate phases (the forward before the forward's
  // collectives, each backward operator before the backward's): per operator, how many.
  std::vector<int> instrs_of(g.ops().size(), 0), forward_instrs_of(g.ops().size(), 0);
  for (const DistInstr& in : program.instrs) {
    if (in.kind != DistInstr::Kind::kCompute) continue;
    const int op = op_of_instr(in);
    if (op < 0) continue;
    ++instrs_of[op];
    forward_instrs_of[op] += !graph.node(in.node).is_backward;
  }
  // Recomputation replays forward instructions: each pays its share of its operator's
  // forward once more (OpForward, as the searches' OptionSeconds).
  for (const RecomputeSegment& segment : program.recompute) {
    if (segment.before >= static_cast<int>(program.instrs.size())) continue;  // never needed
    for (int i : segment.instrs) {
      if (program.instrs[i].kind != DistInstr::Kind::kCompute) continue;  // the loop below
      const int op = op_of_instr(program.instrs[i]);
      if (op < 0 || forward_instrs_of[op] == 0) continue;
      const double replay = g.OpForward(op, parts[op]) / forward_instrs_of[op];
      price.operator_seconds += replay;
      price.replay_seconds[g.ops()[op].node] += replay;
    }
  }
  // Gradient reductions (their outputs are the gradients the update reads) share buckets.
  // Computation before the next collective, for its hand-off: the instruction that ran last,
  // its operator's extra on one core (ComputeBeforeCollective, the searches' figure for the
  // whole operator) shared evenly among the operator's instructions, not charged per
  // instruction (that counted it two or three times).
  std::vector<int> param_of(program.values.size(), -1);  // a reduced gradient's parameter
  for (const auto& [param, grad] : program.param_grads) param_of[grad] = param;
  // With overlap_gradients, each gradient's reduction is also put on the stream beside the
  // backward, after the operator whose backward completes it (Overlap, as Total does).
  const bool overlap = o.cost.overlap_gradients;
  SearchGraph::ReadyGradients ready;
  const auto ready_op = [&](int param) {
    return overlap && param >= 0 ? g.GradientReadyOp(program.values[param].global) : -1;
  };
  const double element_bytes = PrecisionBytes(o.dtype);
  double compute_before = 0;
  std::vector<int> order = program.schedule;  // replays included
  if (order.empty()) {
    for (size_t i = 0; i < program.instrs.size(); ++i) order.push_back(static_cast<int>(i));
  }
  price.instr_seconds.assign(program.instrs.size(), 0.0);
  for (int index : order) {
    const DistInstr& in = program.instrs[index];
    if (in.kind == DistInstr::Kind::kCompute) {
      const int op = op_of_instr(in);
      if (op >= 0) compute_before = g.ComputeBeforeCollective(op, parts[op]) / instrs_of[op];
      continue;
    }
    ++price.redistributions;
    const double bytes =
        element_bytes *
        static_cast<double>(NumElements(program.values[in.inputs[0]].layout.ShardShape()));
    const int param = param_of[in.outputs[0]];
    const double share = param >= 0 ? o.cost.GradientBucketShare(bytes) : 1.0;
    for (const RedistStep& step : in.plan->steps) {
      if (!CommunicatesData(step)) continue;
      ++price.communication_steps;
      const double seconds = SearchGraph::Bucketed(*in.plan, share)
                                 ? g.BucketedGradientSeconds(*in.plan, step, bytes, share)
                                 : g.StepSeconds(*in.plan, step, compute_before);
      price.communication_seconds += seconds;
      price.instr_seconds[index] += seconds;
      compute_before = 0;  // the next step follows this one
    }
    if (ready_op(param) >= 0 && price.instr_seconds[index] > 0) {
      ready.push_back(
          {ready_op(param),
           {bytes, price.instr_seconds[index], SearchGraph::Bucketed(*in.plan, share)}});
    }
  }
  // Optimizer sharding (ZeRO): every sharded parameter's slices are all-gathered after the
  // update (stage 3: before each use instead); stage 2 and 3 reduce-scatter the gradients as
  // well, one call per bucket of them (the all-reduces left the program).
  const CostModel& cm = o.cost;
  price.shard_links.assign(program.param_sharding.size(), ShardLink{});
  for (size_t i = 0; i < program.param_sharding.size(); ++i) {
    const ParamSharding& s = program.param_sharding[i];
    if (s.group_size <= 1) continue;
    const DeviceMesh& mesh = program.values[program.param_grads[i].first].layout.mesh();
    // On a device mesh the group's ranks run over the links they span, as every other step.
    ShardLink& link = price.shard_links[i];
    link.group = mesh.GroupSize(s.axes);
    link.bandwidth = cm.Bandwidth(mesh, s.axes);
    link.latency = cm.latency_s;
    g.MeshAxesLink(mesh, s.axes, &link.bandwidth, &link.latency);
  }
  const auto collective = [&](CollectiveKind kind, int param, int64_t elements) {
    const double bytes = static_cast<double>(elements) * PrecisionBytes(o.dtype);
    const double seconds = ShardCollectiveSeconds(cm, kind, bytes, price.shard_links[param]);
    price.communication_seconds += seconds;
    ++price.communication_steps;
    return std::pair<double, double>(bytes, seconds);
  };
  for (size_t i = 0; i < program.param_sharding.size(); ++i) {
    const ParamSharding& s = program.param_sharding[i];
    if (s.group_size <= 1) continue;
    for (int k = 0; k < (s.gathered ? s.gathers : 1); ++k)
      collective(CollectiveKind::kAllGather, static_cast<int>(i), s.chunk * s.group_size);
  }
  // Stage 2 and 3 reduce-scatter a bucket once its last gradient is complete, in the backward.
  for (const ScatterBucket& b : program.scatter_buckets) {
    const auto [bytes, seconds] =
        collective(CollectiveKind::kReduceScatter, b.params[0], b.slice * b.group_size);
    const int after = ready_op(program.param_grads[b.params.back()].first);
    if (after >= 0) ready.push_back({after, {bytes, seconds, false}});
  }
  if (overlap) {
    std::vector<BackwardSegment> backward(g.ops().size());  // the last operator first
    for (size_t i = 0; i < g.ops().size(); ++i)
      backward[g.ops().size() - 1 - i].seconds = g.OpBackward(static_cast<int>(i), parts[i]);
    for (const auto& [op, r] : ready) backward[g.ops().size() - 1 - op].reductions.push_back(r);
    price.hidden_seconds =
        ScheduleGradientReductions(backward, o.cost.gradient_bucket_bytes).hidden_seconds();
  }
  price.step_seconds = price.operator_seconds + price.communication_seconds - price.hidden_seconds;
  return price;
}

}  // namespace shardscope
