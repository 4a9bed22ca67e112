// The search graph and the symbolic cost model of search.h.
#include "search/search_graph.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "shardscope/strategy.h"

namespace shardscope::search_internal {
namespace {

constexpr double kBytesPerElement = 4;

double Bytes(const Value& v) {
  return static_cast<double>(NumElements(v.shape)) * kBytesPerElement;
}

int64_t Product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

// Forward flops: contractions a multiply-add per output element and summed index (a
// convolution per weight element of one output channel); other operators one per output.
double Flops(const Graph& g, const Node& n, const ShardingSignature& sig,
             const std::map<char, int64_t>& size) {
  double out = 0;
  for (ValueId v : n.outputs) out += static_cast<double>(NumElements(g.value(v).shape));
  switch (n.op) {
    case OpKind::kMatMul:
    case OpKind::kBatchMatMul: {
      double summed = 1;
      for (char c : SummedLetters(sig, 0)) summed *= static_cast<double>(size.at(c));
      return 2 * out * summed;
    }
    case OpKind::kConv2D: {
      const Shape& w = g.value(n.inputs[1]).shape;
      return 2 * out * static_cast<double>(NumElements(w) / std::max<int64_t>(1, w[0]));
    }
    default:
      return out;
  }
}

void Enumerate(const std::vector<int64_t>& size, int devices, size_t i, int64_t used, Parts& cur,
               std::vector<Parts>& out) {
  if (i == size.size()) {
    out.push_back(cur);
    return;
  }
  for (int64_t k = 1; used * k <= devices; ++k) {
    if (devices % (used * k) != 0 || size[i] % k != 0) continue;
    cur[i] = k;
    Enumerate(size, devices, i + 1, used * k, cur, out);
  }
  cur[i] = 1;
}

}  // namespace

std::vector<int> PrimeFactorsDescending(int n) {
  std::vector<int> f;
  for (int p = 2; static_cast<int64_t>(p) * p <= n; ++p) {
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  }
  if (n > 1) f.push_back(n);
  std::sort(f.rbegin(), f.rend());
  return f;
}

std::vector<Parts> CandidateSplits(const std::vector<int64_t>& letter_size, int devices) {
  std::vector<Parts> all;
  Parts cur(letter_size.size(), 1);
  Enumerate(letter_size, devices, 0, 1, cur, all);
  int64_t best = 1;
  for (const Parts& p : all) best = std::max(best, Product(p));
  std::vector<Parts> out;
  for (Parts& p : all) {
    if (Product(p) == best) out.push_back(std::move(p));
  }
  return out;
}

Result<SearchGraph> SearchGraph::Build(const Graph& forward, const SearchOptions& options) {
  if (options.devices < 1) return Status::Invalid("search: devices must be >= 1");
  SearchGraph g;
  g.graph_ = &forward;
  g.options_ = options;
  std::vector<int> op_of(forward.num_nodes(), -1);
  for (const Node& n : forward.nodes()) {
    if (n.is_backward) continue;
    SearchOp op;
    op.node = n.id;
    op.name = n.name;
    SHARDSCOPE_ASSIGN_OR_RETURN(op.sig, GetShardingSignature(forward, n.id));
    std::map<char, int64_t> size;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Shape& s = forward.value(n.inputs[i]).shape;
      for (size_t d = 0; d < s.size(); ++d) size[op.sig.inputs[i][d]] = s[d];
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Shape& s = forward.value(n.outputs[k]).shape;
      for (size_t d = 0; d < s.size(); ++d) size.emplace(op.sig.outputs[k][d], s[d]);
    }
    op.flops = Flops(forward, n, op.sig, size);
    op.weight = op.flops;
    // A letter may label dimensions of different sizes (a reshape keeps the leading
    // letter): a split must divide all of them.
    std::map<char, int64_t> divisible;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Shape& s = forward.value(n.inputs[i]).shape;
      for (size_t d = 0; d < s.size(); ++d) {
        int64_t& g = divisible[op.sig.inputs[i][d]];
        g = std::gcd(g, s[d]);
      }
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Shape& s = forward.value(n.outputs[k]).shape;
      for (size_t d = 0; d < s.size(); ++d) {
        int64_t& g = divisible[op.sig.outputs[k][d]];
        g = std::gcd(g, s[d]);
      }
    }
    for (const std::string& in : op.sig.inputs) {
      for (char c : in) {
        if (op.letters.find(c) != std::string::npos) continue;
        if (op.sig.whole.find(c) != std::string::npos || divisible[c] <= 1) continue;
        op.letters += c;
        op.letter_size.push_back(divisible[c]);
      }
    }
    op.candidates = CandidateSplits(op.letter_size, options.devices);
    if (!n.annotations.in_strategy.empty()) {
      // Fixed by the user: resolve it to split counts per letter.
      auto parsed = ParseStrategy(n.annotations.in_strategy, options.meshes);
      std::vector<Shape> shapes;
      for (ValueId v : n.inputs) shapes.push_back(forward.value(v).shape);
      if (!parsed.ok()) return parsed.status().WithContext("operator '" + n.name + "'");
      SHARDSCOPE_ASSIGN_OR_RETURN(
          OpStrategy st, ResolveStrategy(n.name, *parsed, op.sig, shapes, options.devices));
      Parts fixed(op.letters.size(), 1);
      for (size_t l = 0; l < op.letters.size(); ++l) {
        auto it = st.letters.find(op.letters[l]);
        if (it == st.letters.end()) continue;
        for (int a : it->second) fixed[l] *= st.mesh.axis_size(a);
      }
      op.fixed = fixed;
      op.fixed_text = n.annotations.in_strategy;
      op.candidates = {fixed};
    }
    op_of[n.id] = static_cast<int>(g.ops_.size());
    g.ops_.push_back(std::move(op));
  }
  // Edges: every forward value from one forward operator to another, in node order.
  for (const SearchOp& op : g.ops_) {
    const Node& n = forward.node(op.node);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value& v = forward.value(n.inputs[i]);
      if (v.producer == kNoNode || op_of[v.producer] < 0) continue;
      SearchEdge e;
      e.producer = op_of[v.producer];
      e.consumer = op_of[n.id];
      e.value = v.id;
      e.output = v.producer_output;
      e.input = static_cast<int>(i);
      e.bytes = Bytes(v);
      g.edges_.push_back(e);
    }
  }
  std::map<ValueId, int> readers;
  for (const SearchEdge& e : g.edges_) ++readers[e.value];
  for (SearchEdge& e : g.edges_) e.fanout = readers[e.value];
  for (size_t e = 0; e < g.edges_.size(); ++e) {
    g.ops_[g.edges_[e].producer].edges.push_back(static_cast<int>(e));
    g.ops_[g.edges_[e].consumer].edges.push_back(static_cast<int>(e));
  }
  for (SearchOp& op : g.ops_) std::sort(op.edges.begin(), op.edges.end());
  return g;
}

