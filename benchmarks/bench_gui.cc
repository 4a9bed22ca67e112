// The debugger's window on a recorded run (issue 21): SHARDSCOPE_BENCH_RUN names the run file
// (scripts/record_viewer_runs.sh writes the 136-layer GPT and the 32-layer Llama decoder at
// 1024 devices, and the GPT at 4096). Every figure is the real MainWindow on the offscreen
// platform, timed from the call to the widget painted (QWidget::repaint paints at once):
//   BM_WindowOpenRun   OpenRunInBackground until the graph is painted (the iteration's time);
//                      counters: the loading state painted, the run shown, the overview
//                      filled in, the longest the event loop was blocked meanwhile, resident
//                      and peak memory (run it alone for the peak).
//   BM_ExpandLayer     a double-click on the first folded layer until it is painted in full.
//   BM_StepperFrame    one step of the stepper (GoTo, the widgets it changes painted); arg 0:
//                      the first redistribution of two steps or more, 1: the one with the
//                      most steps.
#include <benchmark/benchmark.h>

#include <QAbstractEventDispatcher>
#include <QApplication>
#include <QElapsedTimer>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QThreadPool>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "bench_memory.h"
#include "graph_builder.h"
#include "graph_view.h"
#include "main_window.h"
#include "scene_widget.h"
#include "stepper.h"

namespace {

using shardscope::bench::PeakResidentMiB;
using shardscope::bench::ResidentMiB;
using shardscope::gui::ClusterItem;
using shardscope::gui::MainWindow;

const char* RunPath(benchmark::State& state) {
  const char* path = std::getenv("SHARDSCOPE_BENCH_RUN");
  if (path == nullptr) state.SkipWithError("set SHARDSCOPE_BENCH_RUN to a run file");
  return path;
}

// Runs the event loop until `done` (false after 10 minutes).
bool Until(const std::function<bool()>& done) {
  QElapsedTimer clock;
  clock.start();
  while (!done()) {
    if (clock.elapsed() > 600000) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 5);
  }
  return true;
}

double Ms(const QElapsedTimer& clock) { return static_cast<double>(clock.nsecsElapsed()) / 1e6; }

// Counts the paint events the application delivers while it lives.
struct PaintCounter : QObject {
  PaintCounter() { QCoreApplication::instance()->installEventFilter(this); }
  bool eventFilter(QObject*, QEvent* event) override {
    count += event->type() == QEvent::Paint;
    return false;
  }
  int64_t count = 0;
};

bool GraphShown(const MainWindow& window) {
  return !window.graph_builder()->running() && !window.graph_view()->scene()->items().isEmpty();
}

// A window with the run open and its graph and overview in place, or nullptr.
std::unique_ptr<MainWindow> OpenedWindow(benchmark::State& state, const char* path) {
  auto window = std::make_unique<MainWindow>();
  window->show();
  if (!window->OpenRun(path) || !Until([&] { return GraphShown(*window) && !window->loading(); })) {
    state.SkipWithError("cannot open the run");
    return nullptr;
  }
  return window;
}

