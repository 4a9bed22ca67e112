// The correctness law for searched strategies: every search mode's choice, written into the
// annotations and partitioned as usual, trains on 8 in-process devices exactly like one
// device (tests/engine/partition/law.h).
#include <gtest/gtest.h>

#include "gpt.h"
#include "law.h"
#include "models.h"
#include "searched.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

using testing_law::BuildFn;
using testing_law::CheckLaw;
using testing_law::Searched;

constexpr SearchMode kModes[] = {SearchMode::kShardingPropagation,
                                 SearchMode::kRecursiveProgramming,
                                 SearchMode::kDynamicProgramming};

TEST(SearchLaw, Seed003FfnOnEightDevices) {
  const int64_t batch = 16;
  Dataset data = MakeSyntheticDataset(batch * 3, {1, 28, 28}, 10, 21);
  const BuildFn configured = [] {
    samples::FFN net;
    net.dense1.matmul.shard("((2,4),(4,1))");
    net.dense3.matmul.shard("((1,8),(8,1))");
    return nn::BuildClassifier(net, {1, 28, 28}, 16);
  };
  const BuildFn automatic = [] {
    samples::FFN net;
    return nn::BuildClassifier(net, {1, 28, 28}, 16);
  };
  Status st =
      CheckLaw(Searched(configured, SearchMode::kShardingPropagation, 8), data, batch, 8, {}, 3);
  EXPECT_TRUE(st.ok()) << "configured FFN: " << st.message();
  for (SearchMode mode : kModes) {
    st = CheckLaw(Searched(automatic, mode, 8), data, batch, 8, {}, 3);
    EXPECT_TRUE(st.ok()) << SearchModeName(mode) << ": " << st.message();
  }
}

TEST(SearchLaw, TransformerOnEightDevices) {
  const int64_t batch = 8, tokens = 8, vocab = 32, dim = 64, heads = 8;
  Dataset data = samples::MakeTokenSumDataset(batch * 3, tokens, vocab, 4, 5);
  const BuildFn build = [&] {
    samples::Gpt net(2, vocab, tokens, dim, heads, 4);
    return nn::BuildClassifier(net, {tokens}, batch, DType::kI32);
  };
  for (SearchMode mode : kModes) {
    Status st = CheckLaw(Searched(build, mode, 8), data, batch, 8, {}, 3);
    EXPECT_TRUE(st.ok()) << SearchModeName(mode) << ": " << st.message();
  }
}

// A device count that is not a power of two: 6 = 3 x 2.
TEST(SearchLaw, SixDevices) {
  const int64_t batch = 12;
  Dataset data = MakeSyntheticDataset(batch * 3, {1, 6, 6}, 6, 4);
  class Net : public nn::Module {
   public:
    Net() : nn::Module("") {}
    nn::Flatten flatten{"flatten"};
    nn::Dense dense1{"dense1", 36, 24}, dense2{"dense2", 24, 6};
    nn::ReLU relu{"relu"};

   protected:
    bool scoped() const override { return false; }
    ValueId Forward(Builder& b, ValueId x) override {
      return dense2(b, relu(b, dense1(b, flatten(b, x))));
    }
  };
  const BuildFn build = [] {
    Net net;
    return nn::BuildClassifier(net, {1, 6, 6}, 12);
  };
  for (SearchMode mode : kModes) {
    Status st = CheckLaw(Searched(build, mode, 6), data, batch, 6, {}, 3);
    EXPECT_TRUE(st.ok()) << SearchModeName(mode) << ": " << st.message();
  }
}

}  // namespace
}  // namespace shardscope
