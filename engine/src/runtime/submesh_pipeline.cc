// Pipeline stages sharded over sub-meshes: one k-device program cut by stage
// (submesh_pipeline.h).
#include "shardscope/submesh_pipeline.h"

#include <algorithm>
#include <cstring>

#include "runtime/batch_util.h"
#include "runtime/sharded_update.h"
#include "shardscope/checked_math.h"
#include "shardscope/initializer.h"

namespace shardscope {
namespace {

// Tags: cut * micro_batches + micro-batch, below what MPI guarantees (communicator.h).
constexpr int64_t kStageTags = 7000;

// Parameters and constants: one buffer for every micro-batch. So are recomputed activations:
// a stage's forward phase writes and reads them, its backward phase replays them first.
std::vector<bool> SharedValues(const Graph& g, const DistProgram& p) {
  std::vector<bool> shared(p.values.size(), false);
  for (const Value& v : g.values()) {
    if ((v.kind == ValueKind::kParameter || v.kind == ValueKind::kConstant) && p.home[v.id] >= 0)
      shared[p.home[v.id]] = true;
  }
  for (const RecomputeSegment& seg : p.recompute) {
    for (int v : seg.dropped) shared[v] = true;
  }
  return shared;
}

// Each recomputed segment replays in the backward phase of its stage, just before the
// instruction that first reads what it dropped (DistProgram::recompute).
Status InsertReplays(const Graph& g, SubMeshPlan* plan) {
  const DistProgram& p = plan->program;
  for (const StageCut& c : plan->cuts) {
    for (const RecomputeSegment& seg : p.recompute) {
      if (std::find(seg.dropped.begin(), seg.dropped.end(), c.value) != seg.dropped.end())
        return Status::NotImplemented("sub-mesh pipeline: recompute " + seg.scope + ": " +
                                      g.value(p.values[c.value].global).name +
                                      " crosses stages; recompute scopes inside one stage");
    }
  }
  for (const RecomputeSegment& seg : p.recompute) {
    if (seg.before >= static_cast<int>(p.instrs.size())) continue;
    const int stage = plan->instr_stage[seg.before];
    for (int i : seg.instrs) {
      if (plan->instr_stage[i] != stage)
        return Status::NotImplemented("sub-mesh pipeline: recompute " + seg.scope +
                                      " spans stages " + std::to_string(plan->instr_stage[i]) +
                                      " and " + std::to_string(stage) +
                                      "; recompute scopes inside one stage");
    }
    std::vector<StageItem>& items = plan->backward[stage];
    auto at = std::find_if(items.begin(), items.end(), [&](const StageItem& item) {
      return item.kind == StageItem::Kind::kRun && item.index == seg.before;
    });
    std::vector<StageItem> replay;
    for (int i : seg.instrs) replay.push_back({StageItem::Kind::kRun, i});
    items.insert(at, replay.begin(), replay.end());
  }
  return Status::Ok();
}

// Every instruction's stage and phase: an operator's from its forward operator; any other
// instruction takes its first reader's (none: its input producer's).
Status AssignStages(const Graph& g, const SubMeshOptions& o, const std::vector<int>& producer,
                    const std::vector<std::vector<int>>& readers, SubMeshPlan* plan) {
  const DistProgram& p = plan->program;
  const int n = static_cast<int>(p.instrs.size());
  plan->instr_stage.assign(n, -1);
  plan->instr_backward.assign(n, false);
  for (int i = 0; i < n; ++i) {
    const DistInstr& in = p.instrs[i];
    if (in.kind != DistInstr::Kind::kCompute) continue;
    const Node& node = g.node(in.node);
    plan->instr_backward[i] = node.is_backward;
    const NodeId fwd = node.is_backward ? node.forward_node : node.id;
    if (fwd == kNoNode) continue;
    const auto it = o.stage_of.find(g.node(fwd).name);
    if (it == o.stage_of.end())
      return Status::Invalid("sub-mesh pipeline: no stage for operator '" + g.node(fwd).name + "'");
    if (it->second < 0 || it->second >= o.stages)
      return Status::Invalid("sub-mesh pipeline: operator '" + it->first + "' on stage " +
                             std::to_string(it->second) + " of " + std::to_string(o.stages));
    plan->instr_stage[i] = it->second;
  }
  for (int i = n - 1; i >= 0; --i) {
    if (plan->instr_stage[i] >= 0) continue;
    for (int v : p.instrs[i].outputs) {
      if (readers[v].empty() || plan->instr_stage[i] >= 0) continue;
      const int r = readers[v].front();
      plan->instr_stage[i] = plan->instr_stage[r];
      if (p.instrs[i].kind == DistInstr::Kind::kRedistribute)
        plan->instr_backward[i] = plan->instr_backward[r];
    }
  }
  for (int i = 0; i < n; ++i) {
    if (plan->instr_stage[i] >= 0) continue;
    for (int v : p.instrs[i].inputs) {
      const int src = producer[v];
      if (src < 0 || plan->instr_stage[i] >= 0) continue;
      plan->instr_stage[i] = plan->instr_stage[src];
      if (p.instrs[i].kind == DistInstr::Kind::kRedistribute)
        plan->instr_backward[i] = plan->instr_backward[src];
    }
    if (plan->instr_stage[i] < 0) plan->instr_stage[i] = o.stages - 1;  // reads only the batch
  }
  return Status::Ok();
}

// The values crossing stages, and each stage's phases with their sends and receives.
Status CutStages(const Graph& g, const std::vector<int>& producer,
                 const std::vector<std::vector<int>>& readers, SubMeshPlan* plan) {
  const DistProgram& p = plan->program;
  const int n = static_cast<int>(p.instrs.size());
  std::vector<std::vector<int>> recv_before(n), send_after(n);
  for (size_t v = 0; v < p.values.size(); ++v) {
    const int src = producer[v];
    if (src < 0) continue;
    const int from = plan->instr_stage[src];
    std::vector<bool> done(plan->stages, false);
    for (int r : readers[v]) {
      const int to = plan->instr_stage[r];
      if (to == from || done[to]) continue;
      done[to] = true;
      StageCut c;
      c.value = static_cast<int>(v);
      c.src_stage = from;
      c.dst_stage = to;
      c.send_backward = plan->instr_backward[src];
      c.recv_backward = plan->instr_backward[r];
      c.bytes = NumElements(p.values[v].layout.ShardShape()) * 4;
      const std::string& name = g.value(p.values[v].global).name;
      // A forward value goes to later stages, a gradient to earlier ones: 1F1B's chain.
      if (c.send_backward && !c.recv_backward)
        return Status::NotImplemented("sub-mesh pipeline: gradient " + name +
                                      " is read by a forward operator of stage " +
                                      std::to_string(to));
      if (!c.send_backward && !c.recv_backward && to < from)
        return Status::NotImplemented("sub-mesh pipeline: " + name + " flows from stage " +
                                      std::to_string(from) + " back to stage " +
                                      std::to_string(to) +
                                      "; stages must be a chain (a placed model: --unplaced "
                                      "producer runs unplaced operators with their producer)");
      const int index = static_cast<int>(plan->cuts.size());
      plan->cuts.push_back(c);
      send_after[src].push_back(index);
      recv_before[r].push_back(index);
    }
  }
  if (static_cast<int64_t>(plan->cuts.size()) * plan->micro_batches > kStageTags)
    return Status::NotImplemented("sub-mesh pipeline: " + std::to_string(plan->cuts.size()) +
                                  " values cross stages, more than the message tags hold");
  plan->forward.assign(plan->stages, {});
  plan->backward.assign(plan->stages, {});
  plan->touched.assign(plan->stages, std::vector<bool>(p.values.size(), false));
  for (int i = 0; i < n; ++i) {
    const int s = plan->instr_stage[i];
    auto& items = plan->instr_backward[i] ? plan->backward[s] : plan->forward[s];
    for (int c : recv_before[i]) items.push_back({StageItem::Kind::kRecv, c});
    items.push_back({StageItem::Kind::kRun, i});
    for (int c : send_after[i]) items.push_back({StageItem::Kind::kSend, c});
    for (int v : p.instrs[i].inputs) plan->touched[s][v] = true;
    for (int v : p.instrs[i].outputs) plan->touched[s][v] = true;
  }
  return Status::Ok();
}

}  // namespace

Result<SubMeshPlan> PlanSubMeshPipeline(ModelGraph* model, const SubMeshOptions& o) {
  if (o.stages < 1 || o.micro_batches < 1 || o.partition.devices < 1)
    return Status::Invalid("sub-mesh pipeline: stages, micro-batches and devices must be >= 1");
  SubMeshPlan plan;
  SHARDSCOPE_ASSIGN_OR_RETURN(plan.program, PlanTrainingProgram(model, o.partition, &plan.params));
  SHARDSCOPE_RETURN_IF_ERROR(CutSubMeshProgram(model->graph, o, &plan));
  return plan;
}

Status CutSubMeshProgram(const Graph& g, const SubMeshOptions& o, SubMeshPlan* out) {
  SubMeshPlan plan;
  plan.program = std::move(out->program);
  plan.params = std::move(out->params);
  plan.stages = o.stages;
  plan.stage_devices = o.partition.devices;
  plan.micro_batches = o.micro_batches;
  const DistProgram& p = plan.program;
  const auto done = [&](Status st) {  // the program stays with `out` either way
    if (st.ok()) {
      *out = std::move(plan);
    } else {
      out->program = std::move(plan.program);
      out->params = std::move(plan.params);
    }
    return st;
  };
  std::vector<int> producer(p.values.size(), -1);
  std::vector<std::vector<int>> readers(p.values.size());
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    for (int v : p.instrs[i].outputs) producer[v] = static_cast<int>(i);
    for (int v : p.instrs[i].inputs) readers[v].push_back(static_cast<int>(i));
  }
  if (Status st = AssignStages(g, o, producer, readers, &plan); !st.ok()) return done(st);
  plan.loss_stage = producer[p.loss] >= 0 ? plan.instr_stage[producer[p.loss]] : o.stages - 1;
  for (size_t i = 0; i < p.param_grads.size(); ++i) {
    int stage = -1;
    for (int r : readers[p.param_grads[i].first]) {
      const int s = plan.instr_stage[r];
      if (stage >= 0 && s != stage)
        return done(Status::NotImplemented("sub-mesh pipeline: parameter " +
                                           g.value(plan.params[i]).name + " is read on stages " +
                                           std::to_string(stage) + " and " + std::to_string(s) +
                                           " (a parameter lives on one stage)"));
      stage = s;
    }
    plan.param_stage.push_back(std::max(stage, 0));
  }
  if (Status st = CutStages(g, producer, readers, &plan); !st.ok()) return done(st);
  if (Status st = InsertReplays(g, &plan); !st.ok()) return done(st);
  PlacedProgram chain;  // PipelineOrder needs only the stages
  chain.workers = o.stages;
  chain.num_stages = o.stages;
  for (int s = 0; s < o.stages; ++s) chain.stage.push_back(s);
  plan.order =
      PipelineOrder(chain, PipelineOptions{o.stages, o.micro_batches, PipelineSchedule::kOneFOneB});
  for (const auto& order : plan.order)
    plan.slots.push_back(MicroBatchSlots(order, o.micro_batches));
  return done(Status::Ok());
}

