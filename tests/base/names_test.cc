// Did-you-mean suggestions (base/names.h): typos, shortened names, dotted scopes.
#include "shardscope/base/names.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

const std::vector<std::string> kModes = {"semi_auto", "sharding_propagation",
                                         "recursive_programming", "dynamic_programming"};

TEST(Names, SuggestsForTyposAndShortenedNames) {
  EXPECT_EQ(DidYouMean("recursive", kModes), " (did you mean 'recursive_programming'?)");
  EXPECT_EQ(DidYouMean("Dynamic", kModes), " (did you mean 'dynamic_programming'?)");
  EXPECT_EQ(DidYouMean("semi_atuo", kModes), " (did you mean 'semi_auto'?)");
  EXPECT_EQ(DidYouMean("trian", {"train", "plan", "inspect"}), " (did you mean 'train'?)");
  EXPECT_EQ(DidYouMean("--serach", {"--search", "--seed", "--steps"}),
            " (did you mean '--search'?)");
  EXPECT_EQ(CloseNames("matmul", {"dense1.matmul", "dense2.matmul", "relu"}),
            (std::vector<std::string>{"dense1.matmul", "dense2.matmul"}));
}

TEST(Names, StaysQuietWhenNothingIsClose) {
  EXPECT_EQ(DidYouMean("xyz", kModes), "");
  EXPECT_EQ(DidYouMean("re", kModes), "");         // too short to count as a prefix
  EXPECT_EQ(DidYouMean("semi_auto", kModes), "");  // the name itself is no suggestion
}

}  // namespace
}  // namespace shardscope
