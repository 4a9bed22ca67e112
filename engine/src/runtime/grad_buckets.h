// Internal: gradient all-reduces in buckets. A data-parallel step reduces every parameter's
// gradient with its own all-reduce; waiting until about `bucket_bytes` of gradients of the
// same rank groups are ready and reducing them in one call pays the latency once per bucket
// (PyTorch DDP's buckets). The sums are the same bits: a reduction adds each element over the
// ranks in rank order, whatever the buffer it is part of. With overlap, a full bucket's
// all-reduce is started without waiting (Communicator::StartAllReduce) and waited for only
// when a reader needs its gradients (the optimizer step), so it runs during the backward.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/partition.h"
#include "shardscope/tensor.h"

namespace shardscope {

struct RankStats;
struct InstrSpan;

class GradBuckets {
 public:
  // Defers the redistributions of `program` that are one plain all-reduce of a parameter's
  // gradient. bucket_bytes <= 0: none (every gradient reduced on its own).
  // overlap: start the buckets' all-reduces without waiting (see top); false: blocking calls.
  GradBuckets(const DistProgram& program, int64_t bucket_bytes, bool overlap);

  // Whether instruction `instr` is left to the buckets.
  bool deferred(size_t instr) const { return deferred_[instr]; }
  // Whether instruction `instr` reads a deferred gradient (the buckets flush before it).
  bool reads_deferred(size_t instr) const { return reads_deferred_[instr]; }
  int buckets_per_step() const { return buckets_per_step_; }
  // Each flush appends a span (kBucketSpanPart, seconds from `origin`) to `spans`, each wait
  // for an overlapped one another (kBucketWaitSpanPart); null: none.
  void set_timing(std::vector<InstrSpan>* spans, double origin) {
    spans_ = spans;
    origin_ = origin;
  }

  // Copies the input of deferred instruction `instr` into its bucket; reduces the bucket
  // into `buffers` (or starts to) once it holds bucket_bytes.
  Status Add(Communicator& world, size_t instr, std::vector<Tensor>& buffers, RankStats* stats);
  // Reduces every bucket that holds gradients and waits for those in flight (end of the
  // step, or before a reader).
  Status FlushAll(Communicator& world, std::vector<Tensor>& buffers, RankStats* stats);
  // Advances the all-reduces in flight without blocking (MPI progresses only inside MPI
  // calls): called between instructions.
  void Poll();

 private:
  struct Entry {
    int instr = 0;  // the deferred instruction
    int out = 0;    // DistValue
    int64_t offset = 0, size = 0;
  };
  struct Bucket {
    std::vector<std::vector<int>> groups;  // the all-reduce's rank groups (world ranks)
    std::vector<float> data;
    std::vector<Entry> entries;
  };
  struct InFlight {  // a started all-reduce and where its sums go
    CommRequest request;
    std::vector<float> data;
    std::vector<Entry> entries;
  };
  Status Flush(Communicator& world, Bucket& bucket, std::vector<Tensor>& buffers, RankStats* stats);
  Status WaitAll(Communicator& world, std::vector<Tensor>& buffers, RankStats* stats);
  static void CopyOut(const std::vector<float>& data, const std::vector<Entry>& entries,
                      std::vector<Tensor>& buffers);
  static void Account(Communicator& world, const CommStats& before, double start, RankStats* stats);
  Result<Communicator*> GroupComm(Communicator& world, const std::vector<std::vector<int>>& groups);

  const DistProgram& program_;
  int64_t bucket_bytes_ = 0;
  bool overlap_ = true;
  std::vector<bool> deferred_, reads_deferred_;
  std::vector<int> bucket_of_;   // per instruction: index into buckets_ (deferred only)
  std::vector<Bucket> buckets_;  // one open bucket per distinct rank-group set
  std::map<std::vector<std::vector<int>>, std::unique_ptr<Communicator>> comms_;
  int buckets_per_step_ = 0;
  std::vector<InFlight> in_flight_;        // in start order
  std::vector<std::vector<float>> spare_;  // data buffers of finished all-reduces, for reuse
  std::vector<InstrSpan>* spans_ = nullptr;
  double origin_ = 0;
};

}  // namespace shardscope
