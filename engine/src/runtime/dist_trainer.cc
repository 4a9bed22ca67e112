#include "shardscope/dist_trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <optional>

#include "ops/op_registry.h"
#include "runtime/batch_util.h"
#include "runtime/grad_buckets.h"
#include "runtime/sharded_update.h"
#include "shardscope/autodiff.h"
#include "shardscope/checked_math.h"
#include "shardscope/initializer.h"

namespace shardscope {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds the calling thread has run (RankStats' *_cpu_seconds).
double ThreadCpuNow() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Copies the block of `src` (shape `src_shape`) starting at `offsets` with shape
// `block` into `dst` (or the reverse when `scatter`).
template <typename T>
void CopyBlock(const T* src, const Shape& src_shape, const std::vector<int64_t>& offsets,
               const Shape& block, T* dst) {
  const int rank = static_cast<int>(block.size());
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  std::vector<int64_t> stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * src_shape[d + 1];
  const int64_t inner = block[rank - 1];
  const int64_t rows = NumElements(block) / std::max<int64_t>(1, inner);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) off += (idx[d] + offsets[d]) * stride[d];
    std::memcpy(dst + r * inner, src + off, sizeof(T) * inner);
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[d] < block[d]) break;
      idx[d] = 0;
    }
  }
}

// Integer values (token ids, labels) cross a redistribution as floats: the redistribution
// executor and the communicators move f32, and every i32 of magnitude up to 2^24 is exact in
// f32, sums included. A larger value is refused rather than rounded.
Status RedistributeInts(const RedistPlan& plan, Communicator& comm, const Tensor& in, Tensor* out,
                        Tensor* scratch_in, Tensor* scratch_out, RedistWorkspace* workspace) {
  constexpr int32_t kExact = 1 << 24;
  if (scratch_in->shape() != in.shape() || scratch_in->dtype() != DType::kF32)
    *scratch_in = Tensor(in.shape());
  for (int64_t i = 0; i < in.size(); ++i) {
    const int32_t v = in.ints()[i];
    if (v > kExact || v < -kExact) {
      return Status::Invalid("integer value " + std::to_string(v) +
                             " is beyond 2^24, which redistribution carries exactly");
    }
    scratch_in->data()[i] = static_cast<float>(v);
  }
  SHARDSCOPE_RETURN_IF_ERROR(
      ExecuteRedistribution(plan, comm, *scratch_in, scratch_out, workspace));
  if (out->shape() != scratch_out->shape() || out->dtype() != DType::kI32)
    *out = Tensor(scratch_out->shape(), DType::kI32);
  for (int64_t i = 0; i < out->size(); ++i)
    out->ints()[i] = static_cast<int32_t>(scratch_out->data()[i]);
  return Status::Ok();
}

}  // namespace

Tensor ExtractShard(const Tensor& whole, const Layout& layout, int rank) {
  const Shape shard = layout.ShardShape();
  Tensor out(shard, whole.dtype());
  const auto offsets = layout.ShardOffsets(rank);
  if (whole.dtype() == DType::kI32)
    CopyBlock(whole.ints(), whole.shape(), offsets, shard, out.ints());
  else
    CopyBlock(whole.data(), whole.shape(), offsets, shard, out.data());
  return out;
}

