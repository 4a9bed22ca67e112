// The prediction's model of this machine: the calibrated profile (compute_slots included)
// round-trips through JSON, and the predicted step time grows as devices share fewer cores.
#include <gtest/gtest.h>

#include <limits>

#include "models.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/search.h"

namespace shardscope {
namespace {

CostModel Calibrated() {
  CostModel c;
  c.latency_s = 14e-6;
  c.default_bandwidth = 1.7e9;
  c.axis_bandwidth = {{"dp", 1.5e9}};
  c.axis_latency = {{"dp", 40e-6}};
  c.flops = 88e9;
  c.memory_bandwidth = 9e9;
  c.collective_overhead_s = 30e-6;
  c.in_process.compute_slots = 2.1;
  c.in_process.collective_handoff_s = 50e-6;
  c.in_process.group_sync_s = 120e-6;
  return c;
}

TEST(Profile, CalibratedProfileRoundTripsWithComputeSlots) {
  const CostModel c = Calibrated();
  auto back = CostModelFromJson(CostModelToJson(c), "profile.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->latency_s, c.latency_s);
  EXPECT_EQ(back->default_bandwidth, c.default_bandwidth);
  EXPECT_EQ(back->axis_bandwidth, c.axis_bandwidth);
  EXPECT_EQ(back->axis_latency, c.axis_latency);
  EXPECT_EQ(back->flops, c.flops);
  EXPECT_EQ(back->memory_bandwidth, c.memory_bandwidth);
  EXPECT_EQ(back->collective_overhead_s, c.collective_overhead_s);
  EXPECT_EQ(back->in_process.compute_slots, c.in_process.compute_slots);
  EXPECT_EQ(back->in_process.collective_handoff_s, c.in_process.collective_handoff_s);
  EXPECT_EQ(back->in_process.group_sync_s, c.in_process.group_sync_s);
  EXPECT_EQ(back->Fingerprint(), c.Fingerprint());
  // An older profile without the field keeps "one core per device".
  auto old = CostModelFromJson(R"({"latency_s": 1e-5})", "old.json");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->in_process.compute_slots, 0);
  EXPECT_EQ(old->in_process.ComputeSlowdown(8), 1.0);
  EXPECT_FALSE(CostModelFromJson(R"({"compute_slots": -1})", "bad.json").ok());
}

TEST(Profile, ComputeSlotsLeaveThePlannersPricesAlone) {
  CostModel shared = Calibrated(), own = Calibrated();
  own.in_process.compute_slots = 0;
  own.in_process.collective_handoff_s = 0;
  own.in_process.group_sync_s = 0;
  own.axis_latency.clear();
  EXPECT_EQ(shared.Fingerprint(), own.Fingerprint());
  EXPECT_EQ(shared.CollectiveSeconds(CollectiveKind::kAllReduce, 1e6, 8, 1.7e9),
            own.CollectiveSeconds(CollectiveKind::kAllReduce, 1e6, 8, 1.7e9));
  EXPECT_EQ(shared.in_process.ComputeSlowdown(8), 8 / 2.1);
  EXPECT_EQ(shared.in_process.ComputeSlowdown(2), 1.0);  // fewer devices than slots: no slowdown
}

double Predict(const Graph& forward, int devices, double compute_slots,
               double collective_handoff_s = 50e-6) {
  SearchOptions o;
  o.devices = devices;
  o.cost = Calibrated();
  o.cost.in_process.compute_slots = compute_slots;
  o.cost.in_process.collective_handoff_s = collective_handoff_s;
  auto s = PredictStepSeconds(forward, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : 0.0;
}

TEST(Predict, StepTimeGrowsAsDevicesShareFewerCores) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 32).value();
  // No hand-off: capped by the computation before each collective, it would move with the
  // slots too (Predict.TheHandOffIsAtMostTheComputationBeforeTheCollective).
  const double own_cores = Predict(m.graph, 8, 0, 0), eight = Predict(m.graph, 8, 8, 0);
  const double four = Predict(m.graph, 8, 4, 0), two = Predict(m.graph, 8, 2, 0),
               one = Predict(m.graph, 8, 1, 0);
  EXPECT_EQ(eight, own_cores);
  EXPECT_GT(four, eight);
  EXPECT_GT(two, four);
  EXPECT_GT(one, two);
  // Only computation is serialised: the communication part stays, so halving the slots
  // adds exactly as much again as the previous halving added in computation terms.
  const double compute_on_own_core = (four - eight) / (2 - 1);
  EXPECT_NEAR(two - four, 2 * compute_on_own_core, 1e-12);
  EXPECT_NEAR(one - two, 4 * compute_on_own_core, 1e-12);
  EXPECT_GT(eight - compute_on_own_core, 0);  // collectives remain
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

TEST(Predict, CollectivesAfterComputationPayTheMeasuredHandOff) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 32).value();
  const double none = Predict(m.graph, 8, 2, 0), some = Predict(m.graph, 8, 2, 50e-6),
               more = Predict(m.graph, 8, 2, 100e-6);
  EXPECT_GT(some, none);
  EXPECT_GT(more, some);
  // Not more than linear: a collective pays at most the hand-off.
  EXPECT_LE(more - some, some - none + 1e-12);
  // The FFN's step has several collectives after its MatMuls (gradient reductions), each
  // following far more than 50 us of computation on 2 slots.
  EXPECT_GT(some - none, 5 * 50e-6);
  // One device: no collective, nothing to hand off.
  EXPECT_EQ(Predict(m.graph, 1, 2, 0), Predict(m.graph, 1, 2, 100e-6));
}

