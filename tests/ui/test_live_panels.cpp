// The live panels while a run goes on (offscreen, records built here): a refresh with more steps of the same
// configurations changes points, values and texts in place; markers, rows and buttons are built again only
// when a configuration starts or a change is decided; a long run is drawn with a bounded number of points.
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QTableWidget>
#include <QToolButton>
#include <QtTest>

#include "ui/compare_panel.h"
#include "ui/throughput_chart.h"

using namespace tb::ui;

namespace {
ConfigChange config(int rev, const QString& workers) {
  ConfigChange c;
  c.rev = rev;
  c.knobs = {{"workers", workers}};
  if (rev > 0) c.changed = {{"workers", workers}};
  return c;
}

// Steps [from, to) of configuration `rev`, the first `warmup` of them warm-up; throughput varies a little.
void addSteps(RunRecord& rec, int from, int to, int rev, int warmup = 0) {
  for (int i = from; i < to; ++i) {
    StepSample s;
    s.i = i;
    s.samples = 32;
    s.wall_ns = (rev == 0 ? 100'000'000 : 50'000'000) + (i % 5) * 1'000'000;
    s.t_ns = qint64(i) * 100'000'000;
    s.config_rev = rev;
    s.warmup = i - from < warmup;
    rec.steps.push_back(s);
  }
}
}  // namespace

class TestLivePanels : public QObject {
  Q_OBJECT

 private slots:
  void chartAppendsAndRebuildsOnlyWhenASegmentStarts() {
    RunRecord rec;
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 30, 0, 3);
    ThroughputChart chart;
    chart.resize(800, 300);
    chart.show();
    chart.setRecord(&rec);
    const int built = chart.rebuildCount();
    QCOMPARE(chart.drawnPointCount(), 30);
    QCOMPARE(chart.segmentLabelCount(), 1);  // the median
    for (int k = 1; k <= 5; ++k) {  // the run goes on: points appended, the median moves, nothing rebuilt
      addSteps(rec, 30 * k, 30 * (k + 1), 0);
      chart.refresh();
      QCOMPARE(chart.drawnPointCount(), 30 * (k + 1));
      QCOMPARE(chart.rebuildCount(), built);
    }
    rec.configs.push_back(config(1, "4"));  // a toggle: marker, shading and a second median
    addSteps(rec, 180, 200, 1, 2);
    chart.refresh();
    QCOMPARE(chart.rebuildCount(), built + 1);
    QCOMPARE(chart.segmentLabelCount(), 3);
    // Another run in the same record: it starts over.
    rec.clear();
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 10, 0);
    chart.refresh();
    QCOMPARE(chart.drawnPointCount(), 10);
    QCOMPARE(chart.segmentLabelCount(), 1);
  }

  void longRunIsDrawnWithBoundedPoints() {
    RunRecord rec;
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 20000, 0);
    rec.steps[12345].wall_ns = 400'000'000;  // one slow step: its dip must stay on the line
    ThroughputChart chart;
    chart.setRecord(&rec);
    QVERIFY(chart.drawnPointCount() <= ThroughputChart::kMaxPoints + 2);
    QVERIFY(chart.drawnPointCount() >= ThroughputChart::kMaxPoints / 2);
    auto* line = qobject_cast<QLineSeries*>(chart.view()->chart()->series().front());
    QVERIFY(line);
    double lowest = 1e30;
    for (const QPointF& pt : line->points()) lowest = std::min(lowest, pt.y());
    QCOMPARE(lowest, 80.0);  // 32 samples in 0.4 s
  }

  void compareUpdatesRowsInPlace() {
    RunRecord rec;
    rec.configs = {config(0, "0"), config(1, "4")};
    addSteps(rec, 0, 30, 0, 3);
    addSteps(rec, 30, 50, 1, 2);
    ComparePanel p;
    p.setRecord(&rec);
    QCOMPARE(p.table()->rowCount(), 1);
    const int built = p.rebuildCount();
    QWidget* cell = p.table()->cellWidget(0, 5);
    const QString after = p.table()->item(0, 2)->text();
    addSteps(rec, 50, 80, 1);
    rec.steps.back().wall_ns = 30'000'000;  // a faster last step: "after" moves
    p.refresh();
    QCOMPARE(p.rebuildCount(), built);             // same change, same buttons
    QCOMPARE(p.table()->cellWidget(0, 5), cell);
    QVERIFY(p.table()->item(0, 2)->text() != after);  // the number on screen follows the record
    QCOMPARE(p.table()->item(0, 2)->text(), QString::number(p.comparisons()[0].stats.after, 'f', 1));
    QCOMPARE(p.errorBarCount(), 1);
    // Deciding a row rebuilds it (its buttons change).
    p.findChild<QToolButton*>("keep_0")->click();
    QCOMPARE(p.rebuildCount(), built + 1);
    QVERIFY(p.table()->item(0, 4)->text().endsWith("kept"));
  }
};

QTEST_MAIN(TestLivePanels)
#include "test_live_panels.moc"
