// Gradient buckets: fewer all-reduces per step, the same parameters to the bit, under data
// parallelism and with a strategy whose gradients are reduced along a mesh axis only, whether
// their all-reduces overlap the backward or not.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "shardscope/dist_trainer.h"
#include "small_net.h"

namespace shardscope {
namespace {

constexpr int64_t kBatch = 16;

struct Outcome {
  std::vector<std::vector<float>> params;  // rank 0's shards
  int64_t calls_per_step = 0;              // rank 0's communicator calls
  int bucket_calls = 0;
  std::vector<InstrSpan> spans;  // rank 0's last step
  std::vector<bool> computes;    // per instruction: a kernel (not a redistribution)
};

Outcome Train(int devices, int64_t bucket_bytes, bool megatron, bool overlap = false) {
  Outcome out;
  const Dataset data = MakeSyntheticDataset(kBatch * 3, {1, 4, 4}, 8, 5);
  PartitionOptions options;
  options.devices = devices;
  std::mutex mu;
  Status st = RunOnDevices(devices, [&](Communicator& comm) -> Status {
    testing_nets::SmallNet net(32, /*with_dropout=*/false);
    if (megatron) net.b.matmul.shard("((2,2),(2,1))");  // 2-way data x 2-way rows
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, nn::BuildClassifier(net, {1, 4, 4}, kBatch));
    TrainConfig config;
    config.seed = 3;
    config.bucket_bytes = bucket_bytes;
    config.overlap_grad_reduce = overlap;
    SHARDSCOPE_ASSIGN_OR_RETURN(
        auto t, DistTrainer::Create(std::move(model), config, options, comm.rank()));
    BatchIterator it(data, kBatch, 3, true);
    Tensor x, y;
    int64_t steps = 0;
    const int64_t calls_before = comm.stats().calls;
    while (it.Next(&x, &y)) {
      SHARDSCOPE_RETURN_IF_ERROR(t->Step(comm, x, y).status());
      ++steps;
    }
    if (comm.rank() != 0) return Status::Ok();
    std::lock_guard<std::mutex> lock(mu);
    out.calls_per_step = (comm.stats().calls - calls_before) / steps;
    out.bucket_calls = t->executor().bucket_calls();
    out.spans = t->executor().last_spans();
    for (const DistInstr& in : t->program().instrs)
      out.computes.push_back(in.kind == DistInstr::Kind::kCompute);
    for (ValueId p : t->parameters()) {
      const Tensor& s = t->ParameterShard(p);
      out.params.emplace_back(s.data(), s.data() + s.size());
    }
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

TEST(GradBuckets, FewerCallsSameBits) {
  for (bool megatron : {false, true}) {
    const Outcome each = Train(4, 0, megatron);
    const Outcome small = Train(4, 1024, megatron);  // a few buckets
    const Outcome one = Train(4, int64_t{25} << 20, megatron);
    EXPECT_EQ(each.bucket_calls, 0);
    EXPECT_GT(small.bucket_calls, one.bucket_calls) << "megatron " << megatron;
    EXPECT_LT(small.calls_per_step, each.calls_per_step) << "megatron " << megatron;
    EXPECT_LT(one.calls_per_step, small.calls_per_step) << "megatron " << megatron;
    EXPECT_EQ(each.params, small.params) << "megatron " << megatron;
    EXPECT_EQ(each.params, one.params) << "megatron " << megatron;
  }
}

TEST(GradBuckets, OverlapSameBits) {
  for (bool megatron : {false, true}) {
    const Outcome each = Train(4, 0, megatron);
    const Outcome blocking = Train(4, 1024, megatron, /*overlap=*/false);
    const Outcome overlapped = Train(4, 1024, megatron, /*overlap=*/true);
    EXPECT_GT(overlapped.bucket_calls, 1) << "megatron " << megatron;
    EXPECT_EQ(overlapped.calls_per_step, blocking.calls_per_step) << "megatron " << megatron;
    EXPECT_EQ(each.params, blocking.params) << "megatron " << megatron;
    EXPECT_EQ(each.params, overlapped.params) << "megatron " << megatron;
  }
  const Outcome each8 = Train(8, 0, false);
  const Outcome overlapped8 = Train(8, 1024, false, /*overlap=*/true);
  EXPECT_GT(overlapped8.bucket_calls, 1);
  EXPECT_EQ(each8.params, overlapped8.params);
}

// Each bucket's one all-reduce is a span of its own (what `train --timing-every` records):
// as many as the step's bucket calls, each after the gradients it holds were produced, none
// overlapping another whole instruction, and the deferred all-reduces have no span.
// Overlapped, a bucket has two spans (its start, and the wait not hidden by the backward).
TEST(GradBuckets, EachFlushIsASpan) {
  for (bool overlap : {false, true}) {
    for (int64_t bucket_bytes : {int64_t{0}, int64_t{1024}, int64_t{25} << 20}) {
      const Outcome o = Train(4, bucket_bytes, /*megatron=*/true, overlap);
      std::vector<InstrSpan> whole;
      std::set<int> executed, bucketed;
      for (const InstrSpan& s : o.spans) {
        if (s.part == -1) executed.insert(s.instr);
        if (s.part == kBucketSpanPart) bucketed.insert(s.instr);
        if (s.part == kBucketWaitSpanPart) {
          EXPECT_TRUE(overlap) << "a wait span without overlap";
        }
        if (s.part < 0) whole.push_back(s);
      }
      EXPECT_EQ(static_cast<int>(bucketed.size()), o.bucket_calls) << bucket_bytes;
      EXPECT_EQ(bucket_bytes > 0, o.bucket_calls > 0) << bucket_bytes;
      for (int i : bucketed) EXPECT_FALSE(executed.count(i)) << "instruction " << i;
      std::sort(whole.begin(), whole.end(),
                [](const InstrSpan& a, const InstrSpan& b) { return a.start < b.start; });
      for (size_t k = 1; k < whole.size(); ++k) {
        EXPECT_GE(whole[k].start, whole[k - 1].end) << "span " << k;
      }
    }
  }
}

// A parameter's gradient is reduced right after the operator completing it, so overlapped
// buckets start while the backward still computes (as DDP's), not after its last operator.
TEST(GradBuckets, OverlappedBucketsStartDuringTheBackward) {
  const Outcome o = Train(4, 1024, /*megatron=*/false, /*overlap=*/true);
  std::vector<InstrSpan> starts, computes;
  for (const InstrSpan& s : o.spans) {
    if (s.part == kBucketSpanPart) starts.push_back(s);
    if (s.part == -1 && o.computes[s.instr]) computes.push_back(s);
  }
  ASSERT_GT(starts.size(), 1u);
  ASSERT_FALSE(computes.empty());
  int before_last_compute = 0;  // buckets launched with backward operators still to run
  for (const InstrSpan& b : starts) {
    for (const InstrSpan& c : computes) {
      if (c.instr > b.instr) {
        ++before_last_compute;
        break;
      }
    }
  }
  EXPECT_GE(before_last_compute, static_cast<int>(starts.size()) - 1);
}

}  // namespace
}  // namespace shardscope