TEST(Predict, TheHandOffIsAtMostTheComputationBeforeTheCollective) {
  // Seed 002's MatMul of [32, 32] x [32, 16] and ReLU on 8 devices: four collectives, each
  // after well under a microsecond of computation. The threads are still scheduled when
  // they reach them (measured: about the group sync per collective), so a large hand-off
  // hardly moves the prediction.
  samples::MatMulReluNet net;
  net.matmul.shard("((2, 4), (4, 1))");
  net.relu.shard("((8, 1),)");
  const ModelGraph m = nn::BuildClassifier(net, {32}, 32).value();
  SearchOptions o;
  o.devices = 8;
  o.mode = SearchMode::kSemiAuto;
  o.cost = Calibrated();
  o.cost.in_process.collective_handoff_s = 0;
  const SearchResult none = SearchStrategies(m.graph, o).value();
  o.cost.in_process.collective_handoff_s = 1e-3;
  const SearchResult big = SearchStrategies(m.graph, o).value();
  EXPECT_EQ(none.collectives, big.collectives);
  ASSERT_GE(none.collectives, 3);
  // Each collective's hand-off is capped by the computation of the operator before it, at
  // most the whole step's computation.
  EXPECT_GE(big.step_seconds, none.step_seconds);
  EXPECT_LE(big.step_seconds - none.step_seconds, none.collectives * none.operator_seconds + 1e-12);
  EXPECT_LT(big.step_seconds - none.step_seconds, 0.01 * none.collectives * 1e-3);
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

TEST(Profile, GroupSyncIsTheLeastAnyCollectiveOrExchangeCosts) {
  CostModel c;
  c.latency_s = 10e-6;
  c.collective_overhead_s = 0;
  c.in_process.collective_handoff_s = 0;
  c.in_process.group_sync_s = 0;
  // Without it: the formulas (an exchange with one peer pays one latency).
  EXPECT_DOUBLE_EQ(c.SearchExchangeSeconds(1, 1e3, 1e9), 10e-6 + 1e-6);
  EXPECT_DOUBLE_EQ(c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 0, 8), 14 * 10e-6);
  c.in_process.group_sync_s = 100e-6;
  // With it: the latency part is raised to the synchronisation of the devices; bytes still
  // cost their bandwidth term on top.
  EXPECT_DOUBLE_EQ(c.SearchExchangeSeconds(1, 1e3, 1e9), 100e-6 + 1e-6);
  EXPECT_DOUBLE_EQ(c.SearchCollectiveSeconds(CollectiveKind::kAllGather, 8e3, 2, 1e9),
                   100e-6 + 0.5 * 8e3 / 1e9);
  // A collective whose formula latency is larger keeps it.
  EXPECT_DOUBLE_EQ(c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 0, 8), 14 * 10e-6);
  // Nothing moved, nothing paid.
  EXPECT_EQ(c.SearchExchangeSeconds(3, 0, 1e9), 0.0);
  EXPECT_EQ(c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 1e3, 1), 0.0);
}

