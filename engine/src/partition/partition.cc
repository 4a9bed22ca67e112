#include "shardscope/partition.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "partition/partition_passes.h"
#include "shardscope/checked_math.h"
#include "shardscope/sharding_rule.h"

namespace shardscope {
namespace {

std::vector<Shape> InputShapes(const Graph& g, const Node& n) {
  std::vector<Shape> s;
  for (ValueId v : n.inputs) s.push_back(g.value(v).shape);
  return s;
}

// The layout operand `i` of node `n` needs (never partial).
Result<Layout> RequiredLayout(const Graph& g, const ShardingSignature& sig, const OpStrategy& s,
                              const Node& n, int i) {
  return s.LayoutOf(sig.inputs[i], g.value(n.inputs[i]).shape);
}

// The layout output `k` of node `n` is produced in (partial over summed letters' axes).
Result<Layout> ProducedLayout(const Graph& g, const ShardingSignature& sig, const OpStrategy& s,
                              const Node& n, int k) {
  return s.LayoutOf(sig.outputs[k], g.value(n.outputs[k]).shape, SummedLetters(sig, k));
}

// True when every operand layout of `s` is valid (axes divide the dimensions).
bool Fits(const Graph& g, const ShardingSignature& sig, const OpStrategy& s, const Node& n) {
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!RequiredLayout(g, sig, s, n, static_cast<int>(i)).ok()) return false;
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (!ProducedLayout(g, sig, s, n, static_cast<int>(k)).ok()) return false;
  }
  return true;
}

// True when both meshes put the same ranks at the same grid positions, axis names aside:
// operators name their axes on their own, so equal grids often differ only in names.
bool SameGrid(const DeviceMesh& a, const DeviceMesh& b) {
  return a.shape() == b.shape() && a.explicit_ranks() == b.explicit_ranks();
}

// Whether two layouts put the same blocks on the same ranks, axis names aside.
bool SamePlacement(const Layout& a, const Layout& b) {
  if (a.rank() != b.rank() || !SameGrid(a.mesh(), b.mesh())) return false;
  for (int d = 0; d < a.rank(); ++d)
    if (a.dim_axes(d) != b.dim_axes(d)) return false;
  return true;
}

// The layout a sum of readers' gradients of `v` takes (InferBackward): its operands' when they
// and v's forward readers agree, else v's producer's; none when a layout is not known.
std::optional<Layout> SumLayout(const Graph& g, const Node& sum, ValueId v,
                                const std::vector<OpStrategy>& strategies,
                                const std::vector<ShardingSignature>& sigs) {
  const auto produced = [&](ValueId u) -> std::optional<Layout> {
    const NodeId p = g.value(u).producer;
    if (p == kNoNode) return std::nullopt;
    auto l = ProducedLayout(g, sigs[p], strategies[p], g.node(p), g.value(u).producer_output);
    if (!l.ok()) return std::nullopt;
    return *l;
  };
  std::optional<Layout> first = produced(sum.inputs[0]);
  bool agree = first.has_value();
  for (size_t i = 1; i < sum.inputs.size() && agree; ++i) {
    const std::optional<Layout> other = produced(sum.inputs[i]);
    agree = other && SamePlacement(*first, *other);
  }
  // Every forward reader of v in that layout too: the readers' group sums before moving back.
  for (const Node& reader : g.nodes()) {
    for (size_t j = 0; j < reader.inputs.size() && agree && !reader.is_backward; ++j) {
      if (reader.inputs[j] != v) continue;
      auto l =
          RequiredLayout(g, sigs[reader.id], strategies[reader.id], reader, static_cast<int>(j));
      agree = l.ok() && SamePlacement(*first, *l);
    }
  }
  if (agree) return first;
  // The producer's layout only on the sum's devices (a placed producer may run elsewhere).
  std::optional<Layout> at_producer = produced(v);
  const DeviceMesh& own = strategies[sum.forward_node].mesh;
  if (!at_producer || at_producer->mesh().size() != own.size() ||
      at_producer->mesh().explicit_ranks() != own.explicit_ranks())
    return std::nullopt;
  return at_producer;
}

