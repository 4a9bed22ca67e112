#include "frame_cache.h"

#include <chrono>

#include "shardscope/viewer/redistribution_scene.h"

namespace shardscope::gui {
namespace {

// The records a frame of redistribution `id` reads (its tensor, consumer, meshes, the record
// and the file's lazily read details), copied: kilobytes, whatever the run's size.
std::shared_ptr<const viewer::RunData> FrameInputs(const viewer::RunData& run, int64_t id) {
  const store::RedistributionRecord* r = run.Redistribution(id);
  if (r == nullptr) return nullptr;
  auto inputs = std::make_shared<viewer::RunData>();
  inputs->run = run.run;
  inputs->meshes = run.meshes;
  if (const store::TensorRecord* t = run.Tensor(r->tensor_id)) inputs->tensors.push_back(*t);
  if (const store::OperatorRecord* op = run.Operator(r->consumer_op)) {
    store::OperatorRecord consumer = *op;
    consumer.candidates.clear();  // not drawn
    inputs->operators.push_back(std::move(consumer));
  }
  inputs->redistributions.push_back(*r);
  inputs->details = run.details;
  return inputs;
}

// Frames of other steps and ranks kept besides the one shown (a plan has a handful of steps).
constexpr size_t kKept = 24;

bool Ready(const std::shared_future<std::shared_ptr<const StepperFrame>>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

std::shared_ptr<const StepperFrame> BuildStepperFrame(const viewer::RunData& run, int64_t id,
                                                      int step, int rank) {
  auto frame = std::make_shared<StepperFrame>();
  const store::RedistributionRecord* r = run.Redistribution(id);
  if (r == nullptr) {
    frame->scene = store::Status(store::StatusCode::kNotFound,
                                 "stepper: redistribution " + std::to_string(id) + " not found");
    return frame;
  }
  frame->scene = viewer::BuildRedistributionFrame(run, *r, step, {.rank = rank});
  if (frame->scene.ok()) frame->tween = PlanTween(*frame->scene);
  return frame;
}

FrameCache::~FrameCache() { Reset(nullptr, -1); }

void FrameCache::Reset(const viewer::RunData* run, int64_t id) {
  for (auto& [key, frame] : frames_) frame.wait();
  frames_.clear();
  id_ = id;
  inputs_ = run ? FrameInputs(*run, id) : nullptr;
}

std::shared_future<std::shared_ptr<const StepperFrame>> FrameCache::Start(const Key& key,
                                                                          bool now) {
  auto it = frames_.find(key);
  if (it != frames_.end()) return it->second;
  Trim(key);
  auto inputs = inputs_;
  const int64_t id = id_;
  auto build = [inputs, id, key] {
    if (!inputs) return BuildStepperFrame(viewer::RunData{}, id, key.first, key.second);
    return BuildStepperFrame(*inputs, id, key.first, key.second);
  };
  auto future = std::async(now ? std::launch::deferred : std::launch::async, build).share();
  frames_.emplace(key, future);
  return future;
}

std::shared_ptr<const StepperFrame> FrameCache::Get(int step, int rank) {
  return Start({step, rank}, true).get();
}

void FrameCache::Prefetch(int step, int rank) { Start({step, rank}, false); }

// Drops finished frames of other keys beyond kKept (a worker's frame is left to finish).
void FrameCache::Trim(const Key& keep) {
  if (frames_.size() < kKept) return;
  for (auto it = frames_.begin(); it != frames_.end() && frames_.size() >= kKept;) {
    it = it->first != keep && Ready(it->second) ? frames_.erase(it) : std::next(it);
  }
}

}  // namespace shardscope::gui
