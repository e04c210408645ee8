// Findings from the profiler's analyses (opened or live traces) and from the run (`finding` messages): one
// row each with its share and the most it could gain. Clicking a row asks the timeline to select its
// evidence interval; "Try it" asks to apply the knob (live `set` when a run is going).
#pragma once

#include <QJsonObject>
#include <QWidget>
#include <functional>
#include <vector>

#include "profiler/analysis.h"

class QTreeWidget;
class QLabel;

namespace tb::ui {

struct FindingEntry {
  QString id, message, knob, value;
  double share = 0, max_speedup = 1;
  qint64 t0 = 0, t1 = 0;  // evidence interval on the timeline clock; t1 <= t0 when none
  QString source;         // "trace" or "run"
};

class FindingsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit FindingsPanel(QWidget* parent = nullptr);
  void setTraceFindings(const std::vector<tb::prof::Finding>& findings);
  // What the panel says while it lists nothing: what was looked at ("" puts back the text it starts with).
  void setEmptyText(const QString& text);
  void addRunFinding(const QJsonObject& msg);
  void clearRunFindings();
  // Decides whether a finding's "Try" may run here: returns "" when it may, else the reason (the button is
  // then disabled with the reason as its tooltip). Re-applied by refresh().
  void setTryGate(std::function<QString(const FindingEntry&)> gate);
  // The run now has these knob values: findings whose fix is already in place are dropped (no stale "Try
  // workers=2" while workers is 2), the others re-gated.
  void applyKnobValues(const QHash<QString, QString>& values);
  void refresh() { rebuild(); }
  QString tryBlockedReason(int row) const;  // "" when its Try is enabled (tests)
  const std::vector<FindingEntry>& entries() const { return entries_; }
  QTreeWidget* tree() const { return tree_; }
  void activate(int row);  // as if clicked (tests)

 signals:
  void evidenceRequested(qint64 t0, qint64 t1);
  void tryIt(const QString& knob, const QString& value);

 private:
  void rebuild();
  std::vector<FindingEntry> entries_;
  std::function<QString(const FindingEntry&)> gate_;
  QTreeWidget* tree_ = nullptr;
  QLabel* empty_ = nullptr;
};

}  // namespace tb::ui
