// Gradient reductions overlapped with the backward pass, as PyTorch DDP and Megatron run them:
// each bucket's all-reduce is launched when its last gradient is ready, on one communication
// stream (buckets one after another), so only what runs past the backward's end is exposed.
//
//   step = forward + max(backward end, last reduction done) + optimizer
//
// Both pricings use it (PriceProgram and SearchGraph::Total), with CostModel::overlap_gradients
// set (cluster profiles); the in-process runtime reduces after the backward, priced additively.
#pragma once

#include <vector>

namespace shardscope {

// One gradient's reduction: bytes per rank and its priced seconds. `bucketed`: it rides in a
// bucket with others (CostModel::GradientBucketShare < 1); otherwise it is launched alone.
struct GradientReduction {
  double bytes = 0;
  double seconds = 0;
  bool bucketed = true;
};

// One step of the backward in its order: `seconds` of computation, after which `reductions`
// (the gradients it completed) are ready.
struct BackwardSegment {
  double seconds = 0;
  std::vector<GradientReduction> reductions;
};

struct GradientOverlap {
  double backward_seconds = 0;   // the backward's computation
  double reduction_seconds = 0;  // every reduction, as if run one after another
  double done_seconds = 0;       // when the stream finishes, from the backward's start
  int launches = 0;              // buckets and lone reductions launched
  // Per segment: whether a reduction it completed runs in the stream's last busy stretch and
  // that stretch ends past the backward (a second more of it is a second more of the step).
  std::vector<char> critical;
  // What the reductions add to the backward: max(0, done - backward end).
  double exposed_seconds() const {
    return done_seconds > backward_seconds ? done_seconds - backward_seconds : 0.0;
  }
  // What the overlap saves against reductions run after the backward.
  double hidden_seconds() const { return reduction_seconds - exposed_seconds(); }
};

// The stream's schedule: a bucket is launched when it reaches `bucket_bytes` (the gradient that
// fills it ready) or at the backward's end with what is left; a lone reduction when ready.
// Deterministic; `bucket_bytes` <= 0 launches every reduction alone.
GradientOverlap ScheduleGradientReductions(const std::vector<BackwardSegment>& backward,
                                           double bucket_bytes);

}  // namespace shardscope
