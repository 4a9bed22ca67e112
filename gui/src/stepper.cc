#include "stepper.h"

#include <QAction>
#include <QEasingCurve>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QShortcut>
#include <QSlider>
#include <QTimer>
#include <QVBoxLayout>
#include <QVariantAnimation>

#include "frame_animation.h"
#include "frame_cache.h"
#include "scene_widget.h"
#include "shardscope/viewer/redistribution_scene.h"

namespace shardscope::gui {

RedistributionStepper::RedistributionStepper(QWidget* parent)
    : QWidget(parent),
      view_(new SceneWidget(this)),
      timeline_(new QSlider(Qt::Horizontal, this)),
      position_(new QLabel(this)),
      play_(new QPushButton("Play", this)),
      timer_(new QTimer(this)),
      animation_(new QVariantAnimation(this)),
      animate_action_(new QAction("&Animate Stepper Frames", this)),
      frames_cache_(std::make_unique<FrameCache>()) {
  setFocusPolicy(Qt::StrongFocus);
  auto* previous = new QPushButton("◀ Prev", this);
  auto* next = new QPushButton("Next ▶", this);
  previous->setToolTip("Previous step (Left arrow; Ctrl+Left from anywhere)");
  next->setToolTip("Next step (Right arrow; Ctrl+Right from anywhere)");
  timeline_->setTickPosition(QSlider::TicksBelow);
  timeline_->setPageStep(1);
  auto* controls = new QHBoxLayout;
  controls->addWidget(previous);
  controls->addWidget(play_);
  controls->addWidget(next);
  controls->addWidget(timeline_, 1);
  controls->addWidget(position_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(InScrollArea(view_, this), 1);
  connect(previous, &QPushButton::clicked, this, &RedistributionStepper::Previous);
  connect(next, &QPushButton::clicked, this, &RedistributionStepper::Next);
  connect(play_, &QPushButton::clicked, this, &RedistributionStepper::TogglePlay);
  connect(timeline_, &QSlider::valueChanged, this, &RedistributionStepper::GoTo);
  idle_message_ =
      "Click an orange redistribution edge in the graph (or pick one in the list) to step "
      "through its plan.";
  timer_->setInterval(900);
  connect(timer_, &QTimer::timeout, this, [this] {
    if (step_ + 1 >= frames_) {
      TogglePlay();
    } else {
      Next();
    }
  });
  animation_->setStartValue(0.0);
  animation_->setEndValue(1.0);
  animation_->setDuration(kFrameAnimationMs);
  animation_->setEasingCurve(QEasingCurve::InOutCubic);
  connect(animation_, &QVariantAnimation::valueChanged, this,
          [this](const QVariant& t) { view_->SetTween(tween_, t.toDouble()); });
  connect(animation_, &QVariantAnimation::finished, this, &RedistributionStepper::FinishAnimation);
  animate_action_->setCheckable(true);
  animate_action_->setToolTip("Blocks travel from their senders when the stepper steps forward");
  animate_action_->setChecked(
      QSettings("Shardscope", "shardscope-gui").value("stepper/animate", true).toBool());
  connect(animate_action_, &QAction::toggled, this, [this](bool on) {
    QSettings("Shardscope", "shardscope-gui").setValue("stepper/animate", on);
    if (!on) FinishAnimation();
  });
  SetRedistribution(nullptr, -1);
}

RedistributionStepper::~RedistributionStepper() = default;

bool RedistributionStepper::animated() const { return animate_action_->isChecked(); }
void RedistributionStepper::SetAnimated(bool on) { animate_action_->setChecked(on); }
bool RedistributionStepper::animating() const {
  return animation_->state() == QAbstractAnimation::Running;
}

void RedistributionStepper::FinishAnimation() {
  animation_->stop();
  tween_.reset();
  view_->SetTween(nullptr);
}

// The frame just shown (still) moves in: its pieces travel from their blocks before.
void RedistributionStepper::Animate() {
  if (!frame_ || frame_->tween.empty()) return;
  tween_ = std::shared_ptr<const FrameTween>(frame_, &frame_->tween);
  view_->SetTween(tween_, 0);
  animation_->start();
}

void RedistributionStepper::SetRedistribution(const viewer::RunData* run, int64_t id) {
  timer_->stop();
  FinishAnimation();
  play_->setText("Play");
  run_ = run;
  id_ = id;
  step_ = 0;
  frames_cache_->Reset(run, id);
  const store::RedistributionRecord* r = run ? run->Redistribution(id) : nullptr;
  frames_ = r ? viewer::FrameCount(*r) : 0;
  timeline_->blockSignals(true);
  timeline_->setRange(0, std::max(0, frames_ - 1));
  timeline_->setValue(0);
  timeline_->blockSignals(false);
  Show();
  if (r && animated() && error_.isEmpty()) Animate();  // the first step moves in too
}

void RedistributionStepper::SetIdleMessage(const QString& message) {
  idle_message_ = message;
  if (!run_ || !run_->Redistribution(id_)) view_->SetMessage(message);
}

bool RedistributionStepper::playing() const { return timer_->isActive(); }

void RedistributionStepper::Next() { GoTo(step_ + 1); }
void RedistributionStepper::Previous() { GoTo(step_ - 1); }

void RedistributionStepper::GoTo(int step) {
  if (frames_ == 0) return;
  step = std::clamp(step, 0, frames_ - 1);
  // Rapid stepping: the running animation skips to its end, the new frame shows still.
  const bool rapid = animating();
  FinishAnimation();
  if (step == step_ && timeline_->value() == step) return;
  const bool forward = step == step_ + 1;
  step_ = step;
  timeline_->blockSignals(true);
  timeline_->setValue(step);
  timeline_->blockSignals(false);
  Show();
  if (forward && !rapid && animated() && error_.isEmpty()) Animate();
  emit StepChanged(step_);
}

void RedistributionStepper::TogglePlay() {
  if (timer_->isActive()) {
    timer_->stop();
    play_->setText("Play");
  } else if (frames_ > 1) {
    if (step_ + 1 >= frames_) GoTo(0);
    timer_->start();
    play_->setText("Pause");
  }
}

void RedistributionStepper::SetRank(int rank) {
  rank_ = rank;
  Show();
}

void RedistributionStepper::Show() {
  error_.clear();
  const store::RedistributionRecord* r = run_ ? run_->Redistribution(id_) : nullptr;
  if (!r) {
    frame_.reset();
    position_->setText("");
    view_->SetMessage(idle_message_);
    return;
  }
  position_->setText(QString("step %1 / %2").arg(step_ + 1).arg(frames_));
  position_->setText(position_->text() + (rank_ >= 0 ? QString(", rank %1").arg(rank_) : ""));
  frame_ = frames_cache_->Get(step_, rank_);
  if (!frame_->scene.ok()) {
    error_ = QString::fromStdString(frame_->scene.status().message());
    view_->SetMessage(error_);
    return;
  }
  view_->SetScene(*frame_->scene);
  // The frames a key press shows next, built while this one is looked at.
  if (step_ + 1 < frames_) frames_cache_->Prefetch(step_ + 1, rank_);
  if (step_ > 0) frames_cache_->Prefetch(step_ - 1, rank_);
}

void RedistributionStepper::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Right:
      Next();
      break;
    case Qt::Key_Left:
      Previous();
      break;
    case Qt::Key_Home:
      GoTo(0);
      break;
    case Qt::Key_End:
      GoTo(frames_ - 1);
      break;
    case Qt::Key_Space:
      TogglePlay();
      break;
    default:
      QWidget::keyPressEvent(event);
      return;
  }
  event->accept();
}

}  // namespace shardscope::gui

namespace shardscope::gui {

void InstallStepperShortcuts(RedistributionStepper* stepper, QWidget* window) {
  const auto add = [&](QKeySequence keys, auto slot) {
    auto* shortcut = new QShortcut(keys, window);
    shortcut->setContext(Qt::WindowShortcut);
    QObject::connect(shortcut, &QShortcut::activated, stepper, slot);
  };
  add(QKeySequence(Qt::CTRL | Qt::Key_Right), [stepper] { stepper->Next(); });
  add(QKeySequence(Qt::CTRL | Qt::Key_Left), [stepper] { stepper->Previous(); });
  add(QKeySequence(Qt::CTRL | Qt::Key_Home), [stepper] { stepper->GoTo(0); });
  add(QKeySequence(Qt::CTRL | Qt::Key_End), [stepper] { stepper->GoTo(stepper->frames() - 1); });
  add(QKeySequence(Qt::CTRL | Qt::Key_Space), [stepper] { stepper->TogglePlay(); });
}

}  // namespace shardscope::gui
