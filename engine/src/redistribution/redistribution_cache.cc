// RedistPlanCache: a thread-safe map (from, to, cost model, options) -> shared plan.
#include <memory>
#include <mutex>

#include "shardscope/base/hash.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope {

size_t RedistPlanCache::KeyHash::operator()(const Key& key) const {
  size_t h = key.from.Hash();
  h = HashCombine(h, key.to.Hash());
  h = HashCombine(h, key.cost_fingerprint);
  h = HashCombine(h, std::hash<int64_t>()(key.element_bytes));
  h = HashCombine(h, key.byte_optimal ? 1 : 2);
  h = HashCombine(h, std::hash<int>()(key.max_states));
  return h;
}

Result<std::shared_ptr<const RedistPlan>> RedistPlanCache::Get(const Layout& from, const Layout& to,
                                                               const CostModel& cost,
                                                               const RedistOptions& options) {
  Key key{from,
          to,
          cost.Fingerprint(),
          options.element_bytes,
          options.byte_optimal,
          options.max_states};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      ++hits_;
      return it->second;
    }
    ++misses_;
  }
  // Plan outside the lock: planning is pure, so two threads racing on one key compute the
  // same plan and the first insert wins.
  Result<RedistPlan> plan = PlanRedistribution(from, to, cost, options);
  if (!plan.ok()) return plan.status();
  auto shared = std::make_shared<const RedistPlan>(std::move(plan).value());
  std::lock_guard<std::mutex> lock(mu_);
  if (plans_.size() >= capacity_) plans_.clear();
  auto [it, inserted] = plans_.emplace(std::move(key), shared);
  return it->second;
}

size_t RedistPlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

int64_t RedistPlanCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

int64_t RedistPlanCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

void RedistPlanCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  plans_.clear();
  hits_ = misses_ = 0;
}

}  // namespace shardscope
