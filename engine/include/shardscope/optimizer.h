// Optimizers: SGD, Momentum and Adam, each with optional weight decay.
//
// An optimizer updates a fixed list of parameter tensors from their gradients; its state
// (momenta, Adam moments) is kept per parameter, in the same order. Under sharding each
// rank passes the shards it owns, and the update is elementwise, so it equals the update
// of the whole tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

struct OptimizerConfig {
  enum Kind { kSGD, kMomentum, kAdam };
  Kind kind = kMomentum;
  float lr = 0.01f;
  float momentum = 0.9f;      // Momentum
  float beta1 = 0.9f;         // Adam
  float beta2 = 0.999f;       // Adam
  float epsilon = 1e-8f;      // Adam
  float weight_decay = 0.0f;  // SGD/Momentum: L2 added to the gradient; Adam: decoupled (AdamW)
};

// "sgd", "momentum", "adam" (case-insensitive), or an error listing them.
Result<OptimizerConfig::Kind> OptimizerKindFromName(const std::string& name);
const char* OptimizerKindName(OptimizerConfig::Kind kind);
// State tensors the optimizer keeps per parameter, each of the parameter's shape: SGD 0,
// Momentum 1 (velocity), Adam 2 (the two moments). What the searches price.
int OptimizerStateTensors(OptimizerConfig::Kind kind);

// An optimizer's state as checkpoints read and write it (checkpoint.h): tensor s of parameter
// i at tensors[s * parameters + i], each as long as the parameter, and the steps taken (Adam's
// bias correction; null when the optimizer keeps no count).
struct OptimizerStateView {
  std::vector<std::span<float>> tensors;
  int64_t* steps = nullptr;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // params[i] -= update(grads[i]); the shapes must not change between calls.
  void Step(const std::vector<Tensor*>& params, const std::vector<const Tensor*>& grads);
  // The same on flat ranges, e.g. the slice of a shard one rank updates under optimizer
  // sharding (dist_trainer.h); the lengths must not change between calls.
  virtual void StepSpans(const std::vector<std::span<float>>& params,
                         const std::vector<std::span<const float>>& grads) = 0;
  // Bytes of optimizer state currently held.
  virtual int64_t StateBytes() const = 0;
  // The state for `params` (the list Step is given), allocated as zeros before the first Step.
  virtual OptimizerStateView State(const std::vector<Tensor*>& params) = 0;
};

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config);

}  // namespace shardscope
