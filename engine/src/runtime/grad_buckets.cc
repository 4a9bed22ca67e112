#include "runtime/grad_buckets.h"

#include <chrono>
#include <cstring>
#include <numeric>

#include "shardscope/dist_trainer.h"

namespace shardscope {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The plan is one all-reduce along rank groups (no transfers, no change of shard shape).
bool PlainAllReduce(const DistProgram& program, const DistInstr& in) {
  if (in.kind != DistInstr::Kind::kRedistribute || in.plan == nullptr) return false;
  if (in.plan->steps.size() != 1) return false;
  const RedistStep& st = in.plan->steps[0];
  if (st.kind != RedistStep::Kind::kAllReduce || st.irregular()) return false;
  return program.values[in.inputs[0]].layout.ShardShape() ==
         program.values[in.outputs[0]].layout.ShardShape();
}

}  // namespace

GradBuckets::GradBuckets(const DistProgram& program, int64_t bucket_bytes, bool overlap)
    : program_(program),
      bucket_bytes_(bucket_bytes),
      overlap_(overlap),
      deferred_(program.instrs.size(), false),
      reads_deferred_(program.instrs.size(), false),
      bucket_of_(program.instrs.size(), -1) {
  if (bucket_bytes <= 0) return;
  std::vector<bool> gradient(program.values.size(), false);
  for (const auto& [param, grad] : program.param_grads) gradient[grad] = true;
  std::vector<bool> pending(program.values.size(), false);
  std::vector<int64_t> filled;  // per bucket, simulated: buckets_per_step_
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    const DistInstr& in = program.instrs[i];
    for (int v : in.inputs) reads_deferred_[i] = reads_deferred_[i] || pending[v];
    if (reads_deferred_[i]) {
      for (int64_t& f : filled) {
        buckets_per_step_ += f > 0;
        f = 0;
      }
      std::fill(pending.begin(), pending.end(), false);
    }
    if (!PlainAllReduce(program, in) || !gradient[in.outputs[0]]) continue;
    deferred_[i] = true;
    pending[in.outputs[0]] = true;
    const std::vector<std::vector<int>>& groups = in.plan->steps[0].groups.list();
    size_t b = 0;
    while (b < buckets_.size() && buckets_[b].groups != groups) ++b;
    if (b == buckets_.size()) {
      buckets_.push_back({groups, {}, {}});
      filled.push_back(0);
    }
    bucket_of_[i] = static_cast<int>(b);
    filled[b] += NumElements(program.values[in.outputs[0]].layout.ShardShape()) * 4;
    if (filled[b] >= bucket_bytes_) {
      ++buckets_per_step_;
      filled[b] = 0;
    }
  }
  for (int64_t f : filled) buckets_per_step_ += f > 0;
}

Result<Communicator*> GradBuckets::GroupComm(Communicator& world,
                                             const std::vector<std::vector<int>>& groups) {
  if (groups.size() == 1 && static_cast<int>(groups[0].size()) == world.size()) {
    std::vector<int> identity(groups[0].size());
    std::iota(identity.begin(), identity.end(), 0);
    if (groups[0] == identity) return &world;
  }
  auto it = comms_.find(groups);
  if (it == comms_.end()) {  // collective: every rank flushes the same buckets in order
    SHARDSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> c, GroupAlong(world, groups));
    it = comms_.emplace(groups, std::move(c)).first;
  }
  return it->second.get();
}

Status GradBuckets::Add(Communicator& world, size_t instr, std::vector<Tensor>& buffers,
                        RankStats* stats) {
  const DistInstr& in = program_.instrs[instr];
  Bucket& bucket = buckets_[bucket_of_[instr]];
  const Tensor& grad = buffers[in.inputs[0]];
  const int64_t offset = static_cast<int64_t>(bucket.data.size());
  bucket.data.resize(bucket.data.size() + static_cast<size_t>(grad.size()));
  std::memcpy(bucket.data.data() + offset, grad.data(),
              static_cast<size_t>(grad.size()) * sizeof(float));
  bucket.entries.push_back({static_cast<int>(instr), in.outputs[0], offset, grad.size()});
  if (static_cast<int64_t>(bucket.data.size()) * 4 < bucket_bytes_) return Status::Ok();
  return Flush(world, bucket, buffers, stats);
}