DistExecutor::DistExecutor(const Graph& graph, const DistProgram& program, int rank)
    : graph_(graph), program_(program), rank_(rank) {
  buffers_.reserve(program.values.size());
  live_.assign(program.values.size(), false);
  for (size_t i = 0; i < program.values.size(); ++i) {
    const DistValue& v = program.values[i];
    if (!program.transient.empty() && program.transient[i])
      buffers_.emplace_back();  // allocated while live (Allocate)
    else
      buffers_.emplace_back(v.layout.ShardShape(), graph.value(v.global).dtype);
  }
  for (const Value& v : graph.values()) {
    if (v.kind == ValueKind::kConstant && program.home[v.id] >= 0) {
      buffers_[program.home[v.id]] =
          ExtractShard(InitializeValue(v, 0), program.values[program.home[v.id]].layout, rank);
    }
  }
  // Rank-local attributes: shapes and counts that the global graph states globally.
  local_attrs_.resize(program.instrs.size());
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    const DistInstr& in = program.instrs[i];
    if (in.kind != DistInstr::Kind::kCompute) continue;
    const Node& n = graph.node(in.node);
    OpAttrs a = n.attrs;
    const Layout& out = program.values[in.outputs[0]].layout;
    switch (n.op) {
      case OpKind::kReshape:
      case OpKind::kBroadcastTo:
      case OpKind::kSumToShape:
      case OpKind::kConv2DBackpropInput:
      case OpKind::kConv2DBackpropFilter:
      case OpKind::kGatherGrad:
      case OpKind::kSliceGrad:
      case OpKind::kAveragePool2DGrad:
        a.shape = out.ShardShape();
        break;
      default:
        break;
    }
    switch (n.op) {
      case OpKind::kReduceMean:
        a.mean_count = NumElements(graph.value(n.inputs[0]).shape) /
                       std::max<int64_t>(1, NumElements(graph.value(n.outputs[0]).shape));
        break;
      case OpKind::kSoftmaxCrossEntropyWithLogits:
        a.mean_count = graph.value(n.inputs[0]).shape[0];
        break;
      case OpKind::kSoftmaxCrossEntropyGrad:
        a.mean_count = graph.value(n.inputs[1]).shape[0];
        break;
      case OpKind::kDropout:
      case OpKind::kDropoutGrad:
        a.global_shape = graph.value(n.outputs[0]).shape;
        a.shard_offsets = out.ShardOffsets(rank);
        break;
      case OpKind::kGather:
        a.shard_offsets = {program.values[in.inputs[0]].layout.ShardOffsets(rank)[0]};
        break;
      case OpKind::kGatherGrad:
        a.shard_offsets = {out.ShardOffsets(rank)[0]};
        break;
      default:
        break;
    }
    local_attrs_[i] = std::move(a);
  }
}

void DistExecutor::Allocate(int v) {
  if (program_.transient.empty() || !program_.transient[v] || live_[v]) return;
  const DistValue& d = program_.values[v];
  buffers_[v] = Tensor(d.layout.ShardShape(), graph_.value(d.global).dtype);
  live_[v] = true;
  transient_bytes_ += buffers_[v].size() * DTypeBytes(buffers_[v].dtype());
}

void DistExecutor::Release(int v) {
  if (!live_[v]) return;
  transient_bytes_ -= buffers_[v].size() * DTypeBytes(buffers_[v].dtype());
  buffers_[v] = Tensor();
  live_[v] = false;
}

