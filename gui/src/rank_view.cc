#include "rank_view.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "scene_widget.h"
#include "shardscope/base/format.h"
#include "shardscope/viewer/rank_timeline_scene.h"

namespace shardscope::gui {

// What the worker thread hands back: the summary and its timeline, drawn there too.
struct RankView::Read {
  store::Result<store::RankSummary> summary = store::RankSummary{};
  viewer::Scene timeline;
};

namespace {

QTableView* Table(QStandardItemModel* model, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setModel(model);
  table->verticalHeader()->hide();
  table->verticalHeader()->setDefaultSectionSize(22);
  table->horizontalHeader()->setStretchLastSection(true);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setAlternatingRowColors(true);
  table->setWordWrap(false);
  QObject::connect(model, &QAbstractItemModel::modelReset, table,
                   [table] { table->resizeColumnsToContents(); });
  return table;
}

QStandardItem* Text(const QString& text) {
  auto* item = new QStandardItem(viewer::DrawableText(text));
  item->setToolTip(item->text());
  return item;
}

QStandardItem* Number(const QString& text, const QVariant& exact) {
  auto* item = new QStandardItem(text);
  item->setData(exact, Qt::UserRole);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QString Bytes(int64_t b) { return QString::fromStdString(FormatBytes(static_cast<double>(b))); }

QString Share(double part, double whole) {
  return whole > 0 ? QString::number(100 * part / whole, 'f', 1) + " %" : QString("-");
}

QString Ms(double s) { return QString::number(s * 1e3, 'f', 3) + " ms"; }

void Reset(QStandardItemModel* model, const QStringList& headers) {
  model->clear();
  model->setHorizontalHeaderLabels(headers);
}

}  // namespace

void RankView::ShowTimedSteps(const store::RankTiming& timing) {
  const QSignalBlocker blocker(step_box_);
  step_box_->clear();
  for (int64_t step : timing.timed_steps)
    step_box_->addItem(QString("step %1").arg(step), QVariant::fromValue<qint64>(step));
  if (timing.timed_steps.empty())
    step_box_->addItem("none recorded", QVariant::fromValue<qint64>(store::kNone));
  step_box_->setEnabled(timing.timed_steps.size() > 1);
  step_box_->setCurrentIndex(
      std::max(0, step_box_->findData(QVariant::fromValue<qint64>(timing.step))));
}

RankView::RankView(QWidget* parent)
    : QWidget(parent),
      rank_box_(new QSpinBox(this)),
      step_box_(new QComboBox(this)),
      rank_label_(new QLabel("rank", this)),
      title_(new QLabel(this)),
      memory_(new QStandardItemModel(this)),
      time_(new QStandardItemModel(this)),
      holdings_(new QStandardItemModel(this)),
      timeline_(new SceneWidget(this)) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  controls->addWidget(rank_label_);
  rank_box_->setRange(0, 0);
  rank_box_->setToolTip(
      "The rank (worker) shown; clicking a rank in the device matrix or a "
      "block in the tensor map chooses it too");
  controls->addWidget(rank_box_);
  controls->addWidget(new QLabel("timed step", this));
  step_box_->setToolTip(
      "The recorded step whose instructions are timed (train --timing-every N); the same "
      "figures as shardscope inspect RUN --rank R --step S");
  step_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  controls->addWidget(step_box_);
  controls->addWidget(title_, 1);
  layout->addLayout(controls);
  // Left: memory (its six rows whole) over time by kind; right: the timeline over what the
  // rank holds.
  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* tables = new QSplitter(Qt::Vertical, split);
  auto* right = new QSplitter(Qt::Vertical, split);
  for (QStandardItemModel* model : {memory_, time_, holdings_}) {
    tables_.push_back(Table(model, tables));
    (model == holdings_ ? right : tables)->addWidget(tables_.back());
  }
  tables_[0]->setMinimumHeight(6 * 22 + 30);
  tables->setMinimumWidth(480);  // every column of the tables
  tables->setSizes({6 * 22 + 30, 400});
  right->insertWidget(0, InScrollArea(timeline_, right));
  right->setSizes({260, 140});
  split->addWidget(tables);
  split->addWidget(right);
  split->setSizes({560, 1300});
  layout->addWidget(split, 1);
  timeline_->SetMessage("Open a run: what the chosen rank holds and its timeline appear here.");
  connect(rank_box_, &QSpinBox::valueChanged, this, [this](int rank) {
    Show();
    emit RankChanged(rank);
  });
  connect(step_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0) return;
    chosen_step_ = step_box_->itemData(index).toLongLong();
    Show();
  });
}

