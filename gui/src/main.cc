// shardscope-gui [RUN]: the desktop debugger.
#include <QApplication>
#include <QCommandLineParser>

#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("shardscope-gui");
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Shardscope's debugger: what the engine decided for a run, and why.");
  parser.addHelpOption();
  parser.addPositionalArgument("run", "A run file written by `shardscope train` (runs/*.db).");
  parser.process(app);
  shardscope::gui::MainWindow window;
  window.show();
  if (!parser.positionalArguments().isEmpty()) window.OpenRun(parser.positionalArguments().first());
  return app.exec();
}
