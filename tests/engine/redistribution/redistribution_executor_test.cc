// ExecuteRedistribution on in-process devices: random plans run for real over the threads
// backend; every rank ends with its target shard (partial targets: addends sum to the
// tensor) and the traffic the communicator counts equals the plan's bytes on every rank.
#include <gtest/gtest.h>

#include <limits>
#include <mutex>
#include <random>
#include <vector>

#include "redistribution_sim.h"
#include "shardscope/communicator.h"
#include "shardscope/redistribution/redistribution.h"

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

// Checks that the ranks' `outputs` are their shards of plan.to (addends summing to the
// tensor when it is partial).
void CheckOutputs(const RedistPlan& plan, const std::vector<Tensor>& outputs,
                  const std::string& ctx) {
  const Layout& to = plan.to;
  for (int r = 0; r < plan.from.mesh().size(); ++r) {
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

// Runs `plan` on its ranks; checks values and traffic.
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
  CheckOutputs(plan, outputs, ctx);
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
  using Kind = RedistStep::Kind;
  CostModel cost;
  const DeviceMesh m = MakeMesh({2, 2, 2}, {"dp", "sp", "mp"});
  const Shape shape = {8, 8};
  // Each pair is planned in steps of `kind` only; `irregular`: of transfers rather than along
  // one dimension.
  struct Case {
    std::string from, to;
    Kind kind;
    bool irregular;
  };
  const std::vector<Case> cases = {
      {"dp,-", "-,-", Kind::kAllGather, false},
      {"dp,-", "-,dp", Kind::kAllToAll, false},
      {"-,-|P(mp)", "mp,-", Kind::kReduceScatter, false},
      {"-,-|P(mp)", "-,-", Kind::kAllReduce, true},  // direct: each rank gets its addends
      {"-,-", "(dp,sp),mp", Kind::kLocalSlice, false},
      {"(dp,sp),-", "(sp,dp),-", Kind::kPermute, true},
      {"dp,sp", "sp,dp", Kind::kPermute, true},
      {"(dp,sp,mp),-", "-,dp", Kind::kAllToAll, true},
      {"-,-", "-,-|P(dp)", Kind::kLocalReshape, false},
      {"-,-|P(mp)", "(mp,dp),-", Kind::kReduceScatter, true},
  };
  for (const Case& c : cases) {
    Result<RedistPlan> plan =
        PlanRedistribution(Spec(m, c.from, shape), Spec(m, c.to, shape), cost);
    ASSERT_TRUE(plan.ok());
    const std::string ctx = c.from + " -> " + c.to + "\n" + plan->ToString();
    ASSERT_FALSE(plan->steps.empty()) << ctx;
    for (const RedistStep& step : plan->steps) EXPECT_EQ(step.kind, c.kind) << ctx;
    EXPECT_EQ(plan->steps[0].irregular(), c.irregular) << ctx;
    RunAndCheck(*plan, ctx);
  }
}

// One workspace per rank and one output tensor per plan, reused over two rounds of random
// plans on 8 devices (as DistExecutor does every step): the second round writes into the
// outputs' existing storage, which was poisoned with NaN, and still yields the target shards
// with exactly the planned traffic.
TEST(RedistributionExecutorTest, ReusedWorkspaceAndOutputs) {
  constexpr int kDevices = 8;
  std::mt19937 rng(777);
  CostModel cost;
  std::vector<RedistPlan> plans;
  for (int i = 0; plans.size() < 40 && i < 5000; ++i) {
    const redist_test::Case c = redist_test::RandomCase(rng, i % 2 == 0, 16, 1 + i % 3);
    if (c.from.mesh().size() != kDevices) continue;
    Result<RedistPlan> plan = PlanRedistribution(c.from, c.to, cost);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    plans.push_back(*std::move(plan));
  }
  ASSERT_EQ(plans.size(), 40u);
  constexpr int kRounds = 2;
  // outputs[round][plan][rank]; reused[plan][rank]: round 2 wrote into round 1's storage.
  std::vector<std::vector<std::vector<Tensor>>> outputs(
      kRounds, std::vector<std::vector<Tensor>>(plans.size(), std::vector<Tensor>(kDevices)));
  std::vector<std::vector<int>> reused(plans.size(), std::vector<int>(kDevices, 0));
  std::vector<std::vector<int64_t>> traffic(plans.size(), std::vector<int64_t>(kDevices, -1));
  std::mutex mu;
  const Status st = RunOnDevices(kDevices, [&](Communicator& world) -> Status {
    const int r = world.rank();
    RedistWorkspace workspace;
    std::vector<Tensor> mine(plans.size());
    for (int round = 0; round < kRounds; ++round) {
      for (size_t k = 0; k < plans.size(); ++k) {
        mine[k].Fill(std::numeric_limits<float>::quiet_NaN());
        const float* storage = mine[k].data();
        const int64_t before = world.stats().bytes_received;
        SHARDSCOPE_RETURN_IF_ERROR(ExecuteRedistribution(
            plans[k], world, InputShard(plans[k].from, r), &mine[k], &workspace));
        std::lock_guard<std::mutex> lock(mu);
        outputs[round][k][r] = mine[k];
        if (round > 0) {
          reused[k][r] = mine[k].data() == storage;
          traffic[k][r] = world.stats().bytes_received - before;
        }
      }
    }
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message();
  for (size_t k = 0; k < plans.size(); ++k) {
    const std::string ctx = "plan " + std::to_string(k) + "\n" + plans[k].ToString();
    for (int round = 0; round < kRounds; ++round) CheckOutputs(plans[k], outputs[round][k], ctx);
    EXPECT_EQ(traffic[k], plans[k].recv_bytes) << ctx;
    for (int r = 0; r < kDevices; ++r) {
      EXPECT_TRUE(reused[k][r]) << "rank " << r << "\n" << ctx;
    }
    if (HasFailure()) break;
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