// A backward operator's strategy: its letters take the axes of the layouts its operands had
// in the forward pass (saved activations and parameters first, then incoming gradients), on
// the mesh of the first operand that is split at all.
OpStrategy InferBackward(const Graph& g, const ShardingSignature& sig, const Node& n,
                         const std::vector<OpStrategy>& strategies,
                         const std::vector<ShardingSignature>& sigs) {
  const Node& f = g.node(n.forward_node);
  // The sum of several readers' gradients of f's input v (autodiff names it "grad.<v>.sumK"):
  // in the readers' layout when they share one, else in v's producer's, where each reader's
  // gradient goes back to (as the searches price it; one reader's layout would move the sum
  // straight into the producer's backward: a residual stream's, across nodes at 1024 GPUs).
  std::optional<Layout> summed_input;
  for (size_t j = 0; j < f.inputs.size() && !summed_input; ++j) {
    const std::string prefix = "grad." + g.value(f.inputs[j]).name + ".sum";
    if (n.op != OpKind::kAdd || n.name.size() <= prefix.size() ||
        n.name.compare(0, prefix.size(), prefix) != 0 ||
        n.name.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
      continue;
    summed_input = SumLayout(g, n, f.inputs[j], strategies, sigs);
    if (summed_input) continue;
    auto l = RequiredLayout(g, sigs[f.id], strategies[f.id], f, static_cast<int>(j));
    if (l.ok()) summed_input = *l;
  }
  // Hint per operand: the layout its value had around the forward operator, else as produced.
  std::vector<std::pair<int, Layout>> hints;  // (operand index, layout), priority order
  std::vector<std::pair<int, Layout>> later;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    std::optional<Layout> hint = summed_input;
    for (size_t j = 0; j < f.inputs.size() && !hint; ++j) {
      if (f.inputs[j] != v) continue;
      auto l = RequiredLayout(g, sigs[f.id], strategies[f.id], f, static_cast<int>(j));
      if (l.ok()) hint = *l;
    }
    for (size_t k = 0; k < f.outputs.size() && !hint; ++k) {
      if (f.outputs[k] != v) continue;
      auto l = ProducedLayout(g, sigs[f.id], strategies[f.id], f, static_cast<int>(k));
      if (l.ok()) hint = *l;
    }
    // Not a forward operand: a gradient flowing in (of an output, or of an input for the sum
    // of several readers' gradients). It takes the layout its value had in the forward pass,
    // as the searches price it, not its producer's: that one lies on another operator's mesh,
    // is skipped below, and left MatMul's dA gathering the batch (issue 20).
    const Shape& shape = g.value(v).shape;
    for (size_t k = 0; k < f.outputs.size() && !hint; ++k) {
      if (g.value(f.outputs[k]).shape != shape) continue;
      auto l = strategies[f.id].LayoutOf(sigs[f.id].outputs[k], shape);
      if (l.ok()) hint = *l;
    }
    for (size_t j = 0; j < f.inputs.size() && !hint; ++j) {
      if (g.value(f.inputs[j]).shape != shape) continue;
      auto l = RequiredLayout(g, sigs[f.id], strategies[f.id], f, static_cast<int>(j));
      if (l.ok()) hint = *l;
    }
    if (hint) {
      hints.emplace_back(static_cast<int>(i), *hint);
      continue;
    }
    const NodeId p = g.value(v).producer;
    if (p == kNoNode) continue;
    auto l = ProducedLayout(g, sigs[p], strategies[p], g.node(p), g.value(v).producer_output);
    if (l.ok()) later.emplace_back(static_cast<int>(i), *l);
  }
  hints.insert(hints.end(), later.begin(), later.end());

  OpStrategy s;
  s.mesh =
      DeviceMesh::Create({static_cast<int64_t>(std::max(1, strategies[f.id].mesh.size()))}, {"dp"})
          .value();
  s.provenance = "derived from forward operator " + f.name;
  const Layout* ref = nullptr;
  for (auto& [i, l] : hints) {
    bool split = false;
    for (int d = 0; d < l.rank(); ++d) split = split || !l.dim_axes(d).empty();
    if (split) {
      ref = &l;
      break;
    }
  }
  if (ref == nullptr) return s;  // nothing split: replicated
  s.mesh = ref->mesh();
  std::vector<char> order;  // assignment order, to back off from the end
  std::vector<bool> used(s.mesh.num_axes(), false);
  for (auto& [i, l] : hints) {
    if (!SameGrid(l.mesh(), s.mesh)) continue;
    for (int d = 0; d < l.rank(); ++d) {
      const char c = sig.inputs[i][d];
      const auto& axes = l.dim_axes(d);
      if (axes.empty() || s.letters.count(c) || sig.whole.find(c) != std::string::npos) continue;
      bool free = true;
      for (int a : axes) free = free && !used[a];
      if (!free) continue;
      for (int a : axes) used[a] = true;
      s.letters[c] = axes;
      order.push_back(c);
    }
  }
  while (!order.empty() && !Fits(g, sig, s, n)) {
    s.letters.erase(order.back());
    order.pop_back();
  }
  return s;
}