int64_t SubMeshStageBytes(const Graph& graph, const SubMeshPlan& plan, int stage,
                          int optimizer_states) {
  const DistProgram& p = plan.program;
  const std::vector<bool> shared = SharedValues(graph, p);
  int64_t bytes = 0;
  for (size_t v = 0; v < p.values.size(); ++v) {
    if (!plan.touched[stage][v]) continue;
    if (!p.gathered_param.empty() && p.gathered_param[v] >= 0) continue;  // ZeRO 3: below
    const int64_t one = NumElements(p.values[v].layout.ShardShape()) *
                        DTypeBytes(graph.value(p.values[v].global).dtype);
    bytes += shared[v] ? one : one * plan.slots[stage];
  }
  bytes += std::max(PhaseGatheredBytes(p, plan.forward[stage]),
                    PhaseGatheredBytes(p, plan.backward[stage]));
  // The gradient sums and optimizer states; ZeRO's slices and scratch (ShardedUpdate::Bytes).
  int64_t scratch = 0;
  for (size_t i = 0; i < p.param_grads.size(); ++i) {
    if (plan.param_stage[i] != stage) continue;
    const ParamSharding* zero = p.param_sharding.empty() ? nullptr : &p.param_sharding[i];
    const int64_t shard = NumElements(p.values[p.param_grads[i].first].layout.ShardShape());
    const bool sliced = zero != nullptr && zero->group_size > 1;
    const int64_t updated = sliced ? zero->chunk : shard;
    bytes += (shard + optimizer_states * updated) * 4;
    if (!sliced) continue;
    bytes += ((zero->reduce_scatter ? zero->chunk : 0) + (zero->gathered ? zero->chunk : 0)) * 4;
    if (zero->group_size * zero->chunk != zero->elements)
      scratch = std::max(scratch, zero->group_size * zero->chunk);
  }
  // A bucket of several gradients is copied whole while it fills, during the update.
  int64_t filling = 0;
  for (const ScatterBucket& b : StageScatterBuckets(plan, stage))
    if (b.params.size() > 1) filling = std::max(filling, b.group_size * b.slice);
  return bytes + (scratch + filling) * 4;
}