Status DistExecutor::Execute(Communicator& comm, size_t i, int64_t step, bool training,
                             RankStats* stats) {
  const DistInstr& in = program_.instrs[i];
  for (int v : in.outputs) Allocate(v);
  if (!program_.gathered_param.empty()) {  // stage-3 parameters: communication
    for (int v : in.inputs) {
      if (program_.gathered_param[v] < 0 || live_[v]) continue;
      Allocate(v);
      const CommStats before = comm.stats();
      const double gather_start = Now();
      SHARDSCOPE_RETURN_IF_ERROR(gather_(comm, program_.gathered_param[v], &buffers_[v]));
      if (timing_) {
        spans_.push_back(
            {static_cast<int>(i), kGatherSpanPart, gather_start - run_start_, Now() - run_start_});
      }
      if (stats) {
        stats->comm_seconds += Now() - gather_start;
        stats->bytes_sent += comm.stats().bytes_sent - before.bytes_sent;
        stats->bytes_received += comm.stats().bytes_received - before.bytes_received;
      }
    }
  }
  const double start = Now();
  const bool cpu = stats && cpu_timing_;
  const double cpu_start = cpu ? ThreadCpuNow() : 0.0;
  if (in.kind == DistInstr::Kind::kRedistribute) {
    const CommStats before = comm.stats();
    const Tensor& from = buffers_[in.inputs[0]];
    Status st = from.dtype() == DType::kI32
                    ? RedistributeInts(*in.plan, comm, from, &buffers_[in.outputs[0]],
                                       &int_scratch_[0], &int_scratch_[1], &redist_workspace_)
                    : ExecuteRedistribution(*in.plan, comm, from, &buffers_[in.outputs[0]],
                                            &redist_workspace_);
    if (!st.ok()) return st.WithContext("redistribution for " + in.reason);
    if (timing_) {
      const double end = Now();
      double at = start;
      for (size_t k = 0; k < step_ends_.size(); ++k) {
        spans_.push_back({static_cast<int>(i), static_cast<int>(k), at - run_start_,
                          step_ends_[k] - run_start_});
        at = step_ends_[k];
      }
      step_ends_.clear();
      spans_.push_back({static_cast<int>(i), -1, start - run_start_, end - run_start_});
    }
    if (stats) {
      const CommStats after = comm.stats();
      stats->comm_seconds += Now() - start;
      if (cpu) stats->comm_cpu_seconds += ThreadCpuNow() - cpu_start;
      stats->bytes_sent += after.bytes_sent - before.bytes_sent;
      stats->bytes_received += after.bytes_received - before.bytes_received;
    }
    return Status::Ok();
  }
  const Node& n = graph_.node(in.node);
  // Up to 8 operands on the stack; Concat and Split may have more.
  const Tensor* ins_small[8];
  Tensor* outs_small[8];
  std::vector<const Tensor*> ins_large;
  std::vector<Tensor*> outs_large;
  if (in.inputs.size() > 8) ins_large.resize(in.inputs.size());
  if (in.outputs.size() > 8) outs_large.resize(in.outputs.size());
  const Tensor** ins = ins_large.empty() ? ins_small : ins_large.data();
  Tensor** outs = outs_large.empty() ? outs_small : outs_large.data();
  for (size_t k = 0; k < in.inputs.size(); ++k) ins[k] = &buffers_[in.inputs[k]];
  for (size_t k = 0; k < in.outputs.size(); ++k) outs[k] = &buffers_[in.outputs[k]];
  KernelContext ctx{local_attrs_[i], std::span<const Tensor* const>(ins, in.inputs.size()),
                    std::span<Tensor* const>(outs, in.outputs.size()), step, training};
  GetOpDef(n.op).forward(ctx);
  if (timing_) spans_.push_back({static_cast<int>(i), -1, start - run_start_, Now() - run_start_});
  if (stats) {
    stats->compute_seconds += Now() - start;
    if (cpu) stats->compute_cpu_seconds += ThreadCpuNow() - cpu_start;
  }
  return Status::Ok();
}

DistExecutor::~DistExecutor() = default;

void DistExecutor::AddSpan(int instr, int part, double start, double end) {
  if (instr >= 0) spans_.push_back({instr, part, start - run_start_, end - run_start_});
}

void DistExecutor::set_bucket_bytes(int64_t bytes, bool overlap) {
  buckets_ = bytes > 0 ? std::make_unique<GradBuckets>(program_, bytes, overlap) : nullptr;
}

int DistExecutor::bucket_calls() const {
  return buckets_ != nullptr ? buckets_->buckets_per_step() : 0;
}