TEST(Profile, TheOverheadIsPartOfTheGroupSyncNotAddedToIt) {
  // Calibrate's group_sync_s is a whole 4-byte all-reduce on every device: its latencies and
  // its fixed overhead. A collective that costs no more than that by the formulas costs the
  // group sync, not the group sync plus the overhead again.
  CostModel c;
  c.latency_s = 3e-6;
  c.collective_overhead_s = 20e-6;
  c.in_process.collective_handoff_s = 0;
  c.in_process.group_sync_s =
      2 * 7 * 3e-6 + 20e-6;  // what calibrate measures when the fit is exact
  EXPECT_DOUBLE_EQ(c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 0, 8),
                   c.in_process.group_sync_s);
  EXPECT_DOUBLE_EQ(c.SearchExchangeSeconds(1, 1e3, 1e9), c.in_process.group_sync_s + 1e-6);
  // Larger than the sync by the formulas: the formulas (latencies + overhead).
  c.in_process.group_sync_s = 10e-6;
  EXPECT_DOUBLE_EQ(c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 0, 8),
                   2 * 7 * 3e-6 + 20e-6);
}

// `text` read as a cost profile; the default model (and a failure) when it does not parse.
CostModel ReadProfile(const std::string& text) {
  auto m = CostModelFromJson(text, "profile.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : CostModel{};
}

TEST(Profile, AStepInPairsPaysThePairSyncAndLargerGroupsInBetween) {
  CostModel c;
  c.in_process.group_sync_s = 120e-6;
  // Older profiles (no pair sync): every group pays the sync of all devices.
  EXPECT_EQ(c.in_process.GroupSyncSeconds(2, 8), 120e-6);
  c.in_process.pair_sync_s = 30e-6;
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(2, 8), 30e-6);
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(4, 8), 60e-6);  // calibrate: groups of 4, 65-74 us
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(8, 8), 120e-6);
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(2, 2), 120e-6);  // a pair is every device
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(2, 4096), 30e-6);
  // A pair never costs more than all devices together.
  c.in_process.pair_sync_s = 200e-6;
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(2, 8), 120e-6);
  // Round trip; older profiles read without it.
  c.in_process.pair_sync_s = 33e-6;
  EXPECT_EQ(ReadProfile(CostModelToJson(c)).in_process.pair_sync_s, c.in_process.pair_sync_s);
  EXPECT_EQ(ReadProfile(R"({"group_sync_s": 1e-4})").in_process.pair_sync_s, 0);
  EXPECT_FALSE(CostModelFromJson(R"({"pair_sync_s": -1})", "bad.json").ok());
}

