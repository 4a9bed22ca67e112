#include "runtime/sharded_update.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

namespace shardscope {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Collective seconds and bytes into `stats` (when given) while it lives.
class CommTimer {
 public:
  CommTimer(Communicator& world, RankStats* stats)
      : world_(world), stats_(stats), before_(world.stats()), start_(Now()) {}
  ~CommTimer() {
    if (stats_ == nullptr) return;
    stats_->comm_seconds += Now() - start_;
    stats_->bytes_sent += world_.stats().bytes_sent - before_.bytes_sent;
    stats_->bytes_received += world_.stats().bytes_received - before_.bytes_received;
  }

 private:
  Communicator& world_;
  RankStats* stats_;
  CommStats before_;
  double start_;
};

}  // namespace

namespace {

// Whether the slices tile a shard exactly (no zero padding past its end).
bool Tiles(const ParamSharding& s) { return s.group_size * s.chunk == s.elements; }

}  // namespace

ShardedUpdate::ShardedUpdate(const DistProgram& program, DistExecutor& executor, int rank)
    : program_(program), executor_(executor) {
  const size_t n = program.param_grads.size();
  param_slices_.resize(n);
  scattered_.assign(n, false);
  rank_in_group_.assign(n, 0);
  params_.resize(n);
  grads_.resize(n);
  size_t scratch = 0;
  for (size_t i = 0; i < n; ++i) {
    const ParamSharding& s = program.param_sharding[i];
    if (s.group_size <= 1) continue;
    const int p = program.param_grads[i].first;
    rank_in_group_[i] =
        static_cast<int>(program.values[p].layout.mesh().IndexInGroup(rank, s.axes));
    const int64_t begin = rank_in_group_[i] * s.chunk;
    const int64_t length = s.SliceLength(rank_in_group_[i]);
    if (s.gathered) {  // the whole shard is freed between uses: the slice is kept apart
      param_slices_[i] = Tensor({s.chunk});
      std::copy_n(executor.local(p).data() + begin, length, param_slices_[i].data());
    }
    if (!Tiles(s)) scratch = std::max(scratch, static_cast<size_t>(s.group_size * s.chunk));
  }
  scratch_.assign(scratch, 0.0f);
  for (const ScatterBucket& b : program.scatter_buckets)  // the whole gradients are freed
    bucket_slices_.emplace_back(Shape{b.slice});
  open_.resize(program.scatter_buckets.size());
  joined_.assign(program.scatter_buckets.size(), 0);
}

Result<Communicator*> ShardedUpdate::Group(Communicator& world, size_t param) {
  if (world_ != nullptr && world_ != &world)
    return Status::Internal("sharded update: the communicator changed between steps");
  world_ = &world;
  const ParamSharding& s = program_.param_sharding[param];
  const DeviceMesh& mesh = program_.values[program_.param_grads[param].first].layout.mesh();
  std::vector<std::vector<int>> groups = mesh.Groups(s.axes);
  auto it = groups_.find(groups);
  if (it == groups_.end()) {
    SHARDSCOPE_ASSIGN_OR_RETURN(auto comm, GroupAlong(world, groups));
    it = groups_.emplace(std::move(groups), std::move(comm)).first;
  }
  return it->second.get();
}

