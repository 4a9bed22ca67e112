// Per-worker execution of a placed program with micro-batch pipelining (pipeline.h).
#include "shardscope/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "ops/op_registry.h"
#include "runtime/batch_util.h"
#include "shardscope/autodiff.h"
#include "shardscope/checked_math.h"
#include "shardscope/initializer.h"

namespace shardscope {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Tags 0..kPipelineTags-1 carry activations and gradients; the recorder uses one above.
constexpr int kPipelineTags = 7000;
int Tag(int edge, int micro, int micro_count) { return edge * micro_count + micro; }

}  // namespace

const char* PipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGPipe ? "gpipe" : "1f1b";
}

Result<PipelineSchedule> ParsePipelineSchedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  if (name == "1f1b") return PipelineSchedule::kOneFOneB;
  return Status::Invalid("unknown pipeline schedule '" + name + "' (gpipe, 1f1b)");
}

std::vector<std::vector<std::pair<bool, int>>> PipelineOrder(const PlacedProgram& program,
                                                             const PipelineOptions& options) {
  const int m = options.micro_batches;
  std::vector<std::vector<std::pair<bool, int>>> order(program.workers);
  for (int w = 0; w < program.workers; ++w) {
    auto& o = order[w];
    if (options.schedule == PipelineSchedule::kGPipe || program.stage[w] < 0) {
      for (int i = 0; i < m; ++i) o.push_back({false, i});
      for (int i = 0; i < m; ++i) o.push_back({true, i});
      continue;
    }
    const int warmup = std::min(m, program.num_stages - 1 - program.stage[w]);
    for (int i = 0; i < warmup; ++i) o.push_back({false, i});
    for (int i = 0; i < m; ++i) {
      if (warmup + i < m) o.push_back({false, warmup + i});
      o.push_back({true, i});
    }
  }
  return order;
}

int MicroBatchSlots(const std::vector<std::pair<bool, int>>& order, int micro_batches) {
  int live = 0, most = 1;
  for (const auto& [backward, micro] : order) {
    live += backward ? -1 : 1;
    most = std::max(most, live);
  }
  // Set i % most must be free when micro-batch i's forward begins.
  std::vector<int> holder(most, -1);
  for (const auto& [backward, micro] : order) {
    int& h = holder[micro % most];
    if (backward) {
      h = -1;
    } else if (h >= 0) {
      return std::max(1, micro_batches);
    } else {
      h = micro;
    }
  }
  return std::min(most, std::max(1, micro_batches));
}

Status CheckDeadlockFree(const Graph& graph, const PlacedProgram& program,
                         const std::vector<std::vector<std::pair<bool, int>>>& order) {
  // Expand each worker's phases into (instruction, micro-batch) and run them: a receive
  // proceeds once its send has happened.
  struct Item {
    const PlacedInstr* instr;
    int micro;
  };
  int micro_count = 0;
  for (const auto& o : order)
    for (const auto& [backward, micro] : o) micro_count = std::max(micro_count, micro + 1);
  std::vector<std::vector<Item>> seq(program.workers);
  for (int w = 0; w < program.workers; ++w) {
    for (const auto& [backward, micro] : order[w]) {
      const WorkerProgram& wp = program.programs[w];
      for (const PlacedInstr& in : backward ? wp.backward : wp.forward)
        seq[w].push_back({&in, micro});
    }
  }
  std::vector<bool> sent(program.edges.size() * std::max(1, micro_count), false);
  std::vector<size_t> pos(program.workers, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int w = 0; w < program.workers; ++w) {
      while (pos[w] < seq[w].size()) {
        const Item& it = seq[w][pos[w]];
        const int key = Tag(it.instr->edge, it.micro, micro_count);
        if (it.instr->kind == PlacedInstr::Kind::kRecv && !sent[key]) break;
        if (it.instr->kind == PlacedInstr::Kind::kSend) sent[key] = true;
        ++pos[w];
        progress = true;
      }
    }
  }
  for (int w = 0; w < program.workers; ++w) {
    if (pos[w] == seq[w].size()) continue;
    const Item& it = seq[w][pos[w]];
    const CutEdge& e = program.edges[it.instr->edge];
    return Status::Invalid("the schedule deadlocks: worker " + std::to_string(w) + " waits for " +
                           graph.value(e.value).name + " of micro-batch " +
                           std::to_string(it.micro) + " from worker " +
                           std::to_string(e.src_worker) +
                           ", which is itself blocked before sending it (the placement "
                           "crosses workers back and forth, so some worker is not one "
                           "contiguous stage); use the gpipe schedule");
  }
  return Status::Ok();
}

