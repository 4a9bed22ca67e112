// Pipeline stages sharded over sub-meshes (issue 20): `stages` contiguous stages of `k`
// devices each, every stage's operators partitioned over its own k devices.
//
// One SPMD program for k devices (Partition, partition.h: the strategies the model holds or a
// search chose for k devices) is cut by stage. Stage s runs on world ranks s*k .. s*k+k-1;
// local rank j of every stage holds shard j of every value the program gives it, so
//   - an instruction runs on the stage of its operator (a backward one: its forward's); a
//     redistribution on the stage of the first instruction reading its result (none: its
//     input's), over the stage's own communicator of k ranks (Split by stage);
//   - a value produced on stage s and read on stage t is sent from rank s*k+j to t*k+j in the
//     sender's layout; when the receiver needs another layout, the program's redistribution
//     (now on stage t) turns it into the receiving stage's layout among t's k ranks.
// Micro-batches run 1F1B (pipeline.h: PipelineOrder), each with its own buffers for the
// micro-batches in flight (MicroBatchSlots); gradients (already reduced inside the stage by
// the program) are summed over micro-batches and averaged before each stage's optimizer step,
// which equals the single-device step up to float rounding (the correctness law).
// Optimizer sharding (ZeRO 1-3) works inside the stage, over a parameter's replica group there:
// each rank updates a slice of each owned shard. ZeRO 2/3 gradients stay partial, are summed
// over the micro-batches and reduce-scattered once a step, in the stage's own buckets (as
// Megatron's distributed optimizer does); ZeRO 3 all-gathers a parameter before its first read
// in each micro-batch's forward and backward phase and frees it after the phase's last read.
// Recomputed scopes replay in their stage's backward phase. Not supported (refused naming
// it): a recomputed value crossing stages, a parameter read on two stages.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/dist_trainer.h"
#include "shardscope/pipeline.h"

namespace shardscope {

struct SubMeshOptions {
  int stages = 2;
  int micro_batches = 1;
  // Forward operator name -> its stage (every forward operator of the graph).
  std::map<std::string, int> stage_of;
  PartitionOptions partition;  // devices = k, the devices of one stage
};

// A value crossing stages: sent after its producer, received before its first reader.
struct StageCut {
  int value = -1;  // DistValue
  int src_stage = 0, dst_stage = 0;
  bool recv_backward = false;  // its first reader on dst_stage is in the backward phase
  bool send_backward = false;  // its producer is in the backward phase
  int64_t bytes = 0;           // one shard, one micro-batch (f32)
};

// One entry of a stage's phase: run instruction `instr`, or send/receive cut `cut`.
struct StageItem {
  enum class Kind { kRun, kSend, kRecv };
  Kind kind = Kind::kRun;
  int index = 0;
};

struct SubMeshPlan {
  int stages = 1, stage_devices = 1, micro_batches = 1;
  DistProgram program;          // on stage_devices devices
  std::vector<ValueId> params;  // trained parameters (graph order), param_grads' order
  std::vector<int> instr_stage;
  std::vector<bool> instr_backward;
  std::vector<int> param_stage;  // per param_grads entry
  int loss_stage = 0;
  std::vector<StageCut> cuts;
  std::vector<std::vector<StageItem>> forward, backward;  // per stage
  std::vector<std::vector<bool>> touched;                 // per stage, per DistValue
  std::vector<std::vector<std::pair<bool, int>>> order;   // per stage (1F1B)
  std::vector<int> slots;                                 // per stage (MicroBatchSlots)
};

// Differentiates `model` (built at the micro-batch size), partitions it for
// options.partition.devices and cuts it into options.stages stages.
Result<SubMeshPlan> PlanSubMeshPipeline(ModelGraph* model, const SubMeshOptions& options);
// Cuts `plan`'s program again for options.stage_of (another split of the same operators into
// stages; options.partition as the program was made with): every field but the program and
// its parameters is replaced. On error `plan` keeps its program for the next try.
Status CutSubMeshProgram(const Graph& graph, const SubMeshOptions& options, SubMeshPlan* plan);

// Bytes one rank of `stage` allocates: the parameters, constants and gradient sums it owns,
// `optimizer_states` tensors per owned parameter (ZeRO: per slice), every other value it
// touches once per micro-batch in flight; ZeRO 2/3 adds the gradient slices and the largest
// bucket while it fills, ZeRO 3 keeps parameter slices and the most gathered at once.
int64_t SubMeshStageBytes(const Graph& graph, const SubMeshPlan& plan, int stage,
                          int optimizer_states);

// ZeRO 2/3 (submesh_zero.cc): the program's gradient buckets restricted to `stage`'s
// parameters (param_stage), in order, their chunks end to end: what the stage reduce-scatters.
std::vector<ScatterBucket> StageScatterBuckets(const SubMeshPlan& plan, int stage);
// A rank's view of `p` (plan.program): other stages' parameters unsharded, the stage's own
// buckets (StageScatterBuckets) with their members' bucket and offset.
void KeepStageSharding(const SubMeshPlan& plan, int stage, DistProgram* p);
// Per item of a stage's phase, the ZeRO 3 parameters (DistValues) it reads last in the phase:
// freed after it, gathered again by the next phase that reads them.
std::vector<std::vector<int>> PhaseReleases(const DistProgram& p,
                                            const std::vector<StageItem>& items);
// The most bytes of ZeRO 3 parameters gathered at once during the phase.
int64_t PhaseGatheredBytes(const DistProgram& p, const std::vector<StageItem>& items);

class ShardedUpdate;  // runtime/sharded_update.h

class SubMeshTrainer {
 public:
  ~SubMeshTrainer();
  // World rank `rank` of stages * k: stage rank / k, local rank rank % k. Initialises the
  // shards of the stage's parameters from the seed (a single-device Trainer's numbers).
  static Result<std::unique_ptr<SubMeshTrainer>> Create(ModelGraph model, const TrainConfig& config,
                                                        const SubMeshOptions& options, int rank);
  // `world` spans stages * k ranks; every rank passes the same global batch (M micro-batches).
  // Returns the mean loss on every rank.
  Result<float> Step(Communicator& world, const Tensor& images, const Tensor& labels);
  // Top-1 accuracy on `data` (forward only, in batches of the micro-batch), on every rank.
  Result<double> Evaluate(Communicator& world, const Dataset& data);