TEST(Profile, AStepInHalvesPaysTheHalfSyncAndTheLineRunsThroughIt) {
  CostModel c;
  c.in_process.group_sync_s = 120e-6;
  c.in_process.pair_sync_s = 30e-6;
  c.in_process.half_sync_s = 100e-6;
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(2, 8), 30e-6);
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(4, 8), 100e-6);  // calibrate: 0.75-0.88 of all 8
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(8, 8), 120e-6);
  // 16 devices: pairs, halves of 8, all 16; groups of 4 and of 12 in between.
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(4, 16), 30e-6 + 70e-6 * 2 / 6);
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(8, 16), 100e-6);
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(12, 16), 110e-6);
  // 4 devices: the halves are the pairs; the line from the pair sync.
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(2, 4), 30e-6);
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(4, 4), 120e-6);
  // Kept between the pair sync and the sync of every device.
  c.in_process.half_sync_s = 200e-6;
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(4, 8), 120e-6);
  c.in_process.half_sync_s = 10e-6;
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(4, 8), 30e-6);
  // Without the pair sync the halves do not count (older pricing).
  c.in_process.pair_sync_s = 0;
  c.in_process.half_sync_s = 100e-6;
  EXPECT_DOUBLE_EQ(c.in_process.GroupSyncSeconds(4, 8), 120e-6);
  // Round trip; older profiles read without it (the line from the pair sync, as before).
  c.in_process.pair_sync_s = 30e-6;
  EXPECT_EQ(ReadProfile(CostModelToJson(c)).in_process.half_sync_s, c.in_process.half_sync_s);
  const CostModel old = ReadProfile(R"({"group_sync_s": 1.2e-4, "pair_sync_s": 3e-5})");
  EXPECT_EQ(old.in_process.half_sync_s, 0);
  EXPECT_DOUBLE_EQ(old.in_process.GroupSyncSeconds(4, 8), 60e-6);
  EXPECT_FALSE(CostModelFromJson(R"({"half_sync_s": -1})", "bad.json").ok());
}

double PredictWithSync(const Graph& forward, double group_sync_s, SearchResult* result) {
  SearchOptions o;
  o.devices = 8;
  o.mode = SearchMode::kSemiAuto;
  o.cost = Calibrated();
  o.cost.in_process.group_sync_s = group_sync_s;
  auto r = SearchStrategies(forward, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok()) *result = *r;
  return r.ok() ? r->step_seconds : 0.0;
}

TEST(Predict, StepTimeGrowsWithTheGroupSyncOfEveryCollective) {
  samples::FFN net;
  net.dense1.matmul.shard("((2,4),(4,1))");
  net.dense3.matmul.shard("((1,8),(8,1))");
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 32).value();
  SearchResult none, big;
  const double t0 = PredictWithSync(m.graph, 0, &none);
  const double t1 = PredictWithSync(m.graph, 1e-3, &big);
  // The same strategies (semi_auto), the same collectives; each now costs at least 1 ms
  // (+ the hand-off), so the step is at least that many milliseconds.
  EXPECT_EQ(none.collectives, big.collectives);
  EXPECT_GT(none.collectives, 5);
  EXPECT_GT(t1, t0);
  EXPECT_GE(t1 - none.operator_seconds, big.collectives * (1e-3 + 50e-6) - 1e-9);
  // Computation does not change.
  EXPECT_EQ(none.operator_seconds, big.operator_seconds);
}

TEST(Predict, TheReportedLossIsReducedWhenTheBatchIsSplit) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 32).value();
  SearchOptions o;
  o.mode = SearchMode::kSemiAuto;
  o.cost = Calibrated();
  o.devices = 8;
  SearchResult dp = SearchStrategies(m.graph, o).value();
  // Data-parallel: one all-reduce per parameter gradient (10) and one for the loss, which is
  // a partial sum over the batch; nothing else communicates.
  EXPECT_EQ(dp.collectives, 11);
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