SubMeshTrainer::~SubMeshTrainer() = default;

Result<std::unique_ptr<SubMeshTrainer>> SubMeshTrainer::Create(ModelGraph model,
                                                               const TrainConfig& config,
                                                               const SubMeshOptions& options,
                                                               int rank) {
  std::unique_ptr<SubMeshTrainer> t(new SubMeshTrainer());
  t->model_ = std::move(model);
  t->config_ = config;
  t->rank_ = rank;
  SHARDSCOPE_ASSIGN_OR_RETURN(t->plan_, PlanSubMeshPipeline(&t->model_, options));
  const int k = t->plan_.stage_devices;
  t->stage_ = rank / k;
  t->local_ = rank % k;
  if (rank < 0 || t->stage_ >= t->plan_.stages)
    return Status::Invalid("sub-mesh pipeline: rank " + std::to_string(rank) + " beyond " +
                           std::to_string(t->plan_.stages) + " stages of " + std::to_string(k));
  const DistProgram& p = t->plan_.program;
  const Graph& g = t->model_.graph;
  t->executor_ = std::make_unique<DistExecutor>(g, p, t->local_);
  const std::vector<bool> shared = SharedValues(g, p);
  const std::vector<bool>& touched = t->plan_.touched[t->stage_];
  for (size_t v = 0; v < p.values.size(); ++v) {
    if (!touched[v])
      t->executor_->local(static_cast<int>(v)) = Tensor();  // another stage's
    else if (!shared[v])
      t->slotted_.push_back(static_cast<int>(v));
  }
  // Activations are transient in the program (allocated by the executor when first written);
  // here every slot holds each of them, written or received, for the whole run.
  t->slot_buf_.resize(t->plan_.slots[t->stage_]);
  for (auto& set : t->slot_buf_) {
    for (int v : t->slotted_)
      set.emplace_back(p.values[v].layout.ShardShape(), g.value(p.values[v].global).dtype);
  }
  for (int v : t->slotted_) t->executor_->local(v) = Tensor();
  for (size_t i = 0; i < p.param_grads.size(); ++i) {
    if (t->plan_.param_stage[i] == t->stage_) t->owned_.push_back(static_cast<int>(i));
  }
  t->grad_sum_.reserve(t->owned_.size());
  for (int i : t->owned_) {
    const int home = p.param_grads[i].first;
    const Value& v = g.value(t->plan_.params[i]);
    t->executor_->local(home) =
        ExtractShard(InitializeValue(v, config.seed), p.values[home].layout, t->local_);
    t->grad_sum_.emplace_back(p.values[home].layout.ShardShape());
    t->param_ptrs_.push_back(&t->executor_->local(home));
    t->grad_ptrs_.push_back(&t->grad_sum_.back());
  }
  if (p.optimizer_sharding > 0) {  // each rank updates a slice of its shard
    KeepStageSharding(t->plan_, t->stage_, &t->plan_.program);
    t->sharded_ = std::make_unique<ShardedUpdate>(p, *t->executor_, t->local_);
    std::vector<bool> owned(p.param_grads.size(), false);
    for (int i : t->owned_) owned[i] = true;
    t->sharded_->set_only(std::move(owned));
    ShardedUpdate* sharded = t->sharded_.get();
    t->executor_->set_gather([sharded](Communicator& comm, int param, Tensor* out) {
      return sharded->GatherParameter(comm, param, out);
    });
    for (int i : t->owned_) {  // ZeRO 3: the slice is kept, the whole shard gathered when read
      if (p.param_sharding[i].gathered) t->executor_->local(p.param_grads[i].first) = Tensor();
    }
  }
  t->forward_release_ = PhaseReleases(p, t->plan_.forward[t->stage_]);
  t->backward_release_ = PhaseReleases(p, t->plan_.backward[t->stage_]);
  t->optimizer_ = MakeOptimizer(config.optimizer);
  return t;
}

