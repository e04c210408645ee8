// Per configuration change (toggle) of the run: before/after median samples/s, the ratio with its 95%
// bootstrap interval and a verdict, as a table and a bar chart, with Keep / Revert per row. Numbers come from
// segments.h, so what the panel shows is what the export writes.
#pragma once

#include <QJsonObject>
#include <QWidget>
#include <vector>

#include "ui/segments.h"

class QTableWidget;
class QChart;
class QChartView;

namespace tb::ui {

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePanel(QWidget* parent = nullptr);
  void setRecord(const RunRecord* rec);
  void refresh();
  const std::vector<Comparison>& comparisons() const { return cmp_; }
  QTableWidget* table() const { return table_; }
  int errorBarCount() const { return whisker_count_; }  // "after" bars drawn with their interval

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
};

}  // namespace tb::ui