std::string LayoutName(const Layout& l) { return l.ToString(); }

}  // namespace

Result<std::vector<OpStrategy>> AssignStrategies(const Graph& g, const PartitionOptions& o) {
  std::vector<OpStrategy> strategies(g.num_nodes());
  std::vector<ShardingSignature> sigs(g.num_nodes());
  // Every failure names where the operator or its strategy was written.
  auto assign = [&](const Node& n) -> Status {
    SHARDSCOPE_ASSIGN_OR_RETURN(sigs[n.id], GetShardingSignature(g, n.id));
    const ShardingSignature& sig = sigs[n.id];
    const std::vector<Shape> shapes = InputShapes(g, n);
    if (n.is_backward) {
      strategies[n.id] = InferBackward(g, sig, n, strategies, sigs);
      return Status::Ok();
    }
    if (n.annotations.worker >= 0) {  // placed graphs go to PlaceGraph (placement.h)
      return Status::NotImplemented("operator '" + n.name + "': place(\"worker\", " +
                                    std::to_string(n.annotations.worker) +
                                    ") cannot be combined with SPMD sharding; placed models "
                                    "run one worker per rank (placement.h, pipeline.h)");
    }
    if (n.annotations.in_strategy.empty()) {
      strategies[n.id] = DataParallelStrategy(sig, shapes, o.devices);
      if (!Fits(g, sig, strategies[n.id], n)) {
        strategies[n.id] = DataParallelStrategy(sig, shapes, 1);
        strategies[n.id].mesh = DeviceMesh::Create({o.devices}, {"dp"}).value();
        strategies[n.id].provenance =
            "replicated: no dimension of " + n.name + " divides over the devices";
      }
      return Status::Ok();
    }
    auto parsed = ParseStrategy(n.annotations.in_strategy, o.meshes);
    if (!parsed.ok()) return parsed.status().WithContext("operator '" + n.name + "'");
    SHARDSCOPE_ASSIGN_OR_RETURN(strategies[n.id],
                                ResolveStrategy(n.name, *parsed, sig, shapes, o.devices));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      auto l = ProducedLayout(g, sig, strategies[n.id], n, static_cast<int>(k));
      if (!l.ok()) return l.status().WithContext("operator '" + n.name + "' output");
    }
    return Status::Ok();
  };
  for (const Node& n : g.nodes()) SHARDSCOPE_RETURN_IF_ERROR(LocatedAt(g, n.id, assign(n)));
  return strategies;
}

namespace {

// Builds the instruction list: the insert-redistributions pass.
class ProgramBuilder {
 public:
  ProgramBuilder(const Graph& g, const PartitionOptions& o, DistProgram* p) : g_(g), o_(o), p_(*p) {
    p_.home.assign(g.num_values(), -1);
    copies_.resize(g.num_values());
  }

  int NewValue(ValueId v, const Layout& l, bool is_home) {
    DistValue d{v, l, g_.value(v).name};
    if (!is_home) d.name += "@" + LayoutName(l);
    p_.values.push_back(std::move(d));
    const int idx = static_cast<int>(p_.values.size()) - 1;
    copies_[v].emplace_back(l, idx);
    return idx;
  }

