#include "main_window.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFontDatabase>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>

namespace shardscope::gui {

MainWindow::MainWindow() : overview_(new QPlainTextEdit(this)) {
  setWindowTitle("Shardscope");
  setAcceptDrops(true);
  overview_->setReadOnly(true);
  overview_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  overview_->setPlainText(
      "Open a run file (File > Open, or drop it here).\n"
      "Runs are written by `shardscope train` under runs/.");
  setCentralWidget(overview_);
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open...", QKeySequence::Open, this, &MainWindow::ChooseRun);
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  resize(1000, 700);
}

void MainWindow::ChooseRun() {
  const QString path = QFileDialog::getOpenFileName(this, "Open run", "runs",
                                                    "Shardscope runs (*.db);;All files (*)");
  if (!path.isEmpty()) OpenRun(path);
}

bool MainWindow::OpenRun(const QString& path) {
  auto doc = viewer::RunDocument::Open(path.toStdString());
  if (!doc.ok()) {
    QMessageBox::warning(this, "Cannot open run", QString::fromStdString(doc.status().message()));
    return false;
  }
  document_ = std::move(doc).value();
  overview_->setPlainText(QString::fromStdString(document_->Summary()));
  setWindowTitle("Shardscope — " + path);
  return true;
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (!urls.isEmpty()) OpenRun(urls.first().toLocalFile());
}

}  // namespace shardscope::gui