Status DistExecutor::Run(Communicator& comm, int64_t step, bool training, RankStats* stats) {
  spans_.clear();
  step_ends_.clear();
  timing_ = true;
  run_start_ = Now();
  redist_workspace_.set_step_ends(&step_ends_);
  if (buckets_ != nullptr) buckets_->set_timing(&spans_, run_start_);
  const auto run = [&]() -> Status {
    // One instruction, or a parameter gradient's all-reduce joining its bucket (grad_buckets.h).
    const auto run_one = [&](size_t i) -> Status {
      if (buckets_ != nullptr) {
        if (buckets_->reads_deferred(i))
          SHARDSCOPE_RETURN_IF_ERROR(buckets_->FlushAll(comm, buffers_, stats));
        if (buckets_->deferred(i)) return buckets_->Add(comm, i, buffers_, stats);
        buckets_->Poll();
      }
      if (scatter_poll_) scatter_poll_();
      return Execute(comm, i, step, training, stats);
    };
    if (program_.schedule.empty()) {
      for (size_t i = 0; i < program_.instrs.size(); ++i) SHARDSCOPE_RETURN_IF_ERROR(run_one(i));
    } else {
      for (size_t v = 0; v < live_.size(); ++v) {  // left by RunFor or set from outside
        Release(static_cast<int>(v));
        if (program_.transient[v]) buffers_[v] = Tensor();
      }
    }
    int64_t kept = 0;  // every buffer not transient
    for (size_t v = 0; v < buffers_.size(); ++v) {
      if (program_.transient.empty() || !program_.transient[v])
        kept += buffers_[v].size() * DTypeBytes(buffers_[v].dtype());
    }
    int64_t peak = 0;
    const auto held = [&] { return scatter_held_ ? scatter_held_() : 0; };
    for (size_t pos = 0; pos < program_.schedule.size(); ++pos) {
      const int instr = program_.schedule[pos];
      SHARDSCOPE_RETURN_IF_ERROR(run_one(instr));
      peak = std::max(peak, transient_bytes_ + held());
      current_instr_ = instr;  // the scatter's spans (ShardedUpdate) name it
      for (int v : program_.release_after[pos]) {
        if (!program_.scattered_grad.empty() && program_.scattered_grad[v] >= 0) {
          if (!scatter_) continue;  // nobody takes its slice: kept whole
          SHARDSCOPE_ASSIGN_OR_RETURN(
              const int64_t with, scatter_(comm, program_.scattered_grad[v], buffers_[v], stats));
          peak = std::max(peak, transient_bytes_ + with);  // the gradient and its copy
        }
        Release(v);
      }
      current_instr_ = -1;
    }
    peak_buffer_bytes_ = kept + peak;
    return buckets_ != nullptr ? buckets_->FlushAll(comm, buffers_, stats) : Status::Ok();
  };
  const Status st = run();
  current_instr_ = -1;
  redist_workspace_.set_step_ends(nullptr);
  if (buckets_ != nullptr) buckets_->set_timing(nullptr, 0);
  timing_ = false;
  return st;
}

Status DistExecutor::RunFor(Communicator& comm, const std::vector<int>& targets, int64_t step,
                            bool training, RankStats* stats) {
  std::vector<bool> needed(program_.values.size(), false);
  for (int t : targets) needed[t] = true;
  std::vector<bool> run(program_.instrs.size(), false);
  for (size_t i = program_.instrs.size(); i-- > 0;) {
    const DistInstr& in = program_.instrs[i];
    for (int v : in.outputs) run[i] = run[i] || needed[v];
    if (run[i]) {
      for (int v : in.inputs) needed[v] = true;
    }
  }
  for (size_t i = 0; i < program_.instrs.size(); ++i) {
    if (run[i]) SHARDSCOPE_RETURN_IF_ERROR(Execute(comm, i, step, training, stats));
  }
  return Status::Ok();
}