  // The DistValue holding `v` in layout `want`, redistributing from its home if needed.
  // `want` must not refer into p_.values (this may grow it).
  Result<int> Obtain(ValueId v, const Layout& want, const std::string& consumer) {
    for (auto& [l, idx] : copies_[v]) {
      if (l == want) return idx;
    }
    // A copy (the home included) that holds the same blocks on the same ranks, e.g. under
    // other axis names (replicated on mesh(n=8) and on mesh(b=8)), serves as it is.
    for (size_t i = 0; i < copies_[v].size(); ++i) {
      auto same = cache_.Get(copies_[v][i].first, want, o_.cost, Redist());
      if (same.ok() && (*same)->steps.empty()) {
        const int idx = copies_[v][i].second;
        copies_[v].emplace_back(want, idx);
        return idx;
      }
    }
    const ValueKind kind = g_.value(v).kind;
    if (kind == ValueKind::kInput || kind == ValueKind::kLabel) {
      const int idx = NewValue(v, want, false);  // sliced from the global batch
      p_.batch_values.push_back(idx);
      return idx;
    }
    int from_value = p_.home[v];
    auto plan = cache_.Get(p_.values[from_value].layout, want, o_.cost, Redist());
    if (!plan.ok()) {
      return plan.status().WithContext("redistributing '" + g_.value(v).name + "' from " +
                                       p_.values[from_value].layout.ToString() + " to " +
                                       want.ToString() + " for " + consumer);
    }
    // An earlier copy may be the cheaper source: a value replicated for one reader serves
    // another that wants a block of it by a local slice, instead of a second exchange from
    // the home (basic_blocks_level1's block1.gelu). Strictly cheaper only: the home by default.
    for (const auto& [layout, idx] : copies_[v]) {
      if (idx == from_value) continue;
      auto other = cache_.Get(layout, want, o_.cost, Redist());
      if (other.ok() && (*other)->predicted_seconds < (*plan)->predicted_seconds) {
        from_value = idx;
        plan = std::move(other);
      }
    }
    const Layout from = p_.values[from_value].layout;  // a copy: NewValue grows p_.values
    const int idx = NewValue(v, want, false);
    DistInstr instr;
    instr.kind = DistInstr::Kind::kRedistribute;
    instr.inputs = {from_value};
    instr.outputs = {idx};
    instr.plan = *plan;
    const NodeId producer = g_.value(v).producer;
    const std::string source =
        producer == kNoNode ? std::string(ValueKindName(g_.value(v).kind)) + " " + g_.value(v).name
                            : g_.node(producer).name;
    // Name the meshes when they differ: "[a | -]" alone would read the same on both.
    const bool same_mesh = from.mesh() == want.mesh();
    instr.reason = consumer + " needs " + want.ToString() +
                   (same_mesh ? "" : " on " + want.mesh().ToString()) + " but " + source +
                   " gives " + from.ToString() +
                   (same_mesh ? "" : " on " + from.mesh().ToString()) +
                   (from_value == p_.home[v] ? "" : " (its copy for an earlier reader)");
    p_.instrs.push_back(std::move(instr));
    return idx;
  }

