// Live samples/s per step (QtCharts): measured points, warm-up steps greyed and shaded, a dashed marker at
// each configuration change, each segment's median as a horizontal line labelled with its ratio to the
// previous segment. Rebuilt from the RunRecord (cheap: a few thousand points) whenever a step arrives.
#pragma once

#include <QWidget>
#include <vector>

#include "ui/run_controller.h"

class QGraphicsSimpleTextItem;

class QAbstractSeries;
class QChart;
class QChartView;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace tb::ui {

class ThroughputChart : public QWidget {
  Q_OBJECT
 public:
  explicit ThroughputChart(QWidget* parent = nullptr);
  void setRecord(const RunRecord* rec);  // not owned; the controller keeps it alive
  void refresh();                        // re-reads the record (call on step / config_applied)
  QChartView* view() const { return view_; }
  int segmentLabelCount() const { return int(labels_.size()); }

 private:
  void placeLabels();
  const RunRecord* rec_ = nullptr;
  QChart* chart_ = nullptr;
  QChartView* view_ = nullptr;
  QLineSeries* line_ = nullptr;
  QScatterSeries* warm_ = nullptr;
  QValueAxis *ax_ = nullptr, *ay_ = nullptr;
  std::vector<QAbstractSeries*> extra_;  // medians, markers, shading edges (rebuilt on refresh)
  struct Label {
    QGraphicsSimpleTextItem* item;
    double x, y;
  };
  std::vector<Label> labels_;
};

}  // namespace tb::ui