Status GradBuckets::FlushAll(Communicator& world, std::vector<Tensor>& buffers, RankStats* stats) {
  for (Bucket& bucket : buckets_) {
    if (!bucket.entries.empty()) SHARDSCOPE_RETURN_IF_ERROR(Flush(world, bucket, buffers, stats));
  }
  return WaitAll(world, buffers, stats);
}

void GradBuckets::Poll() {
  for (InFlight& f : in_flight_) f.request.Test();
}

Status GradBuckets::Flush(Communicator& world, Bucket& bucket, std::vector<Tensor>& buffers,
                          RankStats* stats) {
  const double start = Now();
  const CommStats before = world.stats();
  SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, GroupComm(world, bucket.groups));
  const std::string what =
      "gradient bucket of " + std::to_string(bucket.entries.size()) + " all-reduces";
  const int last_instr = bucket.entries.back().instr;  // the span's instruction
  if (overlap_) {
    auto started = comm->StartAllReduce(std::span<float>(bucket.data), bucket.data);
    if (!started.ok()) return started.status().WithContext(what);
    InFlight& f = in_flight_.emplace_back();
    f.request = std::move(started).value();
    f.data.swap(bucket.data);
    f.entries.swap(bucket.entries);
    if (!spare_.empty()) {  // an earlier buffer: no allocation in later steps
      bucket.data.swap(spare_.back());
      spare_.pop_back();
    }
  } else {
    Status st = comm->AllReduce(std::span<float>(bucket.data));
    if (!st.ok()) return st.WithContext(what);
    CopyOut(bucket.data, bucket.entries, buffers);
  }
  if (spans_ != nullptr)
    spans_->push_back({last_instr, kBucketSpanPart, start - origin_, Now() - origin_});
  bucket.entries.clear();
  bucket.data.clear();  // keeps its capacity: no allocation in later steps
  Account(world, before, start, stats);
  return Status::Ok();
}

Status GradBuckets::WaitAll(Communicator& world, std::vector<Tensor>& buffers, RankStats* stats) {
  if (in_flight_.empty()) return Status::Ok();
  const double start = Now();
  const CommStats before = world.stats();
  for (InFlight& f : in_flight_) {
    const double wait_start = Now();  // an overlapped bucket's second span: what was not hidden
    Status st = f.request.Wait();
    if (spans_ != nullptr) {
      spans_->push_back(
          {f.entries.back().instr, kBucketWaitSpanPart, wait_start - origin_, Now() - origin_});
    }
    if (!st.ok()) {
      return st.WithContext("gradient bucket of " + std::to_string(f.entries.size()) +
                            " all-reduces");
    }
    CopyOut(f.data, f.entries, buffers);
    f.data.clear();
    spare_.push_back(std::move(f.data));
  }
  in_flight_.clear();
  Account(world, before, start, stats);
  return Status::Ok();
}

void GradBuckets::CopyOut(const std::vector<float>& data, const std::vector<Entry>& entries,
                          std::vector<Tensor>& buffers) {
  for (const Entry& e : entries) {
    std::memcpy(buffers[e.out].data(), data.data() + e.offset,
                static_cast<size_t>(e.size) * sizeof(float));
  }
}

// What a flush or a wait adds to the step's communication: its time (the part the backward
// does not hide) and its traffic.
void GradBuckets::Account(Communicator& world, const CommStats& before, double start,
                          RankStats* stats) {
  if (stats == nullptr) return;
  const CommStats after = world.stats();
  stats->comm_seconds += Now() - start;
  stats->bytes_sent += after.bytes_sent - before.bytes_sent;
  stats->bytes_received += after.bytes_received - before.bytes_received;
}

}  // namespace shardscope
