// The debugger at real size (issue 21): colours from mesh coordinates, heat-map meshes capped
// in size, rank groups summarized, data movement in redistribution frames (arrows, changed
// holders across a mesh change), stepper keys from anywhere and Reset Layout. Qt Test,
// offscreen platform.
#include <QDockWidget>
#include <QTest>
#include <set>

#include "graph_view.h"
#include "in_memory_run.h"
#include "main_window.h"
#include "shardscope/viewer/layout_text.h"
#include "shardscope/viewer/mesh_scene.h"
#include "shardscope/viewer/rank_colors.h"
#include "shardscope/viewer/redistribution_scene.h"
#include "shardscope/viewer/run_document.h"
#include "stepper.h"
#include "synthetic_run.h"
#include "temp_file.h"

namespace viewer = shardscope::viewer;
namespace store = shardscope::store;

namespace {

shardscope::DeviceMesh Mesh(std::vector<int64_t> shape, std::vector<std::string> names) {
  auto mesh = shardscope::DeviceMesh::Create(shardscope::Shape(shape.begin(), shape.end()),
                                             std::move(names));
  if (!mesh.ok()) qFatal("%s", mesh.status().message().c_str());
  return *mesh;
}

store::MeshRecord MeshRecordOf(int64_t id, std::vector<int64_t> shape,
                               std::vector<std::string> names) {
  store::MeshRecord m;
  m.id = id;
  m.shape = std::move(shape);
  m.axis_names = std::move(names);
  return m;
}

// A run in memory: one tensor of `shape`, one redistribution of one step from `from` (on
// mesh 0) to `to` (on mesh `to_mesh`).
viewer::RunData OneStepRun(std::vector<store::MeshRecord> meshes, std::vector<int64_t> shape,
                           const std::string& from, const std::string& to, int64_t to_mesh,
                           store::RankGroups groups = {}) {
  return shardscope_gui_test::InMemoryRun(std::move(meshes), std::move(shape), from,
                                          {{"all-gather", to, to_mesh, std::move(groups)}});
}

bool HasText(const viewer::Scene& scene, const QString& text) {
  for (const auto& item : scene.items) {
    if (item.text.contains(text)) return true;
  }
  return false;
}

}  // namespace

class ScaleTest : public QObject {
  Q_OBJECT

 private slots:
  void coordinateColoursAreDistinctAt1024Ranks() {
    for (const auto& shape : std::vector<std::vector<int64_t>>{
             {1024}, {32, 32}, {256, 2, 2}, {4, 16, 16}, {2, 2, 2, 128}}) {
      std::set<QRgb> colours;
      int64_t size = 1;
      for (int64_t d : shape) size *= d;
      QCOMPARE(size, 1024);
      for (int64_t r = 0; r < size; ++r) {
        std::vector<int64_t> coords(shape.size());
        int64_t rest = r;
        for (size_t a = shape.size(); a-- > 0;) coords[a] = rest % shape[a], rest /= shape[a];
        colours.insert(viewer::MeshColor(coords, shape).rgb());
      }
      QCOMPARE(static_cast<int64_t>(colours.size()), size);
    }
  }

  void meshHeatMapIsCappedAndColouredByCoordinates() {
    const auto mesh = Mesh({256, 2, 2}, {"d", "a", "b"});
    const viewer::Scene scene = viewer::BuildMeshScene(mesh);
    const auto cells = scene.Find("rank");
    QCOMPARE(static_cast<int>(cells.size()), 1024);
    std::set<QRgb> fills;
    for (const auto* cell : cells) fills.insert(cell->fill.rgb());
    QCOMPARE(static_cast<int>(fills.size()), 1024);
    QVERIFY(scene.bounds.width() <= 1500);
    QVERIFY(scene.bounds.height() <= 1200);
  }

