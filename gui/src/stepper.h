// RedistributionStepper: walks the frames of one redistribution plan: previous, next, play,
// the Left/Right arrow keys, Home/End, and a timeline slider with one tick per step. A step
// forward (and the first frame when a redistribution is chosen) animates the moved blocks into
// the frame (frame_animation.h) unless switched off. Frames are built once and kept, the
// neighbours of the one shown on worker threads (frame_cache.h).
#pragma once

#include <QWidget>
#include <memory>

#include "shardscope/viewer/run_document.h"

class QAction;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;
class QVariantAnimation;

namespace shardscope::gui {

class SceneWidget;
struct FrameTween;
class FrameCache;
struct StepperFrame;

// How long the blocks of one step take to travel.
inline constexpr int kFrameAnimationMs = 280;

class RedistributionStepper : public QWidget {
  Q_OBJECT
 public:
  explicit RedistributionStepper(QWidget* parent = nullptr);
  ~RedistributionStepper() override;
  // Shows redistribution `id` of `run` from its first step; `run` must outlive the stepper's
  // use of it (SetRun(nullptr, -1) clears).
  void SetRedistribution(const viewer::RunData* run, int64_t id);
  int64_t redistribution() const { return id_; }
  int step() const { return step_; }
  int frames() const { return frames_; }
  bool playing() const;
  const SceneWidget* frame_view() const { return view_; }
  QString error() const { return error_; }
  // What the frame area says when no redistribution is shown.
  void SetIdleMessage(const QString& message);
  // Arrows into this rank's blocks only (viewer::FrameOptions::rank); -1: every moved block.
  void SetRank(int rank);
  int rank() const { return rank_; }
  // Whether a step forward animates (View > Animate Stepper Frames, kept with QSettings).
  bool animated() const;
  void SetAnimated(bool on);
  QAction* animate_action() const { return animate_action_; }
  // An animation is running; another step meanwhile skips it to its end and shows the new
  // frame still.
  bool animating() const;

 public slots:
  void Next();
  void Previous();
  void GoTo(int step);
  void TogglePlay();

 signals:
  void StepChanged(int step);

 protected:
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void Show();
  void Animate();
  void FinishAnimation();
  const viewer::RunData* run_ = nullptr;
  int64_t id_ = -1;
  int step_ = 0;
  int frames_ = 0;
  int rank_ = -1;
  QString error_;
  QString idle_message_;
  SceneWidget* view_;
  QSlider* timeline_;
  QLabel* position_;
  QPushButton* play_;
  QTimer* timer_;
  QVariantAnimation* animation_;
  QAction* animate_action_;
  std::shared_ptr<const FrameTween> tween_;
  std::unique_ptr<FrameCache> frames_cache_;   // built once, the next ones in the background
  std::shared_ptr<const StepperFrame> frame_;  // the one shown
};

// Stepper keys that work wherever the focus is in `window` (the arrow keys alone move the
// stepper only when it has the focus): Ctrl+Right / Ctrl+Left next and previous step,
// Ctrl+Home / Ctrl+End first and last, Ctrl+Space play.
void InstallStepperShortcuts(RedistributionStepper* stepper, QWidget* window);

}  // namespace shardscope::gui