Status SubMeshTrainer::Local(Communicator& world) {
  const int need = plan_.stages * plan_.stage_devices;
  if (world.size() != need)
    return Status::Invalid("sub-mesh pipeline: " + std::to_string(plan_.stages) + " stages of " +
                           std::to_string(plan_.stage_devices) + " devices need " +
                           std::to_string(need) + " ranks, the communicator has " +
                           std::to_string(world.size()));
  if (stage_comm_ == nullptr) {
    SHARDSCOPE_ASSIGN_OR_RETURN(stage_comm_, world.Split(stage_, local_));
  }
  return Status::Ok();
}

void SubMeshTrainer::UseSlot(int slot) {
  std::vector<Tensor>& set = slot_buf_[slot];
  for (size_t i = 0; i < slotted_.size(); ++i) std::swap(executor_->local(slotted_[i]), set[i]);
}

Status SubMeshTrainer::RunPhase(Communicator& world, bool backward, int micro, bool training) {
  const int k = plan_.stage_devices;
  const std::vector<StageItem>& items = backward ? plan_.backward[stage_] : plan_.forward[stage_];
  const std::vector<std::vector<int>>& release = backward ? backward_release_ : forward_release_;
  for (size_t at = 0; at < items.size(); ++at) {
    const StageItem& item = items[at];
    if (item.kind == StageItem::Kind::kRun) {
      SHARDSCOPE_RETURN_IF_ERROR(
          executor_->RunInstruction(*stage_comm_, item.index, step_, training, &stats_));
      for (int v : release[at]) executor_->ReleaseValue(v);
      continue;
    }
    const StageCut& c = plan_.cuts[item.index];
    const int tag = item.index * plan_.micro_batches + micro;
    Tensor& t = executor_->local(c.value);
    const std::string& name = graph().value(plan_.program.values[c.value].global).name;
    if (item.kind == StageItem::Kind::kSend) {
      if (!training && c.recv_backward) continue;  // evaluation runs no backward
      Status st = world.SendBytes(TensorBytes(t), c.dst_stage * k + local_, tag);
      if (!st.ok())
        return st.WithContext("sending " + name + " to stage " + std::to_string(c.dst_stage));
      stats_.bytes_sent += c.bytes;
      continue;
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<std::byte> msg,
                                world.RecvBytes(c.src_stage * k + local_, tag));
    std::span<std::byte> dst = TensorBytes(t);
    if (msg.size() != dst.size())
      return Status::Internal("sub-mesh pipeline: message for " + name + " has " +
                              std::to_string(msg.size()) + " bytes, its shard " +
                              std::to_string(dst.size()));
    std::memcpy(dst.data(), msg.data(), msg.size());
    stats_.bytes_received += c.bytes;
  }
  return Status::Ok();
}

