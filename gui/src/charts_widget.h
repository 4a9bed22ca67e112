// ChartsWidget: the run's curves with QtCharts: loss, step time (compute against
// communication, max over ranks), bytes per step, peak memory per rank.
#pragma once

#include <QTabWidget>

#include "shardscope/viewer/charts.h"

namespace shardscope::gui {

class ChartsWidget : public QTabWidget {
  Q_OBJECT
 public:
  explicit ChartsWidget(QWidget* parent = nullptr);
  void SetData(const viewer::ChartsData& data);
  // Number of points in the loss series (tests, status bar).
  int loss_points() const { return loss_points_; }

 private:
  int loss_points_ = 0;
};

}  // namespace shardscope::gui
