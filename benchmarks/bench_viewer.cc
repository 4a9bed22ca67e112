// Viewer (issue 6): a 10,000-operator run from opening the file to the first painted graph
// (target < 2 s), one redistribution frame built and painted (target < 16 ms), and one
// pipeline timeline frame (a step of 8 workers x 16 micro-batches) built and painted.
//
// The run is synthetic (tests/viewer/synthetic_run.h, written with store's RunWriter):
// 10,000 forward operators in 100 scopes of 100, 3 candidates each, 10,000 tensors and
// edges, 2,000 two-step redistributions, send/receive pairs for 4 workers, 50 steps on 8
// ranks. The graph is laid out with the default options: scopes above 40 operators are
// collapsed, as the GUI opens it. Painting goes into a QImage on the offscreen platform.
#include <benchmark/benchmark.h>

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "bench_memory.h"
#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/layout_text.h"
#include "shardscope/viewer/mesh_scene.h"
#include "shardscope/viewer/painter.h"
#include "shardscope/viewer/redistribution_scene.h"
#include "shardscope/viewer/run_document.h"
#include "shardscope/viewer/timeline_scene.h"
#include "synthetic_run.h"

namespace {

using shardscope::bench::PeakResidentMiB;
using shardscope::bench::ResidentMiB;
using namespace shardscope::viewer;

const std::string& RunPath(int num_ops) {
  static std::map<int, std::string> paths;
  auto it = paths.find(num_ops);
  if (it != paths.end()) return it->second;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shardscope_bench_viewer_" + std::to_string(num_ops) + ".db"))
                               .string();
  const auto status = testing::WriteSyntheticRun(
      path, {.num_ops = num_ops, .ops_per_scope = 100, .steps = 50, .workers = 4});
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    std::abort();
  }
  return paths[num_ops] = path;
}

void Paint(const Scene& scene) {
  QImage image(scene.bounds.size().toSize().boundedTo(QSize(4000, 4000)),
               QImage::Format_ARGB32_Premultiplied);
  QPainter painter(&image);
  PaintScene(scene, &painter);
  benchmark::DoNotOptimize(image.bits());
}

// Open + read every table + dot layout + paint: what stands between a click on a file and a
// picture.
void BM_OpenToFirstPaint(benchmark::State& state) {
  const std::string& path = RunPath(static_cast<int>(state.range(0)));
  size_t items = 0;
  for (auto _ : state) {
    auto doc = RunDocument::Open(path);
    if (!doc.ok()) state.SkipWithError(doc.status().message().c_str());
    auto scene = BuildGraphScene((*doc)->data());
    if (!scene.ok()) state.SkipWithError(scene.status().message().c_str());
    Paint(*scene);
    items = scene->items.size();
  }
  state.counters["scene_items"] = static_cast<double>(items);
}
BENCHMARK(BM_OpenToFirstPaint)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The parts: reading the file, and the graph scene (layout) alone.
void BM_LoadRunData(benchmark::State& state) {
  const std::string& path = RunPath(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto doc = RunDocument::Open(path);
    benchmark::DoNotOptimize(doc.ok());
  }
}
BENCHMARK(BM_LoadRunData)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GraphScene(benchmark::State& state) {
  auto doc = RunDocument::Open(RunPath(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    auto scene = BuildGraphScene((*doc)->data());
    benchmark::DoNotOptimize(scene.ok());
  }
}
BENCHMARK(BM_GraphScene)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A recorded run given by SHARDSCOPE_BENCH_RUN (e.g. `shardscope plan network3.yaml
// --devices 4096 --batch 4096 --record x.db`): open to the first painted graph, and the
// file's reading alone. Skipped without the variable.
void BM_OpenRecordedRun(benchmark::State& state) {
  const char* path = std::getenv("SHARDSCOPE_BENCH_RUN");
  if (path == nullptr) {
    state.SkipWithError("set SHARDSCOPE_BENCH_RUN to a run file");
    return;
  }
  for (auto _ : state) {
    auto doc = RunDocument::Open(path);
    if (!doc.ok()) {
      state.SkipWithError(doc.status().message().c_str());
      return;
    }
    if (state.range(0) == 0) continue;
    auto scene = BuildGraphScene((*doc)->data());
    if (!scene.ok()) state.SkipWithError(scene.status().message().c_str());
    Paint(*scene);
  }
}
BENCHMARK(BM_OpenRecordedRun)
    ->ArgName("paint")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One frame of the stepper: build the frame of step 1 (two tensor maps, exchanges, bars)
// and paint it.
void BM_RedistributionFrame(benchmark::State& state) {
  auto doc = RunDocument::Open(RunPath(10000));
  const auto& data = (*doc)->data();
  const auto& r = data.redistributions[data.redistributions.size() / 2];
  for (auto _ : state) {
    auto frame = BuildRedistributionFrame(data, r, 1);
    if (!frame.ok()) state.SkipWithError(frame.status().message().c_str());
    Paint(*frame);
  }
}
BENCHMARK(BM_RedistributionFrame)->Unit(benchmark::kMillisecond)->UseRealTime();

// One frame of the pipeline timeline: 8 workers, 16 micro-batches (256 spans in the step,
// 100 steps in the run), the step's summary and chart built and painted.
void BM_TimelineFrame(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "shardscope_bench_viewer_timeline.db").string();
  const auto status = testing::WriteSyntheticRun(
      path, {.num_ops = 24, .ops_per_scope = 6, .steps = 100, .workers = 8, .micro_batches = 16});
  if (!status.ok()) state.SkipWithError(status.message().c_str());
  auto doc = RunDocument::Open(path);
  if (!doc.ok()) {
    state.SkipWithError(doc.status().message().c_str());
    return;
  }
  const auto& spans = (*doc)->data().pipeline_spans;
  size_t items = 0;
  for (auto _ : state) {
    const Scene scene = BuildTimelineScene(spans, 50);
    Paint(scene);
    items = scene.items.size();
  }
  state.counters["scene_items"] = static_cast<double>(items);
}
BENCHMARK(BM_TimelineFrame)->Unit(benchmark::kMillisecond)->UseRealTime();

