// The symbolic cost model of search.h: operator, edge and memory prices of a search graph.
#include "search/search_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>

namespace shardscope::search_internal {
namespace {

// A phase priced at `price` seconds (each of `devices` devices' work times `slowdown`) takes
// devices x work on one core, i.e. price x devices / slowdown: this returns how much more than
// the price that is, as a fraction of it (0 without oversubscription: every device its core).
double ExtraOfOneCore(int devices, double slowdown) {
  return slowdown > 1 ? std::max(0.0, devices / slowdown - 1.0) : 0.0;
}

}  // namespace

int64_t SearchGraph::LetterStride(const Parts& parts, int l) const {
  int64_t stride = options_.devices / Product(parts);  // the replica axis is the last
  for (size_t k = static_cast<size_t>(l) + 1; k < parts.size(); ++k) stride *= parts[k];
  return stride;
}

template <typename Spans, typename Members>
HopLatency SearchGraph::SpannedHops(const Spans& spans, const Members& members) const {
  const PhysicalAxis* slow = nullptr;  // the innermost of the slowest spanned axes
  for (const PhysicalAxis& a : physical_) {
    if (spans(a) && (slow == nullptr || a.latency > slow->latency ||
                     (a.latency == slow->latency && a.stride < slow->stride)))
      slow = &a;
  }
  if (slow == nullptr) return HopLatency();
  double inner = -1;
  for (const PhysicalAxis& a : physical_)
    if (a.stride < slow->stride && spans(a)) inner = std::max(inner, a.latency);
  return HopLatency(slow->latency, inner, members(*slow));
}

bool SearchGraph::GroupsLink(const RedistGroups& groups, bool rails, double* bandwidth,
                             HopLatency* latency) const {
  if (physical_.empty()) return false;
  rails &= options_.cost.hierarchical_collectives;
  const auto spans = [&](const PhysicalAxis& a) {
    for (const RedistGroups::Group& group : groups) {
      for (int r : group)
        if ((r / a.stride) % a.size != (group[0] / a.stride) % a.size) return true;
    }
    return false;
  };
  // The members of a group sharing a's block (they differ in inner axes only).
  const auto members = [&](const PhysicalAxis& a) {
    const RedistGroups::Group& group = groups[0];
    return static_cast<int64_t>(std::count_if(
        group.begin(), group.end(), [&](int r) { return r / a.stride == group[0] / a.stride; }));
  };
  double link = std::numeric_limits<double>::infinity();
  for (const PhysicalAxis& a : physical_) {
    if (!spans(a)) continue;
    // Rails: those members each cross a on their own link, so a ring or tree spreads over
    // them (RailBandwidth).
    link = std::min(link, a.bandwidth * (rails ? static_cast<double>(members(a)) : 1.0));
  }
  if (std::isinf(link)) return false;
  *bandwidth = link;
  *latency = SpannedHops(spans, members);
  if (latency->outer < 0) latency->outer = options_.cost.latency_s;
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
      link->latency.outer = std::max(link->latency.outer, a.latency);
    }
  }
}

SearchGraph::Link SearchGraph::GroupLink(const Parts& parts,
                                         const std::vector<int>& letters) const {
  std::array<Line, 8> few;  // the common case, without an allocation (EdgePrice's hot loop)
  if (letters.size() <= few.size()) {
    for (size_t i = 0; i < letters.size(); ++i)
      few[i] = {LetterStride(parts, letters[i]), parts[letters[i]]};
    return LinesLink(few.data(), letters.size());
  }
  std::vector<Line> lines;
  for (int l : letters) lines.push_back({LetterStride(parts, l), parts[l]});
  return LinesLink(lines);
}

