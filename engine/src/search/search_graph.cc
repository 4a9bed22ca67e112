// The search graph of search.h: forward operators, their candidates, edges and operands.
#include "search/search_graph.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "shardscope/base/prime_factors.h"
#include "shardscope/strategy.h"

namespace shardscope::search_internal {
namespace {

// Bytes of `v` at the planned element type (SearchOptions::dtype).
double Bytes(const Value& v, Precision dtype) {
  return static_cast<double>(NumElements(v.shape)) * PrecisionBytes(dtype);
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

// Every split of letters i.. whose counts divide their sizes and whose product divides
// `devices`; `divisors` are the divisors of `devices`, ascending.
void Enumerate(const std::vector<int64_t>& size, int devices, const std::vector<int64_t>& divisors,
               size_t i, int64_t used, Parts& cur, std::vector<Parts>& out) {
  if (i == size.size()) {
    out.push_back(cur);
    return;
  }
  for (int64_t k : divisors) {
    if (used * k > devices) break;
    if (devices % (used * k) != 0 || size[i] % k != 0) continue;
    cur[i] = k;
    Enumerate(size, devices, divisors, i + 1, used * k, cur, out);
  }
  cur[i] = 1;
}

// A contraction's GEMM dimensions from its signature: rows are the first input's own
// letters, cols the second's, depth the summed letters, batch the letters both keep.
GemmDimensions GemmOf(const ShardingSignature& sig, const std::map<char, int64_t>& size,
                      const std::string& letters) {
  GemmDimensions g;
  const std::string summed = SummedLetters(sig, 0);
  const std::string &a = sig.inputs[0], &b = sig.inputs[1];
  std::string seen;
  for (char c : a + b) {
    if (seen.find(c) != std::string::npos) continue;
    seen += c;
    const bool in_a = a.find(c) != std::string::npos, in_b = b.find(c) != std::string::npos;
    GemmDimension& d = summed.find(c) != std::string::npos ? g.depth
                       : in_a && in_b                      ? g.batch
                       : in_a                              ? g.rows
                                                           : g.cols;
    d.size *= static_cast<double>(size.at(c));
    const size_t l = letters.find(c);
    if (l != std::string::npos) d.letters.push_back(static_cast<int>(l));
  }
  return g;
}

// Conv2D (x nchw, w ocij -> y n o oh ow) as one GEMM per image: out[o, oh ow] =
// w[o, c i j] . cols[c i j, oh ow] (ops/conv.cc).
GemmDimensions ConvGemmOf(const ShardingSignature& sig, const std::map<char, int64_t>& size,
                          const std::string& letters) {
  GemmDimensions g;
  const std::string &x = sig.inputs[0], &w = sig.inputs[1], &y = sig.outputs[0];
  const auto add = [&](GemmDimension& d, char c) {
    d.size *= static_cast<double>(size.at(c));
    const size_t l = letters.find(c);
    if (l != std::string::npos) d.letters.push_back(static_cast<int>(l));
  };
  add(g.batch, x[0]);
  add(g.rows, w[0]);
  for (char c : w.substr(1)) add(g.depth, c);
  for (char c : y.substr(2)) add(g.cols, c);
  return g;
}

}  // namespace

std::vector<int> PrimeFactorsDescending(int n) {
  const std::vector<int64_t> ascending = PrimeFactors(n);
  return std::vector<int>(ascending.rbegin(), ascending.rend());
}

std::vector<Parts> CandidateSplits(const std::vector<int64_t>& letter_size, int devices) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d * d <= devices; ++d) {
    if (devices % d != 0) continue;
    divisors.push_back(d);
    if (d * d != devices) divisors.push_back(devices / d);
  }
  std::sort(divisors.begin(), divisors.end());
  std::vector<Parts> all;
  Parts cur(letter_size.size(), 1);
  Enumerate(letter_size, devices, divisors, 0, 1, cur, all);
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
  // Values that depend on a parameter: the backward computes gradients for those alone.
  const std::vector<bool> needs_grad = ValuesDependingOn(forward, forward.Parameters());
  std::map<std::vector<int64_t>, std::vector<Parts>> splits;  // CandidateSplits by letter sizes
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
    // In the order ResolveStrategy makes mesh axes of them (ranks follow the letters).
    for (size_t i : OperandsByRank(op.sig)) {
      for (char c : op.sig.inputs[i]) {
        if (op.letters.find(c) != std::string::npos) continue;
        if (op.sig.whole.find(c) != std::string::npos || divisible[c] <= 1) continue;
        op.letters += c;
        op.letter_size.push_back(divisible[c]);
      }
    }
    // Repeated layers share their letters' sizes: enumerate each set of sizes once.
    auto [known, added] = splits.try_emplace(op.letter_size);
    if (added) known->second = CandidateSplits(op.letter_size, options.devices);
    op.candidates = known->second;
    if (n.op == OpKind::kMatMul || n.op == OpKind::kBatchMatMul)
      op.gemm = GemmOf(op.sig, size, op.letters);
    if (n.op == OpKind::kConv2D) op.conv = ConvGemmOf(op.sig, size, op.letters);
    op.kernel_rate = options.cost.KernelRate(OpName(n.op));
    auto operand = [&](const std::string& letters, const Value& v, bool input) {
      SearchOperand x;
      for (char c : letters) {
        const size_t l = op.letters.find(c);
        x.letter.push_back(l == std::string::npos ? -1 : static_cast<int>(l));
      }
      for (size_t l = 0; input && l < op.letters.size(); ++l) {
        if (letters.find(op.letters[l]) == std::string::npos)
          x.missing.push_back(static_cast<int>(l));
      }
      x.bytes = Bytes(v, options.dtype);
      x.kind = v.kind;
      return x;
    };
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      op.inputs.push_back(operand(op.sig.inputs[i], forward.value(n.inputs[i]), true));
      op.inputs.back().needs_grad = needs_grad[n.inputs[i]];
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      SearchOperand out = operand(op.sig.outputs[k], forward.value(n.outputs[k]), false);
      for (char c : SummedLetters(op.sig, static_cast<int>(k))) {
        const size_t l = op.letters.find(c);
        if (l != std::string::npos) out.summed.push_back(static_cast<int>(l));
      }
      out.read = false;  // set below, from the edges
      op.outputs.push_back(std::move(out));
    }
    if (!n.annotations.in_strategy.empty()) {
      // Fixed by the user: resolve it to split counts per letter.
      auto parsed = ParseStrategy(n.annotations.in_strategy, options.meshes);
      std::vector<Shape> shapes;
      for (ValueId v : n.inputs) shapes.push_back(forward.value(v).shape);
      if (!parsed.ok()) {
        return LocatedAt(forward, n.id, parsed.status().WithContext("operator '" + n.name + "'"));
      }
      Result<OpStrategy> resolved =
          ResolveStrategy(n.name, *parsed, op.sig, shapes, options.devices);
      if (!resolved.ok()) return LocatedAt(forward, n.id, resolved.status());
      const OpStrategy& st = *resolved;
      Parts fixed(op.letters.size(), 1);
      for (size_t l = 0; l < op.letters.size(); ++l) {
        auto it = st.letters.find(op.letters[l]);
        if (it == st.letters.end()) continue;
        for (int a : it->second) fixed[l] *= st.mesh.axis_size(a);
      }
      op.fixed = fixed;
      op.fixed_text = n.annotations.in_strategy;
      op.fixed_provenance = "user: " + op.fixed_text;
      op.candidates = {fixed};
    }
    op_of[n.id] = static_cast<int>(g.ops_.size());
    g.ops_.push_back(std::move(op));
  }
  for (size_t i = 0; i < g.ops_.size(); ++i) {
    for (ValueId v : forward.node(g.ops_[i].node).inputs) {
      if (forward.value(v).kind == ValueKind::kParameter)
        g.first_reader_.emplace(v, static_cast<int>(i));
    }
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
      e.bytes = Bytes(v, options.dtype);
      g.edges_.push_back(e);
    }
  }
  for (SearchEdge& e : g.edges_) {
    const SearchOp& p = g.ops_[e.producer];
    const SearchOp& c = g.ops_[e.consumer];
    auto index = [](const SearchOp& op, char letter) {
      const size_t l = op.letters.find(letter);
      return l == std::string::npos ? -1 : static_cast<int>(l);
    };
    for (char l : p.sig.outputs[e.output]) e.src_letter.push_back(index(p, l));
    for (char l : c.sig.inputs[e.input]) e.dst_letter.push_back(index(c, l));
    for (char l : SummedLetters(p.sig, e.output)) {
      if (index(p, l) >= 0) e.summed_letter.push_back(index(p, l));
    }
    const SearchOperand& in = c.inputs[e.input];
    e.needs_grad = in.needs_grad;
    if (in.kind == ValueKind::kActivation && in.needs_grad) e.grad_summed_letter = in.missing;
  }
  std::map<ValueId, int> readers;
  for (const SearchEdge& e : g.edges_) ++readers[e.value];
  for (const SearchEdge& e : g.edges_) g.ops_[e.producer].outputs[e.output].read = true;
  for (SearchEdge& e : g.edges_) e.fanout = readers[e.value];
  std::map<ValueId, std::vector<int>> reading;
  for (size_t e = 0; e < g.edges_.size(); ++e)
    reading[g.edges_[e].value].push_back(static_cast<int>(e));
  for (size_t e = 0; e < g.edges_.size(); ++e) {
    for (int s : reading[g.edges_[e].value])
      if (s != static_cast<int>(e)) g.edges_[e].siblings.push_back(s);
  }
  for (size_t e = 0; e < g.edges_.size(); ++e) {
    g.ops_[g.edges_[e].producer].edges.push_back(static_cast<int>(e));
    g.ops_[g.edges_[e].consumer].edges.push_back(static_cast<int>(e));
  }
  for (SearchOp& op : g.ops_) std::sort(op.edges.begin(), op.edges.end());
  for (size_t e = 0; e < g.edges_.size(); ++e)
    g.edges_[e].add_partner = g.AddPartner(static_cast<int>(e));
  if (options.device_mesh.num_axes() > 0) {
    const DeviceMesh& mesh = options.device_mesh;
    if (mesh.size() != options.devices) {
      return Status::Invalid("search: the device mesh " + mesh.ToString() + " has " +
                             std::to_string(mesh.size()) + " devices but the plan is for " +
                             std::to_string(options.devices));
    }
    int64_t stride = options.devices;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      stride /= mesh.axis_size(a);
      g.physical_.push_back({stride, mesh.axis_size(a),
                             options.cost.AxisBandwidth(mesh.axis_name(a)),
                             options.cost.AxisLatency(mesh.axis_name(a))});
    }
  }
  SHARDSCOPE_RETURN_IF_ERROR(g.ApplyShardBlocks());
  return g;
}

}  // namespace shardscope::search_internal