std::vector<int64_t> SearchGraph::TensorParts(int op, const std::string& letters,
                                              const Parts& parts) const {
  std::vector<int64_t> out;
  out.reserve(letters.size());
  const std::string& mine = ops_[op].letters;
  for (char c : letters) {
    const size_t l = mine.find(c);
    out.push_back(l == std::string::npos ? 1 : parts[l]);
  }
  return out;
}

double SearchGraph::OpCost(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  const Node& n = graph_->node(o.node);
  const CostModel& cm = options_.cost;
  const double used = static_cast<double>(Product(parts));
  double touched = 0, grad_reduce = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value& v = graph_->value(n.inputs[i]);
    const double shard =
        Bytes(v) / static_cast<double>(Product(TensorParts(op, o.sig.inputs[i], parts)));
    touched += shard;
    if (v.kind == ValueKind::kActivation) {
      // Backward: this input's gradient is a partial sum over the split letters it lacks
      // (MatMul's dX over n), reduced before its producer can use it.
      int64_t partial = 1;
      for (size_t l = 0; l < o.letters.size(); ++l) {
        if (o.sig.inputs[i].find(o.letters[l]) == std::string::npos) partial *= parts[l];
      }
      grad_reduce += cm.SearchCollectiveSeconds(CollectiveKind::kAllReduce, shard, partial);
    }
    if (v.kind == ValueKind::kParameter) {
      const int64_t replicas = options_.devices / Product(TensorParts(op, o.sig.inputs[i], parts));
      grad_reduce += cm.SearchCollectiveSeconds(CollectiveKind::kAllReduce, shard, replicas);
    }
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    touched += Bytes(graph_->value(n.outputs[k])) /
               static_cast<double>(Product(TensorParts(op, o.sig.outputs[k], parts)));
  }
  return 3 * cm.OperatorSeconds(o.flops / used, touched) + grad_reduce;
}

double SearchGraph::OpMemory(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  const Node& n = graph_->node(o.node);
  double params = 0, saved = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value& v = graph_->value(n.inputs[i]);
    if (v.kind != ValueKind::kParameter) continue;
    params += Bytes(v) / static_cast<double>(Product(TensorParts(op, o.sig.inputs[i], parts)));
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    saved += Bytes(graph_->value(n.outputs[k])) /
             static_cast<double>(Product(TensorParts(op, o.sig.outputs[k], parts)));
  }
  return CostModel::TrainingMemoryBytes(params, options_.optimizer_states, saved);
}

