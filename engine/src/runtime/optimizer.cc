#include "shardscope/optimizer.h"

#include <algorithm>
#include <cmath>

#include "ops/kernel_util.h"

namespace shardscope {

Result<OptimizerConfig::Kind> OptimizerKindFromName(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n == "sgd") return OptimizerConfig::kSGD;
  if (n == "momentum") return OptimizerConfig::kMomentum;
  if (n == "adam" || n == "adamw") return OptimizerConfig::kAdam;
  return Status::Invalid("unknown optimizer '" + name + "' (known: sgd, momentum, adam)");
}

int OptimizerStateTensors(OptimizerConfig::Kind kind) {
  switch (kind) {
    case OptimizerConfig::kSGD:
      return 0;
    case OptimizerConfig::kMomentum:
      return 1;
    case OptimizerConfig::kAdam:
      return 2;
  }
  return 1;
}

const char* OptimizerKindName(OptimizerConfig::Kind kind) {
  switch (kind) {
    case OptimizerConfig::kSGD:
      return "sgd";
    case OptimizerConfig::kMomentum:
      return "momentum";
    case OptimizerConfig::kAdam:
      return "adam";
  }
  return "?";
}

void Optimizer::Step(const std::vector<Tensor*>& params, const std::vector<const Tensor*>& grads) {
  std::vector<std::span<float>> p;
  std::vector<std::span<const float>> g;
  p.reserve(params.size());
  g.reserve(grads.size());
  for (Tensor* t : params) p.emplace_back(t->data(), static_cast<size_t>(t->size()));
  for (const Tensor* t : grads) g.emplace_back(t->data(), static_cast<size_t>(t->size()));
  StepSpans(p, g);
}

namespace {

class Sgd : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& c) : c_(c) {}
  void StepSpans(const std::vector<std::span<float>>& params,
                 const std::vector<std::span<const float>>& grads) override {
    for (size_t i = 0; i < params.size(); ++i) {
      VecMap p(params[i].data(), static_cast<Eigen::Index>(params[i].size()));
      ConstVecMap g(grads[i].data(), static_cast<Eigen::Index>(grads[i].size()));
      if (c_.weight_decay != 0.0f)
        p -= c_.lr * (g + c_.weight_decay * p);
      else
        p -= c_.lr * g;
    }
  }
  int64_t StateBytes() const override { return 0; }
  OptimizerStateView State(const std::vector<Tensor*>&) override { return {}; }

 private:
  OptimizerConfig c_;
};

// MindSpore's Momentum: v = μ·v + g; p −= lr·v.
class Momentum : public Optimizer {
 public:
  explicit Momentum(const OptimizerConfig& c) : c_(c) {}
  void StepSpans(const std::vector<std::span<float>>& params,
                 const std::vector<std::span<const float>>& grads) override {
    if (velocity_.empty()) {
      for (const auto& p : params) velocity_.emplace_back(Eigen::ArrayXf::Zero(p.size()));
    }
    // One pass over p, g and v per parameter (the update is memory-bound).
    const float mu = c_.momentum, lr = c_.lr, wd = c_.weight_decay;
    for (size_t i = 0; i < params.size(); ++i) {
      float* p = params[i].data();
      const float* g = grads[i].data();
      float* v = velocity_[i].data();
      const int64_t n = static_cast<int64_t>(params[i].size());
      if (wd != 0.0f) {
        for (int64_t j = 0; j < n; ++j) {
          v[j] = mu * v[j] + g[j] + wd * p[j];
          p[j] -= lr * v[j];
        }
      } else {
        for (int64_t j = 0; j < n; ++j) {
          v[j] = mu * v[j] + g[j];
          p[j] -= lr * v[j];
        }
      }
    }
  }
  int64_t StateBytes() const override {
    int64_t n = 0;
    for (const auto& v : velocity_) n += v.size() * 4;
    return n;
  }
  OptimizerStateView State(const std::vector<Tensor*>& params) override {
    if (velocity_.empty()) {
      for (Tensor* p : params) velocity_.emplace_back(Eigen::ArrayXf::Zero(p->size()));
    }
    OptimizerStateView view;
    for (auto& v : velocity_) view.tensors.emplace_back(v.data(), v.size());
    return view;
  }

 private:
  OptimizerConfig c_;
  std::vector<Eigen::ArrayXf> velocity_;
};

class Adam : public Optimizer {
 public:
  explicit Adam(const OptimizerConfig& c) : c_(c) {}
  void StepSpans(const std::vector<std::span<float>>& params,
                 const std::vector<std::span<const float>>& grads) override {
    if (m_.empty()) {
      for (const auto& p : params) {
        m_.emplace_back(Eigen::ArrayXf::Zero(p.size()));
        v_.emplace_back(Eigen::ArrayXf::Zero(p.size()));
      }
    }
    ++t_;
    const float bc1 = 1.0f - std::pow(c_.beta1, static_cast<float>(t_));
    const float bc2 = 1.0f - std::pow(c_.beta2, static_cast<float>(t_));
    for (size_t i = 0; i < params.size(); ++i) {
      VecMap p(params[i].data(), static_cast<Eigen::Index>(params[i].size()));
      ConstVecMap g(grads[i].data(), static_cast<Eigen::Index>(grads[i].size()));
      m_[i] = c_.beta1 * m_[i] + (1.0f - c_.beta1) * g;
      v_[i] = c_.beta2 * v_[i] + (1.0f - c_.beta2) * g.square();
      if (c_.weight_decay != 0.0f) p *= 1.0f - c_.lr * c_.weight_decay;
      p -= c_.lr * (m_[i] / bc1) / ((v_[i] / bc2).sqrt() + c_.epsilon);
    }
  }
  int64_t StateBytes() const override {
    int64_t n = 0;
    for (size_t i = 0; i < m_.size(); ++i) n += (m_[i].size() + v_[i].size()) * 4;
    return n;
  }
  OptimizerStateView State(const std::vector<Tensor*>& params) override {
    if (m_.empty()) {
      for (Tensor* p : params) {
        m_.emplace_back(Eigen::ArrayXf::Zero(p->size()));
        v_.emplace_back(Eigen::ArrayXf::Zero(p->size()));
      }
    }
    OptimizerStateView view;
    for (auto& m : m_) view.tensors.emplace_back(m.data(), m.size());
    for (auto& v : v_) view.tensors.emplace_back(v.data(), v.size());
    view.steps = &t_;
    return view;
  }

 private:
  OptimizerConfig c_;
  int64_t t_ = 0;
  std::vector<Eigen::ArrayXf> m_, v_;
};

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerConfig::kSGD:
      return std::make_unique<Sgd>(config);
    case OptimizerConfig::kMomentum:
      return std::make_unique<Momentum>(config);
    case OptimizerConfig::kAdam:
      return std::make_unique<Adam>(config);
  }
  return nullptr;
}

}  // namespace shardscope
