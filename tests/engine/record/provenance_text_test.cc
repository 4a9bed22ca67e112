// One kind and one sentence per provenance, whatever the search or the partitioner wrote.
#include "record/provenance_text.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(ProvenanceText, OneSentencePerKindWithoutRepeatingIt) {
  struct Case {
    std::string search, partition, kind, detail;
  };
  const Case cases[] = {
      {"user: ((2, 4), (4, 1))", "user: ((2,4),(4,1))", "user",
       "the user's strategy ((2, 4), (4, 1))"},
      // A searched operator reaches the partitioner as a "user" annotation: the search wins.
      {"sharding_propagation: propagated from operator 'dense1.matmul' over edge 'flatten'",
       "user: ((2,1,4,1),)", "propagated",
       "from operator 'dense1.matmul' over edge 'flatten' (sharding_propagation)"},
      {"recursive_programming: round 1/3 (x2) split m", "user: ((2,1),)", "search",
       "round 1/3 (x2) split m (recursive_programming)"},
      {"semi_auto: data-parallel default", "user: ((8,1),)", "default",
       "data-parallel default (semi_auto)"},
      {"outside shard blocks: data-parallel", "user: ((8,1),)", "default",
       "outside shard blocks: data-parallel"},
      {"", "derived from forward operator loss", "derived", "from forward operator loss"},
      {"", "data-parallel default", "default", "data-parallel: no strategy given"},
      {"", "user: ((2,4),(4,1))", "user", "the user's strategy ((2,4),(4,1))"},
  };
  for (const Case& c : cases) {
    const ProvenanceText t = DescribeProvenance(c.search, c.partition);
    EXPECT_EQ(t.kind, c.kind) << c.search << " | " << c.partition;
    EXPECT_EQ(t.detail, c.detail) << c.search << " | " << c.partition;
    EXPECT_NE(t.detail.rfind(t.kind + ":", 0), 0u) << t.detail;
  }
}

}  // namespace
}  // namespace shardscope