TEST(Predict, TheOptimizerUpdateIsPricedByTheBytesItMoves) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 32).value();
  auto compute = [&](int states, double memory_bandwidth) {
    SearchOptions o;
    o.mode = SearchMode::kSemiAuto;
    o.devices = 1;
    o.cost = Calibrated();
    o.cost.memory_bandwidth = memory_bandwidth;
    o.optimizer_states = states;
    return SearchStrategies(m.graph, o).value().operator_seconds;
  };
  // SGD reads the weight and the gradient and writes the weight (3 x the parameter bytes);
  // each state tensor adds a read and a write.
  const double sgd = compute(0, 9e9), momentum = compute(1, 9e9), adam = compute(2, 9e9);
  double parameter_bytes = 0;
  for (const Value& v : m.graph.values()) {
    if (v.kind == ValueKind::kParameter) parameter_bytes += 4.0 * NumElements(v.shape);
  }
  EXPECT_NEAR(momentum - sgd, 2 * parameter_bytes / 9e9, 1e-12);
  EXPECT_NEAR(adam - momentum, 2 * parameter_bytes / 9e9, 1e-12);
  // Memory-bound: a slower memory makes it dearer.
  EXPECT_GT(compute(1, 4.5e9), momentum);
}

TEST(Profile, TheHandOffIsCappedByTheComputationBefore) {
  CostModel c;
  c.latency_s = 10e-6;
  c.collective_overhead_s = 5e-6;
  c.in_process.collective_handoff_s = 40e-6;
  c.in_process.group_sync_s = 100e-6;
  EXPECT_EQ(c.in_process.HandoffSeconds(0), 0.0);
  EXPECT_EQ(c.in_process.HandoffSeconds(-1), 0.0);
  EXPECT_DOUBLE_EQ(c.in_process.HandoffSeconds(15e-6), 15e-6);
  EXPECT_DOUBLE_EQ(c.in_process.HandoffSeconds(1.0), 40e-6);
  const double inf = std::numeric_limits<double>::infinity();
  // After enough computation: the price without the cap.
  EXPECT_DOUBLE_EQ(c.SearchCollectiveAfterSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9, -1, inf),
                   c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9));
  // After none: without the hand-off (the group sync and the overhead remain).
  EXPECT_DOUBLE_EQ(c.SearchCollectiveAfterSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9, -1, 0),
                   c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9) - 40e-6);
  EXPECT_DOUBLE_EQ(
      c.SearchCollectiveAfterSeconds(CollectiveKind::kAllGather, 8e3, 2, 1e9, -1, 10e-6),
      100e-6 + 0.5 * 8e3 / 1e9 + 10e-6);
  // An exchange in three steps: only the first follows the computation.
  EXPECT_DOUBLE_EQ(c.SearchExchangeAfterSeconds(3, 4e3, 1e9, 3, -1, inf),
                   3 * 100e-6 + 4e-6 + 40e-6);
  EXPECT_DOUBLE_EQ(c.SearchExchangeAfterSeconds(3, 4e3, 1e9, 3, -1, 0), 3 * 100e-6 + 4e-6);
  // Nothing moved, nothing paid.
  EXPECT_EQ(c.SearchExchangeAfterSeconds(3, 0, 1e9, 1, -1, inf), 0.0);
  EXPECT_EQ(c.SearchCollectiveAfterSeconds(CollectiveKind::kAllReduce, 1e3, 1, 1e9, -1, inf), 0.0);
}

