// ExecuteRedistribution on in-process devices: random plans run for real over the threads
// backend; every rank ends with its target shard (partial targets: addends sum to the
// tensor) and the traffic the communicator counts equals the plan's bytes on every rank.
#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <vector>

#include "redistribution_sim.h"
#include "shardscope/communicator.h"
#include "shardscope/redistribution.h"

namespace shardscope {
namespace {

using redist_test::Addend;
using redist_test::ForBox;
using redist_test::GlobalValue;
using redist_test::LinearOf;

Tensor InputShard(const Layout& l, int r) {
  const Shape ext = l.ShardShape();
  const std::vector<int64_t> lo = l.ShardOffsets(r);
  std::vector<float> v(NumElements(ext));
  const int64_t count = l.PartialFactor();
  const int64_t k = l.mesh().IndexInGroup(r, l.partial_axes());
  ForBox(lo, ext, [&](const std::vector<int64_t>& li, const std::vector<int64_t>& gi) {
    const int64_t lin = LinearOf(l.shape(), gi);
    v[LinearOf(ext, li)] = static_cast<float>(count > 1 ? Addend(lin, k, count) : GlobalValue(lin));
  });
  return Tensor::FromVector(ext, std::move(v));
}

// Runs `plan` on its ranks; checks values and traffic. Returns false on failure.
void RunAndCheck(const RedistPlan& plan, const std::string& ctx) {
  const int n = plan.from.mesh().size();
  std::vector<Tensor> outputs(n);
  std::vector<int64_t> received(n, -1);
  const Status st = RunOnDevices(n, [&](Communicator& world) -> Status {
    const int r = world.rank();
    Tensor out;
    SHARDSCOPE_RETURN_IF_ERROR(ExecuteRedistribution(plan, world, InputShard(plan.from, r), &out));
    outputs[r] = std::move(out);
    received[r] = world.stats().bytes_received;
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message() << "\n" << ctx;
  EXPECT_EQ(received, plan.recv_bytes) << ctx;
  const Layout& to = plan.to;
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(outputs[r].shape(), to.ShardShape()) << ctx;
    const std::vector<int> group = to.PartialGroup(r);
    bool bad = false;
    ForBox(to.ShardOffsets(r), to.ShardShape(),
           [&](const std::vector<int64_t>& li, const std::vector<int64_t>& gi) {
             double sum = 0;
             for (int q : group) sum += outputs[q][LinearOf(to.ShardShape(), li)];
             if (sum != GlobalValue(LinearOf(to.shape(), gi))) bad = true;
           });
    ASSERT_FALSE(bad) << "wrong values on rank " << r << "\n" << ctx;
  }
}

TEST(RedistributionExecutorTest, RandomPlansOnInProcessDevices) {
  std::mt19937 rng(4242);
  CostModel cost;
  int partial_cases = 0;
  for (int i = 0; i < 300; ++i) {
    const redist_test::Case c = redist_test::RandomCase(rng, i % 2 == 0, 16, 1 + i % 3);
    Result<RedistPlan> plan = PlanRedistribution(c.from, c.to, cost);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    partial_cases += c.from.is_partial();
    RunAndCheck(*plan, "case " + std::to_string(i) + "\n" + plan->ToString());
    if (HasFailure()) break;
  }
  EXPECT_GT(partial_cases, 30);
}

TEST(RedistributionExecutorTest, EveryStepKindRuns) {
  using redist_test::MakeMesh;
  using redist_test::Spec;
  CostModel cost;
  const DeviceMesh m = MakeMesh({2, 2, 2}, {"dp", "sp", "mp"});
  const Shape shape = {8, 8};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dp,-", "-,-"},             // all-gather
      {"dp,-", "-,dp"},            // all-to-all
      {"-,-|P(mp)", "mp,-"},       // reduce-scatter
      {"-,-|P(mp)", "-,-"},        // all-reduce
      {"-,-", "(dp,sp),mp"},       // local slices
      {"(dp,sp),-", "(sp,dp),-"},  // permute
      {"dp,sp", "sp,dp"},          // irregular exchange
      {"-,-", "-,-|P(dp)"},        // zero-fill
      {"-,-|P(mp)", "(mp,dp),-"},  // reduce-scatter-v
  };
  for (const auto& [a, b] : cases) {
    Result<RedistPlan> plan = PlanRedistribution(Spec(m, a, shape), Spec(m, b, shape), cost);
    ASSERT_TRUE(plan.ok());
    RunAndCheck(*plan, a + " -> " + b + "\n" + plan->ToString());
  }
}

TEST(RedistributionExecutorTest, RejectsMismatchedInputs) {
  using redist_test::MakeMesh;
  using redist_test::Spec;
  const DeviceMesh m = MakeMesh({2}, {"x"});
  Result<RedistPlan> plan =
      PlanRedistribution(Spec(m, "x,-", {4, 4}), Spec(m, "-,-", {4, 4}), CostModel{});
  ASSERT_TRUE(plan.ok());
  Status st = RunOnDevices(2, [&](Communicator& world) -> Status {
    Tensor out;
    return ExecuteRedistribution(*plan, world, Tensor(Shape{3, 4}), &out);
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  st = RunOnDevices(4, [&](Communicator& world) -> Status {
    Tensor out;
    return ExecuteRedistribution(*plan, world, Tensor(Shape{2, 4}), &out);
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace shardscope
