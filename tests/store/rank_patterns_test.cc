// Rank groups and transfers kept by their pattern: expansion, the text form, and refusal of
// damaged patterns that would make a reader expand without bound.
#include "shardscope/store/rank_patterns.h"

#include <gtest/gtest.h>

#include "json_text.h"

namespace shardscope::store {
namespace {

TEST(RankGroups, AGridListsTheGroupsOfACollectiveAlongMeshAxes) {
  // mesh(a=2,b=4), row-major: along b the groups are rows, along a the columns.
  const RankGroups rows = RankGroups::Grid(0, {{4, 1}}, {{2, 4}});
  EXPECT_EQ(rows.Expand(), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const RankGroups columns = RankGroups::Grid(0, {{2, 4}}, {{4, 1}});
  EXPECT_EQ(columns.size(), 4);
  EXPECT_EQ(columns.group_size(), 2);
  EXPECT_EQ(columns.Group(3), (std::vector<int64_t>{3, 7}));
  // mesh(2,2,2) along axes 2 then 0: member i = 4 * (i % 2) + (i / 2), first axis most
  // significant in the order the axes are given.
  const RankGroups two_axes = RankGroups::Grid(0, {{2, 1}, {2, 4}}, {{2, 2}});
  EXPECT_EQ(two_axes.Expand(), (std::vector<std::vector<int64_t>>{{0, 4, 1, 5}, {2, 6, 3, 7}}));
  EXPECT_EQ(two_axes, RankGroups({{0, 4, 1, 5}, {2, 6, 3, 7}}));  // same groups, either form
  EXPECT_FALSE(two_axes == RankGroups({{0, 4, 1, 5}}));
}

TEST(RankGroups, TextRoundTripsInBothForms) {
  const RankGroups grid = RankGroups::Grid(3, {{8, 2}}, {{2, 1}, {3, 16}});
  const std::string text = internal::JsonRankGroups(grid);
  EXPECT_EQ(text, R"({"first":3,"members":[[8,2]],"groups":[[2,1],[3,16]]})");
  RankGroups back;
  ASSERT_TRUE(internal::ParseRankGroups(text, &back));
  EXPECT_TRUE(back.is_grid());
  EXPECT_EQ(back.Expand(), grid.Expand());
  ASSERT_TRUE(internal::ParseRankGroups("[[0,2],[1,3]]", &back));  // older files: a list
  EXPECT_FALSE(back.is_grid());
  EXPECT_EQ(back.Expand(), (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
}

TEST(RankGroups, DamagedGridsAreRefused) {
  RankGroups g;
  EXPECT_FALSE(internal::ParseRankGroups(R"({"first":0,"members":[[0,1]],"groups":[]})", &g));
  EXPECT_FALSE(internal::ParseRankGroups(
      R"({"first":0,"members":[[65536,1]],"groups":[[65536,1]]})", &g));  // 2^32 ranks
  EXPECT_FALSE(internal::ParseRankGroups(R"({"members":[[2,1]],"groups":[]})", &g));
  EXPECT_FALSE(internal::ParseRankGroups(R"({"first":0,"members":[[2,1]],"groups":[]} x)", &g));
}

TEST(TransferList, RegularExchangesAreAFewRuns) {
  // Every rank of 64 receives an empty box from every other one (a direct all-reduce of a
  // scalar): per receiver, the senders below it and the senders above it.
  TransferList all_pairs;
  std::vector<TransferRecord> listed;
  for (int64_t dst = 0; dst < 64; ++dst) {
    for (int64_t src = 0; src < 64; ++src) {
      if (src == dst) continue;
      all_pairs.Add(src, dst, {}, {});
      listed.push_back({src, dst, {}, {}});
    }
  }
  EXPECT_EQ(all_pairs.size(), 64 * 63);
  EXPECT_LE(all_pairs.runs().size(), 2u * 64);
  EXPECT_EQ(all_pairs.Expand(), listed);
  EXPECT_EQ(all_pairs.at(100), listed[100]);
  EXPECT_EQ(all_pairs.Expand(5), std::vector<TransferRecord>(listed.begin(), listed.begin() + 5));
}

TEST(TransferList, TextRoundTripsAndOlderListsRead) {
  TransferList t;
  for (int64_t k = 0; k < 10; ++k) t.Add(k + 1, 0, {0, 4 * k}, {64, 4});
  t.Add(3, 9, {1}, {2});  // another shape starts a run
  EXPECT_EQ(t.runs().size(), 2u);
  const std::string text = internal::JsonTransferList(t);
  TransferList back;
  ASSERT_TRUE(internal::ParseTransferList(text, &back));
  EXPECT_EQ(back, t);
  EXPECT_EQ(back.Expand(), t.Expand());
  ASSERT_TRUE(internal::ParseTransferList("[[0,1,[0,8],[2,8]],[1,0,[2,0],[2,8]]]", &back));
  EXPECT_EQ(back.Expand(),
            (std::vector<TransferRecord>{{0, 1, {0, 8}, {2, 8}}, {1, 0, {2, 0}, {2, 8}}}));
  ASSERT_TRUE(internal::ParseTransferList("[]", &back));
  EXPECT_TRUE(back.empty());
}

TEST(TransferList, DamagedRunsAreRefused) {
  TransferList t;
  EXPECT_FALSE(internal::ParseTransferList(R"({"runs":[[0,0,1,2,0,0]]})", &t));  // no transfers
  EXPECT_FALSE(internal::ParseTransferList(R"({"runs":[[1,5,1,2,0,0]]})", &t));  // offset dims
  EXPECT_FALSE(internal::ParseTransferList(R"({"runs":[[1,0,1,2,0]]})", &t));    // odd
  EXPECT_FALSE(internal::ParseTransferList(R"({"runs":[[9223372036854775807,0,1,2,0,0]]})", &t));
}

}  // namespace
}  // namespace shardscope::store
