// RunLoader: reads a run file on a worker thread so the window paints at once and stays
// responsive while a large run (10,000 operators, 4096 ranks) is read. Two stages fill the
// window in as they arrive: the document (graph, stepper, ranks), then the Overview text
// (FormatRunSummary, which reads every redistribution's per-rank rows).
// A newer Start or Cancel drops what the reads before it return: SQLite reads cannot be
// interrupted, so a cancelled read finishes unseen in the background.
#pragma once

#include <QString>
#include <QWidget>
#include <memory>

#include "shardscope/viewer/run_document.h"

namespace shardscope::gui {

class RunLoader : public QObject {
  Q_OBJECT
 public:
  explicit RunLoader(QObject* parent = nullptr);
  // Starts reading `path`; Opened or Failed follows (never before Start returns).
  void Start(const QString& path);
  void Cancel();
  // Reading the file or its summary.
  bool running() const { return stage_ != Stage::kIdle; }
  // The document read, after Opened (once: it moves out).
  std::unique_ptr<viewer::RunDocument> TakeDocument() { return std::move(document_); }

 signals:
  void Started(const QString& path, qint64 bytes);
  void Opened(const QString& path);
  void Failed(const QString& path, const QString& message, int code);
  void Summarised(const QString& text);
  void Cancelled();

 private:
  enum class Stage { kIdle, kDocument, kSummary };
  void StartSummary(const QString& path, uint64_t generation);
  uint64_t generation_ = 0;
  Stage stage_ = Stage::kIdle;
  std::unique_ptr<viewer::RunDocument> document_;
};

// "Reading NAME (N MiB)…", a busy bar and Cancel; visible while `loader` reads the document.
class RunLoadProgress : public QWidget {
  Q_OBJECT
 public:
  RunLoadProgress(RunLoader* loader, QWidget* parent);
};

}  // namespace shardscope::gui
