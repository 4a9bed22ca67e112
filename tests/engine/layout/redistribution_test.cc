#include <gtest/gtest.h>
#include "redistribution_sim.h"
namespace shardscope { namespace {
TEST(Tmp, Print) {
  using redist_test::MakeMesh; using redist_test::Spec;
  const DeviceMesh m = MakeMesh({2, 2, 2}, {"dp", "sp", "mp"});
  const Shape shape = {8, 8};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dp,-", "-,-"}, {"dp,-", "-,dp"}, {"-,-|P(mp)", "mp,-"}, {"-,-|P(mp)", "-,-"},
      {"-,-", "(dp,sp),mp"}, {"(dp,sp),-", "(sp,dp),-"}, {"dp,sp", "sp,dp"}, {"-,-", "-,-|P(dp)"},
      {"-,-|P(mp)", "(mp,dp),-"}, {"(dp,sp),-", "-,(dp,sp)"}, {"(dp,sp),-", "-,(sp,dp)"}, {"dp,sp","-,-"},
      {"mp,(sp,dp)", "(mp,sp,dp),-"}, {"-,-|P(mp)", "-,-|P(mp)"}, {"dp,-|P(mp)", "-,-|P(mp)"}};
  for (const auto& [a, b] : cases) {
    auto plan = PlanRedistribution(Spec(m, a, shape), Spec(m, b, shape), CostModel{});
    std::printf("%s\n", plan->ToString().c_str());
  }
}
}}
