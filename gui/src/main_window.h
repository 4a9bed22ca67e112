// MainWindow: opens a run file (dialog, argument or drag and drop) and shows its overview.
#pragma once

#include <QMainWindow>
#include <memory>

#include "shardscope/viewer/run_document.h"

class QPlainTextEdit;

namespace shardscope::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  MainWindow();
  // Opens `path`; on failure shows a dialog with the reason and keeps the current run.
  bool OpenRun(const QString& path);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void ChooseRun();
  QPlainTextEdit* overview_;
  std::unique_ptr<viewer::RunDocument> document_;
};

}  // namespace shardscope::gui
