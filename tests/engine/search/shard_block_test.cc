// shard(block, in_strategy, out_strategy, level) of seed 000 (samples/models/basic_blocks.yaml):
// the block's boundary layouts fixed, its inside searched with the level's objective, the rest
// data-parallel; the correctness law at every level and search; the misuse errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "law.h"
#include "models.h"
#include "shardscope/model_file.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

using testing_law::BuildFn;
using testing_law::CheckLaw;

const std::string kBasicBlocks =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/basic_blocks.yaml";
constexpr int64_t kBatch = 16;
constexpr SearchMode kModes[] = {SearchMode::kShardingPropagation,
                                 SearchMode::kRecursiveProgramming,
                                 SearchMode::kDynamicProgramming};

// The seed's Net1: block1 reads its input split 8 ways along the features and hands its
// output on data-parallel.
SearchOptions BlockOptions(SearchMode mode, int level) {
  SearchOptions o;
  o.mode = mode;
  o.devices = 8;
  o.shard_blocks = {{"block1", "((1, 8),)", "(None,)", level, ""}};
  return o;
}

Result<ModelGraph> BuildBasicBlocks() {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelFile file, LoadModelFile(kBasicBlocks));
  return file.Build(kBatch);
}

Result<SearchResult> Search(const SearchOptions& options) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, BuildBasicBlocks());
  return SearchStrategies(m.graph, options);
}

BuildFn ShardSearched(SearchMode mode, int level) {
  return [mode, level]() -> Result<ModelGraph> {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, BuildBasicBlocks());
    SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult r,
                                SearchStrategies(m.graph, BlockOptions(mode, level)));
    SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(r, &m.graph));
    return m;
  };
}

bool InBlock1(const OperatorChoice& c) { return c.name.rfind("block1.", 0) == 0; }

double Block1Memory(const SearchResult& r) {
  double bytes = 0;
  for (const OperatorChoice& c : r.operators) bytes += InBlock1(c) ? c.memory_bytes : 0;
  return bytes;
}

TEST(ShardBlock, LawOnEightDevicesAtEveryLevelAndSearch) {
  Dataset data = MakeSyntheticDataset(kBatch * 3, {16}, 16, 21);
  for (int level = 0; level <= 2; ++level) {
    for (SearchMode mode : kModes) {
      Status st = CheckLaw(ShardSearched(mode, level), data, kBatch, 8, {}, 3);
      EXPECT_TRUE(st.ok()) << "level " << level << ", " << SearchModeName(mode) << ": "
                           << st.message();
    }
  }
}

TEST(ShardBlock, BoundaryFixedInsideSearchedOutsideDataParallel) {
  for (SearchMode mode : kModes) {
    Result<SearchResult> r = Search(BlockOptions(mode, 2));
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::map<std::string, const OperatorChoice*> by_name;
    for (const OperatorChoice& c : r->operators) by_name[c.name] = &c;
    // in_strategy ((1,8),): block1's first operator reads x split 8 ways along the features.
    EXPECT_EQ(by_name.at("block1.dense1.matmul")->strategy.rfind("((1,8),", 0), 0u)
        << SearchModeName(mode) << ": " << by_name.at("block1.dense1.matmul")->strategy;
    // out_strategy (None,): its last operator leaves the output split along the batch only.
    EXPECT_EQ(by_name.at("block1.dense2.bias_add")->strategy, "((8,1),(1,))");
    for (const OperatorChoice& c : r->operators) {
      if (InBlock1(c)) {
        EXPECT_EQ(c.provenance.find("outside shard blocks"), std::string::npos) << c.name;
      } else {
        EXPECT_EQ(c.provenance, "outside shard blocks: data-parallel") << c.name;
        EXPECT_EQ(c.strategy.rfind("((8,", 0), 0u) << c.name << " " << c.strategy;
      }
    }
  }
}

TEST(ShardBlock, LevelsChangeTheObjectiveInside) {
  for (SearchMode mode : kModes) {
    Result<SearchResult> fastest = Search(BlockOptions(mode, 2));
    Result<SearchResult> smallest = Search(BlockOptions(mode, 1));
    Result<SearchResult> leanest = Search(BlockOptions(mode, 0));
    ASSERT_TRUE(fastest.ok() && smallest.ok() && leanest.ok()) << SearchModeName(mode);
    // Level 1 narrows every operator to its least-memory strategies.
    EXPECT_LT(Block1Memory(*smallest), Block1Memory(*fastest)) << SearchModeName(mode);
    if (mode == SearchMode::kDynamicProgramming) {
      // The exact optimum over all candidates is at least as fast as over the narrowed ones.
      EXPECT_LE(fastest->step_seconds, smallest->step_seconds);
      EXPECT_LE(fastest->step_seconds, leanest->step_seconds);
    }
  }
}

void ExpectError(const SearchOptions& options, const std::string& message) {
  Result<SearchResult> r = Search(options);
  ASSERT_FALSE(r.ok()) << "expected: " << message;
  EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
}

