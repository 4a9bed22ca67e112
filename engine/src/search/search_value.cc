// A value's price as the partitioned program moves it: one redistribution per distinct reader
// layout forward, its readers' gradients summed as the partitioner sums them (search_graph.h).
#include "search/search_graph.h"

#include <algorithm>

namespace shardscope::search_internal {

bool SearchGraph::SamePlacement(int e1, const Parts& c1, int e2, const Parts& c2) const {
  const SearchEdge &a = edges_[e1], &b = edges_[e2];
  if (a.dst_letter.size() != b.dst_letter.size()) return false;
  for (size_t d = 0; d < a.dst_letter.size(); ++d) {
    const int la = a.dst_letter[d], lb = b.dst_letter[d];
    const int64_t pa = la >= 0 ? c1[la] : 1, pb = lb >= 0 ? c2[lb] : 1;
    if (pa != pb) return false;
    if (pa > 1 && LetterStride(c1, la) != LetterStride(c2, lb)) return false;
  }
  return true;
}

template <typename Edge, typename Reader, typename Same>
double SearchGraph::ForwardFromCopies(const Edge& edge, const Reader& reader, const Same& same,
                                      size_t i, const Parts& producer, double* collectives) const {
  double counted = 0, best_counted = 0;
  double best = EdgePrice(edge(i), producer, reader(i), 1.0, &counted, kForward);
  best_counted = counted;
  for (size_t j = 0; j < i && best > 0; ++j) {
    bool first = true;  // one copy per layout
    for (size_t k = 0; k < j && first; ++k) first = !same(k, j);
    if (!first) continue;
    // From reader j's copy: its layout (whole, no partial sum) as the source.
    SearchEdge copy = edges_[edge(i)];
    copy.producer = edges_[edge(j)].consumer;
    copy.src_letter = edges_[edge(j)].dst_letter;
    copy.summed_letter.clear();
    counted = 0;
    const double s = EdgePrice(copy, reader(j), reader(i), 1.0, &counted, kForward);
    if (s < best) {
      best = s;
      best_counted = counted;
    }
  }
  if (collectives != nullptr) *collectives += best_counted;
  return best;
}

double SearchGraph::ValuePrice(int e, const std::vector<Parts>& a, double* collectives) const {
  const std::vector<int>& s = edges_[e].siblings;
  // The value's edges in order: the siblings with `e` in its place.
  const size_t at_e = static_cast<size_t>(std::lower_bound(s.begin(), s.end(), e) - s.begin());
  const size_t n = s.size() + 1;
  const auto edge = [&](size_t i) { return i < at_e ? s[i] : i == at_e ? e : s[i - 1]; };
  const auto reader = [&](size_t i) -> const Parts& { return a[edges_[edge(i)].consumer]; };
  const Parts& producer = a[edges_[e].producer];
  const auto same = [&](size_t i, size_t j) {
    return SamePlacement(edge(i), reader(i), edge(j), reader(j));
  };
  // A gradient is a partial sum over this many ranks (MatMul's dX over n): sums agree in it.
  const auto partial = [&](size_t i) {
    int64_t p = 1;
    for (int l : edges_[edge(i)].grad_summed_letter) p *= reader(i)[l];
    return p;
  };
  double price = 0;
  bool agree = true;
  for (size_t i = 0; i < n; ++i) {
    agree = agree && same(0, i);
    bool moved = false;  // an earlier reader took the value into this layout
    for (size_t j = 0; j < i && !moved; ++j) moved = same(j, i);
    if (!moved) price += ForwardFromCopies(edge, reader, same, i, producer, collectives);
  }
  // An Add's gradient goes on to its inputs where its reader left it (InputGradient).
  if (n == 1 && PassedGradient(edges_[e].producer) == e) return price;
  if (n == 1) return price + InputGradient(e, a, collectives);
  // Readers that agree sum their gradients where they read (one move back per partial-sum
  // group); otherwise the sum is in the producer's layout and each gradient moves there.
  for (size_t i = 0; i < n; ++i) {
    if (!edges_[edge(i)].needs_grad) continue;
    bool summed = false;
    for (size_t j = 0; j < i && agree && !summed; ++j)
      summed = edges_[edge(j)].needs_grad && partial(j) == partial(i);
    if (!summed) price += EdgePrice(edge(i), producer, reader(i), 1.0, collectives, kBackward);
  }
  return price;
}

int SearchGraph::GradientReaders(int e, const std::vector<Parts>& a, bool* agree) const {
  const SearchEdge& edge = edges_[e];
  int readers = edge.needs_grad;
  *agree = true;
  for (int s : edge.siblings) {
    readers += edges_[s].needs_grad;
    *agree = *agree && SamePlacement(e, a[edge.consumer], s, a[edges_[s].consumer]);
  }
  return readers;
}

int SearchGraph::AddPartner(int e) const {
  const int op = edges_[e].consumer;
  const SearchOp& o = ops_[op];
  if (!edges_[e].needs_grad || edges_[e].input > 1 || graph_->node(o.node).op != OpKind::kAdd ||
      o.sig.inputs.size() != 2 || o.sig.inputs[0] != o.sig.inputs[1] || o.sig.outputs.size() != 1 ||
      o.sig.inputs[0] != o.sig.outputs[0])
    return -1;
  for (int f : o.edges) {
    const SearchEdge& other = edges_[f];
    if (other.consumer == op && other.input == 1 - edges_[e].input && other.needs_grad &&
        other.value != edges_[e].value)
      return f;
  }
  return -1;
}

int SearchGraph::PassedGradient(int op) const {
  int passed = -1;
  for (int guard = 0; guard < static_cast<int>(ops_.size()); ++guard) {
    const SearchOp& o = ops_[op];
    if (graph_->node(o.node).op != OpKind::kAdd || o.sig.inputs.size() != 2 ||
        o.sig.inputs[0] != o.sig.inputs[1] || o.sig.outputs.size() != 1 ||
        o.sig.inputs[0] != o.sig.outputs[0])
      return passed;
    int reader = -1;
    for (int f : o.edges) {
      if (edges_[f].producer != op) continue;
      if (reader >= 0 || !edges_[f].siblings.empty()) return passed;
      reader = f;
    }
    if (reader < 0 || !edges_[reader].needs_grad) return passed;
    passed = reader;
    op = edges_[reader].consumer;  // an Add reading it hands the gradient on in turn
  }
  return passed;
}

double SearchGraph::InputGradient(int e, const std::vector<Parts>& a, double* collectives) const {
  const SearchEdge& edge = edges_[e];
  const int passed = edge.needs_grad ? PassedGradient(edge.consumer) : -1;
  if (passed < 0)
    return EdgePrice(e, a[edge.producer], a[edge.consumer], 1.0, collectives, kBackward);
  // The producer reads the gradient as the Adds' reader computed it (its layout, its partial
  // sum): one edge from the producer's layout to that reader's.
  SearchEdge through = edge;
  const SearchEdge& from = edges_[passed];
  through.consumer = from.consumer;
  through.dst_letter = from.dst_letter;
  through.grad_summed_letter = from.grad_summed_letter;
  return EdgePrice(through, a[edge.producer], a[from.consumer], 1.0, collectives, kBackward);
}

bool SearchGraph::SameSource(int e1, const Parts& p1, int e2, const Parts& p2) const {
  const SearchEdge &x = edges_[e1], &y = edges_[e2];
  if (x.src_letter.size() != y.src_letter.size()) return false;
  for (size_t d = 0; d < x.src_letter.size(); ++d) {
    const int lx = x.src_letter[d], ly = y.src_letter[d];
    const int64_t nx = lx >= 0 ? p1[lx] : 1, ny = ly >= 0 ? p2[ly] : 1;
    if (nx != ny || (nx > 1 && LetterStride(p1, lx) != LetterStride(p2, ly))) return false;
  }
  return true;
}

double SearchGraph::SharedAddGradient(int op, const std::vector<Parts>& a,
                                      double* collectives) const {
  int first = -1;
  for (int e : ops_[op].edges) {
    if (edges_[e].consumer == op && edges_[e].input == 0) first = e;
  }
  const int second = first < 0 ? -1 : AddPartner(first);
  if (second < 0) return 0.0;
  for (int e : {first, second}) {
    // The Add's gradient moves as it is only when no sum in its readers' layout comes first.
    bool agree = true;
    if (GradientReaders(e, a, &agree) > 1 && agree) return 0.0;
  }
  const Parts& py = a[edges_[second].producer];
  if (!SameSource(first, a[edges_[first].producer], second, py)) return 0.0;
  double counted = 0;
  const double shared = InputGradient(second, a, &counted);
  if (collectives != nullptr) *collectives -= counted;
  return shared;
}

}  // namespace shardscope::search_internal