// Issue 21: the same recorded run (SHARDSCOPE_BENCH_RUN, e.g. GPT-2 planned for 4096
// devices) opened as the device matrix and stepper show it: the file read (per-rank rows
// left in it), the largest mesh as a heat map and the first redistribution's first frame
// (its per-rank rows read then), painted. Counters: resident memory after the iteration
// and the process's peak (run alone, --benchmark_filter=BM_OpenLargeRunViews, to read it).
void BM_OpenLargeRunViews(benchmark::State& state) {
  const char* path = std::getenv("SHARDSCOPE_BENCH_RUN");
  if (path == nullptr) {
    state.SkipWithError("set SHARDSCOPE_BENCH_RUN to a run file");
    return;
  }
  double resident = 0;
  for (auto _ : state) {
    auto doc = RunDocument::Open(path);
    if (!doc.ok()) {
      state.SkipWithError(doc.status().message().c_str());
      return;
    }
    const auto& data = (*doc)->data();
    const shardscope::store::MeshRecord* largest = nullptr;
    int64_t best = 0;
    for (const auto& m : data.meshes) {
      int64_t size = 1;
      for (int64_t d : m.shape) size *= d;
      if (size > best) best = size, largest = &m;
    }
    if (largest != nullptr) {
      auto mesh = MeshFromRecord(*largest);
      if (mesh.ok()) Paint(BuildMeshScene(*mesh));
    }
    if (!data.redistributions.empty()) {
      auto frame = BuildRedistributionFrame(data, data.redistributions.front(), 0);
      if (frame.ok()) Paint(*frame);
    }
    resident = ResidentMiB();
  }
  state.counters["rss_mib"] = resident;
  state.counters["peak_rss_mib"] = PeakResidentMiB();
}
BENCHMARK(BM_OpenLargeRunViews)->Unit(benchmark::kMillisecond)->UseRealTime();

// Issue 21's stepper on a recorded run (SHARDSCOPE_BENCH_RUN): every frame of one
// redistribution built from scratch (no cache) and painted, as the stepper's worker builds
// them; arg 0: the first redistribution of two steps or more, 1: the one with the most steps
// (as bench_gui's BM_StepperFrame). Time per frame; counters: items per frame (the largest).
void BM_RecordedStepperFrame(benchmark::State& state) {
  const char* path = std::getenv("SHARDSCOPE_BENCH_RUN");
  if (path == nullptr) return state.SkipWithError("set SHARDSCOPE_BENCH_RUN to a run file");
  auto doc = RunDocument::Open(path);
  if (!doc.ok()) return state.SkipWithError(doc.status().message().c_str());
  const auto& data = (*doc)->data();
  const shardscope::store::RedistributionRecord* chosen = nullptr;
  for (const auto& r : data.redistributions) {
    if (state.range(0) == 0 && r.steps.size() > 1) {
      chosen = &r;
      break;
    }
    if (state.range(0) == 1 && (!chosen || r.steps.size() > chosen->steps.size())) chosen = &r;
  }
  if (!chosen) return state.SkipWithError("no redistribution of two steps or more");
  const int frames = FrameCount(*chosen);
  size_t items = 0;
  int step = 0;
  for (auto _ : state) {
    step = (step + 1) % frames;
    auto frame = BuildRedistributionFrame(data, *chosen, step);
    if (!frame.ok()) return state.SkipWithError(frame.status().message().c_str());
    Paint(*frame);
    items = std::max(items, frame->items.size());
  }
  state.counters["frames"] = frames;
  state.counters["scene_items"] = static_cast<double>(items);
  state.counters["devices"] = static_cast<double>(data.run.devices);
}
BENCHMARK(BM_RecordedStepperFrame)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
