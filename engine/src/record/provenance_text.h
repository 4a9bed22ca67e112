// Why an operator has its strategy, as the run file records it: one kind ("user",
// "propagated", "search", "default", "derived") and one sentence that does not repeat it.
//
// The inputs are the texts the search (OperatorChoice::provenance, "sharding_propagation:
// propagated from operator 'x' over edge 'e'") and the partitioner (OpStrategy::provenance,
// "derived from forward operator x") write; the search's, when given, wins.
#pragma once

#include <string>

namespace shardscope {

struct ProvenanceText {
  std::string kind;
  std::string detail;  // a sentence: "from operator 'relu' over edge 'relu' (sharding_propagation)"
};

// `search_why` empty: the operator was not searched (backward, or no search ran).
ProvenanceText DescribeProvenance(const std::string& search_why, const std::string& partition_why);

}  // namespace shardscope