void RankView::SetStep(int64_t step) {
  const int index = step_box_->findData(QVariant::fromValue<qint64>(step));
  if (index >= 0) step_box_->setCurrentIndex(index);  // Show() through currentIndexChanged
}

int RankView::rank() const { return rank_box_->value(); }
QString RankView::title() const { return title_->text(); }

void RankView::SetRun(const viewer::RunData* run) {
  if (run != run_) chosen_step_ = store::kNone;
  run_ = run;
  const QSignalBlocker blocker(rank_box_);
  rank_box_->setRange(0, run ? static_cast<int>(std::max<int64_t>(1, run->run.devices) - 1) : 0);
  Show();
}

void RankView::SetRank(int rank) {
  if (rank == rank_box_->value()) return;
  rank_box_->setValue(rank);  // Show() and RankChanged through valueChanged
}

void RankView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (stale_) Show();
}

void RankView::Show() {
  ++generation_;
  // Hidden (another dock's tab in front): read the file when the view comes into view.
  stale_ = !isVisible();
  loading_ = !stale_ && run_ != nullptr;
  if (stale_) return;
  error_.clear();
  if (!run_) {
    Reset(memory_, {"holds", "bytes", "of peak"});
    Reset(time_, {"operator kind / collective", "time", "count", "of step"});
    Reset(holdings_, {"parameter", "shape", "layout on this rank"});
    shown_step_ = store::kNone;
    title_->clear();
    timeline_->SetMessage("Open a run: what the chosen rank holds and its timeline appear here.");
    return;
  }
  // The last figures stay, greyed, until the new ones arrive: no flicker on small runs.
  title_->setText(QString("Reading %1 %2 of %3…")
                      .arg(rank_label_->text())
                      .arg(rank_box_->value())
                      .arg(run_->run.devices));
  for (QTableView* table : tables_) table->setEnabled(false);
  if (!reading_) StartRead();
}

void RankView::StartRead() {
  reading_ = true;
  const uint64_t generation = generation_;
  using Holder = std::shared_ptr<const Read>;  // QFuture wants a copyable result
  auto* watcher = new QFutureWatcher<Holder>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    reading_ = false;
    if (generation == generation_) {
      Fill(*watcher->result());
    } else if (loading_) {
      StartRead();  // the run, rank or step changed meanwhile: read what is asked for now
    }
  });
  watcher->setFuture(
      QtConcurrent::run([task = run_->RankSummaryTask(rank_box_->value(), chosen_step_)] {
        auto read = std::make_shared<Read>();
        read->summary = task();
        if (read->summary.ok())
          read->timeline = viewer::BuildRankTimelineScene(*read->summary, /*breakdown=*/false);
        return Holder(std::move(read));
      }));
}

