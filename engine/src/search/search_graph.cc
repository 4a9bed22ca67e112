// The search graph and the symbolic cost model of search.h.
#include "search/search_graph.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>

#include "shardscope/base/prime_factors.h"
#include "shardscope/strategy.h"

namespace shardscope::search_internal {
namespace {

// Bytes of `v` at the planned element type (SearchOptions::dtype).
double Bytes(const Value& v, Precision dtype) {
  return static_cast<double>(NumElements(v.shape)) * PrecisionBytes(dtype);
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

// A phase priced at `price` seconds (each of `devices` devices' work times `slowdown`) takes
// devices x work on one core, i.e. price x devices / slowdown: this returns how much more than
// the price that is, as a fraction of it (0 without oversubscription: every device its core).
double ExtraOfOneCore(int devices, double slowdown) {
  return slowdown > 1 ? std::max(0.0, devices / slowdown - 1.0) : 0.0;
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
  }
  std::map<ValueId, int> readers;
  for (const SearchEdge& e : g.edges_) ++readers[e.value];
  for (const SearchEdge& e : g.edges_) g.ops_[e.producer].outputs[e.output].read = true;
  for (SearchEdge& e : g.edges_) e.fanout = readers[e.value];
  for (size_t e = 0; e < g.edges_.size(); ++e) {
    g.ops_[g.edges_[e].producer].edges.push_back(static_cast<int>(e));
    g.ops_[g.edges_[e].consumer].edges.push_back(static_cast<int>(e));
  }
  for (SearchOp& op : g.ops_) std::sort(op.edges.begin(), op.edges.end());
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

int64_t SearchGraph::LetterStride(const Parts& parts, int l) const {
  int64_t stride = options_.devices / Product(parts);  // the replica axis is the last
  for (size_t k = static_cast<size_t>(l) + 1; k < parts.size(); ++k) stride *= parts[k];
  return stride;
}

bool SearchGraph::GroupsLink(const RedistGroups& groups, double* bandwidth, double* latency) const {
  if (physical_.empty()) return false;
  Link link{std::numeric_limits<double>::infinity(), -1};
  for (const PhysicalAxis& a : physical_) {
    bool spanned = false;
    for (const RedistGroups::Group& group : groups) {
      for (int r : group) spanned |= (r / a.stride) % a.size != (group[0] / a.stride) % a.size;
      if (spanned) break;
    }
    if (!spanned) continue;
    link.bandwidth = std::min(link.bandwidth, a.bandwidth);
    link.latency = std::max(link.latency, a.latency);
  }
  if (std::isinf(link.bandwidth)) return false;
  *bandwidth = link.bandwidth;
  *latency = link.latency < 0 ? options_.cost.latency_s : link.latency;
  return true;
}

SearchGraph::Link SearchGraph::NoMeshLink() const { return {options_.cost.default_bandwidth, -1}; }

void SearchGraph::Span(int64_t stride, int64_t size, Link* link) const {
  if (size <= 1) return;
  // Ranks stride, 2 stride, ... (size - 1) stride apart change the coordinate of every axis
  // whose digit range [axis stride, axis stride x axis size) meets [stride, stride x size).
  for (const PhysicalAxis& a : physical_) {
    if (a.size > 1 && stride < a.stride * a.size && a.stride < stride * size) {
      link->bandwidth = std::min(link->bandwidth, a.bandwidth);
      link->latency = std::max(link->latency, a.latency);
    }
  }
}

SearchGraph::Link SearchGraph::GroupLink(const Parts& parts, const std::vector<int>& letters,
                                         bool replicas) const {
  if (physical_.empty()) return NoMeshLink();
  Link link{std::numeric_limits<double>::infinity(), -1};
  for (int l : letters) Span(LetterStride(parts, l), parts[l], &link);
  if (replicas) Span(1, options_.devices / Product(parts), &link);
  if (std::isinf(link.bandwidth)) return NoMeshLink();
  return link;
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
  return OpCompute(op, parts) + OpCommunication(op, parts);
}

double SearchGraph::ComputeBeforeCollective(int op, const Parts& parts) const {
  const CostModel& cm = options_.cost;
  // Without a hand-off to cap, skip the computation (EdgeCost is the searches' hot loop).
  if (cm.in_process.MaxHandoffSeconds() <= 0) return 0.0;
  const double compute = OpCompute(op, parts);
  if (cm.in_process.long_phase_handoff_s <= 0) return compute;
  return compute *
         ExtraOfOneCore(options_.devices, cm.in_process.ComputeSlowdown(options_.devices));
}

double SearchGraph::OpCompute(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  double touched = 0;
  for (const SearchOperand& in : o.inputs) touched += in.bytes / in.Parts(parts);
  for (const SearchOperand& out : o.outputs) touched += out.bytes / out.Parts(parts);
  // The optimizer's update of each parameter shard: it reads the weight, its gradient and
  // every state tensor and writes the weight and the states back (memory-bound).
  double update = 0;
  for (const SearchOperand& in : o.inputs) {
    if (in.kind == ValueKind::kParameter)
      update += in.bytes / in.Parts(parts) * (3 + 2 * options_.optimizer_states);
  }
  const CostModel& cm = options_.cost;
  double work = 0;  // forward and backward
  if (o.gemm && !cm.gemm_rates.empty()) {
    // Forward out = a.b, backward da = dout.bT and db = aT.dout (each only when that input
    // needs a gradient): GEMMs of other shapes, each at the rate calibrate measured for its
    // shape. That rate includes reading the operands (at the samples' sizes, from cache: the
    // bandwidth of a large copy over-priced them twice over in bench_predict).
    const double batch = o.gemm->batch.Shard(parts), r = o.gemm->rows.Shard(parts),
                 d = o.gemm->depth.Shard(parts), c = o.gemm->cols.Shard(parts);
    work = cm.GemmSeconds(r, d, c);
    if (o.inputs[0].needs_grad) work += cm.GemmSeconds(r, c, d);
    if (o.inputs[1].needs_grad) work += cm.GemmSeconds(d, r, c);
    work *= batch;
  } else if (o.conv && !cm.conv_gemm_rates.empty()) {
    // Per image: forward out = w.cols, backward dw = dout.colsT and dcols = wT.dout (when the
    // input needs a gradient), each at the rate calibrate measured for its shape (the Conv2D
    // kernel, its im2col copy included).
    const double images = o.conv->batch.Shard(parts), r = o.conv->rows.Shard(parts),
                 d = o.conv->depth.Shard(parts), c = o.conv->cols.Shard(parts);
    work = cm.ConvGemmSeconds(r, d, c) + cm.ConvGemmSeconds(r, c, d);
    if (o.inputs[0].needs_grad) work += cm.ConvGemmSeconds(d, r, c);
    work *= images;
  } else if (o.kernel_rate > 0 && !o.inputs.empty()) {
    // Forward and gradient together at the rate calibrate measured for this kind, by the
    // bytes of its input shard (MaxPool2D: the flop count prices window comparisons as
    // nothing and its gradient as a copy, well below what the kernels take).
    work = o.inputs[0].bytes / o.inputs[0].Parts(parts) / o.kernel_rate;
  } else {
    work = 3 * cm.OperatorSeconds(o.flops / static_cast<double>(Product(parts)), touched);
  }
  // Devices sharing too few cores compute one after another (ComputeSlowdown).
  return (work + cm.MemorySeconds(update)) * cm.in_process.ComputeSlowdown(options_.devices);
}

double SearchGraph::OpCommunication(int op, const Parts& parts, double* collectives) const {
  const SearchOp& o = ops_[op];
  const CostModel& cm = options_.cost;
  double grad_reduce = 0;
  // The reductions follow this operator's computation (its backward; the loss's forward).
  const double before = ComputeBeforeCollective(op, parts);
  const auto reduce = [&](double shard, int64_t group, const Link& link) {
    const double s = cm.SearchCollectiveAfterSeconds(CollectiveKind::kAllReduce, shard, group,
                                                     link.bandwidth, link.latency, before);
    if (collectives != nullptr && s > 0) *collectives += 1;
    return s;
  };
  for (const SearchOperand& in : o.inputs) {
    const double split = in.Parts(parts);
    const double shard = in.bytes / split;
    if (in.kind == ValueKind::kActivation) {
      // Backward: this input's gradient is a partial sum over the split letters it lacks
      // (MatMul's dX over n), reduced before its producer can use it.
      int64_t partial = 1;
      for (int l : in.missing) partial *= parts[l];
      if (partial > 1) grad_reduce += reduce(shard, partial, GroupLink(parts, in.missing));
    }
    if (in.kind == ValueKind::kParameter) {
      // Its gradient is summed over the ranks that replicate it: the letters it lacks and the
      // replica axis.
      // Gradients ride in buckets (CostModel::gradient_bucket_bytes): this one pays its share.
      const auto replicas = static_cast<int64_t>(options_.devices / split);
      const double share = cm.GradientBucketShare(shard);
      if (replicas > 1)
        grad_reduce += share * reduce(shard / share, replicas, GroupLink(parts, in.missing, true));
    }
  }
  for (const SearchOperand& out : o.outputs) {
    // A result nothing reads (the loss) left as a partial sum is all-reduced to be reported.
    if (out.read || out.summed.empty()) continue;
    int64_t partial = 1;
    for (int l : out.summed) partial *= parts[l];
    if (partial > 1)
      grad_reduce += reduce(out.bytes / out.Parts(parts), partial, GroupLink(parts, out.summed));
  }
  return grad_reduce;
}

double SearchGraph::OpMemory(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  double params = 0, saved = 0;
  for (const SearchOperand& in : o.inputs) {
    if (in.kind == ValueKind::kParameter) params += in.bytes / in.Parts(parts);
  }
  for (const SearchOperand& out : o.outputs) saved += out.bytes / out.Parts(parts);
  // Weights and gradients at the dtype, fp32 master weights and optimizer states beside them.
  const double elements = params / PrecisionBytes(options_.dtype);
  return elements * TrainingBytesPerParameter(options_.dtype, options_.optimizer_states) + saved;
}

double SearchGraph::EdgeCost(int e, const Parts& producer, const Parts& consumer,
                             double* collectives) const {
  const SearchEdge& edge = edges_[e];
  const CostModel& cm = options_.cost;
  const size_t rank = edge.src_letter.size();
  double src_parts = 1, dst_parts = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (edge.src_letter[d] >= 0) src_parts *= static_cast<double>(producer[edge.src_letter[d]]);
    if (edge.dst_letter[d] >= 0) dst_parts *= static_cast<double>(consumer[edge.dst_letter[d]]);
  }
  double cost = 0;
  // A partial-sum producer: reduce over the summed letters' parts.
  int64_t partial = 1;
  for (int l : edge.summed_letter) partial *= producer[l];
  if (partial > 1) {
    const double shard = edge.bytes / src_parts;
    const bool scatter = dst_parts >= src_parts * static_cast<double>(partial);
    const Link link = GroupLink(producer, edge.summed_letter);
    cost += cm.SearchCollectiveAfterSeconds(
        scatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, shard, partial,
        link.bandwidth, link.latency, ComputeBeforeCollective(edge.producer, producer));
    if (collectives != nullptr) *collectives += 1;
  }
  // Exchange a -> b: a rank receives its b block minus what its a block already covers.
  double overlap = 1, peers_forward = 1, peers_backward = 1;
  // Dimensions a rank must gather (its target block is larger than its source block along
  // them): the planner spends one collective step on each (an all-to-all also covers one
  // dimension that splits further).
  int gather_forward = 0, gather_backward = 0;
  // With a device mesh: the slowest axes spanned by the letters whose split differs between
  // the two ends (data moves along those, in the producer's and in the consumer's mesh).
  Link link = physical_.empty() ? NoMeshLink() : Link{std::numeric_limits<double>::infinity(), -1};
  for (size_t d = 0; d < rank; ++d) {
    const int64_t a = edge.src_letter[d] >= 0 ? producer[edge.src_letter[d]] : 1;
    const int64_t b = edge.dst_letter[d] >= 0 ? consumer[edge.dst_letter[d]] : 1;
    const int64_t l = std::lcm(a, b);
    overlap *= static_cast<double>(l);
    peers_forward *= static_cast<double>(l / b);
    peers_backward *= static_cast<double>(l / a);
    gather_forward += l > b;
    gather_backward += l > a;
    if (!physical_.empty() && a != b) {
      if (a > 1) Span(LetterStride(producer, edge.src_letter[d]), a, &link);
      if (b > 1) Span(LetterStride(consumer, edge.dst_letter[d]), b, &link);
    }
  }
  if (std::isinf(link.bandwidth)) link = NoMeshLink();
  auto move = [&](double target_parts, double peers, int gathered, double share,
                  double compute_before) {
    const double recv = edge.bytes / target_parts - edge.bytes / overlap;
    if (recv <= 0) return 0.0;
    const int steps = std::max(1, gathered);
    if (collectives != nullptr) *collectives += steps * share;
    return cm.SearchExchangeAfterSeconds(static_cast<int64_t>(peers) - 1, recv, link.bandwidth,
                                         steps, link.latency, compute_before);
  };
  // Forward: the activation; consumers that want the same layout share one copy (the
  // partitioner redistributes a value once per layout), so each edge carries its share. It
  // follows the producer's computation, or the reduction of its partial sums.
  const double share = 1.0 / edge.fanout;
  const double forward_before =
      partial > 1 ? 0.0 : ComputeBeforeCollective(edge.producer, producer);
  cost += move(dst_parts, peers_forward, gather_forward, share, forward_before) * share;
  // Backward: its gradient, after the consumer's backward.
  cost += move(src_parts, peers_backward, gather_backward, 1.0,
               ComputeBeforeCollective(edge.consumer, consumer));
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

SearchGraph::Breakdown SearchGraph::Explain(const std::vector<Parts>& a) const {
  Breakdown b;
  for (size_t i = 0; i < ops_.size(); ++i) {
    b.compute_s += OpCompute(static_cast<int>(i), a[i]);
    OpCommunication(static_cast<int>(i), a[i], &b.collectives);
  }
  for (size_t e = 0; e < edges_.size(); ++e)
    EdgeCost(static_cast<int>(e), a[edges_[e].producer], a[edges_[e].consumer], &b.collectives);
  return b;
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

bool SearchGraph::Reaches(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  if (!o.narrowed) return true;
  for (const Parts& c : o.candidates) {
    bool divides = true;
    for (size_t l = 0; l < c.size() && divides; ++l) divides = c[l] % parts[l] == 0;
    if (divides) return true;
  }
  return false;
}

void SearchGraph::CacheOwnCosts() {
  for (size_t i = 0; i < ops_.size(); ++i) {
    ops_[i].own_cost.clear();
    for (const Parts& p : ops_[i].candidates)
      ops_[i].own_cost.push_back(OpCost(static_cast<int>(i), p));
  }
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

namespace shardscope::search_internal {
namespace {

// "((1,8),)" / "(None,)" / "((8,1),(None))": per item split counts, or nullopt for None.
Result<std::vector<std::optional<std::vector<int64_t>>>> ParseBoundary(const std::string& text,
                                                                       const std::string& what) {
  std::string s;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  }
  std::vector<std::optional<std::vector<int64_t>>> items;
  const auto bad = [&] {
    return Status::Invalid(what + ": '" + text +
                           "' is not a tuple of split tuples or None, e.g. ((1,8),) or (None,)");
  };
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return bad();
  size_t i = 1;
  while (i + 1 < s.size()) {
    if (s.compare(i, 4, "None") == 0) {
      items.emplace_back(std::nullopt);
      i += 4;
    } else if (s[i] == '(') {
      const size_t close = s.find(')', i);
      if (close == std::string::npos) return bad();
      std::vector<int64_t> splits;
      std::stringstream in(s.substr(i + 1, close - i - 1));
      std::string part;
      while (std::getline(in, part, ',')) {
        if (part.empty()) continue;
        if (part.find_first_not_of("0123456789") != std::string::npos) return bad();
        splits.push_back(std::stoll(part));
      }
      items.emplace_back(std::move(splits));
      i = close + 1;
    } else {
      return bad();
    }
    if (i < s.size() && s[i] == ',') ++i;
  }
  return items;
}

std::string SplitsText(const std::vector<int64_t>& splits) {
  std::string s = "(";
  for (size_t d = 0; d < splits.size(); ++d) s += (d ? "," : "") + std::to_string(splits[d]);
  return s + (splits.size() == 1 ? ",)" : ")");
}

bool InScope(const std::string& name, const std::string& scope) {
  return name.size() > scope.size() && name.compare(0, scope.size(), scope) == 0 &&
         name[scope.size()] == '.';
}

}  // namespace

Status SearchGraph::ApplyShardBlocks() {
  const std::vector<ShardBlockSpec>& blocks = options_.shard_blocks;
  if (blocks.empty()) return Status::Ok();
  const Graph& forward = *graph_;
  std::vector<int> block_of(ops_.size(), -1);
  // "model.yaml:40:5: shard block 'block1'": messages start where the block was written.
  const auto named = [&](size_t b) {
    const ShardBlockSpec& block = blocks[b];
    return (block.source.empty() ? "" : block.source + ": ") + "shard block '" + block.scope + "'";
  };
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t j = 0; j < b; ++j) {
      if (blocks[j].scope == blocks[b].scope)
        return Status::Invalid(named(b) + " is sharded twice");
    }
    bool any = false;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (!InScope(ops_[i].name, blocks[b].scope)) continue;
      if (block_of[i] >= 0) {
        return Status::Invalid(named(b) + " overlaps shard block '" + blocks[block_of[i]].scope +
                               "' at operator '" + ops_[i].name + "'");
      }
      block_of[i] = static_cast<int>(b);
      any = true;
    }
    if (!any) {
      return Status::Invalid(named(b) + " names no module of the model (no operator '" +
                             blocks[b].scope + ".*')");
    }
  }
  // Outside every block: data-parallel.
  for (size_t i = 0; i < ops_.size(); ++i) {
    SearchOp& op = ops_[i];
    if (block_of[i] >= 0 || op.fixed) continue;
    const Parts dp = DataParallel(static_cast<int>(i));
    op.fixed = dp;
    op.fixed_text = Notation(static_cast<int>(i), dp);
    op.fixed_provenance = "outside shard blocks: data-parallel";
    op.candidates = {dp};
  }
  const auto layout_of = [&](const std::optional<std::vector<int64_t>>& item, size_t rank) {
    std::vector<int64_t> want(rank, 1);
    if (item) return *item;
    if (rank > 0) want[0] = options_.devices;  // None: data-parallel
    return want;
  };
  for (size_t b = 0; b < blocks.size(); ++b) {
    const ShardBlockSpec& block = blocks[b];
    const std::string what = named(b);
    // Boundary values in node order: read from outside the block / read outside it.
    std::vector<std::pair<int, int>> in_uses, out_uses;  // (op, input / output index)
    std::vector<ValueId> in_values, out_values;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (block_of[i] != static_cast<int>(b)) continue;
      const Node& n = forward.node(ops_[i].node);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Value& v = forward.value(n.inputs[k]);
        if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kConstant) continue;
        if (v.producer != kNoNode && InScope(forward.node(v.producer).name, block.scope)) continue;
        if (std::find(in_values.begin(), in_values.end(), v.id) == in_values.end())
          in_values.push_back(v.id);
        in_uses.emplace_back(static_cast<int>(i), static_cast<int>(k));
      }
      for (int e : ops_[i].edges) {
        const SearchEdge& edge = edges_[e];
        if (edge.producer != static_cast<int>(i) || block_of[edge.consumer] == static_cast<int>(b))
          continue;
        if (std::find(out_values.begin(), out_values.end(), edge.value) == out_values.end()) {
          out_values.push_back(edge.value);
          out_uses.emplace_back(static_cast<int>(i), edge.output);
        }
      }
    }
    for (int side = 0; side < 2; ++side) {
      const std::string& text = side == 0 ? block.in_strategy : block.out_strategy;
      if (text.empty()) continue;
      const std::string which = side == 0 ? "in_strategy" : "out_strategy";
      SHARDSCOPE_ASSIGN_OR_RETURN(auto items, ParseBoundary(text, what + " " + which));
      const std::vector<ValueId>& values = side == 0 ? in_values : out_values;
      if (items.size() != values.size()) {
        return Status::Invalid(what + ": the " + which + " " + text + " has " +
                               std::to_string(items.size()) + " entries but the block has " +
                               std::to_string(values.size()) + (side == 0 ? " input" : " output") +
                               (values.size() == 1 ? "" : "s"));
      }
      for (const auto& [op_index, slot] : side == 0 ? in_uses : out_uses) {
        SearchOp& op = ops_[op_index];
        const Node& n = forward.node(op.node);
        const ValueId v = side == 0 ? n.inputs[slot] : n.outputs[slot];
        const size_t item = std::find(values.begin(), values.end(), v) - values.begin();
        const std::string& letters = side == 0 ? op.sig.inputs[slot] : op.sig.outputs[slot];
        const std::vector<int64_t> want = layout_of(items[item], letters.size());
        if (want.size() != letters.size()) {
          return Status::Invalid(what + ": " + which + " entry " + SplitsText(want) + " has " +
                                 std::to_string(want.size()) + " dimensions but '" +
                                 forward.value(v).name + "' has " + std::to_string(letters.size()));
        }
        std::vector<Parts> kept;
        for (const Parts& p : op.candidates) {
          if (TensorParts(op_index, letters, p) == want) kept.push_back(p);
        }
        if (kept.empty()) {
          return Status::Invalid(
              what + ": no strategy of operator '" + op.name + "' on " +
              std::to_string(options_.devices) + " devices gives '" + forward.value(v).name + "' " +
              ShapeToString(forward.value(v).shape) + " the " + which + " layout " +
              SplitsText(want) + " (each split must divide its dimension)");
        }
        op.candidates = std::move(kept);
        op.narrowed = true;
      }
    }
    // The objective inside: level 2 keeps the step time (the searches' own cost); levels 0
    // and 1 first narrow each operator to its best candidates under their measure, the
    // searches then pick the fastest of those.
    if (block.level == 2) continue;
    for (size_t i = 0; i < ops_.size(); ++i) {
      SearchOp& op = ops_[i];
      if (block_of[i] != static_cast<int>(b) || op.fixed) continue;
      const auto measure = [&](const Parts& p) {
        const int o = static_cast<int>(i);
        if (block.level == 1) return OpMemory(o, p);
        // Level 0: communication per computation (lower is better).
        const double compute = op.flops / static_cast<double>(Product(p));
        return OpCommunication(o, p) / std::max(compute, 1.0);
      };
      double best = 1e300;
      for (const Parts& p : op.candidates) best = std::min(best, measure(p));
      std::vector<Parts> kept;
      for (const Parts& p : op.candidates) {
        if (measure(p) <= best * (1 + 1e-9) + 1e-30) kept.push_back(p);
      }
      op.candidates = std::move(kept);
      op.narrowed = true;
    }
  }
  return Status::Ok();
}

}  // namespace shardscope::search_internal
