// shardscope-gui [RUN]: the desktop debugger.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QImage>
#include <QScreen>
#include <QTimer>
#include <algorithm>
#include <cstdio>

#include "graph_builder.h"
#include "graph_view.h"
#include "main_window.h"
#include "rank_view.h"
#include "shardscope/store/display_text.h"
#include "shardscope/viewer/run_document.h"
#include "stepper.h"

namespace {

// Saves a PNG of the window with each main view in front, then quits (scripts/screenshots.sh).
void SaveScreenshots(shardscope::gui::MainWindow* window, const QString& dir,
                     const QString& prefix) {
  QDir().mkpath(dir);
  for (const char* view : {"graph", "overview", "mesh", "tensor", "redistribution", "charts",
                           "ranks", "timeline", "rank", "compare"}) {
    const QString name(view);
    // Docks are shown beside the graph; overview and compare are tabs of their own.
    if (name != "overview" && name != "compare") window->ShowView("graph");
    window->ShowView(name);
    if (name == "graph") window->ShowView("redistribution");
    if (name == "graph" && window->graph_builder()->running()) {  // 500 operators or more
      QEventLoop loop;
      auto* builder = window->graph_builder();
      QObject::connect(builder, &shardscope::gui::GraphBuilder::Finished, &loop, &QEventLoop::quit);
      QObject::connect(builder, &shardscope::gui::GraphBuilder::Failed, &loop, &QEventLoop::quit);
      QTimer::singleShot(120000, &loop, &QEventLoop::quit);
      loop.exec();
    }
    if (name == "tensor" && window->document()) {
      // The first redistributed tensor; a run without redistributions (placed): an operator
      // in Details rather than empty panes.
      const auto& data = window->document()->data();
      if (!data.redistributions.empty())
        window->SelectTensor(data.redistributions.front().tensor_id);
      else if (!data.operators.empty())
        window->SelectOperator(data.operators.front().id);
    }
    if (name == "rank" && window->document()) {  // a rank other than 0 when there is one
      const int64_t devices = window->document()->data().run.devices;
      auto* rank_view = window->rank_view();
      rank_view->SetRank(static_cast<int>(std::clamp<int64_t>(devices - 1, 0, 3)));
      if (rank_view->loading()) {  // the summary is read in the background
        QEventLoop loop;
        QObject::connect(rank_view, &shardscope::gui::RankView::Loaded, &loop, &QEventLoop::quit);
        QTimer::singleShot(60000, &loop, &QEventLoop::quit);
        loop.exec();
      }
    }
    if (name == "redistribution") {  // the still frame, not the first moment of its animation
      auto* stepper = window->stepper();
      const bool animated = stepper->animated();
      stepper->SetAnimated(false);
      stepper->GoTo(stepper->frames() > 1 ? 1 : 0);
      stepper->SetAnimated(animated);
    }
    QApplication::processEvents();
    if (name == "graph") window->graph_view()->FitReadable();
    QApplication::processEvents();
    const QString path = dir + "/" + prefix + QString(view) + ".png";
    // At most ~300 KB (docs/img): a busy view is saved with 256 colours.
    const QImage image = window->grab().toImage();
    bool saved = image.save(path);
    if (saved && QFileInfo(path).size() > 300000)
      saved = image.convertToFormat(QImage::Format_Indexed8, Qt::ThresholdDither).save(path);
    if (!saved) std::fprintf(stderr, "cannot write %s\n", qPrintable(path));
    std::printf("wrote %s\n", qPrintable(path));
  }
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("shardscope-gui");
  QApplication::setOrganizationName("Shardscope");
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Shardscope's debugger: what the engine decided for a run, and why.\n\n"
      "Examples:\n"
      "  shardscope train samples/models/ffn.yaml --devices 8 --steps 20 --record runs/ffn.db\n"
      "  shardscope-gui runs/ffn.db\n"
      "  shardscope-gui runs/ffn.db --compare runs/ffn_dp.db\n"
      "  xvfb-run shardscope-gui runs/ffn.db --screenshots shots/   (PNG of each view)\n\n"
      "In the window: click an operator for its strategy, layouts and runners-up; click an\n"
      "orange redistribution edge to step through its plan (Left/Right keys); double-click a\n"
      "collapsed scope to open it. Headless pictures: `shardscope render --help`.");
  parser.addHelpOption();
  parser.addPositionalArgument("run",
                               "A run file written by `shardscope train --record` (runs/*.db).");
  QCommandLineOption compare("compare", "Open RUN2 side by side (Compare tab).", "RUN2");
  QCommandLineOption screenshots("screenshots", "Save a PNG of each main view into DIR and quit.",
                                 "DIR");
  QCommandLineOption prefix("prefix", "File name prefix of --screenshots.", "PREFIX");
  parser.addOption(compare);
  parser.addOption(screenshots);
  parser.addOption(prefix);
  parser.process(app);
  shardscope::gui::MainWindow window;
  window.show();
  bool opened = false;
  if (!parser.positionalArguments().isEmpty()) {
    // A person sees the window at once, the run filling in; screenshots wait for it.
    if (parser.isSet(screenshots)) {
      opened = window.OpenRun(parser.positionalArguments().first());
    } else {
      window.OpenRunInBackground(parser.positionalArguments().first());
    }
  }
  bool compared = true;
  if (parser.isSet(compare)) compared = window.CompareWith(parser.value(compare));
  if (parser.isSet(screenshots) && parser.positionalArguments().isEmpty()) {
    std::fprintf(stderr, "shardscope-gui: --screenshots needs a run file\n");
    return 2;
  }
  if (parser.isSet(screenshots)) {
    // Headless: a file that cannot be opened ends the program (exit 2 when it is the file's
    // fault, as `shardscope` does), instead of waiting behind a dialog.
    if (!opened || !compared) {
      const std::string message =
          shardscope::store::EscapeControls(window.last_error().toStdString());
      std::fprintf(stderr, "shardscope-gui: %s\n", message.c_str());
      return shardscope::store::IsBadInput(window.last_error_code()) ? 2 : 1;
    }
    window.resize(1920, 1080);  // a full-HD screen (scripts/screenshots.sh)
    QTimer::singleShot(300, &window, [&] {
      SaveScreenshots(&window, parser.value(screenshots), parser.value(prefix));
      app.quit();
    });
  }
  return app.exec();
}
