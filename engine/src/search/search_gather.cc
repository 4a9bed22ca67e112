// An aligned redistribution priced as the redistribution planner makes it: one all-gather per
// axis of the two meshes' unified mesh, in the order that keeps the bytes on the fast links.
#include <algorithm>
#include <cmath>
#include <limits>

#include "search/search_graph.h"

namespace shardscope::search_internal {

void SearchGraph::AddCuts(const Parts& parts, Cuts* cuts) const {
  // Letters' strides from the innermost (the replica axis) outwards; duplicates are harmless.
  int64_t stride = options_.devices / Product(parts);
  const auto add = [cuts](int64_t at) {
    if (at > 1 && cuts->n < static_cast<int>(cuts->at.size())) cuts->at[cuts->n++] = at;
  };
  add(stride);
  for (size_t l = parts.size(); l-- > 0;) {
    if (parts[l] <= 1) continue;
    stride *= parts[l];
    add(stride);
  }
}

double SearchGraph::GatherSeconds(const Move& move, const Cuts& cuts, double target,
                                  double compute_before, double* steps) const {
  struct Step {
    Line line;
    Link link;
    double w = 0;  // seconds per byte of the block before it: (size - 1) / bandwidth
  };
  struct Block {
    int begin = 0, end = 0;
    double ratio = 0;
  };
  // One line inside one axis of the unified mesh (the common case): one all-gather.
  if (move.lines == 1 && !move.exchange) {
    const Line& line = move.line[0];
    bool cut = false;
    for (int c = 0; c < cuts.n && !cut; ++c)
      cut = cuts.at[c] > line.stride && cuts.at[c] < line.stride * line.size;
    if (!cut) {
      const Link link = LinesLink(&line, 1);
      *steps += 1;
      return options_.cost.SearchCollectiveAfterSeconds(CollectiveKind::kAllGather, target,
                                                        line.size, link.bandwidth, link.latency,
                                                        compute_before);
    }
  }
  std::array<Step, 32> step;
  std::array<Block, 32> blocks;
  int n = 0, nb = 0;
  const CostModel& cm = options_.cost;
  double seconds = 0, block = target;  // the block each rank starts from: target / gathered
  for (int i = 0; i < move.lines; ++i) block /= static_cast<double>(move.line[i].size);
  // Lines whose ranks also slice another dimension exchange first, in one all-to-all among
  // them: each rank receives its target block's pieces from the others (the planner's
  // all-to-all(-v); its slowest link, no rails).
  std::array<bool, 4> exchanged{};
  if (move.exchange) {
    Link link{std::numeric_limits<double>::infinity(), -1};
    int64_t group = 1;
    for (int i = 0; i < move.lines; ++i) {
      for (int k = 0; k < move.sliced && !exchanged[i]; ++k)
        exchanged[i] = Meet(move.line[i], move.slices[k]);
      if (!exchanged[i]) continue;
      group *= move.line[i].size;
      Span(move.line[i].stride, move.line[i].size, &link);
    }
    if (std::isinf(link.bandwidth)) link = NoMeshLink();
    const double recv = block * static_cast<double>(group - 1);
    seconds += cm.SearchExchangeAfterSeconds(group - 1, recv, link.bandwidth, 1, link.latency,
                                             compute_before);
    compute_before = 0;
    block *= static_cast<double>(group);
    *steps += 1;
  }
  for (int i = 0; i < move.lines; ++i) {
    if (exchanged[i]) continue;
    // The line's pieces between the cuts it crosses, minor (smallest stride) first: a gather
    // removes a dimension's innermost axis.
    const int first = n;
    int64_t at = move.line[i].stride;
    const int64_t end = at * move.line[i].size;
    for (int c = 0; c <= cuts.n && n < static_cast<int>(step.size()); ++c) {
      const int64_t cut = c < cuts.n ? cuts.at[c] : end;
      if (cut <= at || cut > end || cut % at != 0 || end % cut != 0) continue;
      step[n].line = {at, cut / at};
      step[n].link = LinesLink(&step[n].line, 1);
      step[n].w = static_cast<double>(cut / at - 1) / step[n].link.bandwidth;
      ++n;
      at = cut;
    }
    // Sidney's blocks of this chain: repeatedly the prefix of the largest cost per growth.
    for (int b = first; b < n;) {
      double w = 0, g = 1, best = -1;
      int best_end = b + 1;
      for (int k = b; k < n; ++k) {
        w += step[k].w * g;
        g *= static_cast<double>(step[k].line.size);
        if (w / (g - 1) > best) {
          best = w / (g - 1);
          best_end = k + 1;
        }
      }
      blocks[nb++] = {b, best_end, best};
      b = best_end;
    }
  }
  // The slowest bytes first: blocks by falling ratio (a chain's blocks already fall).
  std::stable_sort(blocks.begin(), blocks.begin() + nb,
                   [](const Block& x, const Block& y) { return x.ratio > y.ratio; });
  for (int b = 0; b < nb; ++b) {
    for (int k = blocks[b].begin; k < blocks[b].end; ++k) {
      const int64_t g = step[k].line.size;
      seconds += cm.SearchCollectiveAfterSeconds(
          CollectiveKind::kAllGather, block * static_cast<double>(g), g, step[k].link.bandwidth,
          step[k].link.latency, compute_before);
      compute_before = 0;
      block *= static_cast<double>(g);
      *steps += 1;
    }
  }
  return seconds;
}

}  // namespace shardscope::search_internal
