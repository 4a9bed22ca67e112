// EdgeCost between two candidates, remembered: sharding_propagation's lookahead prices every
// candidate pair of an edge, in each run, and the layers' alike edges price the same pairs.
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "search/search_graph.h"

namespace shardscope::search_internal {

struct SearchGraph::EdgeTables {
  std::mutex mu;
  std::vector<int> edge_class;                  // per edge, -1: not classed yet
  std::map<std::vector<int64_t>, int> classes;  // what EdgeCost reads -> class
  std::vector<std::vector<double>> table;       // per class: producer x consumer, NaN: unpriced
};

double SearchGraph::CandidateEdgeCost(int e, size_t pc, size_t cc) const {
  static std::mutex create;
  {
    std::lock_guard<std::mutex> lock(create);
    if (edge_tables_ == nullptr)
      const_cast<SearchGraph*>(this)->edge_tables_ = std::make_shared<EdgeTables>();
  }
  EdgeTables& t = *edge_tables_;
  const SearchEdge& edge = edges_[e];
  const SearchOp &producer = ops_[edge.producer], &consumer = ops_[edge.consumer];
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.edge_class.empty()) t.edge_class.assign(edges_.size(), -1);
  if (t.edge_class[e] < 0) {
    // Everything EdgeCost reads of the edge and its ends: its letters, bytes and share, both
    // candidate lists and, with a hand-off, the operators themselves (their computation).
    std::vector<int64_t> key = {std::bit_cast<int64_t>(edge.bytes), edge.fanout, edge.needs_grad};
    for (const std::vector<int>* letters :
         {&edge.src_letter, &edge.dst_letter, &edge.summed_letter, &edge.grad_summed_letter}) {
      key.insert(key.end(), letters->begin(), letters->end());
      key.push_back(-2);
    }
    for (const SearchOp* op : {&producer, &consumer}) {
      for (const Parts& p : op->candidates) {
        key.insert(key.end(), p.begin(), p.end());
        key.push_back(-3);
      }
      key.push_back(-4);
    }
    if (options_.cost.in_process.MaxHandoffSeconds() > 0) {
      key.push_back(edge.producer);
      key.push_back(edge.consumer);
    }
    const auto [it, added] = t.classes.emplace(std::move(key), static_cast<int>(t.table.size()));
    if (added) {
      t.table.emplace_back(producer.candidates.size() * consumer.candidates.size(),
                           std::numeric_limits<double>::quiet_NaN());
    }
    t.edge_class[e] = it->second;
  }
  double& cost = t.table[t.edge_class[e]][pc * consumer.candidates.size() + cc];
  if (std::isnan(cost)) cost = EdgeCost(e, producer.candidates[pc], consumer.candidates[cc]);
  return cost;
}

}  // namespace shardscope::search_internal