  // Parameter `i`'s (parameter, gradient) pair of DistProgram::param_grads: its gradient moved
  // to the parameter's layout, or under ZeRO 2/3 the partial sum the trainer reduce-scatters.
  Result<std::pair<int, int>> ReduceGradient(const TrainingValues& tv, size_t i) {
    const int param = p_.home[tv.params[i]];
    const Layout param_layout = p_.values[param].layout;  // a copy: Obtain grows p_.values
    const int partial = p_.home[tv.grads[i]];
    if (o_.optimizer_sharding >= 2 && param_layout.mesh().size() == p_.devices &&
        GradientReduceScatters(p_.values[partial].layout, param_layout)) {
      return std::make_pair(param, partial);
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(
        int grad,
        Obtain(tv.grads[i], param_layout,
               "the update of parameter " + g_.value(tv.params[i]).name + " (gradient reduction)"));
    return std::make_pair(param, grad);
  }

  Status Build(const std::vector<OpStrategy>& strategies, const TrainingValues& tv) {
    std::vector<ShardingSignature> sigs(g_.num_nodes());
    for (const Node& n : g_.nodes()) {
      SHARDSCOPE_ASSIGN_OR_RETURN(sigs[n.id], GetShardingSignature(g_, n.id));
    }
    // Stored values (inputs, labels, parameters, constants) live in the layout their first
    // consumer needs, so the batch arrives sharded and parameters are stored as used.
    const auto consumers = g_.Consumers();
    for (const Value& v : g_.values()) {
      if (v.producer != kNoNode) continue;
      std::optional<Layout> layout;
      for (NodeId c : consumers[v.id]) {
        const Node& n = g_.node(c);
        for (size_t i = 0; i < n.inputs.size() && !layout; ++i) {
          if (n.inputs[i] != v.id) continue;
          auto l = RequiredLayout(g_, sigs[c], strategies[c], n, static_cast<int>(i));
          if (l.ok()) layout = *l;
        }
        if (layout) break;
      }
      if (!layout) {
        layout = Layout::Replicated(DeviceMesh::Create({p_.devices}, {"dp"}).value(), v.shape);
      }
      p_.home[v.id] = NewValue(v.id, *layout, true);
      if (v.kind == ValueKind::kInput || v.kind == ValueKind::kLabel)
        p_.batch_values.push_back(p_.home[v.id]);
    }
    // A parameter's gradient is reduced right after the operator that completes it, so
    // `train`'s buckets start during the backward (as DDP's do), not after it.
    std::map<ValueId, std::vector<size_t>> param_of_grad;
    for (size_t i = 0; i < tv.params.size(); ++i) param_of_grad[tv.grads[i]].push_back(i);
    std::vector<std::optional<std::pair<int, int>>> reduced(tv.params.size());
    const auto reduce_ready = [&](const Node& n) -> Status {
      for (ValueId out : n.outputs) {
        const auto it = param_of_grad.find(out);
        if (it == param_of_grad.end()) continue;
        for (size_t i : it->second) {
          SHARDSCOPE_ASSIGN_OR_RETURN(reduced[i], ReduceGradient(tv, i));
        }
      }
      return Status::Ok();
    };
    for (const Node& n : g_.nodes()) {
      const ShardingSignature& sig = sigs[n.id];
      const OpStrategy& s = strategies[n.id];
      DistInstr instr;
      instr.kind = DistInstr::Kind::kCompute;
      instr.node = n.id;
      if (const std::optional<Layout> sum = PartialSumLayout(n)) {
        for (ValueId v : n.inputs) instr.inputs.push_back(p_.home[v]);
        const int idx = NewValue(n.outputs[0], *sum, true);
        p_.home[n.outputs[0]] = idx;
        instr.outputs.push_back(idx);
        p_.instrs.push_back(std::move(instr));
        SHARDSCOPE_RETURN_IF_ERROR(LocatedAt(g_, n.id, reduce_ready(n)));
        continue;
      }
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        SHARDSCOPE_ASSIGN_OR_RETURN(Layout want,
                                    RequiredLayout(g_, sig, s, n, static_cast<int>(i)));
        Result<int> idx = Obtain(n.inputs[i], want, n.name);
        if (!idx.ok()) return LocatedAt(g_, n.id, idx.status());
        instr.inputs.push_back(*idx);
      }
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        SHARDSCOPE_ASSIGN_OR_RETURN(Layout l, ProducedLayout(g_, sig, s, n, static_cast<int>(k)));
        const int idx = NewValue(n.outputs[k], l, true);
        p_.home[n.outputs[k]] = idx;
        instr.outputs.push_back(idx);
      }
      p_.instrs.push_back(std::move(instr));
      if (!n.annotations.out_strategy.empty() && !n.is_backward) {
        SHARDSCOPE_RETURN_IF_ERROR(LocatedAt(g_, n.id, ApplyOutStrategy(n, s)));
      }
      SHARDSCOPE_RETURN_IF_ERROR(LocatedAt(g_, n.id, reduce_ready(n)));
    }
    for (size_t i = 0; i < tv.params.size(); ++i) {
      if (!reduced[i]) {  // a gradient no operator writes
        SHARDSCOPE_ASSIGN_OR_RETURN(reduced[i], ReduceGradient(tv, i));
      }
      p_.param_grads.push_back(*reduced[i]);
    }
    const Layout loss = p_.values[p_.home[tv.loss]].layout;
    SHARDSCOPE_ASSIGN_OR_RETURN(
        p_.loss,
        Obtain(tv.loss, Layout::Replicated(loss.mesh(), loss.shape()), "the reported loss"));
    return Status::Ok();
  }