  void rankGroupsAreOutlinedAndSummarized() {
    const auto mesh = Mesh({8, 128}, {"dp", "mp"});
    viewer::MeshSceneOptions options;
    options.axes = {1};  // 8 groups of 128: rows of the grid
    const viewer::Scene scene = viewer::BuildMeshScene(mesh, options);
    QCOMPARE(static_cast<int>(scene.Find("group").size()), 8);
    QVERIFY(HasText(scene, "{0-127}"));
    QVERIFY(HasText(scene, "8 rank groups of 128 along mp"));
    QVERIFY(HasText(scene, "2 more like these, starting at ranks 768,896"));
    // A group shares one colour; two groups differ.
    std::map<int64_t, QRgb> fill;
    for (const auto* cell : scene.Find("rank")) fill[cell->id] = cell->fill.rgb();
    QCOMPARE(fill[0], fill[127]);
    QVERIFY(fill[0] != fill[128]);
  }

  void frameDrawsOneGroupAndSummarizesTheOthers() {
    // An all-gather along mp on 8 x 128: 8 groups, one drawn, 7 "like it".
    const auto groups = store::RankGroups::Grid(0, {{128, 1}}, {{8, 128}});
    const viewer::RunData run = OneStepRun({MeshRecordOf(0, {8, 128}, {"dp", "mp"})}, {64, 1024},
                                           "[dp | mp]", "[dp | -]", 0, groups);
    auto frame = viewer::BuildRedistributionFrame(run, run.redistributions[0], 0);
    QVERIFY2(frame.ok(), frame.status().message().c_str());
    QVERIFY(HasText(*frame, "group {0-127}"));
    QVERIFY(
        HasText(*frame, "7 more groups like it, of 128 ranks, starting at ranks 128-896 step 128"));
    QVERIFY(frame->bounds.width() < 2000);
    QVERIFY(frame->bounds.height() < 1400);
  }

  void arrowsFollowTheElements() {
    // [dp | -] -> [- | -] on 4 ranks: the one block after gathers the 4 blocks before.
    const viewer::RunData gather =
        OneStepRun({MeshRecordOf(0, {4}, {"dp"})}, {8, 4}, "[dp | -]", "[- | -]", 0);
    auto frame = viewer::BuildRedistributionFrame(gather, gather.redistributions[0], 0);
    QVERIFY2(frame.ok(), frame.status().message().c_str());
    QCOMPARE(static_cast<int>(frame->Find("move").size()), 4);
    // Each piece in the target's band is coloured by the rank it came from: 0's own, 1-3.
    std::set<int64_t> senders;
    for (const auto* piece : frame->Find("source")) senders.insert(piece->id);
    QCOMPARE(senders, (std::set<int64_t>{0, 1, 2, 3}));
    // [dp | -] -> [- | dp] (all-to-all): 4 blocks after, each from all 4 before: 16 arrows;
    // one rank's view: the 4 into its block.
    const viewer::RunData a2a =
        OneStepRun({MeshRecordOf(0, {4}, {"dp"})}, {8, 8}, "[dp | -]", "[- | dp]", 0);
    frame = viewer::BuildRedistributionFrame(a2a, a2a.redistributions[0], 0);
    QVERIFY(frame.ok());
    QCOMPARE(static_cast<int>(frame->Find("move").size()), 16);
    frame = viewer::BuildRedistributionFrame(a2a, a2a.redistributions[0], 0, {.rank = 2});
    QVERIFY(frame.ok());
    const auto into_two = frame->Find("move");
    QCOMPARE(static_cast<int>(into_two.size()), 4);
    for (const auto* arrow : into_two) QCOMPARE(arrow->id, int64_t{2});
    // Partial sums summed: marked.
    const viewer::RunData sum =
        OneStepRun({MeshRecordOf(0, {4}, {"dp"})}, {8, 8}, "[- | -] P(dp)", "[- | -]", 0);
    frame = viewer::BuildRedistributionFrame(sum, sum.redistributions[0], 0);
    QVERIFY(frame.ok());
    QCOMPARE(static_cast<int>(frame->Find("sum").size()), 1);
  }