SearchGraph::Link SearchGraph::LinesLink(const Line* lines, size_t count) const {
  if (physical_.empty()) return NoMeshLink();
  Link link{std::numeric_limits<double>::infinity(), -1};
  const std::span<const Line> group(lines, count);
  for (const Line& line : group) Span(line.stride, line.size, &link);
  if (std::isinf(link.bandwidth)) return NoMeshLink();
  const auto spans = [&](const PhysicalAxis& a) {
    if (a.size <= 1) return false;
    for (const Line& line : group) {
      if (line.size > 1 && line.stride < a.stride * a.size && a.stride < line.stride * line.size)
        return true;
    }
    return false;
  };
  // The group's ranks in one block of a: those of its lines inside it.
  const auto members = [&](const PhysicalAxis& a) {
    int64_t m = 1;
    for (const Line& line : group)
      if (line.size > 1 && line.stride < a.stride)
        m *= std::min(line.size, (a.stride + line.stride - 1) / line.stride);
    return m;
  };
  link.latency = SpannedHops(spans, members);
  if (!options_.cost.hierarchical_collectives) return link;
  // A reduction is a ring or tree: an axis crossed by `members` ranks of one block at once runs
  // at members x its link (NCCL's channel per NIC), bounded by the inner axes' own links.
  link.bandwidth = std::numeric_limits<double>::infinity();
  for (const PhysicalAxis& a : physical_)
    if (spans(a)) link.bandwidth = std::min(link.bandwidth, a.bandwidth * members(a));
  if (std::isinf(link.bandwidth)) return NoMeshLink();
  return link;
}

bool SearchGraph::MeshAxesLink(const DeviceMesh& mesh, const std::vector<int>& axes,
                               double* bandwidth, HopLatency* latency) const {
  if (physical_.empty() || mesh.size() != options_.devices) return false;
  std::vector<Line> lines;
  for (int a : axes) {
    int64_t stride = 1;
    for (int b = a + 1; b < mesh.num_axes(); ++b) stride *= mesh.axis_size(b);
    lines.push_back({stride, mesh.axis_size(a)});
  }
  const Link link = LinesLink(lines);
  *bandwidth = link.bandwidth;
  *latency = link.latency;
  if (latency->outer < 0) latency->outer = options_.cost.latency_s;
  return true;
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
  if (gradient_weights_.empty()) return OpCompute(op, parts) + OpCommunication(op, parts);
  // The searches' additive stand-in for the overlap (SetGradientWeight): the gradients'
  // reductions at the weight.
  ReadyGradients gradients;
  double cost = OpCompute(op, parts) + OpCommunication(op, parts, nullptr, &gradients);
  for (const auto& [ready, r] : gradients) cost += gradient_weights_[ready] * r.seconds;
  return cost;
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

double SearchGraph::OpWork(int op, const Parts& parts, double* forward) const {
  const SearchOp& o = ops_[op];
  double touched = 0;
  for (const SearchOperand& in : o.inputs) touched += in.bytes / in.Parts(parts);
  for (const SearchOperand& out : o.outputs) touched += out.bytes / out.Parts(parts);
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
    *forward = work * batch;
    if (o.inputs[0].needs_grad) work += cm.GemmSeconds(r, c, d);
    if (o.inputs[1].needs_grad) work += cm.GemmSeconds(d, r, c);
    work *= batch;
  } else if (o.conv && !cm.conv_gemm_rates.empty()) {
    // Per image: forward out = w.cols, backward dw = dout.colsT and dcols = wT.dout (when the
    // input needs a gradient), each at the rate calibrate measured for its shape (the Conv2D
    // kernel, its im2col copy included).
    const double images = o.conv->batch.Shard(parts), r = o.conv->rows.Shard(parts),
                 d = o.conv->depth.Shard(parts), c = o.conv->cols.Shard(parts);
    *forward = images * cm.ConvGemmSeconds(r, d, c);
    work = cm.ConvGemmSeconds(r, d, c) + cm.ConvGemmSeconds(r, c, d);
    if (o.inputs[0].needs_grad) work += cm.ConvGemmSeconds(d, r, c);
    work *= images;
  } else if (o.kernel_rate > 0 && !o.inputs.empty()) {
    // Forward and gradient together at the rate calibrate measured for this kind, by the
    // bytes of its input shard (MaxPool2D: the flop count prices window comparisons as
    // nothing and its gradient as a copy, well below what the kernels take).
    work = o.inputs[0].bytes / o.inputs[0].Parts(parts) / o.kernel_rate;
    *forward = work / 3;
  } else {
    work = 3 * cm.OperatorSeconds(o.flops / static_cast<double>(Product(parts)), touched);
    *forward = work / 3;
  }
  return work;
}

