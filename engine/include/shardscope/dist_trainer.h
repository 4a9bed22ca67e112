// Running a partitioned program (partition.h) on one rank, and training with it.
//
// Every rank builds the same DistProgram and runs it with its own rank id and a
// communicator over all ranks (in-process threads or MPI processes). Buffers are allocated
// once per DistValue with the layout's shard shape.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/optimizer.h"
#include "shardscope/partition.h"
#include "shardscope/trainer.h"

namespace shardscope {

// The shard of `whole` that `rank` holds under a non-partial `layout`.
Tensor ExtractShard(const Tensor& whole, const Layout& layout, int rank);

// What one rank measured (accumulated over steps) and holds.
struct RankStats {
  double compute_seconds = 0;
  double comm_seconds = 0;
  // The CPU time this rank's thread spent in the same intervals (its thread CPU clock). With
  // more device threads than cores, wall time minus CPU time is time the thread was ready
  // but not running or blocked in a collective waiting for the other ranks; the sum over
  // the ranks against cores x step time is how busy the cores were. Counted only with
  // DistTrainer::set_cpu_timing(true): a thread CPU clock read is a system call (about
  // 0.5 us here), two per instruction, which training pays on every step otherwise.
  double compute_cpu_seconds = 0;
  double comm_cpu_seconds = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activation_bytes = 0;
  // The most this rank held during a step: every buffer of the program (those of recomputed
  // activations only while live), the optimizer's states and the slices of a sharded update.
  int64_t peak_bytes = 0;
};

class GradBuckets;
// When an instruction ran during the last DistExecutor::Run: seconds from the start of that
// Run. `part` -1 is the whole instruction; k >= 0 is step k of its redistribution;
// kBucketSpanPart a gradient bucket's one all-reduce, `instr` the last gradient in it (when
// overlapped with the backward: its start, and kBucketWaitSpanPart the wait for its end).
// ZeRO: kScatterSpanPart a bucket's reduce-scatter after `instr`, which freed its last
// gradient (overlapped: its start, and kScatterWaitSpanPart the wait for its end, once the
// next bucket started or before the update); kGatherSpanPart a stage-3 parameter's
// all-gather before `instr` reads it.
inline constexpr int kBucketSpanPart = -2;
inline constexpr int kBucketWaitSpanPart = -3;
inline constexpr int kScatterSpanPart = -4;
inline constexpr int kGatherSpanPart = -5;
inline constexpr int kScatterWaitSpanPart = -6;
struct InstrSpan {
  int instr = 0;
  int part = -1;
  double start = 0;
  double end = 0;
};

class DistExecutor {
 public:
  // `graph` and `program` must outlive the executor.
  DistExecutor(const Graph& graph, const DistProgram& program, int rank);
  ~DistExecutor();

  Tensor& local(int dist_value) { return buffers_[dist_value]; }
  const Tensor& local(int dist_value) const { return buffers_[dist_value]; }
  int rank() const { return rank_; }

  // Runs every instruction; `comm` spans all ranks of the program.
  Status Run(Communicator& comm, int64_t step, bool training, RankStats* stats);
  // Runs only the instructions needed for the values in `targets` (no redistribution of
  // gradients): evaluation.
  Status RunFor(Communicator& comm, const std::vector<int>& targets, int64_t step, bool training,
                RankStats* stats);
  // Runs instruction `instr` alone (submesh_pipeline.h runs a stage's share of a program).
  Status RunInstruction(Communicator& comm, int instr, int64_t step, bool training,
                        RankStats* stats) {
    return Execute(comm, static_cast<size_t>(instr), step, training, stats);
  }
  // Frees a value allocated while live (a ZeRO 3 parameter after a stage's phase reads it last).
  void ReleaseValue(int dist_value) { Release(dist_value); }
  // Counts RankStats' *_cpu_seconds as well (off by default; see RankStats).
  void set_cpu_timing(bool on) { cpu_timing_ = on; }
  bool cpu_timing() const { return cpu_timing_; }
  // The most bytes the program's buffers took during the last Run (recomputed activations
  // are allocated only while live, DistProgram::release_after).
  int64_t peak_buffer_bytes() const { return peak_buffer_bytes_; }
  // Fills a stage-3 parameter's whole shard (param_grads index, buffer) before it is read.
  using GatherFn = std::function<Status(Communicator&, int param, Tensor* out)>;
  void set_gather(GatherFn gather) { gather_ = std::move(gather); }
  // Takes a stage-2/3 gradient (param_grads index, buffer) where Run() frees it, just after
  // its last writer: reduce-scatters it into its slice, in buckets. Returns the bytes its
  // buckets held with the gradient copied in; `held` says what they hold between calls (both
  // count in peak_buffer_bytes); `poll`, if any, runs between instructions (collectives in
  // flight progress). Unset: such gradients are kept.
  using ScatterFn =
      std::function<Result<int64_t>(Communicator&, int param, const Tensor& grad, RankStats*)>;
  void set_scatter(ScatterFn scatter, std::function<int64_t()> held,
                   std::function<void()> poll = {}) {
    scatter_ = std::move(scatter);
    scatter_held_ = std::move(held);
    scatter_poll_ = std::move(poll);
  }
  // The instruction Run() is at (-1 outside Run): where a collective it calls back for starts.
  int current_instr() const { return current_instr_; }
  // Adds a span of `instr` to last_spans(), `start` and `end` steady-clock seconds: collectives
  // a callback runs or waits for (ZeRO's), also after Run() returned, until the next Run().
  void AddSpan(int instr, int part, double start, double end);
  // Run() reduces parameter gradients in buckets of about `bytes` (TrainConfig::bucket_bytes;
  // 0: each on its own, the default), started during the backward and waited for before
  // their readers when `overlap`. The all-reduces Run() makes per step: bucket_calls().
  void set_bucket_bytes(int64_t bytes, bool overlap = true);
  int bucket_calls() const;
  // Every instruction of the last Run() (not RunFor) with its redistribution steps, in
  // execution order: what `train` records for its timed steps (run file: instruction_span).
  const std::vector<InstrSpan>& last_spans() const { return spans_; }