Result<int64_t> ShardedUpdate::ScatterGradient(Communicator& world, int param, const Tensor& grad,
                                               RankStats* stats) {
  CommTimer timer(world, stats);
  const size_t i = static_cast<size_t>(param);
  const ParamSharding& s = program_.param_sharding[i];
  if (!s.reduce_scatter || scattered_[i] || s.bucket < 0)
    return Status::Internal("sharded update: gradient of " +
                            program_.values[program_.param_grads[i].first].name +
                            " is not reduce-scattered once a step");
  scattered_[i] = true;
  const ScatterBucket& bucket = program_.scatter_buckets[s.bucket];
  const int instr = executor_.current_instr();
  if (bucket.params.size() == 1 && !program_.scatter_overlap) {  // sent from `grad` itself
    const float* whole = grad.data();
    if (!Tiles(s)) {  // zero-padded to group_size whole chunks
      std::copy_n(grad.data(), s.elements, scratch_.data());
      std::fill(scratch_.begin() + s.elements, scratch_.begin() + s.group_size * s.chunk, 0.0f);
      whole = scratch_.data();
    }
    const double start = Now();
    SHARDSCOPE_RETURN_IF_ERROR(
        SendBucket(world, s.bucket, std::span<const float>(whole, s.group_size * s.chunk)));
    executor_.AddSpan(instr, kScatterSpanPart, start, Now());
    return held_;
  }
  // Rank r's block of the bucket: each member's r-th chunk, at the member's offset.
  const int64_t total = bucket.group_size * bucket.slice;
  std::unique_ptr<float[]>& data = open_[s.bucket];
  if (data == nullptr) {  // not zeroed: every element is written below, padding included
    data.reset(new float[static_cast<size_t>(total)]);
    held_ += total * 4;
  }
  for (int r = 0; r < s.group_size; ++r) {
    float* block = data.get() + r * bucket.slice + s.bucket_offset;
    const int64_t length = s.SliceLength(r);
    if (length > 0) std::copy_n(grad.data() + r * s.chunk, length, block);
    std::fill(block + length, block + s.chunk, 0.0f);
  }
  const int64_t with = held_;
  if (++joined_[s.bucket] < static_cast<int>(bucket.params.size())) return with;
  joined_[s.bucket] = 0;
  const double start = Now();
  if (!program_.scatter_overlap) {
    const Status sent = SendBucket(world, s.bucket, std::span<const float>(data.get(), total));
    executor_.AddSpan(instr, kScatterSpanPart, start, Now());
    held_ -= total * 4;
    data.reset();  // a bucket's memory lives only while it fills
    if (!sent.ok()) return sent;
    return with;
  }
  // Started now, waited for once the next bucket is started (or before the update): the
  // bucket's memory lives until then (DistProgram::scatter_overlap).
  auto group = Group(world, static_cast<size_t>(bucket.params[0]));
  if (!group.ok()) return group.status().WithContext(BucketText(s.bucket));
  auto started =
      (*group)->StartReduceScatter(std::span<const float>(data.get(), total),
                                   std::span<float>(bucket_slices_[s.bucket].data(), bucket.slice));
  if (!started.ok()) return started.status().WithContext(BucketText(s.bucket));
  executor_.AddSpan(instr, kScatterSpanPart, start, Now());
  in_flight_.push_back({s.bucket, instr, std::move(started).value(), std::move(data), total * 4});
  SHARDSCOPE_RETURN_IF_ERROR(WaitScatters(/*keep=*/1));  // the earlier ones
  return with;
}

Status ShardedUpdate::WaitScatters(size_t keep) {
  const size_t n = in_flight_.size() > keep ? in_flight_.size() - keep : 0;
  for (size_t k = 0; k < n; ++k) {
    InFlight& f = in_flight_[k];
    const double start = Now();  // what the backward did not hide
    const Status st = f.request.Wait();
    executor_.AddSpan(f.instr, kScatterWaitSpanPart, start, Now());
    held_ -= f.bytes;
    f.data.reset();
    if (!st.ok()) {
      const std::string what = BucketText(f.bucket);
      in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<ptrdiff_t>(k) + 1);
      return st.WithContext(what);
    }
  }
  in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<ptrdiff_t>(n));
  return Status::Ok();
}

void ShardedUpdate::Poll() {
  for (InFlight& f : in_flight_) f.request.Test();
}

std::string ShardedUpdate::BucketText(int b) const {
  const ScatterBucket& bucket = program_.scatter_buckets[b];
  auto name = [&](size_t member) {
    return program_.values[program_.param_grads[bucket.params[member]].first].name;
  };
  return bucket.params.size() == 1
             ? "reduce-scatter of the gradient of " + name(0)
             : "reduce-scatter of a bucket of " + std::to_string(bucket.params.size()) +
                   " gradients (" + name(0) + " to " + name(bucket.params.size() - 1) + ")";
}

Status ShardedUpdate::SendBucket(Communicator& world, int b, std::span<const float> whole) {
  const ScatterBucket& bucket = program_.scatter_buckets[b];
  auto group = Group(world, static_cast<size_t>(bucket.params[0]));
  if (!group.ok()) return group.status().WithContext(BucketText(b));
  return (*group)
      ->ReduceScatter(whole, std::span<float>(bucket_slices_[b].data(), bucket.slice))
      .WithContext(BucketText(b));
}