 private:
  // A gradient sum (a backward Add) of two partial sums in one layout: the sum of the addends
  // is the addends of the sum, so it adds them as they are and its result is reduced once
  // where it is read (Megatron's one all-reduce of the input gradient of q, k and v).
  std::optional<Layout> PartialSumLayout(const Node& n) const {
    if (n.op != OpKind::kAdd || !n.is_backward || n.inputs.size() != 2) return std::nullopt;
    const int a = p_.home[n.inputs[0]], b = p_.home[n.inputs[1]];
    if (a < 0 || b < 0) return std::nullopt;
    const Layout& la = p_.values[a].layout;
    if (!la.is_partial() || !(la == p_.values[b].layout) ||
        la.shape() != g_.value(n.outputs[0]).shape) {
      return std::nullopt;
    }
    return la;
  }

  // out_strategy (seed 004): the output is redistributed to the asked layout right away.
  Status ApplyOutStrategy(const Node& n, const OpStrategy& s) {
    auto parsed = ParseStrategy(n.annotations.out_strategy, o_.meshes);
    if (!parsed.ok()) return parsed.status().WithContext("operator '" + n.name + "' out_strategy");
    if (parsed->kind != ParsedStrategy::kLayouts) {
      return Status::NotImplemented(
          "operator '" + n.name + "' out_strategy " + n.annotations.out_strategy +
          ": give output layouts (layout(...)); split tuples are not supported "
          "for outputs yet");
    }
    if (parsed->layouts.size() != n.outputs.size()) {
      return Status::Invalid("operator '" + n.name + "' out_strategy gives " +
                             std::to_string(parsed->layouts.size()) + " layouts for " +
                             std::to_string(n.outputs.size()) + " output(s)");
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (!parsed->layouts[k]) continue;
      auto want =
          Layout::Create(parsed->mesh, *parsed->layouts[k], {}, g_.value(n.outputs[k]).shape);
      if (!want.ok()) return want.status().WithContext("operator '" + n.name + "' out_strategy");
      (void)s;
      SHARDSCOPE_ASSIGN_OR_RETURN(int idx, Obtain(n.outputs[k], *want, n.name + " out_strategy"));
      p_.home[n.outputs[k]] = idx;
    }
    return Status::Ok();
  }

  RedistOptions Redist() const {
    RedistOptions r;
    r.element_bytes = o_.element_bytes;
    return r;
  }

  const Graph& g_;
  const PartitionOptions& o_;
  DistProgram& p_;
  std::vector<std::vector<std::pair<Layout, int>>> copies_;
  RedistPlanCache cache_;
};

// Invariants the executor relies on: operands defined before use, with the shard shapes
// the operator's local kernel expects.
Status VerifyProgram(const Graph& g, const DistProgram& p) {
  std::vector<bool> defined(p.values.size(), false);
  for (const Value& v : g.values()) {
    if (v.producer == kNoNode && p.home[v.id] >= 0) defined[p.home[v.id]] = true;
  }
  for (int v : p.batch_values) defined[v] = true;  // sliced from the batch before each step
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const DistInstr& in = p.instrs[i];
    const std::string where = in.kind == DistInstr::Kind::kCompute
                                  ? "operator '" + g.node(in.node).name + "'"
                                  : "redistribution " + std::to_string(i);
    for (int v : in.inputs) {
      if (v < 0 || v >= static_cast<int>(p.values.size()) || !defined[v]) {
        return Status::Internal(where + ": operand used before it is defined");
      }
    }
    if (in.kind == DistInstr::Kind::kRedistribute) {
      if (!(in.plan->to.ShardShape() == p.values[in.outputs[0]].layout.ShardShape())) {
        return Status::Internal(where + ": plan target does not match its output");
      }
    }
    for (int v : in.outputs) defined[v] = true;
  }
  for (auto [param, grad] : p.param_grads) {
    if (p.values[param].layout.ShardShape() != p.values[grad].layout.ShardShape()) {
      return Status::Internal("gradient of " + p.values[param].name +
                              " is not in its parameter's layout");
    }
  }
  return Status::Ok();
}