namespace {

// The values worker `rank` keeps buffers for: those its training or evaluation program
// computes, reads, sends or receives.
std::vector<bool> TouchedValues(const Graph& g, const PipelinePlan& plan, int rank) {
  std::vector<bool> touched(g.num_values(), false);
  for (const PlacedProgram* p : {&plan.train, &plan.eval}) {
    const WorkerProgram& wp = p->programs[rank];
    for (const auto* list : {&wp.forward, &wp.backward}) {
      for (const PlacedInstr& in : *list) {
        if (in.kind != PlacedInstr::Kind::kCompute) {
          touched[p->edges[in.edge].value] = true;
          continue;
        }
        const Node& n = g.node(in.node);
        for (ValueId v : n.inputs) touched[v] = true;
        for (ValueId v : n.outputs) touched[v] = true;
      }
    }
  }
  return touched;
}

}  // namespace

Result<PipelinePlan> PlanPipeline(ModelGraph* model, const PipelineOptions& options) {
  if (options.micro_batches < 1) return Status::Invalid("--micro-batches must be at least 1");
  Graph& g = model->graph;
  const std::vector<ValueId> all_params = g.Parameters();
  if (all_params.empty()) return Status::Invalid("model has no parameters to train");
  SHARDSCOPE_ASSIGN_OR_RETURN(Gradients grads, BuildBackward(g, model->loss, all_params));
  SHARDSCOPE_RETURN_IF_ERROR(g.Verify().WithContext("graph after autodiff"));
  PipelinePlan plan;
  std::vector<ValueId> grad_values;
  for (size_t i = 0; i < all_params.size(); ++i) {
    if (grads.grads[i] == kNoValue) continue;
    plan.params.push_back(all_params[i]);
    grad_values.push_back(grads.grads[i]);
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(plan.train, PlaceGraph(g, {model->loss}, plan.params, grad_values,
                                                     options.workers, options.unplaced));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      plan.eval, PlaceGraph(g, {model->logits}, {}, {}, options.workers, options.unplaced));
  if (static_cast<int64_t>(plan.train.edges.size()) * options.micro_batches > kPipelineTags) {
    return Status::Invalid(std::to_string(plan.train.edges.size()) + " cut edges times " +
                           std::to_string(options.micro_batches) +
                           " micro-batches exceed the message tags available");
  }
  plan.order = PipelineOrder(plan.train, options);
  for (const auto& o : plan.order) plan.slots.push_back(MicroBatchSlots(o, options.micro_batches));
  SHARDSCOPE_RETURN_IF_ERROR(
      CheckDeadlockFree(g, plan.train, plan.order)
          .WithContext(std::string("schedule ") + PipelineScheduleName(options.schedule) +
                       " with " + std::to_string(options.micro_batches) + " micro-batches"));
  return plan;
}

Result<int64_t> WorkerMemoryBytes(const Graph& graph, const PipelinePlan& plan, int micro_batches,
                                  int optimizer_states, int rank) {
  // Each value's bytes fit (Graph::CheckNewValue); their sum is what needs checking.
  std::optional<int64_t> total = 0;
  auto add = [&](int64_t bytes, int64_t times) {
    auto product = total ? CheckedMul(bytes, times) : std::nullopt;
    total = product ? CheckedAdd(*total, *product) : std::nullopt;
  };
  const std::vector<bool> touched = TouchedValues(graph, plan, rank);
  for (const Value& v : graph.values()) {
    if (!touched[v.id]) continue;
    const bool shared = v.kind == ValueKind::kParameter || v.kind == ValueKind::kConstant;
    const int sets = rank < static_cast<int>(plan.slots.size()) ? plan.slots[rank] : micro_batches;
    add(NumElements(v.shape) * DTypeBytes(v.dtype), shared ? 1 : sets);
  }
  for (ValueId p : plan.train.programs[rank].params)  // accumulated gradient + optimizer state
    add(NumElements(graph.value(p).shape) * 4, 1 + optimizer_states);
  if (!total) {
    return Status::Invalid("the memory of worker " + std::to_string(rank) +
                           " does not fit in 63 bits");
  }
  return *total;
}

