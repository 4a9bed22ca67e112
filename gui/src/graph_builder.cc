#include "graph_builder.h"

#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QtConcurrent/QtConcurrentRun>

namespace shardscope::gui {
namespace {

using SceneResult = store::Result<viewer::Scene>;

struct Laid {
  SceneResult scene;
  std::shared_ptr<const viewer::GraphLayout> base;  // what the scene was made on
};

// What BuildGraphScene reads: the plan, not the per-step figures.
std::shared_ptr<viewer::RunData> GraphRecords(const viewer::RunData& run) {
  auto copy = std::make_shared<viewer::RunData>();
  copy->run = run.run;
  copy->counts = run.counts;
  copy->meshes = run.meshes;
  copy->operators = run.operators;
  copy->tensors = run.tensors;
  copy->edges = run.edges;
  copy->redistributions = run.redistributions;
  copy->send_recvs = run.send_recvs;
  copy->details = run.details;
  return copy;
}

}  // namespace

GraphBuilder::GraphBuilder(QObject* parent)
    : QObject(parent), last_thread_(std::make_shared<std::atomic<Qt::HANDLE>>(nullptr)) {}

void GraphBuilder::Start(const viewer::RunData& run, const viewer::GraphOptions& options) {
  const uint64_t generation = ++generation_;
  // Expanding a layer lays out the same records again: copy them once per version of the run
  // (a reload that changed it changes its run row or counts).
  if (!records_ || records_source_ != &run || !(records_->run == run.run) ||
      !(records_->counts == run.counts)) {
    records_ = GraphRecords(run);
    records_source_ = &run;
    base_.reset();
  }
  std::shared_ptr<const viewer::RunData> records = records_;
  std::shared_ptr<const viewer::GraphLayout> base;
  if (base_ && viewer::LaidOutOptions(*base_) == viewer::BaseGraphOptions(*records, options)) {
    base = base_;
    viewer::GraphGeometry geometry;
    auto scene = viewer::GraphSceneOn(*records, *base, options, /*may_lay_out=*/false, &geometry);
    if (scene.ok() && geometry == viewer::GraphGeometry::kSpliced) {
      running_ = false;
      last_spliced_ = true;
      emit Finished(*scene);
      return;
    }
  }
  running_ = true;
  auto* watcher = new QFutureWatcher<Laid>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, records] {
    watcher->deleteLater();
    if (generation != generation_) return;  // cancelled, or a newer layout started
    running_ = false;
    last_spliced_ = false;
    const Laid laid = watcher->result();
    if (!laid.scene.ok()) {
      emit Failed(QString::fromStdString(laid.scene.status().message()));
      return;
    }
    if (laid.base != base_) {
      base_ = laid.base;
      // Lays out the first unit of each fold (cached by shape) while the graph is looked at.
      (void)QtConcurrent::run([records, base = base_] { viewer::PrepareOpening(*records, *base); });
    }
    emit Finished(*laid.scene);
  });
  watcher->setFuture(QtConcurrent::run([records, base, options, thread = last_thread_] {
    thread->store(QThread::currentThreadId());
    std::shared_ptr<const viewer::GraphLayout> on = base;
    if (!on) {
      auto layout = viewer::LayOutGraph(*records, options);
      if (!layout.ok()) return Laid{layout.status(), nullptr};
      on = *layout;
    }
    viewer::GraphGeometry geometry;
    return Laid{viewer::GraphSceneOn(*records, *on, options, /*may_lay_out=*/true, &geometry), on};
  }));
  emit Started(static_cast<qint64>(run.operators.size()));
}

void GraphBuilder::Cancel() {
  if (!running_) return;
  ++generation_;
  running_ = false;
  emit Cancelled();
}

QLabel* AddBusyBar(QWidget* widget, const QString& cancel_tip,
                   const std::function<void()>& cancel) {
  auto* layout = new QHBoxLayout(widget);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* label = new QLabel(widget);
  auto* bar = new QProgressBar(widget);
  bar->setRange(0, 0);  // busy
  bar->setMaximumWidth(160);
  auto* button = new QPushButton("Cancel", widget);
  button->setToolTip(cancel_tip);
  layout->addWidget(label);
  layout->addWidget(bar);
  layout->addWidget(button);
  widget->hide();
  QObject::connect(button, &QPushButton::clicked, widget, cancel);
  return label;
}

GraphLayoutProgress::GraphLayoutProgress(GraphBuilder* builder, QWidget* parent) : QWidget(parent) {
  QLabel* label = AddBusyBar(this, "Stop waiting for this layout; the graph shown stays",
                             [builder] { builder->Cancel(); });
  connect(builder, &GraphBuilder::Started, this, [this, label](qint64 operators) {
    label->setText(QString("Laying out the graph (%1 operators)…").arg(operators));
    show();
  });
  connect(builder, &GraphBuilder::Cancelled, this, &QWidget::hide);
  connect(builder, &GraphBuilder::Finished, this, &QWidget::hide);
  connect(builder, &GraphBuilder::Failed, this, &QWidget::hide);
}

}  // namespace shardscope::gui