Status ShardedUpdate::GatherGradients(Communicator& world, RankStats* stats) {
  for (size_t i = 0; i < program_.param_grads.size(); ++i) {
    const ParamSharding& s = program_.param_sharding[i];
    if (s.reduce_scatter && !scattered_[i]) {  // the executor kept it whole
      SHARDSCOPE_RETURN_IF_ERROR(ScatterGradient(world, static_cast<int>(i),
                                                 executor_.local(program_.param_grads[i].second),
                                                 stats)
                                     .status());
    }
  }
  {
    CommTimer timer(world, stats);
    SHARDSCOPE_RETURN_IF_ERROR(WaitScatters(0));  // the slices are read below
  }
  for (size_t i = 0; i < program_.param_grads.size(); ++i) {
    const ParamSharding& s = program_.param_sharding[i];
    if (!only_.empty() && !only_[i]) {
      params_[i] = {};
      grads_[i] = {};
      continue;
    }
    Tensor& param = executor_.local(program_.param_grads[i].first);
    Tensor& grad = executor_.local(program_.param_grads[i].second);
    scattered_[i] = false;
    if (s.group_size <= 1) {
      params_[i] = std::span<float>(param.data(), param.size());
      grads_[i] = std::span<const float>(grad.data(), grad.size());
      continue;
    }
    const int64_t begin = rank_in_group_[i] * s.chunk;
    const size_t length = static_cast<size_t>(s.SliceLength(rank_in_group_[i]));
    params_[i] = s.gathered ? std::span<float>(param_slices_[i].data(), length)
                            : std::span<float>(param.data() + begin, length);
    grads_[i] =
        s.reduce_scatter  // stage 1: the gradient is reduced already
            ? std::span<const float>(bucket_slices_[s.bucket].data() + s.bucket_offset, length)
            : std::span<const float>(grad.data() + begin, length);
  }
  return Status::Ok();
}

Status ShardedUpdate::GatherParameters(Communicator& world, RankStats* stats) {
  CommTimer timer(world, stats);
  for (size_t i = 0; i < program_.param_grads.size(); ++i) {
    const ParamSharding& s = program_.param_sharding[i];
    if (s.group_size <= 1 || s.gathered || (!only_.empty() && !only_[i])) continue;
    Tensor& param = executor_.local(program_.param_grads[i].first);
    SHARDSCOPE_RETURN_IF_ERROR(Gather(world, i, params_[i], &param));
  }
  return Status::Ok();
}

Status ShardedUpdate::GatherParameter(Communicator& world, int param, Tensor* out) {
  const ParamSharding& s = program_.param_sharding[param];
  const size_t length = static_cast<size_t>(s.SliceLength(rank_in_group_[param]));
  return Gather(world, param, std::span<const float>(param_slices_[param].data(), length), out);
}

Status ShardedUpdate::Gather(Communicator& world, size_t param, std::span<const float> slice,
                             Tensor* whole) {
  const ParamSharding& s = program_.param_sharding[param];
  SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * group, Group(world, param));
  // In place: the slice sits in its block of the (padded) whole, which the gather fills.
  float* out = Tiles(s) ? whole->data() : scratch_.data();
  float* block = out + rank_in_group_[param] * s.chunk;
  if (slice.data() != block) std::copy(slice.begin(), slice.end(), block);
  std::fill(block + slice.size(), block + s.chunk, 0.0f);
  SHARDSCOPE_RETURN_IF_ERROR(
      group
          ->AllGather(std::span<const float>(block, s.chunk),
                      std::span<float>(out, s.group_size * s.chunk))
          .WithContext("all-gather of parameter " +
                       program_.values[program_.param_grads[param].first].name));
  if (out != whole->data()) std::copy_n(out, s.elements, whole->data());
  return Status::Ok();
}

int64_t ShardedUpdate::Bytes() const {
  int64_t bytes = static_cast<int64_t>(scratch_.size()) * 4 + GradientSliceBytes();
  for (const Tensor& t : param_slices_) bytes += t.size() * 4;
  return bytes;
}

int64_t ShardedUpdate::GradientSliceBytes() const {
  int64_t bytes = 0;
  for (const Tensor& t : bucket_slices_) bytes += t.size() * 4;
  return bytes;
}

int64_t ShardedUpdate::PlannedBytes(const DistProgram& program, int float_bytes) {
  int64_t slices = 0, scratch = 0;
  for (const ParamSharding& s : program.param_sharding) {
    if (s.group_size <= 1) continue;
    slices += (s.gathered ? s.chunk : 0) + (s.reduce_scatter ? s.chunk : 0);
    if (!Tiles(s)) scratch = std::max(scratch, s.group_size * s.chunk);
  }
  return (slices + scratch) * float_bytes;
}

int64_t ShardedUpdate::PlannedGradientSliceBytes(const DistProgram& program, int float_bytes) {
  int64_t slices = 0;
  for (const ParamSharding& s : program.param_sharding)
    if (s.group_size > 1 && s.reduce_scatter) slices += s.chunk;
  return slices * float_bytes;
}

}  // namespace shardscope