double SearchGraph::OpCompute(int op, const Parts& parts) const {
  const SearchOp& o = ops_[op];
  // The optimizer's update of each parameter shard: it reads the weight, its gradient and
  // every state tensor and writes the weight and the states back (memory-bound).
  double update = 0;
  for (const SearchOperand& in : o.inputs) {
    if (in.kind == ValueKind::kParameter)
      update += in.bytes / in.Parts(parts) * (3 + 2 * options_.optimizer_states);
  }
  const CostModel& cm = options_.cost;
  double forward = 0;
  const double work = OpWork(op, parts, &forward);
  // Devices sharing too few cores compute one after another (ComputeSlowdown).
  return (work + cm.MemorySeconds(update)) * cm.in_process.ComputeSlowdown(options_.devices);
}

double SearchGraph::OpForward(int op, const Parts& parts) const {
  double forward = 0;
  OpWork(op, parts, &forward);
  return forward * options_.cost.in_process.ComputeSlowdown(options_.devices);
}

double SearchGraph::OpBackward(int op, const Parts& parts) const {
  double forward = 0;
  const double work = OpWork(op, parts, &forward);
  return (work - forward) * options_.cost.in_process.ComputeSlowdown(options_.devices);
}

double SearchGraph::OpCommunication(int op, const Parts& parts, double* collectives,
                                    ReadyGradients* gradients, bool scattered) const {
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
  // A parameter gradient's reduction: on the overlap stream when asked (Total), else summed.
  const auto gradient = [&](size_t input, double bytes, double seconds, bool bucketed) {
    if (gradients != nullptr && seconds > 0) {
      const int ready = GradientReadyOp(graph_->node(o.node).inputs[input]);
      gradients->push_back({ready < 0 ? op : ready, {bytes, seconds, bucketed}});
      return 0.0;
    }
    return seconds;
  };
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    const SearchOperand& in = o.inputs[i];
    if (in.kind != ValueKind::kParameter) continue;
    int spanned = 0;  // split letters the gradient is a partial sum over
    for (int l : in.missing) spanned += parts[l] > 1;
    const double shard = in.bytes / in.Parts(parts);
    const double scatter =
        scattered && spanned > 0 ? ScatteredGradientSeconds(op, parts, static_cast<int>(i)) : 0;
    if (scatter > 0) {
      // ZeRO buckets gradients per set of replica groups: the stream's buckets hold those
      // replicated on every device; a sharded parameter's reduce-scatter goes alone.
      const bool bucketed = cm.GradientBucketShare(shard) < 1 && in.Parts(parts) == 1;
      grad_reduce += gradient(i, shard, scatter, bucketed);
      continue;
    }
    int64_t partial = 1;
    for (int l : in.missing) partial *= parts[l];
    if (spanned > 1 || partial == 2) {
      // The planner may reduce over two mesh axes in several steps (reduce-scatter along one,
      // all-reduce along the other, all-gather), and sums two addends directly (one message,
      // not the ring's two): train buckets neither.
      grad_reduce += gradient(
          i, shard, PlannedGradientSeconds(op, parts, static_cast<int>(i), before, collectives),
          false);
      continue;
    }
    // Its gradient is a partial sum over the letters it lacks; the replicas of a strategy
    // on fewer devices (the "rep" axis) compute the same sum, which the program never reduces.
    // Gradients ride in buckets (CostModel::gradient_bucket_bytes): this one pays its share.
    const double share = cm.GradientBucketShare(shard);
    if (partial > 1) {
      grad_reduce +=
          gradient(i, shard, share * reduce(shard / share, partial, GroupLink(parts, in.missing)),
                   share < 1);
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
  // Without the other readers' layouts: each reader's share of one redistribution.
  return EdgePrice(e, producer, consumer, 1.0 / edges_[e].fanout, collectives);
}

bool SearchGraph::SameLayout(int e1, const Parts& c1, int e2, const Parts& c2) const {
  const SearchEdge &a = edges_[e1], &b = edges_[e2];
  if (a.needs_grad != b.needs_grad || !SamePlacement(e1, c1, e2, c2)) return false;
  int64_t ga = 1, gb = 1;
  for (int l : a.grad_summed_letter) ga *= c1[l];
  for (int l : b.grad_summed_letter) gb *= c2[l];
  return ga == gb;
}

double SearchGraph::EdgeCostAmong(int e, int op, const Parts& parts,
                                  const std::vector<Parts>& assignment,
                                  const std::vector<bool>* known) const {
  const SearchEdge& edge = edges_[e];
  const Parts& producer = edge.producer == op ? parts : assignment[edge.producer];
  const Parts& consumer = edge.consumer == op ? parts : assignment[edge.consumer];
  // ValuePrice among the decided readers (of two reads by one operator the earlier pays):
  // forward once per layout; backward once per partial-sum group while every reader agrees,
  // else each gradient whole.
  int same = 1, summed = 1;  // decided readers in this one's layout; of them, summed with it
  bool agree = true, moved = false, joined = false;
  int64_t partial = 1;
  for (int l : edge.grad_summed_letter) partial *= consumer[l];
  for (int s : edge.siblings) {
    const int c = edges_[s].consumer;
    if (c != op && known != nullptr && !(*known)[c]) continue;
    const Parts& other = c == op ? parts : assignment[c];
    const bool placed = SamePlacement(e, consumer, s, other);
    agree = agree && placed;
    if (!placed) continue;
    int64_t q = 1;
    for (int l : edges_[s].grad_summed_letter) q *= other[l];
    const bool sums = edge.needs_grad && edges_[s].needs_grad && q == partial;
    same += 1;
    summed += sums;
    if (edge.consumer == op && (c != op || s < e)) {
      moved = true;
      joined = joined || sums;
    }
  }
  // An Add handing its gradient to both inputs moves it once when their producers agree
  // (SharedAddGradient): each input's edge pays half.
  double back = 1.0;
  const int partner = edge.add_partner;
  if (partner >= 0 && !(agree && summed > 1)) {
    const int p = edges_[partner].producer;
    if (p == op || known == nullptr || (*known)[p])
      back = SameSource(e, producer, partner, p == op ? parts : assignment[p]) ? 0.5 : 1.0;
  }
  if (edge.consumer == op) {
    // A reader joining a decided reader's layout adds nothing forward, nor backward when its
    // gradient is summed with that reader's.
    double cost = moved ? 0.0 : EdgePrice(e, producer, consumer, 1.0, nullptr, kForward);
    if (!(agree && joined)) cost += EdgePrice(e, producer, consumer, back, nullptr, kBackward);
    return cost;
  }
  // The producer pays each decided layout once, its readers sharing it.
  return EdgePrice(e, producer, consumer, 1.0 / same, nullptr, kForward) +
         EdgePrice(e, producer, consumer, agree ? back / summed : back, nullptr, kBackward);
}

void SearchGraph::MoveAlong(int64_t a, int64_t sa, int64_t b, int64_t sb, Move* move) const {
  const int64_t l = std::lcm(a, b);
  move->overlap *= static_cast<double>(l);
  move->peers *= static_cast<double>(l / b);
  move->gathered += l > b;
  const auto slice = [move](const Line& line) {
    if (move->sliced == static_cast<int>(move->slices.size())) {
      move->misaligned = true;
      return;
    }
    for (int i = 0; i < move->lines; ++i) move->exchange |= Meet(move->line[i], line);
    move->slices[move->sliced++] = line;
  };
  const auto gather = [move](const Line& line) {
    if (move->lines == static_cast<int>(move->line.size())) {
      move->misaligned = true;
      return;
    }
    for (int i = 0; i < move->sliced; ++i) move->exchange |= Meet(move->slices[i], line);
    move->line[move->lines++] = line;
  };
  // Aligned: a rank's target block lies in the block it holds (finer), or it holds a part of
  // it and gathers the rest from the a / b ranks sharing its target block (coarser).
  if (b % a == 0 && (a == 1 || sa == sb * (b / a))) {
    if (b > a) slice({sb, b / a});
    return;
  }
  if (a % b == 0 && (b == 1 || sb == sa * (a / b))) {
    Span(sa, a / b, &move->link);
    if (a > b) gather({sa, a / b});
    return;
  }
  // Same split counts on other ranks, or blocks that straddle: data crosses both splits.
  move->misaligned = true;
  Span(sa, a, &move->link);
  Span(sb, b, &move->link);
}

double SearchGraph::EdgePrice(const SearchEdge& edge, const Parts& producer, const Parts& consumer,
                              double share, double* collectives, int directions) const {
  const CostModel& cm = options_.cost;
  const size_t rank = edge.src_letter.size();
  double src_parts = 1, dst_parts = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (edge.src_letter[d] >= 0) src_parts *= static_cast<double>(producer[edge.src_letter[d]]);
    if (edge.dst_letter[d] >= 0) dst_parts *= static_cast<double>(consumer[edge.dst_letter[d]]);
  }
  // Exchange a -> b per direction (MoveAlong).
  const bool backward_priced = edge.needs_grad && (directions & kBackward);
  Move forward, backward;
  forward.link = backward.link =
      physical_.empty() ? NoMeshLink() : Link{std::numeric_limits<double>::infinity(), -1};
  for (size_t d = 0; d < rank; ++d) {
    const int la = edge.src_letter[d], lb = edge.dst_letter[d];
    const int64_t a = la >= 0 ? producer[la] : 1, b = lb >= 0 ? consumer[lb] : 1;
    const int64_t sa = a > 1 ? LetterStride(producer, la) : 1;
    const int64_t sb = b > 1 ? LetterStride(consumer, lb) : 1;
    // Only the directions priced below (EdgeCostAmong asks for one at a time).
    if (directions & kForward) MoveAlong(a, sa, b, sb, &forward);
    if (backward_priced) MoveAlong(b, sb, a, sa, &backward);
  }
  if (std::isinf(forward.link.bandwidth)) forward.link = NoMeshLink();
  if (std::isinf(backward.link.bandwidth)) backward.link = NoMeshLink();
  Cuts cuts;  // filled on first use
  // Readers that want the same layout share one redistribution each way (the partitioner
  // redistributes a value once per layout, and sums its readers' gradients before moving the
  // sum back), so each edge carries its share of both.
  // One direction: the `from` end's partial sum over `summed` letters of `ends` (its parts)
  // reduced (scattered when the target is split finer), then exchanged into the target
  // block, the first collective after `compute_before` seconds of computation.
  const auto direction = [&](const Parts& ends, const std::vector<int>& summed, double from_parts,
                             double to_parts, const Move& move, double compute_before) {
    double seconds = 0;
    int64_t partial = 1;
    for (int l : summed) partial *= ends[l];
    // A rank holds none of a misaligned target block: it receives all of it, from every peer.
    const double recv = edge.bytes / to_parts - (move.misaligned ? 0 : edge.bytes / move.overlap);
    if (partial > 1) {
      const bool scatter = to_parts >= from_parts * static_cast<double>(partial);
      const Link sum_link = GroupLink(ends, summed);
      if (partial == 2 && !scatter && recv <= 0) {
        // Two addends summed into the target: the planner's direct all-reduce, one message.
        Link pair{std::numeric_limits<double>::infinity(), -1};
        for (int l : summed) Span(LetterStride(ends, l), ends[l], &pair);
        if (std::isinf(pair.bandwidth)) pair = NoMeshLink();
        seconds += cm.SearchExchangeAfterSeconds(1, edge.bytes / from_parts, pair.bandwidth, 1,
                                                 pair.latency, compute_before);
      } else {
        seconds += cm.SearchCollectiveAfterSeconds(
            scatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
            edge.bytes / from_parts, partial, sum_link.bandwidth, sum_link.latency, compute_before);
      }
      if (collectives != nullptr) *collectives += share;
      compute_before = 0;  // the exchange follows the reduction
    }
    if (recv > 0 && !move.misaligned && move.lines > 0) {
      if (cuts.n == 0) {
        AddCuts(producer, &cuts);
        AddCuts(consumer, &cuts);
        std::sort(cuts.at.begin(), cuts.at.begin() + cuts.n);
      }
      double steps = 0;
      seconds += GatherSeconds(move, cuts, edge.bytes / to_parts, compute_before, &steps);
      if (collectives != nullptr) *collectives += steps * share;
    } else if (recv > 0) {
      const int steps = std::max(1, move.gathered);
      const auto messages = static_cast<int64_t>(move.peers) - (move.misaligned ? 0 : 1);
      if (collectives != nullptr) *collectives += steps * share;
      seconds += cm.SearchExchangeAfterSeconds(messages, recv, move.link.bandwidth, steps,
                                               move.link.latency, compute_before);
    }
    return seconds * share;
  };
  // Forward: the activation, after the producer's computation.
  double cost = 0;
  if (directions & kForward)
    cost += direction(producer, edge.summed_letter, src_parts, dst_parts, forward,
                      ComputeBeforeCollective(edge.producer, producer));
  // Backward: its gradient (a partial sum over the consumer's letters the input lacks, MatMul's
  // dX over n), after the consumer's backward; none when the input needs no gradient.
  if (backward_priced) {
    cost += direction(consumer, edge.grad_summed_letter, dst_parts, src_parts, backward,
                      ComputeBeforeCollective(edge.consumer, consumer));
  }
  return cost;
}

