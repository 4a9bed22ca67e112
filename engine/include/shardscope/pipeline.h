// Training a placed model (placement.h): one worker per rank, micro-batch pipelining.
//
// Every rank creates a PipelineTrainer with the same model and options and its own rank;
// the communicator spans all ranks (in-process devices or MPI). Each worker runs only its
// program: its operators, its parameters and their optimizer state, and point-to-point
// sends/receives along the cut edges (tag = edge * micro_batches + micro-batch).
//
// Micro-batches. The model is built with the micro-batch size b; Step() takes the global
// batch of M * b examples, runs M micro-batches and applies the mean of their gradients
// once (gradient accumulation), so for a loss that is a mean over the batch it equals the
// non-pipelined step up to float rounding (the correctness law). Schedules per worker:
//   gpipe  F0 F1 .. F(M-1) B0 B1 .. B(M-1)
//   1f1b   (stages - 1 - stage) warm-up forwards, then one forward / one backward, then
//          the remaining backwards (fewer live activations). Needs each worker to be one
//          contiguous stage of a chain: when a placement crosses workers back and forth
//          the schedule would deadlock, which Create() detects (by simulating the message
//          order) and refuses, naming the worker. (UnplacedPolicy::kWithProducer often
//          makes a placement a chain: seed 001.)
// Stochastic operators (Dropout) see the step number, not the micro-batch: with M > 1
// their masks differ from the non-pipelined run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/data.h"
#include "shardscope/optimizer.h"
#include "shardscope/placement.h"
#include "shardscope/trainer.h"

namespace shardscope {

enum class PipelineSchedule { kGPipe, kOneFOneB };
const char* PipelineScheduleName(PipelineSchedule schedule);  // "gpipe", "1f1b"
Result<PipelineSchedule> ParsePipelineSchedule(const std::string& name);

struct PipelineOptions {
  int workers = 1;        // ranks of the communicator; must exceed the highest placed worker
  int micro_batches = 1;  // M
  PipelineSchedule schedule = PipelineSchedule::kGPipe;
  UnplacedPolicy unplaced = UnplacedPolicy::kWorkerZero;
};

// One phase of one micro-batch on one worker. Times in seconds from the start of the
// worker's Step(); workers leave the previous step's collective at slightly different
// moments, so compare workers through last_step_origin().
struct PhaseSpan {
  int micro_batch = 0;
  bool backward = false;
  double start = 0, end = 0;
  double compute_seconds = 0;  // in kernels
  double idle_seconds = 0;     // waiting in receives
};

// Accumulated over steps on one worker.
struct WorkerStats {
  double compute_seconds = 0;
  double idle_seconds = 0;  // waiting for messages
  // In receives (idle_seconds), sends and the loss's broadcast: docs/run-format.md's
  // communication, which never exceeds step_seconds.
  double comm_seconds = 0;
  double step_seconds = 0;  // wall time inside Step()
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;    // accumulated gradients of its parameters
  int64_t optimizer_bytes = 0;   // optimizer state of its parameters
  int64_t activation_bytes = 0;  // buffers of all micro-batches
};

// What PipelineTrainer::Create runs, planned without allocating a buffer: the model
// differentiated, placed for training and evaluation, every worker's phase order checked.
struct PipelinePlan {
  PlacedProgram train, eval;
  std::vector<ValueId> params;                           // the trained parameters (graph order)
  std::vector<std::vector<std::pair<bool, int>>> order;  // per worker (PipelineOrder)
  // Per worker, the micro-batches whose buffers live at once (MicroBatchSlots): M under gpipe,
  // min(M, stages - stage) under 1f1b. Micro-batch i uses buffer set i % slots.
  std::vector<int> slots;
};
// Appends the backward operators to `model`'s graph (verified) and plans it.
Result<PipelinePlan> PlanPipeline(ModelGraph* model, const PipelineOptions& options);

// The bytes worker `rank` of a PipelineTrainer allocates for `plan`: the parameters and
// constants it reads, its other values once per micro-batch in flight (plan.slots), and per
// owned parameter the
// accumulated gradient and `optimizer_states` tensors. kInvalidInput if it overflows.
Result<int64_t> WorkerMemoryBytes(const Graph& graph, const PipelinePlan& plan, int micro_batches,
                                  int optimizer_states, int rank);

class PipelineTrainer {
 public:
  // Differentiates `model` (built with the micro-batch size), places it on
  // `options.workers` workers and initialises this worker's parameters from the seed (the
  // numbers a single-device Trainer draws).
  static Result<std::unique_ptr<PipelineTrainer>> Create(ModelGraph model,
                                                         const TrainConfig& config,
                                                         const PipelineOptions& options, int rank);

