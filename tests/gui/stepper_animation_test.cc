// The stepper's animation between frames (issue 21): a step forward moves the blocks from
// their senders to their place after, in their data colour; it ends on exactly the still
// frame; rapid stepping skips it; View > Animate Stepper Frames switches it off. A still frame
// and a tick of the motion paint in under 16 ms at 1024 ranks. Qt Test, offscreen.
#include <QAction>
#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <QSettings>
#include <QTest>
#include <algorithm>
#include <filesystem>

#include "frame_animation.h"
#include "in_memory_run.h"
#include "scene_widget.h"
#include "shardscope/viewer/painter.h"
#include "shardscope/viewer/redistribution_scene.h"
#include "stepper.h"

namespace viewer = shardscope::viewer;
namespace store = shardscope::store;
using shardscope::gui::FrameTween;
using shardscope::gui::RedistributionStepper;
using shardscope::gui::SceneWidget;

namespace {

store::MeshRecord MeshRecordOf(std::vector<int64_t> shape, std::vector<std::string> names) {
  store::MeshRecord m;
  m.id = 0;
  m.shape = std::move(shape);
  m.axis_names = std::move(names);
  return m;
}

// Partial sums reduced and scattered, gathered, then moved to the other dimension.
viewer::RunData ThreeStepRun() {
  return shardscope_gui_test::InMemoryRun(
      {MeshRecordOf({2, 4}, {"dp", "mp"})}, {8, 8}, "[dp | -] P(mp)",
      {{"reduce-scatter", "[dp.mp | -]"}, {"all-gather", "[dp | -]"}, {"all-to-all", "[- | dp]"}});
}

QImage Grab(const RedistributionStepper& stepper) {
  return const_cast<SceneWidget*>(stepper.frame_view())->grab().toImage();
}

bool SameItems(const viewer::Scene& a, const viewer::Scene& b) {
  if (a.items.size() != b.items.size() || a.bounds != b.bounds) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    const auto &x = a.items[i], &y = b.items[i];
    if (x.role != y.role || x.id != y.id || x.rect != y.rect || x.points != y.points ||
        x.fill != y.fill || x.text != y.text || x.stroke != y.stroke)
      return false;
  }
  return true;
}

// The least of ten times of `paint` in ms (the machine may be busy).
template <typename Paint>
double LeastMs(Paint paint) {
  double least = 1e9;
  for (int i = 0; i < 10; ++i) {
    QElapsedTimer timer;
    timer.start();
    paint();
    least = std::min(least, static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }
  return least;
}

}  // namespace

class StepperAnimationTest : public QObject {
  Q_OBJECT

 private:
  viewer::RunData run_ = ThreeStepRun();

