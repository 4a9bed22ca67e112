// Trainer: single-device training of a model graph (forward, autodiff, optimizer).
#pragma once

#include <memory>
#include <vector>

#include "shardscope/data.h"
#include "shardscope/executor.h"
#include "shardscope/graph.h"
#include "shardscope/optimizer.h"

namespace shardscope {

// A forward graph with its four distinguished values. Shapes carry the batch size.
struct ModelGraph {
  Graph graph;
  ValueId input = kNoValue;                  // f32 [batch, ...]
  ValueId labels = kNoValue;                 // i32 [batch]
  ValueId logits = kNoValue;                 // f32 [batch, classes]
  ValueId loss = kNoValue;                   // f32 scalar
  std::vector<ShardBlockSpec> shard_blocks;  // nn::Module::shard blocks (seed 000), for the search
};

struct TrainConfig {
  uint64_t seed = 1;
  OptimizerConfig optimizer;
  // DistTrainer: parameter gradients reduced by plain all-reduces are reduced together in
  // buckets of about this many bytes (fewer, larger calls; the same sums). 0: one per gradient.
  int64_t bucket_bytes = int64_t{25} << 20;
  // Start each full bucket's all-reduce during the backward and wait for it only before the
  // update reads the gradients (PyTorch DDP's overlap); false: reduce each bucket blocking.
  bool overlap_grad_reduce = true;
};

class Trainer {
 public:
  // Differentiates the model, verifies the result and initialises parameters from the seed.
  static Result<std::unique_ptr<Trainer>> Create(ModelGraph model, const TrainConfig& config);

  // One step on a batch whose shapes match the model's input and labels; returns the loss.
  float Step(const Tensor& images, const Tensor& labels);
  // Top-1 accuracy on `data` (the last partial batch padded, its padding ignored).
  double Evaluate(const Dataset& data);

  const Graph& graph() const { return model_.graph; }
  const ModelGraph& model() const { return model_; }
  Executor& executor() { return *executor_; }
  int64_t batch_size() const { return model_.graph.value(model_.input).shape[0]; }
  int64_t step() const { return step_; }
  const std::vector<ValueId>& parameters() const { return params_; }
  const std::vector<ValueId>& gradients() const { return grads_; }
  const Optimizer& optimizer() const { return *optimizer_; }

 private:
  Trainer(ModelGraph model, const TrainConfig& config);
  ModelGraph model_;
  TrainConfig config_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<ValueId> params_, grads_;
  std::vector<NodeId> train_schedule_, eval_schedule_;
  std::vector<Tensor*> param_ptrs_;
  std::vector<const Tensor*> grad_ptrs_;
  int64_t step_ = 0;
};

}  // namespace shardscope