void BM_WindowOpenRun(benchmark::State& state) {
  const char* path = RunPath(state);
  if (path == nullptr) return;
  double loading = 0, shown = 0, painted = 0, overview = 0, resident = 0, longest_gap = 0;
  for (auto _ : state) {
    MainWindow window;
    window.show();
    QCoreApplication::processEvents();
    QElapsedTimer clock;
    clock.start();
    // The longest the event loop is kept from a 10 ms timer until the overview is in.
    double last = 0;
    QTimer tick;
    QObject::connect(&tick, &QTimer::timeout, [&] {
      longest_gap = std::max(longest_gap, Ms(clock) - last);
      last = Ms(clock);
    });
    tick.start(10);
    window.OpenRunInBackground(path);
    window.repaint();
    loading += Ms(clock);
    if (!Until([&] { return window.document() != nullptr || !window.loading(); }) ||
        window.document() == nullptr) {
      state.SkipWithError("cannot open the run");
      return;
    }
    shown += Ms(clock);
    if (!Until([&] { return GraphShown(window); })) return state.SkipWithError("no graph");
    window.graph_view()->viewport()->repaint();
    const double graph = Ms(clock);
    painted += graph;
    Until([&] { return !window.loading(); });
    overview += Ms(clock);
    state.SetIterationTime(graph / 1000.0);
    resident = ResidentMiB();
    window.close();
    QThreadPool::globalInstance()->waitForDone();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["loading_painted_ms"] = loading / n;
  state.counters["run_shown_ms"] = shown / n;
  state.counters["graph_painted_ms"] = painted / n;
  state.counters["overview_ms"] = overview / n;
  state.counters["longest_event_gap_ms"] = longest_gap;
  state.counters["rss_mib"] = resident;
  state.counters["peak_rss_mib"] = PeakResidentMiB();
}
BENCHMARK(BM_WindowOpenRun)->Unit(benchmark::kMillisecond)->UseManualTime();

void BM_ExpandLayer(benchmark::State& state) {
  const char* path = RunPath(state);
  if (path == nullptr) return;
  auto window = OpenedWindow(state, path);
  if (!window) return;
  QString key;  // the first folded unit ("layer0 … layer135 ×136")
  for (QGraphicsItem* item : window->graph_view()->scene()->items(Qt::AscendingOrder)) {
    if (item->type() != ClusterItem::Type) continue;
    const auto& scene_item = static_cast<ClusterItem*>(item)->item();
    if (scene_item.text.contains(QChar(0x00D7))) {
      key = scene_item.key;
      break;
    }
  }
  if (key.isEmpty()) return state.SkipWithError("no folded layer in the graph");
  size_t items = 0;
  for (auto _ : state) {
    QElapsedTimer clock;
    clock.start();
    emit window->graph_view()->ClusterActivated(key);  // expands
    if (!Until([&] { return GraphShown(*window); })) return state.SkipWithError("no graph");
    window->graph_view()->viewport()->repaint();
    state.SetIterationTime(Ms(clock) / 1000.0);
    items = static_cast<size_t>(window->graph_view()->scene()->items().size());
    emit window->graph_view()->ClusterActivated(key);  // folds it again, untimed
    Until([&] { return GraphShown(*window); });
  }
  state.counters["expanded_items"] = static_cast<double>(items);
  state.SetLabel(key.toStdString());
}
BENCHMARK(BM_ExpandLayer)->Unit(benchmark::kMillisecond)->UseManualTime();

void BM_StepperFrame(benchmark::State& state) {
  const char* path = RunPath(state);
  if (path == nullptr) return;
  auto window = OpenedWindow(state, path);
  if (!window) return;
  const auto& redistributions = window->document()->data().redistributions;
  if (redistributions.empty()) return state.SkipWithError("the run has no redistributions");
  const shardscope::store::RedistributionRecord* chosen = nullptr;
  for (const auto& r : redistributions) {
    if (state.range(0) == 0 && r.steps.size() > 1) {
      chosen = &r;  // the first one with two steps or more
      break;
    }
    if (state.range(0) == 1 && (!chosen || r.steps.size() > chosen->steps.size())) chosen = &r;
  }
  if (!chosen) return state.SkipWithError("no redistribution of two steps or more");
  window->SelectRedistribution(chosen->id);
  auto* stepper = window->stepper();
  const int frames = stepper->frames();
  PaintCounter paints;
  QCoreApplication::processEvents();
  int step = 0;
  for (auto _ : state) {
    step = (step + 1) % std::max(frames, 1);
    QElapsedTimer clock;
    clock.start();
    stepper->GoTo(step);
    // Paints what the step changed (the frame, the docks that follow it), as the screen does.
    QCoreApplication::processEvents();
    state.SetIterationTime(Ms(clock) / 1000.0);
  }
  state.counters["frames"] = frames;
  state.counters["widgets_painted_per_step"] =
      static_cast<double>(paints.count) / static_cast<double>(state.iterations());
  state.counters["devices"] = static_cast<double>(window->document()->data().run.devices);
}
BENCHMARK(BM_StepperFrame)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
