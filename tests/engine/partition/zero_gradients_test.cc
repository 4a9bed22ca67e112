// ZeRO stages 2 and 3 keep only this rank's slice of each gradient: the executor hands a
// gradient to its bucket as soon as its last writer ran and frees the whole one; a full bucket
// is reduce-scattered in one call. The law holds on 2, 4 and 8 devices with and without
// gradient buckets, the measured gradients are the slices, the planned peak (buckets
// included) is the measured one, the priced collectives are the ones a step calls, and each
// bucket's reduce-scatter and each stage-3 gather is a timed span.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "law.h"
#include "shardscope/memory_liveness.h"
#include "shardscope/nn.h"
#include "shardscope/program_price.h"

namespace shardscope {
namespace {

using testing_law::CheckLaw;

constexpr int64_t kBatch = 16;
// Buckets of a few gradients each (fc1's weight alone is 2 KiB): several per step.
constexpr int64_t kSmallBucket = 1024;

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

// Overlapped (the default: each bucket's reduce-scatter runs beside the backward) and
// blocking, each gradient alone, one bucket, and several.
TEST(ZeroGradients, LawHoldsOnTwoFourAndEightDevicesWithAndWithoutBuckets) {
  TrainConfig each = testing_law::LawConfig(), blocking = each, small = each;
  each.bucket_bytes = 0;
  blocking.overlap_grad_reduce = false;
  small.bucket_bytes = kSmallBucket;
  TrainConfig small_blocking = small, each_blocking = each;
  small_blocking.overlap_grad_reduce = each_blocking.overlap_grad_reduce = false;
  for (int devices : {2, 4, 8}) {
    for (int stage : {2, 3}) {
      for (const std::string& strategy : Strategies(devices)) {
        for (const TrainConfig& config :
             {testing_law::LawConfig(), each, blocking, small, small_blocking, each_blocking}) {
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
  int64_t padded_bytes = 0;                  // theirs whole, zero-padded to the slices
  int64_t peak = 0, planned = 0, largest_param = 0;
  RankMemory memory;
  std::vector<int> released_at_writer;      // per reduce-scattered gradient: 1 if freed there
  int64_t buckets = 0, largest_bucket = 0;  // scatter buckets, most gradients in one
  int64_t largest_bucket_bytes = 0;         // the most bytes one holds
};

std::vector<Held> TrainTwoSteps(int stage, const std::string& strategy, int devices = 8,
                                int64_t bucket_bytes = testing_law::LawConfig().bucket_bytes,
                                bool overlap = true) {
  std::vector<Held> out(devices);
  const Dataset data = Data();
  TrainConfig config = testing_law::LawConfig();
  config.bucket_bytes = bucket_bytes;
  config.overlap_grad_reduce = overlap;
  Status st = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, MlpWith(strategy)());
    SHARDSCOPE_ASSIGN_OR_RETURN(
        auto t, DistTrainer::Create(std::move(model), config, Zero(stage, devices), comm.rank()));
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
      h.padded_bytes += s.chunk * s.group_size * 4;
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
    h.buckets = static_cast<int64_t>(p.scatter_buckets.size());
    for (const ScatterBucket& b : p.scatter_buckets)
      h.largest_bucket = std::max<int64_t>(h.largest_bucket, static_cast<int64_t>(b.params.size()));
    for (const ScatterBucket& b : p.scatter_buckets)
      h.largest_bucket_bytes = std::max(h.largest_bucket_bytes, b.group_size * b.slice * 4);
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

// Blocking, and overlapped (the default): a bucket in flight holds its copy until the next
// one is started, so overlapping holds at most one bucket more than blocking (a lone
// gradient is copied too: two).
TEST(ZeroGradients, EachRankKeepsOnlyItsSliceOfTheGradient) {
  for (const std::string& strategy : Strategies(8)) {
    const std::vector<Held> one = TrainTwoSteps(1, strategy);
    for (const auto& [stage, bucket] : {std::pair{2, testing_law::LawConfig().bucket_bytes},
                                        std::pair{3, testing_law::LawConfig().bucket_bytes},
                                        std::pair{2, int64_t{0}}, std::pair{3, kSmallBucket}}) {
      const std::vector<Held> blocking = TrainTwoSteps(stage, strategy, 8, bucket, false);
      for (bool overlap : {false, true}) {
        const std::vector<Held> ranks =
            overlap ? TrainTwoSteps(stage, strategy, 8, bucket, true) : blocking;
        const std::vector<Held> alone = TrainTwoSteps(stage, strategy, 8, 0, overlap);
        for (size_t r = 0; r < ranks.size(); ++r) {
          const Held& h = ranks[r];
          SCOPED_TRACE("stage " + std::to_string(stage) + " " + strategy + " bucket " +
                       std::to_string(bucket) + (overlap ? " overlapped" : " blocking") + " rank " +
                       std::to_string(r));
          // Every gradient alone without buckets; a few together in the small ones.
          if (bucket == 0) {
            EXPECT_EQ(h.buckets, static_cast<int64_t>(h.released_at_writer.size()));
            EXPECT_EQ(h.largest_bucket, 1);
          } else if (bucket == kSmallBucket) {
            EXPECT_GT(h.largest_bucket, 1);
            EXPECT_GT(h.buckets, 1);
          }
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
          // The plan is the measured peak (the busiest rank is 0).
          EXPECT_EQ(h.planned, ranks[0].peak + h.largest_param);
          if (overlap) {  // a bucket in flight more at most (and a lone gradient's copy)
            const int64_t extra = h.largest_bucket_bytes * (h.largest_bucket == 1 ? 2 : 1);
            EXPECT_LE(h.planned, blocking[r].planned + extra);
          } else if (bucket < h.padded_bytes) {  // fewer gradients than stage 1
            EXPECT_LT(h.memory.gradients, one[r].memory.gradients);
          }
          // A bucket holding all of its groups' gradients (the default here) keeps them whole
          // until the backward ends, as copies in the bucket, which the plan counts.
          if (bucket >= h.padded_bytes) {
            EXPECT_GT(h.planned, alone[r].planned);
            EXPECT_LE(h.planned, alone[r].planned + h.padded_bytes);
          }
        }
      }
    }
  }
}

// The priced collectives are what a step calls: the all-reduces of reduce-scattered
// gradients are replaced by one reduce-scatter per bucket of them, and each all-gather of a
// parameter's slices (stage 3: each gather before use) is one call. Each of those calls is a
// span of the step's timing, where the debugger's timeline and `trace` find it.
TEST(ZeroGradients, PricedCollectivesAreTheOnesAStepCalls) {
  std::map<int64_t, int64_t> stage2_calls;  // by bucket bytes
  for (const auto& [stage, bucket] :
       {std::pair{0, int64_t{0}}, std::pair{1, int64_t{0}}, std::pair{2, int64_t{0}},
        std::pair{3, int64_t{0}}, std::pair{2, kSmallBucket}, std::pair{3, kSmallBucket}}) {
    SCOPED_TRACE("stage " + std::to_string(stage) + " bucket " + std::to_string(bucket));
    constexpr int kDevices = 8;
    std::vector<int64_t> calls(kDevices), scatter_spans(kDevices), gather_spans(kDevices);
    ProgramPrice price;
    int64_t buckets = 0, gathers = 0;
    SearchOptions search;
    search.mode = SearchMode::kSemiAuto;
    search.devices = kDevices;
    const Dataset data = Data();
    TrainConfig config = testing_law::LawConfig();
    config.bucket_bytes = bucket;  // 0: every collective counted on its own
    const int zero = stage;        // a lambda may not capture a structured binding (C++17)
    Status st = RunOnDevices(kDevices, [&](Communicator& comm) -> Status {
      SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, MlpWith("((2,1),(1,4))")());
      SHARDSCOPE_ASSIGN_OR_RETURN(
          auto t, DistTrainer::Create(std::move(model), config, Zero(zero, kDevices), comm.rank()));
      BatchIterator it(data, kBatch, 1, false);
      Tensor x, y;
      for (int s = 0; s < 3 && it.Next(&x, &y); ++s) {  // the first steps split communicators
        const int64_t before = comm.stats().calls;
        SHARDSCOPE_RETURN_IF_ERROR(t->Step(comm, x, y).status());
        calls[comm.rank()] = comm.stats().calls - before;
      }
      for (const InstrSpan& s : t->executor().last_spans()) {
        scatter_spans[comm.rank()] += s.part == kScatterSpanPart;
        gather_spans[comm.rank()] += s.part == kGatherSpanPart;
      }
      if (comm.rank() == 0) {
        SHARDSCOPE_ASSIGN_OR_RETURN(price, PriceProgram(t->graph(), t->program(), search));
        buckets = static_cast<int64_t>(t->program().scatter_buckets.size());
        for (const ParamSharding& s : t->program().param_sharding)
          gathers += s.gathered ? s.gathers : 0;
      }
      return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(*std::max_element(calls.begin(), calls.end()), price.communication_steps);
    if (stage == 2) stage2_calls[bucket] = calls[0];
    EXPECT_EQ(buckets > 0, stage >= 2);
    for (int r = 0; r < kDevices; ++r) {
      EXPECT_EQ(scatter_spans[r], buckets) << "rank " << r;
      EXPECT_EQ(gather_spans[r], gathers) << "rank " << r;
    }
  }
  EXPECT_LT(stage2_calls[kSmallBucket], stage2_calls[0]);  // buckets pay the latency once
}

// Overlapped, each bucket's reduce-scatter is started where its last gradient is freed and
// waited for once the next one is started (the last before the update): instructions of the
// backward run between a start and its wait. Blocking, each is one span and nothing runs
// during it. Both make the same collective calls.
TEST(ZeroGradients, OverlappedReduceScattersRunBesideTheBackward) {
  constexpr int kDevices = 4;
  std::map<bool, int64_t> calls;
  for (bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "overlapped" : "blocking");
    std::vector<std::vector<InstrSpan>> spans(kDevices);
    int64_t buckets = 0;
    TrainConfig config = testing_law::LawConfig();
    config.bucket_bytes = kSmallBucket;
    config.overlap_grad_reduce = overlap;
    const Dataset data = Data();
    Status st = RunOnDevices(kDevices, [&](Communicator& comm) -> Status {
      SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, MlpWith("")());
      SHARDSCOPE_ASSIGN_OR_RETURN(
          auto t, DistTrainer::Create(std::move(model), config, Zero(2, kDevices), comm.rank()));
      BatchIterator it(data, kBatch, 1, false);
      Tensor x, y;
      for (int s = 0; s < 2 && it.Next(&x, &y); ++s) {
        const int64_t before = comm.stats().calls;
        SHARDSCOPE_RETURN_IF_ERROR(t->Step(comm, x, y).status());
        if (comm.rank() == 0) calls[overlap] = comm.stats().calls - before;
      }
      spans[comm.rank()] = t->executor().last_spans();
      if (comm.rank() == 0) {
        buckets = static_cast<int64_t>(t->program().scatter_buckets.size());
        if (t->program().scatter_overlap != overlap) return Status::Internal("scatter_overlap");
      }
      return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_GT(buckets, 1);
    for (int r = 0; r < kDevices; ++r) {
      std::vector<InstrSpan> starts, waits, computes;
      for (const InstrSpan& s : spans[r]) {
        if (s.part == kScatterSpanPart) starts.push_back(s);
        if (s.part == kScatterWaitSpanPart) waits.push_back(s);
        if (s.part == -1) computes.push_back(s);
      }
      ASSERT_FALSE(computes.empty());
      ASSERT_EQ(static_cast<int64_t>(starts.size()), buckets) << "rank " << r;
      ASSERT_EQ(waits.size(), overlap ? starts.size() : 0u) << "rank " << r;
      const double backward_end = computes.back().end;
      int beside = 0;  // buckets with instructions run while in flight
      for (size_t b = 0; b < starts.size(); ++b) {
        EXPECT_LT(starts[b].start, backward_end) << "rank " << r << " bucket " << b;
        const double done = overlap ? waits[b].end : starts[b].end;
        if (overlap) {
          EXPECT_EQ(waits[b].instr, starts[b].instr);
          EXPECT_GE(waits[b].start, starts[b].end);
        }
        int during = 0;
        for (const InstrSpan& c : computes) during += c.start >= starts[b].end && c.end <= done;
        beside += during > 0;
      }
      if (overlap)  // the last may be started after the backward's last instruction
        EXPECT_GE(beside, buckets - 1) << "rank " << r;
      else
        EXPECT_EQ(beside, 0) << "rank " << r;
    }
  }
  EXPECT_EQ(calls[true], calls[false]);
}

}  // namespace
}  // namespace shardscope
