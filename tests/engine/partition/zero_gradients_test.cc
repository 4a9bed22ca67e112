// ZeRO stages 2 and 3 keep only this rank's slice of each gradient: the executor
// reduce-scatters a gradient as soon as its last writer ran and frees the whole one. The law
// holds on 2, 4 and 8 devices with and without gradient buckets, the measured gradients are
// the slices, and the priced collectives are the ones a step calls.
#include <gtest/gtest.h>

#include <algorithm>

#include "law.h"
#include "shardscope/memory_liveness.h"
#include "shardscope/nn.h"
#include "shardscope/program_price.h"

namespace shardscope {
namespace {

using testing_law::CheckLaw;

constexpr int64_t kBatch = 16;

// Three dense layers; the 20- and 10-wide biases are not tiled by 8 slices (zero padding).
// `strategy` on fc2's matmul ("": data-parallel everywhere).
testing_law::BuildFn MlpWith(const std::string& strategy) {
  return [strategy] {
    nn::Sequential net{"mlp"};
    net.Add<nn::Flatten>("flatten");
    net.Add<nn::Dense>("fc1", 16, 32);
    net.Add<nn::Dense>("fc2", 32, 20);
    net.Add<nn::Dense>("fc3", 20, 10);
    if (!strategy.empty()) dynamic_cast<nn::Dense*>(net.Find("fc2"))->matmul.shard(strategy);
    return nn::BuildClassifier(net, {1, 4, 4}, kBatch);
  };
}

Dataset Data() { return MakeSyntheticDataset(kBatch * 5, {1, 4, 4}, 10, 3); }

PartitionOptions Zero(int stage, int devices) {
  PartitionOptions o;
  o.devices = devices;
  o.optimizer_sharding = stage;
  return o;
}

// Data parallel, and fc2 split over half the devices with the other half its replicas.
std::vector<std::string> Strategies(int devices) {
  if (devices == 2) return {"", "((1,1),(1,2))"};
  return {"", "((2,1),(1," + std::to_string(devices / 2) + "))"};
}

TEST(ZeroGradients, LawHoldsOnTwoFourAndEightDevicesWithAndWithoutBuckets) {
  TrainConfig each = testing_law::LawConfig(), blocking = each;
  each.bucket_bytes = 0;
  blocking.overlap_grad_reduce = false;
  for (int devices : {2, 4, 8}) {
    for (int stage : {2, 3}) {
      for (const std::string& strategy : Strategies(devices)) {
        for (const TrainConfig& config : {testing_law::LawConfig(), each, blocking}) {
          Status st =
              CheckLaw(MlpWith(strategy), Data(), kBatch, devices, Zero(stage, devices), 5, config);
          EXPECT_TRUE(st.ok()) << devices << " devices, stage " << stage << " " << strategy
                               << " bucket " << config.bucket_bytes << " overlap "
                               << config.overlap_grad_reduce << ": " << st.message();
        }
      }
    }
  }
}

// What one rank of a short run holds and measured.
struct Held {
  std::vector<int64_t> whole_grad_elements;  // the gradients' buffers after the step
  int64_t gradient_bytes = 0;                // RankStats::gradient_bytes
  int64_t slice_bytes = 0;                   // 4 x the chunks of the reduce-scattered ones
  int64_t peak = 0, planned = 0, largest_param = 0;
  RankMemory memory;
  std::vector<int> released_at_writer;  // per reduce-scattered gradient: 1 if freed there
};

std::vector<Held> TrainTwoSteps(int stage, const std::string& strategy, int devices = 8) {
  std::vector<Held> out(devices);
  const Dataset data = Data();
  Status st = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, MlpWith(strategy)());
    SHARDSCOPE_ASSIGN_OR_RETURN(auto t,
                                DistTrainer::Create(std::move(model), testing_law::LawConfig(),
                                                    Zero(stage, devices), comm.rank()));
    BatchIterator it(data, kBatch, 1, false);
    Tensor x, y;
    for (int s = 0; s < 2 && it.Next(&x, &y); ++s)
      SHARDSCOPE_RETURN_IF_ERROR(t->Step(comm, x, y).status());
    Held& h = out[comm.rank()];
    const DistProgram& p = t->program();
    for (size_t i = 0; i < p.param_grads.size(); ++i) {
      h.whole_grad_elements.push_back(t->executor().local(p.param_grads[i].second).size());
      const ParamSharding& s = p.param_sharding[i];
      if (!s.reduce_scatter) continue;
      h.slice_bytes += s.chunk * 4;
      // Freed (and reduce-scattered) at the position of its writer: nothing else reads it.
      const int grad = p.param_grads[i].second;
      int at = -1;
      for (size_t pos = 0; pos < p.schedule.size(); ++pos) {
        const auto& outs = p.instrs[p.schedule[pos]].outputs;
        if (std::find(outs.begin(), outs.end(), grad) != outs.end()) at = static_cast<int>(pos);
      }
      const auto& freed = p.release_after[at];
      h.released_at_writer.push_back(std::find(freed.begin(), freed.end(), grad) != freed.end());
    }
    for (ValueId v : t->parameters())
      h.largest_param = std::max(h.largest_param, NumElements(t->graph().value(v).shape) * 4);
    h.gradient_bytes = t->stats().gradient_bytes;
    h.peak = t->stats().peak_bytes;
    const int states = OptimizerStateTensors(testing_law::LawConfig().optimizer.kind);
    SHARDSCOPE_ASSIGN_OR_RETURN(h.memory, PlanRankMemory(t->graph(), p, states));
    h.planned = h.memory.total;
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

TEST(ZeroGradients, EachRankKeepsOnlyItsSliceOfTheGradient) {
  for (const std::string& strategy : Strategies(8)) {
    const std::vector<Held> one = TrainTwoSteps(1, strategy);
    for (int stage : {2, 3}) {
      const std::vector<Held> ranks = TrainTwoSteps(stage, strategy);
      for (size_t r = 0; r < ranks.size(); ++r) {
        const Held& h = ranks[r];
        SCOPED_TRACE("stage " + std::to_string(stage) + " " + strategy + " rank " +
                     std::to_string(r));
        ASSERT_FALSE(h.released_at_writer.empty());
        for (int at_writer : h.released_at_writer) EXPECT_EQ(at_writer, 1);
        // Stage 1 keeps every whole gradient; here the reduce-scattered ones are freed and
        // what is measured of them is their slices.
        int64_t kept_whole = 0, whole_before = 0;
        for (size_t i = 0; i < h.whole_grad_elements.size(); ++i) {
          kept_whole += h.whole_grad_elements[i] * 4;
          whole_before += one[r].whole_grad_elements[i] * 4;
        }
        EXPECT_EQ(h.gradient_bytes, kept_whole + h.slice_bytes);
        EXPECT_EQ(one[r].gradient_bytes, whole_before);
        EXPECT_LT(h.gradient_bytes * 2, one[r].gradient_bytes);
        // The plan is the measured peak (the busiest rank is 0) and counts fewer gradients.
        EXPECT_EQ(h.planned, ranks[0].peak + h.largest_param);
        EXPECT_LT(h.memory.gradients, one[r].memory.gradients);
      }
    }
  }
}

// The priced collectives are what a step calls: each all-reduce of a reduce-scattered
// gradient is replaced by one reduce-scatter, and each all-gather of its slices (stage 3:
// each gather before use) is one call.
TEST(ZeroGradients, PricedCollectivesAreTheOnesAStepCalls) {
  for (int stage : {0, 1, 2, 3}) {
    constexpr int kDevices = 8;
    std::vector<int64_t> calls(kDevices);
    ProgramPrice price;
    SearchOptions search;
    search.mode = SearchMode::kSemiAuto;
    search.devices = kDevices;
    const Dataset data = Data();
    TrainConfig config = testing_law::LawConfig();
    config.bucket_bytes = 0;  // every collective counted on its own
    Status st = RunOnDevices(kDevices, [&](Communicator& comm) -> Status {
      SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, MlpWith("((2,1),(1,4))")());
      SHARDSCOPE_ASSIGN_OR_RETURN(auto t, DistTrainer::Create(std::move(model), config,
                                                              Zero(stage, kDevices), comm.rank()));
      BatchIterator it(data, kBatch, 1, false);
      Tensor x, y;
      for (int s = 0; s < 3 && it.Next(&x, &y); ++s) {  // the first steps split communicators
        const int64_t before = comm.stats().calls;
        SHARDSCOPE_RETURN_IF_ERROR(t->Step(comm, x, y).status());
        calls[comm.rank()] = comm.stats().calls - before;
      }
      if (comm.rank() == 0) {
        SHARDSCOPE_ASSIGN_OR_RETURN(price, PriceProgram(t->graph(), t->program(), search));
      }
      return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(*std::max_element(calls.begin(), calls.end()), price.communication_steps)
        << "stage " << stage;
  }
}

}  // namespace
}  // namespace shardscope
