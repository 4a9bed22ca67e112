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
    if (!moved)
      price += EdgePrice(edge(i), producer, reader(i), 1.0, collectives, kForward);
  }
  // Readers that agree sum their gradients where they read (one move back per partial-sum
  // group); otherwise the sum is in the producer's layout and each gradient moves there.
  for (size_t i = 0; i < n; ++i) {
    if (!edges_[edge(i)].needs_grad) continue;
    bool summed = false;
    for (size_t j = 0; j < i && agree && !summed; ++j)
      summed = edges_[edge(j)].needs_grad && partial(j) == partial(i);
    if (!summed)
      price += EdgePrice(edge(i), producer, reader(i), 1.0, collectives, kBackward);
  }
  return price;
}

}  // namespace shardscope::search_internal