  void Open(RedistributionStepper* stepper) {
    stepper->resize(1300, 700);
    stepper->show();
    QVERIFY(QTest::qWaitForWindowExposed(stepper));
    stepper->SetRedistribution(&run_, 0);
    QCOMPARE(stepper->frames(), 3);
    QVERIFY(stepper->error().isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(!stepper->animating(), 3000);  // the first frame moved in
  }

 private slots:
  void initTestCase() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("shardscope-animation-" + std::to_string(::getpid()));
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(dir.string()));
  }

  // Each piece starts on a block before and ends inside the block after that its arrow points
  // to, in the colour of the block it left; a summed step stacks its addends.
  void tweenMovesPiecesFromTheirBlocksBefore() {
    for (int step : {0, 1, 2}) {
      auto frame = viewer::BuildRedistributionFrame(run_, run_.redistributions[0], step);
      QVERIFY2(frame.ok(), frame.status().message().c_str());
      const FrameTween tween = shardscope::gui::PlanTween(*frame);
      const auto arrows = frame->Find("move");
      QVERIFY(!arrows.empty());
      QCOMPARE(tween.pieces.size(), arrows.size());
      for (size_t i = 0; i < tween.pieces.size(); ++i) {
        const auto& piece = tween.pieces[i];
        QVERIFY(piece.from.contains(arrows[i]->points.front()));
        bool lands_in_target = false, leaves_a_block = false;
        for (const auto* block : frame->Find("block", arrows[i]->id))
          lands_in_target =
              lands_in_target || block->rect.adjusted(-0.5, -0.5, 0.5, 0.5).contains(piece.to);
        for (const auto* block : frame->Find("block"))
          leaves_a_block =
              leaves_a_block || (block->rect == piece.from && block->fill == piece.fill);
        QVERIFY(lands_in_target);
        QVERIFY(leaves_a_block);
        QCOMPARE(piece.addends > 1, step == 0);  // only the reduce-scatter sums
      }
      // The arriving items are the arrows, bands, sums and blocks after that receive pieces.
      for (size_t i : tween.arriving) {
        const QString role = frame->items[i].role;
        QVERIFY(role == "move" || role == "source" || role == "sum" || role == "block");
      }
    }
  }

  // A step forward animates, moves through pictures other than the still frame, and ends on
  // exactly the still frame (same items, same pixels as with the animation switched off).
  void animationRunsAndEndsOnTheStillFrame() {
    RedistributionStepper stepper;
    Open(&stepper);
    stepper.SetAnimated(false);
    stepper.GoTo(1);
    QVERIFY(!stepper.animating());
    const QImage still = Grab(stepper);
    stepper.GoTo(0);
    stepper.SetAnimated(true);
    QElapsedTimer clock;
    clock.start();
    stepper.Next();
    QCOMPARE(stepper.step(), 1);
    QVERIFY(stepper.animating());
    QVERIFY(stepper.frame_view()->tweening());
    auto expected = viewer::BuildRedistributionFrame(run_, run_.redistributions[0], 1);
    QVERIFY(expected.ok());
    QVERIFY(SameItems(stepper.frame_view()->scene(), *expected));  // the frame is the still one
    QTest::qWait(kFrameAnimationMsHalf());
    QVERIFY(stepper.animating());
    QVERIFY(Grab(stepper) != still);  // blocks on their way
    QTRY_VERIFY_WITH_TIMEOUT(!stepper.animating(), 3000);
    QVERIFY(clock.elapsed() >= shardscope::gui::kFrameAnimationMs - 20);
    QVERIFY(!stepper.frame_view()->tweening());
    QVERIFY(SameItems(stepper.frame_view()->scene(), *expected));
    QCOMPARE(Grab(stepper), still);
    // Backwards and jumps show the still frame at once.
    stepper.Previous();
    QVERIFY(!stepper.animating());
    stepper.GoTo(2);
    QVERIFY(!stepper.animating());
  }

  // Rapid keys: a step while the animation runs ends it and shows the next frame still.
  void rapidSteppingSkipsToTheEnd() {
    RedistributionStepper stepper;
    Open(&stepper);
    stepper.SetAnimated(true);
    stepper.setFocus();
    QTest::keyClick(&stepper, Qt::Key_Right);
    QVERIFY(stepper.animating());
    QTest::keyClick(&stepper, Qt::Key_Right);
    QCOMPARE(stepper.step(), 2);
    QVERIFY(!stepper.animating());
    QVERIFY(!stepper.frame_view()->tweening());
    auto expected = viewer::BuildRedistributionFrame(run_, run_.redistributions[0], 2);
    QVERIFY(expected.ok());
    QVERIFY(SameItems(stepper.frame_view()->scene(), *expected));
    stepper.SetAnimated(false);
    const QImage still = Grab(stepper);
    stepper.GoTo(1);
    stepper.SetAnimated(true);
    QTest::keyClick(&stepper, Qt::Key_Right);  // the last step: animates once more
    QVERIFY(stepper.animating());
    QTest::keyClick(&stepper, Qt::Key_End);  // already there: the key still ends the motion
    QVERIFY(!stepper.animating());
    QCOMPARE(Grab(stepper), still);
  }

  // Choosing a redistribution animates its first frame: here the partial sums' reduce-scatter,
  // whose pieces travel as stacks of addends.
  void firstFrameMovesIn() {
    RedistributionStepper stepper;
    stepper.resize(1300, 700);
    stepper.show();
    QVERIFY(QTest::qWaitForWindowExposed(&stepper));
    stepper.SetAnimated(true);
    stepper.SetRedistribution(&run_, 0);
    QCOMPARE(stepper.step(), 0);
    QVERIFY(stepper.animating());
    QTRY_VERIFY_WITH_TIMEOUT(!stepper.animating(), 3000);
    QVERIFY(!stepper.frame_view()->tweening());
  }

  // The View menu's check box switches the animation off, and the choice is kept.
  void animationCanBeSwitchedOff() {
    {
      RedistributionStepper stepper;
      Open(&stepper);
      QVERIFY(stepper.animated());  // on by default
      stepper.animate_action()->trigger();
      QVERIFY(!stepper.animated());
      stepper.Next();
      QVERIFY(!stepper.animating());
      QVERIFY(!stepper.frame_view()->tweening());
    }
    QCOMPARE(QSettings("Shardscope", "shardscope-gui").value("stepper/animate").toBool(), false);
    RedistributionStepper again;  // a new window remembers
    QVERIFY(!again.animated());
    again.SetAnimated(true);
  }

  // 1024 ranks: the still frame and one tick of the motion each paint in under 16 ms.
  void frameAt1024RanksPaintsInAFrame() {
    const viewer::RunData big =
        shardscope_gui_test::InMemoryRun({MeshRecordOf({128, 8}, {"d", "a"})}, {4096, 4096},
                                         "[d | a]", {{"all-to-all", "[d.a | -]"}});
    auto frame = viewer::BuildRedistributionFrame(big, big.redistributions[0], 0);
    QVERIFY2(frame.ok(), frame.status().message().c_str());
    QVERIFY(frame->Find("block").size() >= 1024);
    const FrameTween tween = shardscope::gui::PlanTween(*frame);
    QVERIFY(!tween.empty());
    QImage image(frame->bounds.size().toSize(), QImage::Format_ARGB32_Premultiplied);
    const double still = LeastMs([&] {
      QPainter painter(&image);
      viewer::PaintScene(*frame, &painter);
    });
    const double tick = LeastMs([&] {
      QPainter painter(&image);
      shardscope::gui::PaintTweenMotion(*frame, tween, 0.5, &painter);
    });
    qInfo("1024-rank frame: still %.2f ms, motion tick %.2f ms", still, tick);
    QVERIFY2(still < 16, qPrintable(QString::number(still)));
    QVERIFY2(tick < 16, qPrintable(QString::number(tick)));
  }

 private:
  static int kFrameAnimationMsHalf() { return shardscope::gui::kFrameAnimationMs / 2; }
};

QTEST_MAIN(StepperAnimationTest)
#include "stepper_animation_test.moc"