TEST(Profile, AnExchangeInSeveralStepsSynchronisesOncePerStep) {
  CostModel c;
  c.latency_s = 10e-6;
  c.collective_overhead_s = 5e-6;
  c.in_process.collective_handoff_s = 0;
  c.in_process.group_sync_s = 100e-6;
  const double one = c.SearchExchangeSeconds(3, 4e3, 1e9, 1);
  const double two = c.SearchExchangeSeconds(3, 4e3, 1e9, 2);
  EXPECT_DOUBLE_EQ(one, 100e-6 + 4e-6);
  EXPECT_DOUBLE_EQ(two - one, 100e-6);  // the bytes are moved once either way
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

// The FFN's predicted step on 8 devices with `slots` compute slots and the given hand-offs.
double PredictFfn(double slots, double collective_handoff_s, double long_phase_handoff_s) {
  samples::FFN net;
  const ModelGraph m = nn::BuildClassifier(net, {1, 28, 28}, 32).value();
  SearchOptions o;
  o.devices = 8;
  o.cost = Calibrated();
  o.cost.in_process.compute_slots = slots;
  o.cost.in_process.collective_handoff_s = collective_handoff_s;
  o.cost.in_process.long_phase_handoff_s = long_phase_handoff_s;
  auto s = PredictStepSeconds(m.graph, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : 0.0;
}

// With long_phase_handoff_s, a collective after an operator pays what that operator's phase
// costs on one core beyond its price at the compute slots: 8 devices' work one after another
// is slots x the price, so (slots - 1) x the operator's computation, up to the cap.
TEST(Predict, APhaseStartsOnOneCoreAndPaysItsExtraUpToTheLongPhaseHandOff) {
  const double big = 1.0;  // a cap no collective reaches
  for (double slots : {1.5, 2.0, 4.0}) {
    SCOPED_TRACE(slots);
    const double none = PredictFfn(slots, 0, 0);
    // The old rule without a cap: every collective pays the operator's whole computation.
    const double whole = PredictFfn(slots, big, 0) - none;
    ASSERT_GT(whole, 0);
    const double phase = PredictFfn(slots, 0, big) - none;
    EXPECT_NEAR(phase, (slots - 1) * whole, 1e-9);
    // A smaller cap: less, but still something.
    const double capped = PredictFfn(slots, 0, 10e-6) - none;
    EXPECT_GT(capped, 0);
    EXPECT_LT(capped, phase);
  }
  // Every device its own core (slots >= devices): no phase waits on one core.
  EXPECT_NEAR(PredictFfn(8, 0, big), PredictFfn(8, 0, 0), 1e-12);
  // Fewer than one core (slots < 1): one core is no slower than the price; nothing added.
  EXPECT_NEAR(PredictFfn(0.8, 0, big), PredictFfn(0.8, 0, 0), 1e-12);
}

TEST(Profile, TheLongPhaseHandOffIsTheMostAnyHandOffCosts) {
  CostModel c;
  c.in_process.collective_handoff_s = 40e-6;
  EXPECT_DOUBLE_EQ(c.in_process.MaxHandoffSeconds(), 40e-6);
  c.in_process.long_phase_handoff_s = 900e-6;
  EXPECT_DOUBLE_EQ(c.in_process.MaxHandoffSeconds(), 900e-6);
  EXPECT_DOUBLE_EQ(c.in_process.HandoffSeconds(100e-6), 100e-6);
  EXPECT_DOUBLE_EQ(c.in_process.HandoffSeconds(1.0), 900e-6);
  EXPECT_EQ(c.in_process.HandoffSeconds(-1), 0.0);
  // A collective after an unknown amount of computation pays the most.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(c.SearchCollectiveAfterSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9, -1, inf),
                   c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9));
  EXPECT_DOUBLE_EQ(c.SearchCollectiveAfterSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9, -1, 0),
                   c.SearchCollectiveSeconds(CollectiveKind::kAllReduce, 4e3, 8, 1e9) - 900e-6);
}

TEST(Profile, LongPhaseHandOffRoundTripsAndOlderProfilesKeepTheOldCap) {
  CostModel c = Calibrated();
  c.in_process.long_phase_handoff_s = 1.1e-3;
  auto back = CostModelFromJson(CostModelToJson(c), "profile.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->in_process.long_phase_handoff_s, c.in_process.long_phase_handoff_s);
  // A profile written before the field: 0, so the hand-off stays at most
  // collective_handoff_s and the computation before.
  auto old = CostModelFromJson(CostModelToJson(Calibrated()), "old.json");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->in_process.long_phase_handoff_s, 0);
  EXPECT_DOUBLE_EQ(old->in_process.HandoffSeconds(1.0),
                   Calibrated().in_process.collective_handoff_s);
  EXPECT_EQ(CostModelToJson(Calibrated()).find("long_phase_handoff_s"), std::string::npos);
  EXPECT_FALSE(CostModelFromJson(R"({"long_phase_handoff_s": -1})", "bad.json").ok());
}

}  // namespace
}  // namespace shardscope