double SearchGraph::EdgeCost(int e, const Parts& producer, const Parts& consumer) const {
  const SearchEdge& edge = edges_[e];
  const SearchOp& p = ops_[edge.producer];
  const SearchOp& c = ops_[edge.consumer];
  const CostModel& cm = options_.cost;
  const double bw = cm.default_bandwidth;
  const std::vector<int64_t> src = TensorParts(edge.producer, p.sig.outputs[edge.output], producer);
  const std::vector<int64_t> dst = TensorParts(edge.consumer, c.sig.inputs[edge.input], consumer);
  const double src_parts = static_cast<double>(Product(src));
  const double dst_parts = static_cast<double>(Product(dst));
  double cost = 0;
  // A partial-sum producer: reduce over the summed letters' parts.
  int64_t partial = 1;
  for (char s : SummedLetters(p.sig, edge.output)) {
    const size_t l = p.letters.find(s);
    if (l != std::string::npos) partial *= producer[l];
  }
  if (partial > 1) {
    const double shard = edge.bytes / src_parts;
    const bool scatter = dst_parts >= src_parts * static_cast<double>(partial);
    cost += cm.SearchCollectiveSeconds(
        scatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, shard, partial);
  }
  // Exchange a -> b: a rank receives its b block minus what its a block already covers.
  auto move = [&](const std::vector<int64_t>& a, const std::vector<int64_t>& b, double b_parts) {
    double overlap_parts = 1, peers = 1;
    for (size_t d = 0; d < a.size(); ++d) {
      const int64_t l = std::lcm(a[d], b[d]);
      overlap_parts *= static_cast<double>(l);
      peers *= static_cast<double>(l / b[d]);
    }
    const double recv = edge.bytes / b_parts - edge.bytes / overlap_parts;
    if (recv <= 0) return 0.0;
    return cm.ExchangeSeconds(static_cast<int64_t>(peers) - 1, recv, bw) + cm.collective_overhead_s;
  };
  // Forward: the activation; consumers that want the same layout share one copy (the
  // partitioner redistributes a value once per layout), so each edge carries its share.
  cost += move(src, dst, dst_parts) / edge.fanout;
  cost += move(dst, src, src_parts);  // backward: its gradient
  return cost;
}

double SearchGraph::Total(const std::vector<Parts>& a) const {
  double total = 0;
  for (size_t i = 0; i < ops_.size(); ++i) total += OpCost(static_cast<int>(i), a[i]);
  for (size_t e = 0; e < edges_.size(); ++e) {
    total += EdgeCost(static_cast<int>(e), a[edges_[e].producer], a[edges_[e].consumer]);
  }
  return total;
}

std::string SearchGraph::Notation(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  std::string s = "(";
  for (size_t i = 0; i < o.sig.inputs.size(); ++i) {
    s += i ? ",(" : "(";
    const std::vector<int64_t> t = TensorParts(op, o.sig.inputs[i], parts);
    for (size_t d = 0; d < t.size(); ++d) s += (d ? "," : "") + std::to_string(t[d]);
    s += t.size() == 1 ? ",)" : ")";
  }
  return s + (o.sig.inputs.size() == 1 ? ",)" : ")");
}

Parts SearchGraph::DataParallel(int op) const {
  const SearchOp& o = ops_[op];
  Parts p(o.letters.size(), 1);
  const size_t l = o.sig.batch ? o.letters.find(o.sig.batch) : std::string::npos;
  if (l != std::string::npos && o.letter_size[l] % options_.devices == 0) p[l] = options_.devices;
  return p;
}

// Each operator may use at most its share of the budget, in proportion to its least memory:
// the least-memory assignment then always fits, and no operator is starved.
Status SearchGraph::ApplyMemoryBudget() {
  const double budget = options_.memory_budget_bytes;
  if (budget <= 0) return Status::Ok();
  std::vector<double> least(ops_.size());
  double total = 0;
  int largest = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    least[i] = 1e300;
    for (const Parts& p : ops_[i].candidates)
      least[i] = std::min(least[i], OpMemory(static_cast<int>(i), p));
    total += least[i];
    if (least[i] > least[largest]) largest = static_cast<int>(i);
  }
  if (total > budget) {
    return Status::Invalid(
        "memory budget " + std::to_string(static_cast<int64_t>(budget)) +
        " bytes per device: no strategy fits; the least memory any assignment needs is " +
        std::to_string(static_cast<int64_t>(total)) + " bytes; largest consumer: operator '" +
        ops_[largest].name + "' (" + std::to_string(static_cast<int64_t>(least[largest])) +
        " bytes at best: parameters, gradients, optimizer states and its saved output)");
  }
  for (size_t i = 0; i < ops_.size(); ++i) {
    const double share = budget * least[i] / total;
    ops_[i].memory_allowance = share * (1 + 1e-9);
    std::vector<Parts> kept;
    for (const Parts& p : ops_[i].candidates) {
      if (OpMemory(static_cast<int>(i), p) <= share * (1 + 1e-9)) kept.push_back(p);
    }
    ops_[i].candidates = std::move(kept);
  }
  return Status::Ok();
}

}  // namespace shardscope::search_internal