  // One step on the global batch (micro_batches * b examples; every worker passes the same
  // batch). Returns the batch's mean loss on every worker.
  Result<float> Step(Communicator& comm, const Tensor& images, const Tensor& labels);
  // Top-1 accuracy on `data` (forward only, in batches of b); the same on every worker.
  Result<double> Evaluate(Communicator& comm, const Dataset& data);

  const Graph& graph() const { return model_.graph; }
  const PlacedProgram& program() const { return program_; }
  const PlacedProgram& eval_program() const { return eval_program_; }
  const PipelineOptions& options() const { return options_; }
  int rank() const { return rank_; }
  const std::vector<ValueId>& parameters() const { return params_; }  // all, graph order
  // This worker's copy of a parameter; nullptr when another worker owns it.
  const Tensor* Parameter(ValueId param) const;
  // Checkpoints (checkpoint.h). Any worker's copy of a parameter it reads (nullptr: none);
  // only the owner's is updated, the others are refreshed by a restore.
  Tensor* MutableParameter(ValueId param);
  const ModelGraph& model() const { return model_; }
  const TrainConfig& config() const { return config_; }
  int64_t step() const { return step_; }  // steps taken; the next Step is step() + 1
  void set_step(int64_t step) { step_ = step; }
  // The optimizer state of this worker's own parameters (program().programs[rank()].params).
  OptimizerStateView OptimizerState() { return optimizer_->State(param_ptrs_); }
  const WorkerStats& stats() const { return stats_; }
  const std::vector<PhaseSpan>& last_step_spans() const { return spans_; }
  // When the last Step() began, in seconds of the steady clock (shared by the threads and
  // processes of one host, not across hosts).
  double last_step_origin() const { return step_origin_; }

 private:
  PipelineTrainer() = default;
  Tensor& Buffer(int micro, ValueId v);
  // After micro-batch `micro`'s backward: its parameter gradients into grad_sum_.
  void AccumulateGradients(int micro, bool first);
  Status RunPhase(Communicator& comm, const PlacedProgram& program,
                  const std::vector<PlacedInstr>& instrs, int micro, int micro_count, bool training,
                  PhaseSpan* span);

  ModelGraph model_;
  TrainConfig config_;
  PipelineOptions options_;
  PlacedProgram program_, eval_program_;
  std::vector<std::pair<bool, int>> order_;  // this worker's (backward, micro) phases
  int rank_ = 0;
  std::vector<Tensor> shared_;              // parameters and constants
  std::vector<std::vector<Tensor>> micro_;  // per micro-batch slot, activations and batch
  std::vector<const Tensor*> in_;           // one operator's operands (reused)
  std::vector<Tensor*> out_;
  std::vector<Tensor> grad_sum_;  // per owned parameter
  std::vector<ValueId> params_;
  std::vector<Tensor*> param_ptrs_;
  std::vector<const Tensor*> grad_ptrs_;
  std::unique_ptr<Optimizer> optimizer_;
  WorkerStats stats_;
  std::vector<PhaseSpan> spans_;
  double step_origin_ = 0;
  int64_t step_ = 0;
};

// Each worker's phase order for `program` (see the schedules above).
std::vector<std::vector<std::pair<bool, int>>> PipelineOrder(const PlacedProgram& program,
                                                             const PipelineOptions& options);
// The buffer sets `order` (one worker's phases) needs when micro-batch i takes set i % slots:
// the most micro-batches between their forward and their backward at once, or M when reusing
// sets that way would overwrite a live micro-batch.
int MicroBatchSlots(const std::vector<std::pair<bool, int>>& order, int micro_batches);
// Whether running the orders completes: every receive is eventually matched by a send
// (sends never block). Otherwise an error naming a worker stuck and the message it waits
// for.
Status CheckDeadlockFree(const Graph& graph, const PlacedProgram& program,
                         const std::vector<std::vector<std::pair<bool, int>>>& order);

}  // namespace shardscope
