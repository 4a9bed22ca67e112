#include "run_loader.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QLabel>
#include <QtConcurrent/QtConcurrentRun>

#include "graph_builder.h"
#include "shardscope/store/summary.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::gui {
namespace {

using DocumentResult = store::Result<std::unique_ptr<viewer::RunDocument>>;

}  // namespace

RunLoader::RunLoader(QObject* parent) : QObject(parent) {}

void RunLoader::Start(const QString& path) {
  const uint64_t generation = ++generation_;
  stage_ = Stage::kDocument;
  document_.reset();
  // QFuture wants a copyable result: the document travels in a shared holder.
  using Holder = std::shared_ptr<DocumentResult>;
  auto* watcher = new QFutureWatcher<Holder>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, path] {
    watcher->deleteLater();
    if (generation != generation_) return;  // cancelled, or a newer read started
    const Holder result = watcher->result();
    if (!result->ok()) {
      stage_ = Stage::kIdle;
      emit Failed(path, QString::fromStdString(result->status().message()),
                  static_cast<int>(result->status().code()));
      return;
    }
    document_ = std::move(*result).value();
    StartSummary(path, generation);
    emit Opened(path);
  });
  const std::string file = path.toStdString();
  watcher->setFuture(QtConcurrent::run([file] {
    auto result = std::make_shared<DocumentResult>(viewer::RunDocument::Open(file));
    // The stepper starts on the first redistribution: read its per-rank rows here too.
    if (result->ok() && !(**result)->data().redistributions.empty()) {
      const auto& data = (**result)->data();
      (void)data.RedistributionInFull(data.redistributions.front().id);
    }
    return result;
  }));
  emit Started(path, QFileInfo(path).size());
}

void RunLoader::StartSummary(const QString& path, uint64_t generation) {
  stage_ = Stage::kSummary;
  auto* watcher = new QFutureWatcher<std::string>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != generation_) return;
    stage_ = Stage::kIdle;
    emit Summarised(QString::fromStdString(watcher->result()));
  });
  // RunDocument::Summary reads the file by its path alone: a fresh reader on this thread.
  watcher->setFuture(QtConcurrent::run([file = path.toStdString()] {
    auto reader = store::RunReader::Open(file);
    auto text = reader.ok() ? store::FormatRunSummary(**reader) : reader.status();
    return text.ok() ? *text : "cannot summarise " + file + ": " + text.status().message();
  }));
}

void RunLoader::Cancel() {
  if (stage_ == Stage::kIdle) return;
  ++generation_;
  stage_ = Stage::kIdle;
  document_.reset();
  emit Cancelled();
}

RunLoadProgress::RunLoadProgress(RunLoader* loader, QWidget* parent) : QWidget(parent) {
  QLabel* label = AddBusyBar(this, "Stop reading this run; the run shown stays",
                             [loader] { loader->Cancel(); });
  connect(loader, &RunLoader::Started, this, [this, label](const QString& path, qint64 bytes) {
    label->setText(
        QString("Reading %1 (%2)…").arg(QFileInfo(path).fileName(), viewer::FormatBytes(bytes)));
    show();
  });
  connect(loader, &RunLoader::Opened, this, &QWidget::hide);
  connect(loader, &RunLoader::Cancelled, this, &QWidget::hide);
  connect(loader, &RunLoader::Failed, this, &QWidget::hide);
}

}  // namespace shardscope::gui