Result<std::unique_ptr<PipelineTrainer>> PipelineTrainer::Create(ModelGraph model,
                                                                 const TrainConfig& config,
                                                                 const PipelineOptions& options,
                                                                 int rank) {
  if (rank < 0 || rank >= options.workers)
    return Status::Invalid("rank " + std::to_string(rank) + " outside the " +
                           std::to_string(options.workers) + " workers");
  SHARDSCOPE_ASSIGN_OR_RETURN(PipelinePlan plan, PlanPipeline(&model, options));
  std::unique_ptr<PipelineTrainer> t(new PipelineTrainer());
  t->model_ = std::move(model);
  t->config_ = config;
  t->options_ = options;
  t->rank_ = rank;
  const Graph& g = t->model_.graph;
  t->params_ = plan.params;
  t->order_ = plan.order[rank];
  // Buffers for the values this worker touches (in either program); WorkerMemoryBytes
  // counts the same.
  const std::vector<bool> touched = TouchedValues(g, plan, rank);
  const int slots = plan.slots[rank];
  t->program_ = std::move(plan.train);
  t->eval_program_ = std::move(plan.eval);
  t->shared_.resize(g.num_values());
  t->micro_.assign(slots, std::vector<Tensor>(g.num_values()));
  for (const Value& v : g.values()) {
    if (!touched[v.id]) continue;
    if (v.kind == ValueKind::kParameter) {
      t->shared_[v.id] = InitializeValue(v, config.seed);
      t->stats_.parameter_bytes += t->shared_[v.id].size() * 4;
    } else if (v.kind == ValueKind::kConstant) {
      t->shared_[v.id] = InitializeValue(v, 0);
    } else {
      for (auto& buffers : t->micro_) buffers[v.id] = Tensor(v.shape, v.dtype);
      t->stats_.activation_bytes += NumElements(v.shape) * 4 * slots;
    }
  }
  const WorkerProgram& mine = t->program_.programs[rank];
  for (size_t i = 0; i < mine.params.size(); ++i) {
    t->grad_sum_.emplace_back(g.value(mine.grads[i]).shape);
    t->stats_.gradient_bytes += t->grad_sum_.back().size() * 4;
  }
  for (size_t i = 0; i < mine.params.size(); ++i) {
    t->param_ptrs_.push_back(&t->shared_[mine.params[i]]);
    t->grad_ptrs_.push_back(&t->grad_sum_[i]);
  }
  t->optimizer_ = MakeOptimizer(config.optimizer);
  return t;
}

Tensor& PipelineTrainer::Buffer(int micro, ValueId v) {
  const ValueKind kind = model_.graph.value(v).kind;
  return kind == ValueKind::kParameter || kind == ValueKind::kConstant
             ? shared_[v]
             : micro_[micro % micro_.size()][v];
}

Tensor* PipelineTrainer::MutableParameter(ValueId param) {
  Tensor& t = shared_[param];
  return t.size() > 0 ? &t : nullptr;
}

const Tensor* PipelineTrainer::Parameter(ValueId param) const {
  for (ValueId p : program_.programs[rank_].params) {
    if (p == param) return &shared_[p];
  }
  return nullptr;
}

Status PipelineTrainer::RunPhase(Communicator& comm, const PlacedProgram& program,
                                 const std::vector<PlacedInstr>& instrs, int micro, int micro_count,
                                 bool training, PhaseSpan* span) {
  const Graph& g = model_.graph;
  for (const PlacedInstr& instr : instrs) {
    if (instr.kind == PlacedInstr::Kind::kCompute) {
      const Node& node = g.node(instr.node);
      in_.clear();
      out_.clear();
      for (ValueId v : node.inputs) in_.push_back(&Buffer(micro, v));
      for (ValueId v : node.outputs) out_.push_back(&Buffer(micro, v));
      const auto start = Clock::now();
      GetOpDef(node.op).forward(KernelContext{node.attrs, in_, out_, step_, training});
      span->compute_seconds += Since(start);
      continue;
    }
    const CutEdge& e = program.edges[instr.edge];
    Tensor& t = Buffer(micro, e.value);
    const int tag = Tag(instr.edge, micro, micro_count);
    if (instr.kind == PlacedInstr::Kind::kSend) {
      const auto start = Clock::now();
      Status st = comm.SendBytes(TensorBytes(t), e.dst_worker, tag);
      if (!st.ok()) return st.WithContext("sending " + g.value(e.value).name);
      if (training) stats_.comm_seconds += Since(start);
      stats_.bytes_sent += e.bytes;
      continue;
    }
    const auto start = Clock::now();
    std::span<std::byte> dst = TensorBytes(t);
    if (t.dtype() == DType::kF32) {
      Status st = comm.Recv(std::span<float>(t.data(), t.size()), e.src_worker, tag);
      if (!st.ok()) return st.WithContext("receiving " + g.value(e.value).name);
    } else {
      SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<std::byte> msg, comm.RecvBytes(e.src_worker, tag));
      if (msg.size() != dst.size())
        return Status::Internal("message for " + g.value(e.value).name + " has the wrong size");
      std::memcpy(dst.data(), msg.data(), msg.size());
    }
    const double waited = Since(start);
    span->idle_seconds += waited;
    if (training) stats_.comm_seconds += waited;
    stats_.bytes_received += e.bytes;
  }
  return Status::Ok();
}

