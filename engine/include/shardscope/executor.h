// Executor: runs a graph's operators on one device.
//
// It owns one buffer per value, allocated once with the value's shape and reused every
// step (no allocation on the hot path). Callers write inputs, labels and parameters through
// value(), run a schedule, and read results back. Not thread-safe; one executor per device.
#pragma once

#include <vector>

#include "shardscope/graph.h"

namespace shardscope {

struct OpTiming {
  double seconds = 0.0;  // accumulated over runs
  int64_t runs = 0;
};

class Executor {
 public:
  // `graph` must outlive the executor and stay unchanged. Constants are filled here;
  // parameters are left zero (see InitializeParameters).
  explicit Executor(const Graph& graph);

  // Fills every parameter from its InitSpec and `seed` (initializer.h).
  void InitializeParameters(uint64_t seed);

  Tensor& value(ValueId id) { return buffers_[id]; }
  const Tensor& value(ValueId id) const { return buffers_[id]; }

  // The nodes needed to compute `targets`, in graph order.
  std::vector<NodeId> Schedule(const std::vector<ValueId>& targets) const;

  // Runs `schedule`. `step` seeds stochastic operators; `training` = false turns Dropout
  // into the identity. With profiling on, per-node times accumulate in timings().
  void Run(const std::vector<NodeId>& schedule, int64_t step, bool training);

  void set_profiling(bool on) { profiling_ = on; }
  const std::vector<OpTiming>& timings() const { return timings_; }
  // Bytes held by buffers of each value kind (index: ValueKind).
  int64_t BytesOf(ValueKind kind) const;

 private:
  const Graph& graph_;
  std::vector<Tensor> buffers_;
  bool profiling_ = false;
  std::vector<OpTiming> timings_;
};

}  // namespace shardscope