Result<float> SubMeshTrainer::Step(Communicator& world, const Tensor& images,
                                   const Tensor& labels) {
  SHARDSCOPE_RETURN_IF_ERROR(Local(world));
  const int m = plan_.micro_batches;
  const Value& input = graph().value(model_.input);
  const Value& label = graph().value(model_.labels);
  const int64_t b = input.shape[0];
  if (images.dim(0) != b * m)
    return Status::Invalid("batch of " + std::to_string(images.dim(0)) + " examples, but " +
                           std::to_string(m) + " micro-batches of " + std::to_string(b) + " need " +
                           std::to_string(b * m));
  const DistProgram& p = plan_.program;
  const std::vector<bool>& touched = plan_.touched[stage_];
  Tensor x(input.shape, input.dtype), y(label.shape, label.dtype);
  float loss = 0;
  bool first = true;
  for (const auto& [backward, micro] : plan_.order[stage_]) {
    const int slot = micro % static_cast<int>(slot_buf_.size());
    UseSlot(slot);
    if (!backward) {
      CopyRows(images, micro * b, &x);
      CopyRows(labels, micro * b, &y);
      for (int v : p.batch_values) {
        if (touched[v])
          executor_->local(v) =
              ExtractShard(p.values[v].global == model_.labels ? y : x, p.values[v].layout, local_);
      }
    }
    const Status st = RunPhase(world, backward, micro, true);
    if (st.ok() && !backward && stage_ == plan_.loss_stage) loss += executor_->local(p.loss)[0];
    if (st.ok() && backward) {
      for (size_t i = 0; i < owned_.size(); ++i) {
        const Tensor& grad = executor_->local(p.param_grads[owned_[i]].second);
        Tensor& sum = grad_sum_[i];
        for (int64_t j = 0; j < sum.size(); ++j) sum[j] = first ? grad[j] : sum[j] + grad[j];
      }
      first = false;
    }
    UseSlot(slot);
    SHARDSCOPE_RETURN_IF_ERROR(st);
  }
  AverageOverMicroBatches(grad_sum_, m);
  const float scale = 1.0f / static_cast<float>(m);
  SHARDSCOPE_RETURN_IF_ERROR(Update());
  stats_.optimizer_bytes = optimizer_->StateBytes();
  ++step_;
  std::vector<float> out = {loss * scale};
  SHARDSCOPE_RETURN_IF_ERROR(world.Broadcast(out, plan_.loss_stage * plan_.stage_devices));
  return out[0];
}