  // This rank's plan (ZeRO: the program as KeepStageSharding leaves it for its stage).
  const SubMeshPlan& plan() const { return plan_; }
  const Graph& graph() const { return model_.graph; }
  int stage() const { return stage_; }
  const std::vector<ValueId>& parameters() const { return plan_.params; }
  // This rank's shard of a parameter its stage owns (nullptr: another stage's), its layout.
  // ZeRO 3 frees them between uses: GatherParameterShards first (collective on the stage).
  const Tensor* ParameterShard(ValueId param) const;
  Status GatherParameterShards(Communicator& world);
  const Layout& ParameterLayout(ValueId param) const;
  const RankStats& stats() const { return stats_; }

 private:
  SubMeshTrainer() = default;
  Status Local(Communicator& world);  // the stage communicator, on first use
  void UseSlot(int slot);             // swaps slot `slot`'s buffers in (or back out)
  Status Update();                    // the optimizer step on the averaged gradient sums
  Status RunPhase(Communicator& world, bool backward, int micro, bool training);
  ModelGraph model_;
  TrainConfig config_;
  SubMeshPlan plan_;
  int rank_ = 0, stage_ = 0, local_ = 0;
  std::unique_ptr<DistExecutor> executor_;
  std::unique_ptr<Communicator> stage_comm_;
  std::vector<int> slotted_;                   // DistValues with one buffer per slot
  std::vector<std::vector<Tensor>> slot_buf_;  // per slot, per slotted_ entry
  std::vector<int> owned_;                     // param_grads entries of this stage
  std::vector<Tensor> grad_sum_;               // per owned_
  // Per item of the stage's phases: the ZeRO 3 parameters freed after it (PhaseReleases).
  std::vector<std::vector<int>> forward_release_, backward_release_;
  std::vector<Tensor*> param_ptrs_;
  std::vector<const Tensor*> grad_ptrs_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<ShardedUpdate> sharded_;  // ZeRO on
  RankStats stats_;
  int64_t step_ = 0;
};

}  // namespace shardscope
