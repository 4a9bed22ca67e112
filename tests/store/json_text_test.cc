// The JSON kept in text columns: exact round trips, the text earlier readers parse, strict
// refusal of anything else.
#include <gtest/gtest.h>

#include <limits>

#include "json_text.h"

namespace shardscope::store::internal {
namespace {

TEST(JsonText, IntsRoundTrip) {
  const std::vector<int64_t> values = {0, -1, 42, std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max()};
  std::vector<int64_t> back;
  ASSERT_TRUE(ParseInts(JsonInts(values), &back));
  EXPECT_EQ(back, values);
  ASSERT_TRUE(ParseInts(JsonInts({}), &back));
  EXPECT_TRUE(back.empty());
  ASSERT_TRUE(ParseInts(" [ 1 , 2 ]\n", &back));
  EXPECT_EQ(back, (std::vector<int64_t>{1, 2}));
  ASSERT_TRUE(ParseInts("", &back));  // an empty column reads as []
  EXPECT_TRUE(back.empty());
}

TEST(JsonText, NestedAndTransfers) {
  const std::vector<std::vector<int64_t>> groups = {{0, 1}, {}, {2, 3, 4}};
  std::vector<std::vector<int64_t>> back;
  ASSERT_TRUE(ParseIntLists(JsonIntLists(groups), &back));
  EXPECT_EQ(back, groups);
  const std::vector<TransferRecord> transfers = {{0, 1, {0, 64}, {32, 32}}, {5, 2, {}, {7}}};
  std::vector<TransferRecord> tback;
  ASSERT_TRUE(ParseTransfers(JsonTransfers(transfers), &tback));
  EXPECT_EQ(tback, transfers);
}

TEST(JsonText, StringsRoundTrip) {
  const std::vector<std::string> values = {
      "dp", "", "quote\" back\\slash", "tab\tnl\n", std::string("nul\0x", 5), "ünï ✓ 𝄞"};
  std::vector<std::string> back;
  ASSERT_TRUE(ParseStrings(JsonStrings(values), &back));
  EXPECT_EQ(back, values);
  ASSERT_TRUE(ParseStrings(R"(["\u00e9\ud834\udd1e\/"])", &back));
  EXPECT_EQ(back, std::vector<std::string>{"é𝄞/"});
}

TEST(JsonText, RefusesAnythingElse) {
  std::vector<int64_t> ints;
  std::vector<std::vector<int64_t>> lists;
  std::vector<std::string> strings;
  std::vector<TransferRecord> transfers;
  for (const char* bad : {"[", "]", "[1,]", "[,1]", "[1 2]", "[1]x", "[1.5]", "[\"1\"]", "{}",
                          "[99999999999999999999]", "[+1]", "null", "[[1]]", "1"}) {
    EXPECT_FALSE(ParseInts(bad, &ints)) << bad;
  }
  for (const char* bad : {"[1]", "[[1],2]", "[[1]", "[[[1]]]"}) {
    EXPECT_FALSE(ParseIntLists(bad, &lists)) << bad;
  }
  for (const char* bad : {"[\"a]", "[\"\\x\"]", "[\"\\u12\"]", "[\"\\udc00\"]", "[\"\\ud800x\"]",
                          "[a]", "[\"a\" \"b\"]"}) {
    EXPECT_FALSE(ParseStrings(bad, &strings)) << bad;
  }
  for (const char* bad : {"[[0,1,[0],[1],5]]", "[[0,1,[0]]]", "[[0,[1],[0],[1]]]"}) {
    EXPECT_FALSE(ParseTransfers(bad, &transfers)) << bad;
  }
  EXPECT_FALSE(ParseInts("[18446744073709551615]", &ints));  // beyond int64
  // Deep nesting is refused without recursion.
  EXPECT_FALSE(ParseIntLists(std::string(100000, '[') + std::string(100000, ']'), &lists));
}

// Readers of existing run files parse exactly these texts (keys in this order, no spaces).
TEST(JsonText, TextIsWhatEarlierReadersParse) {
  EXPECT_EQ(JsonInts({2, -4, 8}), "[2,-4,8]");
  EXPECT_EQ(JsonIntLists({{0, 1}, {}}), "[[0,1],[]]");
  EXPECT_EQ(JsonStrings({"dp", "a\"b"}), R"(["dp","a\"b"])");
  EXPECT_EQ(JsonTransfers({{0, 1, {0, 64}, {32, 32}}}), "[[0,1,[0,64],[32,32]]]");
  EXPECT_EQ(JsonRankGroups(RankGroups::Grid(1, {{2, 4}}, {{4, 1}})),
            R"({"first":1,"members":[[2,4]],"groups":[[4,1]]})");
  TransferList t;
  t.Add(0, 1, {0}, {8});
  t.Add(1, 2, {8}, {8});
  EXPECT_EQ(JsonTransferList(t), R"({"runs":[[2,1,0,1,0,8,1,1,8,0]]})");
  EXPECT_EQ(JsonTransferList({}), "[]");
  // Control characters as earlier writers escaped them read back too.
  std::vector<std::string> back;
  ASSERT_TRUE(ParseStrings(R"(["tab\u0009nl\u000a"])", &back));
  EXPECT_EQ(back, std::vector<std::string>{"tab\tnl\n"});
}

TEST(JsonText, InvalidUtf8IsReplacedNotThrown) {
  std::vector<std::string> back;
  ASSERT_TRUE(ParseStrings(JsonStrings({"a\xff"
                                        "b"}),
                           &back));
  EXPECT_EQ(back, std::vector<std::string>{"a\xEF\xBF\xBD"
                                           "b"});
}

}  // namespace
}  // namespace shardscope::store::internal
