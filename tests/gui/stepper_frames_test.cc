// Stepper frames at size (issue 21): a frame draws a bounded picture whatever the rank count
// (the pattern, not every rank), its motion moves every piece drawn, frames are built once
// and kept (the next ones off the UI thread, from their own copy of the records), and
// stepping forward then back shows exactly the picture it left. Qt Test, offscreen.
#include <QImage>
#include <QTest>
#include <filesystem>
#include <set>

#include "frame_animation.h"
#include "frame_cache.h"
#include "in_memory_run.h"
#include "scene_widget.h"
#include "shardscope/viewer/redistribution_scene.h"
#include "shardscope/viewer/tensor_scene.h"
#include "stepper.h"

namespace viewer = shardscope::viewer;
namespace store = shardscope::store;
using shardscope::gui::FrameCache;
using shardscope::gui::RedistributionStepper;
using shardscope::gui::SceneWidget;

namespace {

// A [d | a] -> [d.a | -] all-to-all then an all-gather, on a (ranks/8) x 8 mesh.
viewer::RunData RunOn(int64_t ranks) {
  store::MeshRecord mesh;
  mesh.id = 0;
  mesh.shape = {ranks / 8, 8};
  mesh.axis_names = {"d", "a"};
  return shardscope_gui_test::InMemoryRun({mesh}, {ranks * 2, 64}, "[d | a]",
                                          {{"all-to-all", "[d.a | -]"}, {"all-gather", "[d | -]"}});
}

viewer::Scene Frame(const viewer::RunData& run, int step) {
  auto frame = viewer::BuildRedistributionFrame(run, run.redistributions[0], step);
  if (!frame.ok()) qFatal("%s", frame.status().message().c_str());
  return std::move(frame).value();
}

bool SameItems(const viewer::Scene& a, const viewer::Scene& b) {
  if (a.items.size() != b.items.size() || a.bounds != b.bounds) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    const auto &x = a.items[i], &y = b.items[i];
    if (x.role != y.role || x.id != y.id || x.key != y.key || x.rect != y.rect ||
        x.points != y.points || x.fill != y.fill || x.text != y.text || x.stroke != y.stroke)
      return false;
  }
  return true;
}

QImage Grab(const RedistributionStepper& stepper) {
  return const_cast<SceneWidget*>(stepper.frame_view())->grab().toImage();
}

}  // namespace

class StepperFramesTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("shardscope-frames-" + std::to_string(::getpid()));
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(dir.string()));
  }

  // 1024, 4096 and 16384 ranks: the maps draw at most kMaxMapBlocks blocks each and the
  // bands at most kMaxFramePieces pieces, so the item count stops growing with the ranks.
  void frameItemsAreBoundedWhateverTheRanks() {
    std::vector<size_t> items;
    for (int64_t ranks : {1024, 4096, 16384}) {
      const viewer::Scene frame = Frame(RunOn(ranks), 0);
      const size_t blocks = frame.Find("block").size();
      QVERIFY2(blocks <= 2 * viewer::kMaxMapBlocks, qPrintable(QString::number(blocks)));
      QVERIFY(frame.Find("source").size() <=
              static_cast<size_t>(viewer::kMaxFramePieces + viewer::kMaxFrameArrows));
      QVERIFY(frame.Find("move").size() <= static_cast<size_t>(viewer::kMaxFrameArrows));
      items.push_back(frame.items.size());
    }
    QVERIFY2(items[1] <= 2 * viewer::kMaxMapBlocks + viewer::kMaxFramePieces + 200,
             qPrintable(QString::number(items[1])));
    QCOMPARE(items[2], items[1]);  // 4x the ranks, the same picture size
  }

  // Beyond the arrows (16 at most), every moved block drawn has its band, and the motion
  // moves every band piece from a block before to its block after.
  void everyDrawnPieceMoves() {
    // 4096 ranks, 64 x 8 x 8: an 8 x 8 grid of blocks (replicated over d) all-to-all'ed into
    // 64 columns, each gathering 8 pieces.
    store::MeshRecord mesh;
    mesh.id = 0;
    mesh.shape = {64, 8, 8};
    mesh.axis_names = {"d", "r", "a"};
    const viewer::RunData run = shardscope_gui_test::InMemoryRun({mesh}, {64, 512}, "[r | a]",
                                                                 {{"all-to-all", "[- | r.a]"}});
    const viewer::Scene frame = Frame(run, 0);
    const auto bands = frame.Find("source");
    QVERIFY(bands.size() > static_cast<size_t>(viewer::kMaxFrameArrows));
    const auto tween = shardscope::gui::PlanTween(frame);
    QCOMPARE(tween.pieces.size(), bands.size());
    std::set<int64_t> targets;
    for (const auto* band : bands) targets.insert(band->key.split('>').value(1).toLongLong());
    QCOMPARE(targets.size(), size_t{64});  // every block after, not only the arrows' one
    QCOMPARE(bands.size(), size_t{64 * 8});
    for (const auto& piece : tween.pieces) QVERIFY(piece.from.right() <= piece.to.left());
  }

  // Kept frames are the same object; a prefetched frame equals one built directly, even when
  // the run it was asked for is gone by then (the worker reads its own copy).
  void framesAreBuiltOnceAndOutliveTheirRun() {
    FrameCache cache;
    viewer::Scene expected;
    {
      const viewer::RunData run = RunOn(1024);
      expected = Frame(run, 1);
      cache.Reset(&run, 0);
      const auto first = cache.Get(0, -1);
      QVERIFY(first->scene.ok());
      QCOMPARE(cache.Get(0, -1).get(), first.get());
      cache.Prefetch(1, -1);
    }
    const auto second = cache.Get(1, -1);
    QVERIFY(second->scene.ok());
    QVERIFY(SameItems(*second->scene, expected));
    QVERIFY(!second->tween.empty());
    QCOMPARE(cache.size(), size_t{2});
  }

  // At 4096 ranks: a step forward then back shows the first picture again, item for item and
  // pixel for pixel, animation on or off.
  void forwardThenBackRestoresThePicture() {
    const viewer::RunData run = RunOn(4096);
    for (bool animated : {false, true}) {
      RedistributionStepper stepper;
      stepper.resize(1300, 700);
      stepper.show();
      QVERIFY(QTest::qWaitForWindowExposed(&stepper));
      stepper.SetAnimated(animated);
      stepper.SetRedistribution(&run, 0);
      QTRY_VERIFY_WITH_TIMEOUT(!stepper.animating(), 3000);
      // The scroll area keeps a bar once a taller frame needed it: compare pixels from then.
      stepper.Next();
      QTest::qWait(50);
      stepper.Previous();
      QTest::qWait(50);
      const viewer::Scene first = stepper.frame_view()->scene();
      const QImage picture = Grab(stepper);
      QVERIFY(SameItems(first, Frame(run, 0)));
      stepper.Next();
      QCOMPARE(stepper.step(), 1);
      QVERIFY(SameItems(stepper.frame_view()->scene(), Frame(run, 1)));
      QTRY_VERIFY_WITH_TIMEOUT(!stepper.animating(), 3000);
      QVERIFY(Grab(stepper) != picture);
      stepper.Previous();
      QVERIFY(!stepper.animating());
      QVERIFY(SameItems(stepper.frame_view()->scene(), first));
      QTest::qWait(50);
      QCOMPARE(Grab(stepper), picture);
    }
  }
};

QTEST_MAIN(StepperFramesTest)
#include "stepper_frames_test.moc"
