#include "shardscope/trainer.h"

#include <cstring>

#include "runtime/batch_util.h"
#include "shardscope/autodiff.h"

namespace shardscope {

Trainer::Trainer(ModelGraph model, const TrainConfig& config)
    : model_(std::move(model)), config_(config) {}

Result<std::unique_ptr<Trainer>> Trainer::Create(ModelGraph model, const TrainConfig& config) {
  const Graph& g = model.graph;
  for (ValueId v : {model.input, model.labels, model.logits, model.loss}) {
    if (v < 0 || v >= g.num_values())
      return Status::Invalid("model graph is missing its input, labels, logits or loss");
  }
  const std::vector<ValueId> params = g.Parameters();
  if (params.empty()) return Status::Invalid("model has no parameters to train");
  SHARDSCOPE_ASSIGN_OR_RETURN(Gradients grads, BuildBackward(model.graph, model.loss, params));
  SHARDSCOPE_RETURN_IF_ERROR(model.graph.Verify().WithContext("graph after autodiff"));

  std::unique_ptr<Trainer> t(new Trainer(std::move(model), config));
  for (size_t i = 0; i < params.size(); ++i) {
    if (grads.grads[i] == kNoValue) continue;  // unused parameter: nothing to learn
    t->params_.push_back(params[i]);
    t->grads_.push_back(grads.grads[i]);
  }
  t->executor_ = std::make_unique<Executor>(t->model_.graph);
  t->executor_->InitializeParameters(config.seed);
  std::vector<ValueId> targets = t->grads_;
  targets.push_back(t->model_.loss);
  t->train_schedule_ = t->executor_->Schedule(targets);
  t->eval_schedule_ = t->executor_->Schedule({t->model_.logits});
  for (size_t i = 0; i < t->params_.size(); ++i) {
    t->param_ptrs_.push_back(&t->executor_->value(t->params_[i]));
    t->grad_ptrs_.push_back(&t->executor_->value(t->grads_[i]));
  }
  t->optimizer_ = MakeOptimizer(config.optimizer);
  return t;
}

float Trainer::Step(const Tensor& images, const Tensor& labels) {
  Tensor& x = executor_->value(model_.input);
  Tensor& y = executor_->value(model_.labels);
  if (x.dtype() == DType::kI32)
    std::memcpy(x.ints(), images.ints(), sizeof(int32_t) * x.size());
  else
    std::memcpy(x.data(), images.data(), sizeof(float) * x.size());
  std::memcpy(y.ints(), labels.ints(), sizeof(int32_t) * y.size());
  executor_->Run(train_schedule_, step_, /*training=*/true);
  optimizer_->Step(param_ptrs_, grad_ptrs_);
  ++step_;
  return executor_->value(model_.loss)[0];
}

double Trainer::Evaluate(const Dataset& data) {
  const int64_t batch = batch_size();
  Tensor& x = executor_->value(model_.input);
  const Tensor& logits = executor_->value(model_.logits);
  const int64_t per = data.labels_per_example();  // positions of a sequence model
  int64_t correct = 0;
  for (int64_t start = 0; start < data.size(); start += batch) {
    const int64_t n = std::min(batch, data.size() - start);
    FillBatch(data, start, n, &x);
    executor_->Run(eval_schedule_, step_, /*training=*/false);
    correct += CountCorrect(logits, data.labels.ints() + start * per, n * per);
  }
  return data.size() == 0 ? 0.0
                          : static_cast<double>(correct) / static_cast<double>(data.size() * per);
}

}  // namespace shardscope
