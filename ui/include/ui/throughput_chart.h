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
  bool showsNoData() const;  // the empty chart's sentence is shown (no step yet)

 private:
  void placeLabels();
  const RunRecord* rec_ = nullptr;
  QChart* chart_ = nullptr;
  QChartView* view_ = nullptr;
  QLineSeries* line_ = nullptr;
  QScatterSeries* warm_ = nullptr;
  QValueAxis *ax_ = nullptr, *ay_ = nullptr;
  std::vector<QAbstractSeries*> extra_;  // medians, markers, shading edges (rebuilt on refresh)
  // A label on the chart, at step x. Rows sit in bands at the top of the plot, off the data line (the
  // medians were drawn over the per-step line and unreadable): row 0 the config markers, row 1 the medians.
  struct Label {
    QGraphicsSimpleTextItem* item;
    double x;
    int row;
  };
  std::vector<Label> labels_;
  QGraphicsSimpleTextItem* no_data_ = nullptr;  // "No data yet" while the run has no step
};

}  // namespace tb::ui