TEST(ShardBlock, MisuseIsRefusedNamingTheBlock) {
  SearchOptions o = BlockOptions(SearchMode::kShardingPropagation, 0);
  o.shard_blocks.push_back(o.shard_blocks[0]);  // the seed's misuse: the same block twice
  ExpectError(o, "shard block 'block1' is sharded twice");

  o = BlockOptions(SearchMode::kShardingPropagation, 0);
  o.shard_blocks[0].scope = "block9";
  ExpectError(o, "shard block 'block9' names no module of the model");

  o = BlockOptions(SearchMode::kShardingPropagation, 0);
  o.shard_blocks.push_back({"block1.dense1", "((1, 8),)", "", 2, ""});
  ExpectError(o, "shard block 'block1.dense1' overlaps shard block 'block1'");

  o = BlockOptions(SearchMode::kShardingPropagation, 0);
  o.shard_blocks[0].in_strategy = "((1, 8), (1, 8))";
  ExpectError(o,
              "shard block 'block1': the in_strategy ((1, 8), (1, 8)) has 2 entries but the "
              "block has 1 input");

  o = BlockOptions(SearchMode::kShardingPropagation, 0);
  o.shard_blocks[0].in_strategy = "((1, 3),)";
  ExpectError(o,
              "shard block 'block1': no strategy of operator 'block1.dense1.matmul' on 8 "
              "devices gives 'x' [16, 16] the in_strategy layout (1,3)");

  o = BlockOptions(SearchMode::kShardingPropagation, 0);
  o.shard_blocks[0].out_strategy = "(oops,)";
  ExpectError(o, "shard block 'block1' out_strategy: '(oops,)' is not a tuple");

  ExpectError(BlockOptions(SearchMode::kSemiAuto, 0), "shard block 'block1' is searched inside");
}

TEST(ShardBlock, ModelFileShardingABlockTwiceNamesTheLine) {
  std::ifstream in(kBasicBlocks);
  std::stringstream text;
  text << in.rdbuf();
  const std::string original = text.str();
  const int64_t first_line = std::count(original.begin(), original.end(), '\n');
  const std::string path =
      (std::filesystem::temp_directory_path() / "shardscope_shard_twice.yaml").string();
  std::ofstream(path) << original << "    - block: block1\n      in_strategy: ((8, 1),)\n";
  Result<ModelFile> loaded = LoadModelFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(loaded.ok());
  const std::string& message = loaded.status().message();
  EXPECT_NE(message.find(path + ":" + std::to_string(first_line + 1) + ":"), std::string::npos)
      << message;
  EXPECT_NE(message.find("shard block 'block1' is sharded twice (first at"), std::string::npos)
      << message;
}

// The C++ API: Module::shard records the block under its full scope, and searching with it
// chooses what the model file's shard section chooses, and trains like one device.
Result<ModelGraph> BuildCppBasicBlocks(int level) {
  samples::BasicBlocksNet net;
  net.block1.shard("((1, 8),)", "(None,)", level);
  return nn::BuildClassifier(net, {16}, kBatch);
}

TEST(ShardBlock, CppModuleShardRecordsTheBlockAndSearchesLikeTheModelFile) {
  Result<ModelGraph> cpp = BuildCppBasicBlocks(2);
  ASSERT_TRUE(cpp.ok()) << cpp.status().message();
  ASSERT_EQ(cpp->shard_blocks.size(), 1u);
  EXPECT_EQ(cpp->shard_blocks[0], (ShardBlockSpec{"block1", "((1, 8),)", "(None,)", 2, ""}));

  SearchOptions options = BlockOptions(SearchMode::kShardingPropagation, 2);
  options.shard_blocks = cpp->shard_blocks;
  Result<SearchResult> from_cpp = SearchStrategies(cpp->graph, options);
  ASSERT_TRUE(from_cpp.ok()) << from_cpp.status().message();
  Result<SearchResult> from_file = Search(BlockOptions(SearchMode::kShardingPropagation, 2));
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  std::map<std::string, std::string> file_choice;
  for (const OperatorChoice& c : from_file->operators) file_choice[c.name] = c.strategy;
  int compared = 0;
  for (const OperatorChoice& c : from_cpp->operators) {
    auto it = file_choice.find(c.name);
    if (it == file_choice.end()) continue;
    EXPECT_EQ(c.strategy, it->second) << c.name;
    ++compared;
  }
  EXPECT_GE(compared, 12);  // every block operator of the three blocks

  Dataset data = MakeSyntheticDataset(kBatch * 3, {16}, 16, 21);
  Status law = CheckLaw(
      []() -> Result<ModelGraph> {
        SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, BuildCppBasicBlocks(0));
        SearchOptions o = BlockOptions(SearchMode::kShardingPropagation, 0);
        o.shard_blocks = m.shard_blocks;
        SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult r, SearchStrategies(m.graph, o));
        SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(r, &m.graph));
        return m;
      },
      data, kBatch, 8, {}, 3);
  EXPECT_TRUE(law.ok()) << law.message();
}

TEST(ShardBlock, CppMisuseIsRefusedNamingTheModule) {
  {  // the seed's `self.block1 = self.block1.shard(...)` done twice over
    samples::BasicBlocksNet net;
    net.block1.shard("((1, 8),)", "(None,)");
    net.block1.shard("((1, 8),)", "(None,)");
    Result<ModelGraph> m = nn::BuildClassifier(net, {16}, kBatch);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("module 'block1': shard() called 2 times"),
              std::string::npos)
        << m.status().message();
  }
  {
    samples::BasicBlocksNet net;
    net.block2.shard("((1, 8),)", "(None,)", 3);
    Result<ModelGraph> m = nn::BuildClassifier(net, {16}, kBatch);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("module 'block2': shard() level 3"), std::string::npos)
        << m.status().message();
  }
  {
    samples::BasicBlocksNet net;  // the whole net has no scope of its own
    net.shard("((1, 8),)", "(None,)");
    Result<ModelGraph> m = nn::BuildClassifier(net, {16}, kBatch);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("shard() is for blocks of operators"), std::string::npos)
        << m.status().message();
  }
}

}  // namespace
}  // namespace shardscope
