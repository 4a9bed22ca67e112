// MainWindow's reading of a run off the UI thread (RunLoader): the loading state, filling
// in the document and then its overview, and cancelling on close.
#include <QCloseEvent>
#include <QFileInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QStatusBar>

#include "main_window.h"
#include "run_loader.h"

namespace shardscope::gui {

void MainWindow::ConnectRunLoader() {
  run_loader_ = new RunLoader(this);
  statusBar()->addPermanentWidget(new RunLoadProgress(run_loader_, this));
  connect(run_loader_, &RunLoader::Opened, this, [this](const QString& path) {
    ShowOpened(path, run_loader_->TakeDocument(), /*read_summary=*/false);
  });
  connect(run_loader_, &RunLoader::Summarised, this,
          [this](const QString& text) { overview_->setPlainText(text); });
  connect(run_loader_, &RunLoader::Failed, this,
          [this](const QString&, const QString& message, int code) {
            last_error_code_ = static_cast<store::StatusCode>(code);
            ShowError("Cannot open run", message);
          });
  connect(run_loader_, &RunLoader::Cancelled, this, [this] {
    if (!document_) overview_->setPlainText("Opening the run was cancelled.");
    status_->setText(document_ ? "Opening cancelled; the run shown stays."
                               : "Opening the run was cancelled.");
  });
}

void MainWindow::OpenRunInBackground(const QString& path) {
  run_loader_->Start(path);
  const QString reading = QString("Reading %1…").arg(QFileInfo(path).fileName());
  status_->setText(reading);
  if (!document_) overview_->setPlainText(reading);
}

bool MainWindow::loading() const { return run_loader_->running(); }

void MainWindow::closeEvent(QCloseEvent* event) {
  run_loader_->Cancel();
  QMainWindow::closeEvent(event);
}

}  // namespace shardscope::gui