 private:
  void Allocate(int value);
  void Release(int value);
  Status Execute(Communicator& comm, size_t instr, int64_t step, bool training, RankStats* stats);
  const Graph& graph_;
  const DistProgram& program_;
  int rank_;
  std::vector<Tensor> buffers_;
  std::vector<OpAttrs> local_attrs_;  // per instruction (compute only)
  RedistWorkspace redist_workspace_;  // buffers and split communicators of redistributions
  Tensor int_scratch_[2];             // i32 values redistributed as f32 (exact up to 2^24): in, out
  bool cpu_timing_ = false;
  std::vector<bool> live_;  // transient values (recomputed activations): allocated now
  int64_t transient_bytes_ = 0, peak_buffer_bytes_ = 0;
  GatherFn gather_;
  ScatterFn scatter_;
  std::function<int64_t()> scatter_held_;
  std::function<void()> scatter_poll_;
  int current_instr_ = -1;
  std::unique_ptr<GradBuckets> buckets_;  // null: no bucketing
  bool timing_ = false;                   // inside Run(): spans_ collects
  double run_start_ = 0;
  std::vector<InstrSpan> spans_;
  std::vector<double> step_ends_;  // redistribution steps' end times (RedistWorkspace)
};

// The program DistTrainer::Create would run: `model` differentiated (backward operators
// appended to its graph, verified) and partitioned. Allocates no buffers.
Result<DistProgram> PlanTrainingProgram(ModelGraph* model, const PartitionOptions& options,
                                        std::vector<ValueId>* trained_params = nullptr);

// The bytes one rank of a DistTrainer holds for `program` at its peak: PlanRankMemory's total
// (memory_liveness.h; defined there), RankStats::peak_bytes plus the whole largest parameter
// that initialisation draws. kInvalidInput on overflow.
Result<int64_t> RankMemoryBytes(const Graph& graph, const DistProgram& program,
                                int optimizer_states, int float_bytes = 4);

class ShardedUpdate;  // runtime/sharded_update.h

// Training on one rank of a partitioned model. Same seed ⇒ the shards of the parameters a
// single-device Trainer would have.
class DistTrainer {
 public:
  ~DistTrainer();
  // Differentiates `model`, partitions it for `options.devices` devices and initialises
  // this rank's parameter shards. ZeRO 2/3 buckets are config.bucket_bytes (it replaces
  // options.gradient_bucket_bytes).
  static Result<std::unique_ptr<DistTrainer>> Create(ModelGraph model, const TrainConfig& config,
                                                     const PartitionOptions& options, int rank);

  // One step on the global batch (every rank passes the same batch; each keeps its shard).
  Result<float> Step(Communicator& comm, const Tensor& images, const Tensor& labels);
  // Top-1 accuracy on `data`, computed collectively (every rank gets the same number).
  Result<double> Evaluate(Communicator& comm, const Dataset& data);
  // The same with the mean softmax cross-entropy of the logits (per example, or per
  // position of a sequence model).
  struct Evaluation {
    double accuracy = 0;
    double loss = 0;
  };
  Result<Evaluation> EvaluateWithLoss(Communicator& comm, const Dataset& data);

  const Graph& graph() const { return model_.graph; }
  const DistProgram& program() const { return program_; }
  const ModelGraph& model() const { return model_; }
  DistExecutor& executor() { return *executor_; }
  const RankStats& stats() const { return stats_; }
  // Counts RankStats' *_cpu_seconds as well (off by default; see RankStats).
  void set_cpu_timing(bool on) { executor_->set_cpu_timing(on); }
  int64_t step() const { return step_; }
  // This rank's shard of a parameter (by graph value id), and its layout.
  const Tensor& ParameterShard(ValueId param) const;
  const Layout& ParameterLayout(ValueId param) const;
  const std::vector<ValueId>& parameters() const { return params_; }
  // Stage-3 optimizer sharding frees whole parameter shards between uses: gathers them so
  // ParameterShard can read them (collective; nothing to do otherwise).
  Status GatherParameterShards(Communicator& comm);
  const TrainConfig& config() const { return config_; }
  // Checkpoints (checkpoint.h): this rank's shards and optimizer state, writable, and the
  // step count (the next Step is step() + 1; dropout masks depend on it).
  Tensor& MutableParameterShard(ValueId param) { return executor_->local(program_.home[param]); }
  OptimizerStateView OptimizerState() { return optimizer_->State(param_ptrs_); }
  void set_step(int64_t step) { step_ = step; }

 private:
  DistTrainer() = default;
  ModelGraph model_;
  TrainConfig config_;
  DistProgram program_;
  std::unique_ptr<DistExecutor> executor_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<ValueId> params_;
  std::vector<Tensor*> param_ptrs_;
  std::vector<const Tensor*> grad_ptrs_;
  std::unique_ptr<ShardedUpdate> sharded_;  // optimizer sharding (ZeRO) on
  RankStats stats_;
  int64_t step_ = 0;
  int rank_ = 0;
};

}  // namespace shardscope