double SearchGraph::Total(const std::vector<Parts>& a) const {
  double total = 0;
  if (options_.cost.overlap_gradients) {
    const double exposed = Overlap(a, &total).exposed_seconds();
    total += exposed;
  } else {
    for (size_t i = 0; i < ops_.size(); ++i) total += OpCost(static_cast<int>(i), a[i]);
  }
  // Each value once, at its first reader's edge.
  for (size_t e = 0; e < edges_.size(); ++e) {
    const std::vector<int>& s = edges_[e].siblings;
    if (s.empty() || s[0] > static_cast<int>(e)) total += ValuePrice(static_cast<int>(e), a);
  }
  for (size_t i = 0; i < ops_.size(); ++i) total -= SharedAddGradient(static_cast<int>(i), a);
  return total;
}

GradientOverlap SearchGraph::Overlap(const std::vector<Parts>& a, double* serial,
                                     bool scattered) const {
  const size_t n = ops_.size();
  std::vector<BackwardSegment> backward(n);  // in backward order: the last operator first
  ReadyGradients ready;
  for (size_t i = 0; i < n; ++i) {
    const int op = static_cast<int>(i);
    *serial += OpCompute(op, a[i]) + OpCommunication(op, a[i], nullptr, &ready, scattered);
    backward[n - 1 - i].seconds = OpBackward(op, a[i]);
  }
  for (const auto& [op, r] : ready) backward[n - 1 - op].reductions.push_back(r);
  return ScheduleGradientReductions(backward, options_.cost.gradient_bucket_bytes);
}

int SearchGraph::GradientReadyOp(ValueId param) const {
  const auto it = first_reader_.find(param);
  return it == first_reader_.end() ? -1 : it->second;
}

SearchGraph::Breakdown SearchGraph::Explain(const std::vector<Parts>& a) const {
  Breakdown b;
  for (size_t i = 0; i < ops_.size(); ++i) {
    b.compute_s += OpCompute(static_cast<int>(i), a[i]);
    OpCommunication(static_cast<int>(i), a[i], &b.collectives);
  }
  for (size_t e = 0; e < edges_.size(); ++e) {
    const std::vector<int>& s = edges_[e].siblings;
    if (s.empty() || s[0] > static_cast<int>(e)) ValuePrice(static_cast<int>(e), a, &b.collectives);
  }
  for (size_t i = 0; i < ops_.size(); ++i)
    SharedAddGradient(static_cast<int>(i), a, &b.collectives);
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
      ops_[i].own_cost.push_back(SearchCost(static_cast<int>(i), p));
  }
}

}  // namespace shardscope::search_internal
