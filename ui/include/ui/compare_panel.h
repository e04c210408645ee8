// Per configuration change (toggle) of the run: before/after median samples/s, the ratio with its 95%
// bootstrap interval and a verdict, as a table and a bar chart, with Keep / Revert per row. Numbers come from
// segments.h, so what the panel shows is what the export writes. A refresh with the same changes (a run going
// on) sets the texts and bar values that differ in place; rows, buttons and the chart's series are built
// again only when a change is added or decided.
#pragma once

#include <QJsonObject>
#include <QWidget>
#include <vector>

#include "ui/segments.h"

class QTableWidget;
class QBarCategoryAxis;
class QBarSet;
class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;

namespace tb::ui {

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePanel(QWidget* parent = nullptr);
  void setRecord(const RunRecord* rec);
  void refresh();
  void refresh(std::vector<Comparison> cmp);  // computed by the caller from the same record
  const std::vector<Comparison>& comparisons() const { return cmp_; }
  const QHash<QString, QString>& decisions() const { return decisions_; }  // change -> "kept" / "reverted"
  QTableWidget* table() const { return table_; }
  int errorBarCount() const { return whisker_count_; }  // "after" bars drawn with their interval
  int rebuildCount() const { return rebuilds_; }        // how often rows and series were built anew (tests)

 signals:
  void revertRequested(const QJsonObject& previous);  // knob -> value to send back
  void kept(const QString& change);
  void tracesRequested(int comparison);  // "Traces": diff the before and after trace chunks of that row

 private:
  const RunRecord* rec_ = nullptr;
  std::vector<Comparison> cmp_;
  QTableWidget* table_ = nullptr;
  QChart* chart_ = nullptr;
  QChartView* view_ = nullptr;
  QHash<QString, QString> decisions_;  // change -> "kept"/"reverted"
  int whisker_count_ = 0;
  int rebuilds_ = 0;

  void rebuild();
  void updateInPlace();
  QStringList shown_;  // per row: what needs a rebuild when it differs (change, decision, interval or not)
  QBarSet *before_ = nullptr, *after_ = nullptr;
  QBarCategoryAxis* categories_ = nullptr;
  QValueAxis* values_ = nullptr;
  std::vector<QLineSeries*> whiskers_;  // per row; nullptr when it has no interval
};

}  // namespace tb::ui
