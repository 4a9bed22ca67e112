// GraphBuilder: lays out the graph scene (viewer::LayOutGraph: Graphviz dot) on a worker
// thread so the window stays responsive on a large run; GraphLayoutProgress shows it busy
// with a Cancel button. A newer Start or Cancel drops the result of the layout before it:
// Graphviz cannot be interrupted, so a cancelled layout finishes unseen in the background.
// The last layout is kept: opening or closing a folded layer splices it in on the UI thread
// (viewer::GraphSceneOn), as soon as that layer's kind is laid out, which a worker does once
// the graph is shown (the first unit of every fold).
#pragma once

#include <QThread>
#include <QWidget>
#include <atomic>
#include <functional>
#include <memory>

#include "shardscope/viewer/graph_scene.h"

class QLabel;

namespace shardscope::gui {

// Graphs of at least this many operators are laid out on a worker thread (smaller ones in
// well under a second, where the window lays them out at once).
inline constexpr size_t kBackgroundLayoutOperators = 500;

class GraphBuilder : public QObject {
  Q_OBJECT
 public:
  explicit GraphBuilder(QObject* parent = nullptr);
  // Lays out a copy of the graph's records of `run` (the run may change meanwhile); the copy
  // is kept for the next Start while the run is unchanged (expanding a layer).
  void Start(const viewer::RunData& run, const viewer::GraphOptions& options);
  void Cancel();
  bool running() const { return running_; }
  // The thread the last layout ran on (never the UI thread).
  Qt::HANDLE last_thread() const { return *last_thread_; }
  // How the last scene came about: spliced on the UI thread, or laid out on a worker.
  bool last_spliced() const { return last_spliced_; }

 signals:
  void Started(qint64 operators);
  void Finished(const viewer::Scene& scene);
  void Failed(const QString& message);
  void Cancelled();

 private:
  uint64_t generation_ = 0;
  bool running_ = false;
  std::shared_ptr<std::atomic<Qt::HANDLE>> last_thread_;
  bool last_spliced_ = false;
  std::shared_ptr<const viewer::RunData> records_;  // what the last Start copied, of:
  const viewer::RunData* records_source_ = nullptr;
  std::shared_ptr<const viewer::GraphLayout> base_;  // the last layout of records_
};

// Fills `widget` with a label (returned), a busy bar and a Cancel button calling `cancel`;
// hidden until shown. SQLite and Graphviz report no progress, only that they run.
QLabel* AddBusyBar(QWidget* widget, const QString& cancel_tip, const std::function<void()>& cancel);

// "Laying out the graph (N operators)…", a busy bar and Cancel; visible while `builder` runs.
class GraphLayoutProgress : public QWidget {
  Q_OBJECT
 public:
  GraphLayoutProgress(GraphBuilder* builder, QWidget* parent);
};

}  // namespace shardscope::gui