std::string StrategiesText(const Graph& g, const std::vector<OpStrategy>& s) {
  std::ostringstream out;
  for (const Node& n : g.nodes()) {
    out << n.name << ": " << s[n.id].ToString() << "  (" << s[n.id].provenance << ")\n";
  }
  return out.str();
}

}  // namespace

int64_t DistProgram::PlannedRecvBytes(int rank) const {
  int64_t bytes = 0;
  for (const DistInstr& in : instrs) {
    if (in.kind == DistInstr::Kind::kRedistribute) bytes += in.plan->recv_bytes[rank];
  }
  return bytes;
}

int DistProgram::NumRedistributions() const {
  return static_cast<int>(std::count_if(instrs.begin(), instrs.end(), [](const DistInstr& i) {
    return i.kind == DistInstr::Kind::kRedistribute;
  }));
}

std::string DistProgram::ToText(const Graph& g) const {
  std::ostringstream out;
  out << "program on " << devices << " devices: " << values.size() << " values, " << instrs.size()
      << " instructions, " << NumRedistributions() << " redistributions\n";
  auto operand = [&](int v) { return values[v].name + " " + values[v].layout.ToString(); };
  for (const DistInstr& in : instrs) {
    if (in.kind == DistInstr::Kind::kCompute) {
      const Node& n = g.node(in.node);
      out << "  " << n.name << " = " << OpName(n.op) << "(";
      for (size_t i = 0; i < in.inputs.size(); ++i) out << (i ? ", " : "") << operand(in.inputs[i]);
      out << ") -> ";
      for (size_t i = 0; i < in.outputs.size(); ++i)
        out << (i ? ", " : "") << values[in.outputs[i]].layout.ToString();
      out << "   " << strategies[in.node].ToString() << "\n";
    } else {
      out << "  " << values[in.outputs[0]].name << " = redistribute(" << operand(in.inputs[0])
          << ")  " << in.plan->steps.size() << " step(s), " << in.plan->planned_bytes
          << " B (bound " << in.plan->lower_bound_bytes << " B): " << in.reason << "\n";
      for (const RedistStep& s : in.plan->steps)
        out << "      " << s.KindName() << ": " << s.reason << "\n";
    }
  }
  AppendMemoryOptionsText(*this, out);
  return out.str();
}

Result<DistProgram> Partition(const Graph& g, const TrainingValues& tv, const PartitionOptions& o) {
  if (o.devices < 1) return Status::Invalid("device count must be ≥ 1");
  DistProgram p;
  p.devices = o.devices;
  SHARDSCOPE_ASSIGN_OR_RETURN(p.strategies, AssignStrategies(g, o));
  if (o.dump) o.dump("assign-strategies", StrategiesText(g, p.strategies));
  ProgramBuilder builder(g, o, &p);
  SHARDSCOPE_RETURN_IF_ERROR(builder.Build(p.strategies, tv));
  SHARDSCOPE_RETURN_IF_ERROR(VerifyProgram(g, p).WithContext("after insert-redistributions"));
  // The busiest rank's bytes bound every rank's: checked once, PlannedRecvBytes cannot wrap.
  int64_t received = 0;
  for (const DistInstr& in : p.instrs) {
    if (in.kind != DistInstr::Kind::kRedistribute) continue;
    auto sum = CheckedAdd(received, in.plan->planned_bytes);
    if (!sum) {
      return Status::Invalid(
          "the bytes received per step over all redistributions do not fit "
          "in 63 bits on " +
          std::to_string(o.devices) + " devices");
    }
    received = *sum;
  }
  if (o.dump) o.dump("insert-redistributions", p.ToText(g));
  SHARDSCOPE_RETURN_IF_ERROR(ShardOptimizerStates(o, &p));
  SHARDSCOPE_RETURN_IF_ERROR(InsertRecomputation(g, o, &p));
  BucketScatteredGradients(o, &p);
  if (o.dump && (o.optimizer_sharding > 0 || !o.recompute.empty()))
    o.dump("shard-optimizer-and-recompute", p.ToText(g));
  return p;
}

}  // namespace shardscope
