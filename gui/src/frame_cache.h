// FrameCache: the stepper's frames of one redistribution, each built once (with its motion)
// and kept, the neighbours of the frame shown built on worker threads meanwhile, so a step
// on the UI thread costs a look-up and a paint whatever the rank count (issue 21).
#pragma once

#include <future>
#include <map>
#include <memory>
#include <utility>

#include "frame_animation.h"
#include "shardscope/viewer/run_document.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::gui {

// One frame: the still picture (or why it cannot be drawn) and its motion.
struct StepperFrame {
  store::Result<viewer::Scene> scene = viewer::Scene{};
  FrameTween tween;
};

class FrameCache {
 public:
  FrameCache() = default;
  FrameCache(const FrameCache&) = delete;
  FrameCache& operator=(const FrameCache&) = delete;
  ~FrameCache();  // waits for the builds under way

  // Starts over on redistribution `id` of `run` (nullptr: none). The workers read a copy of
  // the few records a frame needs, so `run` may change or go once this returns.
  void Reset(const viewer::RunData* run, int64_t id);
  // The frame of `step` seen from `rank` (-1: every rank): kept, finished by its worker, or
  // built now.
  std::shared_ptr<const StepperFrame> Get(int step, int rank);
  // Builds the frame of `step` on a worker unless kept or under way.
  void Prefetch(int step, int rank);
  // Frames kept or under way (tests).
  size_t size() const { return frames_.size(); }

 private:
  using Key = std::pair<int, int>;  // step, rank
  std::shared_future<std::shared_ptr<const StepperFrame>> Start(const Key& key, bool now);
  void Trim(const Key& keep);
  std::shared_ptr<const viewer::RunData> inputs_;
  int64_t id_ = -1;
  std::map<Key, std::shared_future<std::shared_ptr<const StepperFrame>>> frames_;
};

// The frame built on the calling thread (what a worker runs).
std::shared_ptr<const StepperFrame> BuildStepperFrame(const viewer::RunData& run, int64_t id,
                                                      int step, int rank);

}  // namespace shardscope::gui