Status SubMeshTrainer::Update() {
  if (!sharded_) {
    optimizer_->Step(param_ptrs_, grad_ptrs_);
    return Status::Ok();
  }
  // The summed gradients stand in the executor's gradient buffers while the slices are taken.
  const DistProgram& p = plan_.program;
  for (size_t i = 0; i < owned_.size(); ++i)
    std::swap(executor_->local(p.param_grads[owned_[i]].second), grad_sum_[i]);
  Status st = sharded_->GatherGradients(*stage_comm_, &stats_);
  if (st.ok()) {
    std::vector<std::span<float>> params;
    std::vector<std::span<const float>> grads;
    for (int i : owned_) {
      params.push_back(sharded_->params()[i]);
      grads.push_back(sharded_->grads()[i]);
    }
    optimizer_->StepSpans(params, grads);
    st = sharded_->GatherParameters(*stage_comm_, &stats_);
  }
  for (size_t i = 0; i < owned_.size(); ++i)
    std::swap(executor_->local(p.param_grads[owned_[i]].second), grad_sum_[i]);
  return st;
}

Result<double> SubMeshTrainer::Evaluate(Communicator& world, const Dataset& data) {
  SHARDSCOPE_RETURN_IF_ERROR(Local(world));
  const DistProgram& p = plan_.program;
  const int logits = p.home[model_.logits];
  int logits_stage = plan_.stages - 1;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const auto& outs = p.instrs[i].outputs;
    if (std::find(outs.begin(), outs.end(), logits) != outs.end())
      logits_stage = plan_.instr_stage[i];
  }
  const Value& input = graph().value(model_.input);
  const Value& label = graph().value(model_.labels);
  const int64_t b = input.shape[0];
  const int64_t per = data.labels_per_example();
  const Layout& layout = p.values[logits].layout;
  SHARDSCOPE_ASSIGN_OR_RETURN(
      RedistPlan whole,
      PlanRedistribution(layout, Layout::Replicated(layout.mesh(), layout.shape()), CostModel{}));
  Tensor x(input.shape, input.dtype), y(label.shape, label.dtype);  // labels: zeros
  Tensor all(graph().value(model_.logits).shape);
  int64_t correct = 0;
  UseSlot(0);
  Status st;
  for (int64_t start = 0; start < data.size() && st.ok(); start += b) {
    const int64_t n = std::min(b, data.size() - start);
    FillBatch(data, start, n, &x);
    for (int v : p.batch_values) {
      if (plan_.touched[stage_][v])
        executor_->local(v) =
            ExtractShard(p.values[v].global == model_.labels ? y : x, p.values[v].layout, local_);
    }
    st = RunPhase(world, /*backward=*/false, 0, /*training=*/false);
    if (st.ok() && stage_ == logits_stage) {
      st = ExecuteRedistribution(whole, *stage_comm_, executor_->local(logits), &all);
      correct += CountCorrect(all, data.labels.ints() + start * per, n * per);
    }
  }
  UseSlot(0);
  SHARDSCOPE_RETURN_IF_ERROR(st);
  std::vector<float> count = {static_cast<float>(correct)};
  SHARDSCOPE_RETURN_IF_ERROR(world.Broadcast(count, logits_stage * plan_.stage_devices));
  return data.size() == 0 ? 0.0
                          : static_cast<double>(count[0]) / static_cast<double>(data.size() * per);
}

Status SubMeshTrainer::GatherParameterShards(Communicator& world) {
  SHARDSCOPE_RETURN_IF_ERROR(Local(world));
  const DistProgram& p = plan_.program;
  for (int i : owned_) {
    if (!sharded_ || !p.param_sharding[i].gathered) continue;
    Tensor& shard = executor_->local(p.param_grads[i].first);
    shard = Tensor(p.values[p.param_grads[i].first].layout.ShardShape());
    SHARDSCOPE_RETURN_IF_ERROR(sharded_->GatherParameter(*stage_comm_, i, &shard));
  }
  return Status::Ok();
}

const Tensor* SubMeshTrainer::ParameterShard(ValueId param) const {
  for (int i : owned_) {
    if (plan_.params[i] == param) return &executor_->local(plan_.program.param_grads[i].first);
  }
  return nullptr;
}

const Layout& SubMeshTrainer::ParameterLayout(ValueId param) const {
  return plan_.program.values[plan_.program.home[param]].layout;
}

}  // namespace shardscope