void RankView::Fill(const Read& result) {
  loading_ = false;
  for (QTableView* table : tables_) table->setEnabled(true);
  Reset(memory_, {"holds", "bytes", "of peak"});
  Reset(time_, {"operator kind / collective", "time", "count", "of step"});
  Reset(holdings_, {"parameter", "shape", "layout on this rank"});
  shown_step_ = store::kNone;
  const auto& read = result.summary;
  if (!read.ok()) {
    error_ = QString::fromStdString(read.status().message());
    title_->setText(error_);
    timeline_->SetMessage(error_);
    emit Loaded();
    return;
  }
  const store::RankSummary& s = *read;
  shown_step_ = s.timing.step;
  ShowTimedSteps(s.timing);
  const QString name = s.placed ? "worker" : "rank";
  rank_label_->setText(name);
  if (s.placed)
    holdings_->setHorizontalHeaderLabels(
        {"parameter, operator or transfer", "shape or bytes", "layout or what"});
  if (s.steps == 0) {
    title_->setText(QString("%1 %2 of %3: no training steps recorded (plan runs: `shardscope "
                            "plan` prints the predicted memory per device)")
                        .arg(name)
                        .arg(s.rank)
                        .arg(s.run.devices));
  } else {
    title_->setText(QString("%1 %2 of %3 — memory at step %4, peak %5; over %6 steps: compute "
                            "%7, communication %8")
                        .arg(name)
                        .arg(s.rank)
                        .arg(s.run.devices)
                        .arg(s.last_step)
                        .arg(Bytes(s.last.peak_bytes))
                        .arg(s.steps)
                        .arg(Ms(s.compute_seconds), Ms(s.comm_seconds)));
  }
  const double peak = static_cast<double>(s.last.peak_bytes);
  int64_t sum = 0;
  for (const store::MemoryRow& m : store::MemoryRows(s)) {
    if (m.json_key == "peak_bytes") {
      memory_->appendRow({Text("total (sum of the above)"),
                          Number(s.steps > 0 ? Bytes(sum) : "not recorded", qint64(sum)),
                          Text(Share(static_cast<double>(sum), peak))});
    } else {
      sum += m.bytes;
    }
    auto* what = Text(QString::fromStdString(m.what));
    what->setData(QString::fromStdString(m.json_key), Qt::UserRole);
    // A plan run recorded no step: "not recorded" rather than 0 B.
    memory_->appendRow({what,
                        Number(s.steps > 0 ? Bytes(m.bytes) : "not recorded", qint64(m.bytes)),
                        Text(Share(static_cast<double>(m.bytes), peak))});
  }
  // Time: the totals, then operator kinds and collectives, the largest first.
  const store::RankTiming& t = s.timing;
  const double step_time = t.compute + t.comm;
  if (t.step != store::kNone) {
    time_->appendRow({Text("compute (all operators)"), Number(Ms(t.compute), t.compute), Text(""),
                      Text(Share(t.compute, step_time))});
    time_->appendRow({Text("communication (all)"), Number(Ms(t.comm), t.comm), Text(""),
                      Text(Share(t.comm, step_time))});
  }
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> kinds;
  for (const auto* by : {&t.compute_by_kind, &t.collectives})
    kinds.insert(kinds.end(), by->begin(), by->end());
  std::stable_sort(kinds.begin(), kinds.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  for (const auto& [kind, v] : kinds) {
    const bool compute = t.compute_by_kind.count(kind) > 0;
    time_->appendRow({Text(QString::fromStdString(kind) + (compute ? "" : "  (comm)")),
                      Number(Ms(v.first), v.first),
                      Number(QString::number(v.second), qint64(v.second)),
                      Text(Share(v.first, step_time))});
    time_->item(time_->rowCount() - 1, 0)->setData(QString::fromStdString(kind), Qt::UserRole);
  }
  for (const auto& p : s.parameters) {
    QString shape;
    for (int64_t d : p.shape) shape += (shape.isEmpty() ? "" : "×") + QString::number(d);
    holdings_->appendRow({Text(QString::fromStdString(p.name)), Text(shape),
                          Text(QString::fromStdString(p.layout))});
  }
  for (const auto& o : s.operators)
    holdings_->appendRow({Text("operator " + QString::fromStdString(o)), Text(""), Text("")});
  for (const auto& p : s.crossing) {  // placed: what crosses to or from the worker
    const auto name = s.tensor_names.find(p.tensor_id);
    holdings_->appendRow(
        {Text(QString("%1 %2 worker %3")
                  .arg(QString::fromStdString(name != s.tensor_names.end() ? name->second : ""))
                  .arg(p.src_rank == s.rank ? "→" : "←")
                  .arg(p.src_rank == s.rank ? p.dst_rank : p.src_rank)),
         Number(Bytes(p.bytes) + " per step", qint64(p.bytes)),
         Text(p.is_backward ? "gradient" : "activation")});
  }
  timeline_->SetScene(result.timeline);
  for (QTableView* table : tables_) {
    table->resizeColumnsToContents();
  }
  emit Loaded();
}

}  // namespace shardscope::gui