Result<DistProgram> PlanTrainingProgram(ModelGraph* model, const PartitionOptions& options,
                                        std::vector<ValueId>* trained_params) {
  Graph& g = model->graph;
  const std::vector<ValueId> params = g.Parameters();
  if (params.empty()) return Status::Invalid("model has no parameters to train");
  SHARDSCOPE_ASSIGN_OR_RETURN(Gradients grads, BuildBackward(g, model->loss, params));
  SHARDSCOPE_RETURN_IF_ERROR(g.Verify().WithContext("graph after autodiff"));
  TrainingValues tv;
  tv.loss = model->loss;
  for (size_t i = 0; i < params.size(); ++i) {
    if (grads.grads[i] == kNoValue) continue;
    tv.params.push_back(params[i]);
    tv.grads.push_back(grads.grads[i]);
  }
  if (trained_params != nullptr) *trained_params = tv.params;
  return Partition(g, tv, options);
}

Result<std::unique_ptr<DistTrainer>> DistTrainer::Create(ModelGraph model,
                                                         const TrainConfig& config,
                                                         const PartitionOptions& options,
                                                         int rank) {
  std::unique_ptr<DistTrainer> t(new DistTrainer());
  t->model_ = std::move(model);
  t->config_ = config;
  t->rank_ = rank;
  PartitionOptions o = options;
  o.gradient_bucket_bytes = config.bucket_bytes;  // ZeRO 2/3's buckets are the run's buckets
  o.overlap_gradient_reductions = config.overlap_grad_reduce;
  SHARDSCOPE_ASSIGN_OR_RETURN(t->program_, PlanTrainingProgram(&t->model_, o, &t->params_));
  t->executor_ = std::make_unique<DistExecutor>(t->model_.graph, t->program_, rank);
  t->executor_->set_bucket_bytes(config.bucket_bytes, config.overlap_grad_reduce);
  for (size_t i = 0; i < t->params_.size(); ++i) {
    const auto [p, g] = t->program_.param_grads[i];
    const Value& v = t->model_.graph.value(t->params_[i]);
    t->executor_->local(p) =
        ExtractShard(InitializeValue(v, config.seed), t->program_.values[p].layout, rank);
    t->param_ptrs_.push_back(&t->executor_->local(p));
    t->grad_ptrs_.push_back(&t->executor_->local(g));
  }
  if (t->program_.optimizer_sharding > 0) {
    t->sharded_ = std::make_unique<ShardedUpdate>(t->program_, *t->executor_, rank);
    ShardedUpdate* sharded = t->sharded_.get();
    t->executor_->set_gather([sharded](Communicator& comm, int param, Tensor* out) {
      return sharded->GatherParameter(comm, param, out);
    });
    t->executor_->set_scatter(
        [sharded](Communicator& comm, int param, const Tensor& grad, RankStats* stats) {
          return sharded->ScatterGradient(comm, param, grad, stats);
        },
        [sharded] { return sharded->HeldBytes(); }, [sharded] { sharded->Poll(); });
  }
  t->optimizer_ = MakeOptimizer(config.optimizer);
  return t;
}

DistTrainer::~DistTrainer() = default;

Result<float> DistTrainer::Step(Communicator& comm, const Tensor& images, const Tensor& labels) {
  for (int v : program_.batch_values) {
    const DistValue& d = program_.values[v];
    executor_->local(v) =
        ExtractShard(d.global == model_.labels ? labels : images, d.layout, rank_);
  }
  SHARDSCOPE_RETURN_IF_ERROR(executor_->Run(comm, step_, /*training=*/true, &stats_));
  if (sharded_) SHARDSCOPE_RETURN_IF_ERROR(sharded_->GatherGradients(comm, &stats_));
  const double start = Now();
  const bool cpu = executor_->cpu_timing();
  const double cpu_start = cpu ? ThreadCpuNow() : 0.0;
  if (sharded_)
    optimizer_->StepSpans(sharded_->params(), sharded_->grads());
  else
    optimizer_->Step(param_ptrs_, grad_ptrs_);
  stats_.compute_seconds += Now() - start;
  if (cpu) stats_.compute_cpu_seconds += ThreadCpuNow() - cpu_start;
  if (sharded_) SHARDSCOPE_RETURN_IF_ERROR(sharded_->GatherParameters(comm, &stats_));
  ++step_;
  // Memory: the program's buffers at their peak, the optimizer's states, the update's slices.
  int64_t params = 0, grads = 0;  // whole gradients kept (reduce-scattered ones are freed)
  for (const auto& [p, g] : program_.param_grads) {
    params += executor_->local(p).size() * 4;
    grads += executor_->local(g).size() * 4;
  }
  const int64_t update = sharded_ ? sharded_->Bytes() : 0;
  stats_.parameter_bytes = params;
  stats_.gradient_bytes = grads + (sharded_ ? sharded_->GradientSliceBytes() : 0);
  stats_.optimizer_bytes = optimizer_->StateBytes();
  stats_.activation_bytes = executor_->peak_buffer_bytes() - params - grads;
  stats_.peak_bytes = executor_->peak_buffer_bytes() + stats_.optimizer_bytes + update;
  return executor_->local(program_.loss)[0];
}

