#include "runtime/sharded_update.h"

#include <algorithm>
#include <chrono>
#include <cstring>

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

ShardedUpdate::ShardedUpdate(const DistProgram& program, DistExecutor& executor, int rank)
    : program_(program), executor_(executor), rank_(rank) {
  const size_t n = program.param_grads.size();
  param_slices_.resize(n);
  grad_slices_.resize(n);
  rank_in_group_.assign(n, 0);
  size_t scratch = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto [p, g] = program.param_grads[i];
    const ParamSharding& s = program.param_sharding[i];
    if (s.group_size <= 1) {
      params_.push_back(&executor.local(p));
      grads_.push_back(&executor.local(g));
      continue;
    }
    const std::vector<int> group = program.values[p].layout.mesh().GroupOf(rank, s.axes);
    rank_in_group_[i] =
        static_cast<int>(std::find(group.begin(), group.end(), rank) - group.begin());
    // Slices are `chunk` long everywhere (zero-padded past the shard's end, where the update
    // of a zero gradient keeps zero), so every rank holds the same bytes.
    param_slices_[i] = Tensor({s.chunk});
    grad_slices_[i] = Tensor({s.chunk});
    const int64_t begin = rank_in_group_[i] * s.chunk;
    std::memcpy(param_slices_[i].data(), executor.local(p).data() + begin,
                sizeof(float) * s.SliceLength(rank_in_group_[i]));
    params_.push_back(&param_slices_[i]);
    grads_.push_back(&grad_slices_[i]);
    scratch = std::max(scratch, static_cast<size_t>(s.group_size * s.chunk));
  }
  scratch_.assign(scratch, 0.0f);
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

Status ShardedUpdate::GatherGradients(Communicator& world, RankStats* stats) {
  CommTimer timer(world, stats);
  for (size_t i = 0; i < program_.param_grads.size(); ++i) {
    const ParamSharding& s = program_.param_sharding[i];
    if (s.group_size <= 1) continue;
    const Tensor& grad = executor_.local(program_.param_grads[i].second);
    float* slice = grad_slices_[i].data();
    if (!s.reduce_scatter) {  // stage 1: the gradient is reduced already
      std::memcpy(slice, grad.data() + rank_in_group_[i] * s.chunk,
                  sizeof(float) * s.SliceLength(rank_in_group_[i]));
      continue;
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * group, Group(world, i));
    const int64_t padded = s.group_size * s.chunk;
    std::span<const float> in(grad.data(), grad.size());
    if (padded != s.elements) {
      std::copy(grad.data(), grad.data() + s.elements, scratch_.begin());
      std::fill(scratch_.begin() + s.elements, scratch_.begin() + padded, 0.0f);
      in = std::span<const float>(scratch_.data(), padded);
    }
    SHARDSCOPE_RETURN_IF_ERROR(
        group->ReduceScatter(in, std::span<float>(slice, s.chunk))
            .WithContext("reduce-scatter of the gradient of " +
                         program_.values[program_.param_grads[i].first].name));
  }
  return Status::Ok();
}

Status ShardedUpdate::GatherParameters(Communicator& world, RankStats* stats) {
  CommTimer timer(world, stats);
  for (size_t i = 0; i < program_.param_grads.size(); ++i) {
    const ParamSharding& s = program_.param_sharding[i];
    if (s.group_size <= 1 || s.gathered) continue;
    SHARDSCOPE_RETURN_IF_ERROR(GatherParameter(world, static_cast<int>(i),
                                               &executor_.local(program_.param_grads[i].first)));
  }
  return Status::Ok();
}

Status ShardedUpdate::GatherParameter(Communicator& world, int param, Tensor* out) {
  const ParamSharding& s = program_.param_sharding[param];
  SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * group, Group(world, param));
  const int64_t padded = s.group_size * s.chunk;
  // Straight into the shard when the slices tile it exactly.
  std::span<float> whole = padded == out->size() ? std::span<float>(out->data(), padded)
                                                 : std::span<float>(scratch_.data(), padded);
  SHARDSCOPE_RETURN_IF_ERROR(
      group->AllGather(std::span<const float>(param_slices_[param].data(), s.chunk), whole)
          .WithContext("all-gather of parameter " +
                       program_.values[program_.param_grads[param].first].name));
  if (whole.data() != out->data())
    std::copy(whole.begin(), whole.begin() + s.elements, out->data());
  return Status::Ok();
}

int64_t ShardedUpdate::Bytes() const {
  int64_t bytes = static_cast<int64_t>(scratch_.size()) * 4;
  for (size_t i = 0; i < param_slices_.size(); ++i)
    bytes += (param_slices_[i].size() + grad_slices_[i].size()) * 4;
  return bytes;
}

int64_t ShardedUpdate::PlannedBytes(const DistProgram& program, int float_bytes) {
  int64_t slices = 0, scratch = 0;
  for (const ParamSharding& s : program.param_sharding) {
    if (s.group_size <= 1) continue;
    slices += 2 * s.chunk;
    scratch = std::max(scratch, s.group_size * s.chunk);
  }
  return (slices + scratch) * float_bytes;
}

}  // namespace shardscope
