// Live throughput (QtCharts): a point per window of measured steps, warm-up steps greyed and shaded, a dashed marker at
// each configuration change, each segment's median as a horizontal line labelled with its ratio to the
// previous segment. A refresh appends the steps that arrived since the last one and moves the current
// segment's median; the markers and shading are rebuilt only when a segment starts, and the axes only move
// in round steps, so that watching a run repaints the chart and little else.
#pragma once

#include <QWidget>
#include <vector>

#include "ui/run_controller.h"
#include "ui/segments.h"

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
  // The same with the record's segments and comparisons already computed (the window computes them once
  // for the chart and the compare panel).
  void refresh(const std::vector<Segment>& segs, const std::vector<Comparison>& cmp);
  QChartView* view() const { return view_; }
  int segmentLabelCount() const { return int(labels_.size()); }
  int drawnPointCount() const;  // points on the line and the warm-up scatter (at most kMaxPoints)
  int rebuildCount() const { return rebuilds_; }  // how often the markers and medians were rebuilt (tests)
  // More steps than this are drawn as each bucket's lowest and highest throughput (spikes stay visible).
  static constexpr int kMaxPoints = 2000;
  bool showsNoData() const;  // the empty chart's sentence is shown (no step yet)
  bool labelsOverlap() const;      // two shown labels print over each other (tests: never)
  QStringList labelTexts() const;  // the labels shown, in the order they were made
  QString rateTitle() const;       // the rate axis's title
  // An Auto-tune's label: "auto-tune 114 s: amp=bf16 ×1.39 [1.36–1.42]", "… nothing kept", "running…".
  static QString tuneText(const TuneEvent& t);

 private:
  void placeLabels();
  void updatePoints();
  void rebuildSegments(const std::vector<Segment>& segs, const std::vector<Comparison>& cmp);
  QString medianText(const std::vector<Segment>& segs, const std::vector<Comparison>& cmp, size_t k) const;
  const RunRecord* rec_ = nullptr;
  QChart* chart_ = nullptr;
  QChartView* view_ = nullptr;
  QLineSeries* line_ = nullptr;
  QScatterSeries* warm_ = nullptr;
  QScatterSeries* traced_ = nullptr;  // windows of steps inside trace chunks (a script's sampled trace)
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
  // What the chart shows now, to change only what differs at the next refresh.
  int generation_ = -1;
  size_t consumed_ = 0;                 // record steps turned into points
  QList<QPointF> pts_, warm_pts_, traced_pts_;  // every window / warm-up step / traced window point of the run
  struct OpenWindow {                   // measured steps not yet a whole window
    int rev = -1, steps = 0;
    double samples = 0;
    qint64 wall_ns = 0;
  } open_, open_traced_;
  double ymax_data_ = 1;                // highest throughput so far
  double x_max_ = 10, y_max_ = 1;       // the axes' ends
  QString structure_;                   // the segments' starts, warm-ups and labels as last drawn
  std::vector<QLineSeries*> medians_;   // per segment (nullptr: no measured step yet)
  std::vector<QGraphicsSimpleTextItem*> median_labels_;
  int rebuilds_ = 0;
};

}  // namespace tb::ui