  void changedHoldersAreOutlinedWhenTheMeshChanges() {
    // [a | -] on mesh(a=4) -> on mesh(a_0=2, a_1=2): the same rows on the same ranks
    // (nothing changed) or half as many blocks (every block changed).
    const std::vector<store::MeshRecord> meshes = {MeshRecordOf(0, {4}, {"a"}),
                                                   MeshRecordOf(1, {2, 2}, {"a_0", "a_1"})};
    auto outlined = [&](const std::string& to) {
      const viewer::RunData run = OneStepRun(meshes, {8, 4}, "[a | -]", to, 1);
      auto frame = viewer::BuildRedistributionFrame(run, run.redistributions[0], 0);
      if (!frame.ok()) qFatal("%s", frame.status().message().c_str());
      int count = 0, blocks = 0;
      const auto all = frame->Find("block");
      // The second half of the blocks are the map after.
      for (size_t i = all.size() / 2; i < all.size(); ++i) {
        ++blocks;
        count += all[i]->stroke == QColor(230, 120, 0) ? 1 : 0;
      }
      return std::pair{count, blocks};
    };
    QCOMPARE(outlined("[a_0.a_1 | -]"), (std::pair{0, 4}));
    const auto halved = outlined("[a_0 | -]");
    QCOMPARE(halved.first, 2);
    QVERIFY(
        HasText(*viewer::BuildRedistributionFrame(
                    OneStepRun(meshes, {8, 4}, "[a | -]", "[a_0 | -]", 1),
                    OneStepRun(meshes, {8, 4}, "[a | -]", "[a_0 | -]", 1).redistributions[0], 0),
                "a₀"));
  }

  void perRankRowsStayInTheFileUntilAFrameNeedsThem() {
    shardscope::viewer::testing::TempPath file{"lazy.db"};
    QVERIFY(shardscope::viewer::testing::WriteSyntheticRun(file.path()).ok());
    auto doc = viewer::RunDocument::Open(file.path());
    QVERIFY(doc.ok());
    const auto& data = (*doc)->data();
    const auto& light = data.redistributions.front();
    QVERIFY(!light.steps.empty());
    QVERIFY(light.steps[0].transfers.empty());
    const auto full = data.RedistributionInFull(light.id);
    QVERIFY(full != nullptr);
    QVERIFY(!full->steps[0].transfers.empty());
    QCOMPARE(full->steps.size(), light.steps.size());
    QCOMPARE(full->steps[0].bytes_recv_max, light.steps[0].bytes_recv_max);
    QCOMPARE(data.RedistributionInFull(light.id).get(), full.get());  // kept, not read again
  }

  void stepperKeysWorkFromAnywhereAndLayoutResets() {
    shardscope::viewer::testing::TempPath file{"scale.db"};
    QVERIFY(shardscope::viewer::testing::WriteSyntheticRun(file.path()).ok());
    shardscope::gui::MainWindow window;
    window.show();
    QVERIFY(window.OpenRun(QString::fromStdString(file.path())));
    QApplication::setActiveWindow(&window);
    QVERIFY(QTest::qWaitForWindowActive(&window));
    auto* stepper = window.stepper();
    QVERIFY(stepper->frames() >= 2);
    QCOMPARE(stepper->step(), 0);
    // The focus in the graph, not in the stepper.
    window.graph_view()->setFocus();
    QTest::keyClick(window.graph_view(), Qt::Key_Right, Qt::ControlModifier);
    QCOMPARE(stepper->step(), 1);
    QTest::keyClick(window.graph_view(), Qt::Key_Left, Qt::ControlModifier);
    QCOMPARE(stepper->step(), 0);
    // Reset Layout brings a closed dock back.
    auto* mesh = window.findChild<QDockWidget*>("mesh");
    mesh->close();
    QVERIFY(!mesh->isVisible());
    window.ResetLayout();
    QVERIFY(mesh->isVisible());
    // The default window fits a 1920 x 1080 screen.
    QVERIFY(window.width() <= 1920 && window.height() <= 1080);
  }
};

QTEST_MAIN(ScaleTest)
#include "scale_test.moc"