Result<float> PipelineTrainer::Step(Communicator& comm, const Tensor& images,
                                    const Tensor& labels) {
  const int m = options_.micro_batches;
  const int64_t b = model_.graph.value(model_.input).shape[0];
  if (images.dim(0) != b * m) {
    return Status::Invalid("batch of " + std::to_string(images.dim(0)) + " examples, but " +
                           std::to_string(m) + " micro-batches of " + std::to_string(b) + " need " +
                           std::to_string(b * m));
  }
  const WorkerProgram& mine = program_.programs[rank_];
  const auto step_start = Clock::now();
  step_origin_ = std::chrono::duration<double>(step_start.time_since_epoch()).count();
  spans_.clear();
  const int loss_worker = program_.target_worker[0];
  std::vector<float> loss = {0.0f};
  int backwards = 0;
  for (const auto& [backward, micro] : order_) {
    if (!backward && mine.reads_input) CopyRows(images, micro * b, &Buffer(micro, model_.input));
    if (!backward && mine.reads_labels) CopyRows(labels, micro * b, &Buffer(micro, model_.labels));
    PhaseSpan span;
    span.micro_batch = micro;
    span.backward = backward;
    span.start = Since(step_start);
    SHARDSCOPE_RETURN_IF_ERROR(RunPhase(comm, program_, backward ? mine.backward : mine.forward,
                                        micro, m, /*training=*/true, &span));
    span.end = Since(step_start);
    stats_.compute_seconds += span.compute_seconds;
    stats_.idle_seconds += span.idle_seconds;
    spans_.push_back(span);
    // A micro-batch's buffer set is reused by a later one: take its loss and gradients now
    // (in micro-batch order under both schedules, so the sums are the same).
    if (!backward && rank_ == loss_worker) loss[0] += Buffer(micro, model_.loss)[0];
    if (backward) AccumulateGradients(micro, backwards++ == 0);
  }
  // Mean of the micro-batches' gradients, then this worker's optimizer step.
  AverageOverMicroBatches(grad_sum_, m);
  const float scale = 1.0f / static_cast<float>(m);
  optimizer_->Step(param_ptrs_, grad_ptrs_);
  stats_.optimizer_bytes = optimizer_->StateBytes();
  ++step_;
  // The loss, from its worker to all.
  loss[0] *= scale;
  const auto broadcast_start = Clock::now();
  SHARDSCOPE_RETURN_IF_ERROR(comm.Broadcast(loss, loss_worker));
  stats_.comm_seconds += Since(broadcast_start);
  stats_.step_seconds += Since(step_start);
  return loss[0];
}

void PipelineTrainer::AccumulateGradients(int micro, bool first) {
  const WorkerProgram& mine = program_.programs[rank_];
  for (size_t i = 0; i < mine.grads.size(); ++i) {
    Tensor& sum = grad_sum_[i];
    const Tensor& g = Buffer(micro, mine.grads[i]);
    if (first) {
      std::memcpy(sum.data(), g.data(), sum.size() * 4);
      continue;
    }
    for (int64_t j = 0; j < sum.size(); ++j) sum[j] += g[j];
  }
}

Result<double> PipelineTrainer::Evaluate(Communicator& comm, const Dataset& data) {
  const int64_t b = model_.graph.value(model_.input).shape[0];
  const WorkerProgram& mine = eval_program_.programs[rank_];
  const bool counts = rank_ == eval_program_.target_worker[0];
  int64_t correct = 0;
  for (int64_t start = 0; start < data.size(); start += b) {
    const int64_t n = std::min(b, data.size() - start);
    if (mine.reads_input) FillBatch(data, start, n, &micro_[0][model_.input]);
    PhaseSpan ignored;
    SHARDSCOPE_RETURN_IF_ERROR(
        RunPhase(comm, eval_program_, mine.forward, 0, 1, /*training=*/false, &ignored));
    if (counts) correct += CountCorrect(micro_[0][model_.logits], data.labels.ints() + start, n);
  }
  std::vector<float> count = {static_cast<float>(correct)};
  SHARDSCOPE_RETURN_IF_ERROR(comm.Broadcast(count, eval_program_.target_worker[0]));
  return data.size() == 0 ? 0.0 : static_cast<double>(count[0]) / data.size();
}

}  // namespace shardscope