Result<double> DistTrainer::Evaluate(Communicator& comm, const Dataset& data) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Evaluation e, EvaluateWithLoss(comm, data));
  return e.accuracy;
}

Result<DistTrainer::Evaluation> DistTrainer::EvaluateWithLoss(Communicator& comm,
                                                              const Dataset& data) {
  const int logits_home = program_.home[model_.logits];
  const Shape& in_shape = model_.graph.value(model_.input).shape;
  const int64_t batch = in_shape[0];
  const Layout& logits_layout = program_.values[logits_home].layout;
  const Shape& logits_shape = model_.graph.value(model_.logits).shape;
  const int64_t per = data.labels_per_example();  // positions of a sequence model
  SHARDSCOPE_ASSIGN_OR_RETURN(
      RedistPlan plan,
      PlanRedistribution(logits_layout,
                         Layout::Replicated(logits_layout.mesh(), logits_layout.shape()),
                         CostModel{}));
  const RedistPlan* whole_logits = &plan;
  Tensor images(in_shape, model_.graph.value(model_.input).dtype);
  int64_t correct = 0;
  double loss = 0;
  for (int64_t start = 0; start < data.size(); start += batch) {
    const int64_t n = std::min(batch, data.size() - start);
    FillBatch(data, start, n, &images);
    for (int v : program_.batch_values) {
      if (program_.values[v].global == model_.input)
        executor_->local(v) = ExtractShard(images, program_.values[v].layout, rank_);
    }
    SHARDSCOPE_RETURN_IF_ERROR(
        executor_->RunFor(comm, {logits_home}, step_, /*training=*/false, nullptr));
    // Whole logits on every rank, by the planner's own redistribution.
    Tensor logits(logits_shape);
    SHARDSCOPE_RETURN_IF_ERROR(
        ExecuteRedistribution(*whole_logits, comm, executor_->local(logits_home), &logits));
    correct += CountCorrect(logits, data.labels.ints() + start * per, n * per);
    loss += SumCrossEntropy(logits, data.labels.ints() + start * per, n * per);
  }
  if (data.size() == 0) return Evaluation{};
  const double rows = static_cast<double>(data.size() * per);
  return Evaluation{static_cast<double>(correct) / rows, loss / rows};
}

Status DistTrainer::GatherParameterShards(Communicator& comm) {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!sharded_ || !program_.param_sharding[i].gathered) continue;
    Tensor& shard = executor_->local(program_.param_grads[i].first);
    shard = Tensor(program_.values[program_.param_grads[i].first].layout.ShardShape());
    SHARDSCOPE_RETURN_IF_ERROR(sharded_->GatherParameter(comm, static_cast<int>(i), &shard));
  }
  return Status::Ok();
}

const Tensor& DistTrainer::ParameterShard(ValueId param) const {
  return executor_->local(program_.home[param]);
}

const Layout& DistTrainer::ParameterLayout(ValueId param) const {
  return program_.values[program_.home[param]].layout;
}

}  // namespace shardscope
