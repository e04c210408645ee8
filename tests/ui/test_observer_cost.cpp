// The window's own CPU share in the run's trust line (observer_cost.h): steps are stamped as they arrive, a
// segment and a comparison turn the stamps into a share, and the compare panel's verdict, the exports and the
// status bar name it above the threshold only. The shares here are injected stamps, not measured ones.
#include <QLabel>
#include <QTableWidget>
#include <QJsonArray>
#include <QtTest>

#include "ui/compare_panel.h"
#include "ui/main_window.h"
#include "ui/observer_cost.h"
#include "ui/segments.h"
#include "ui/watch_cost.h"
#include "ui_test_util.h"

using namespace tb::ui;

namespace {
// Two segments of 20 measured steps (workers 0, then 4), 100 ms apart; the window used `before` and then
// `after` of a core between their arrivals.
RunRecord stampedRun(double before, double after) {
  RunRecord rec;
  ConfigChange c0;
  c0.knobs = {{"workers", "0"}};
  ConfigChange c1;
  c1.rev = 1;
  c1.knobs = {{"workers", "4"}};
  c1.changed = {{"workers", "4"}};
  rec.configs = {c0, c1};
  qint64 cpu = 5'000'000'000, wall = 100'000'000'000;
  for (int i = 0; i < 40; ++i) {
    StepSample s;
    s.i = i;
    s.samples = 32;
    s.wall_ns = 100'000'000 + (i % 3) * 1'000'000;
    s.config_rev = i < 20 ? 0 : 1;
    wall += 100'000'000;
    cpu += qint64((i < 20 ? before : after) * 100'000'000);
    s.observer_cpu_ns = cpu;
    s.observer_wall_ns = wall;
    rec.steps.push_back(s);
  }
  return rec;
}
}  // namespace

class TestObserverCost : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("TuneBenchTestObserver");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    initResources();
  }

  void sharesComeFromTheStamps() {
    const RunRecord rec = stampedRun(0.02, 0.25);
    const auto segs = segmentRun(rec);
    QCOMPARE(int(segs.size()), 2);
    QVERIFY(std::abs(segs[0].observerShare() - 0.02) < 1e-9);
    QVERIFY(std::abs(segs[1].observerShare() - 0.25) < 1e-9);
    const auto cmp = compareSegments(segs);
    // From the first measured step before to the last after: (19 x 2% + 20 x 25%) / 39 intervals.
    QVERIFY(std::abs(cmp[0].observer_share - (19 * 0.02 + 20 * 0.25) / 39) < 1e-9);
    // Steps without stamps (an older record, a test's): no share, no line.
    RunRecord bare = rec;
    for (auto& s : bare.steps) s.observer_cpu_ns = s.observer_wall_ns = -1;
    QVERIFY(std::isnan(segmentRun(bare)[0].observerShare()));
    QVERIFY(!compareSegments(segmentRun(bare))[0].trustText().contains("of a core"));
    // The controller stamps what arrives with this process's CPU time.
    RunController rc;
    rc.feed("{\"v\":1,\"type\":\"step\",\"i\":0,\"samples\":32,\"wall_ns\":1000000,\"config_rev\":0}\n");
    QCOMPARE(int(rc.record().steps.size()), 1);
    QVERIFY(rc.record().steps[0].observer_cpu_ns > 0);
    QVERIFY(rc.record().steps[0].observer_wall_ns > 0);
  }

  void lineOnlyAboveTheThreshold() {
    QCOMPARE(observerCostText(0.05), QString());
    QCOMPARE(observerCostText(kObserverShareThreshold), QString());
    QCOMPARE(observerCostText(std::nan("")), QString());
    const QString t = observerCostText(0.23);
    QVERIFY2(t.startsWith("window: 23% of a core while it measured") && t.contains("above 10%"), qPrintable(t));
  }

  void compareVerdictAndExportsNameTheWindow() {
    const RunRecord busy = stampedRun(0.20, 0.30), quiet = stampedRun(0.02, 0.03);
    ComparePanel p;
    p.setRecord(&busy);
    QCOMPARE(p.table()->rowCount(), 1);
    const QString tip = p.table()->item(0, 4)->toolTip();
    QVERIFY2(tip.contains("before: ") && tip.contains("window: 25% of a core"), qPrintable(tip));
    // The report's trust table is made from the document's trust lines (engine/session_report.h).
    const QJsonObject row = sessionDocument(busy, p.comparisons()).value("comparisons").toArray().at(0).toObject();
    QVERIFY(row.value("trust").toString().contains("window: 25% of a core"));
    QVERIFY(qAbs(row.value("observer_cpu_share").toDouble() - 0.25) < 0.01);
    p.setRecord(&quiet);
    QVERIFY(!p.table()->item(0, 4)->toolTip().contains("of a core"));
    QVERIFY(!sessionDocument(quiet, p.comparisons()).value("comparisons").toArray().at(0).toObject().value("trust").toString().contains("window:"));
  }

  void statusBarNamesTheWindowWhileItIsBusy() {
    MainWindow w;
    w.setQuiet(true);
    auto* perf = w.findChild<QLabel*>("perf_label");
    QVERIFY(perf);
    w.run()->record() = stampedRun(0.02, 0.30);
    emit w.run()->step(w.run()->record().steps.back());  // the coalesced refresh reads the record
    QVERIFY(tbtest::waitFor([&] { return perf->text().contains("step 39"); }, 30000));
    QVERIFY2(perf->text().contains("window 30% of a core"), qPrintable(perf->text()));
    QVERIFY(perf->toolTip().startsWith("window: 30% of a core"));
    w.run()->record() = stampedRun(0.30, 0.04);  // the current configuration's share counts
    emit w.run()->step(w.run()->record().steps.back());
    QVERIFY(tbtest::waitFor([&] { return !perf->text().contains("window"); }, 30000));
    QVERIFY(perf->toolTip().isEmpty());
  }

  // What the live trace costs the run (watch_cost.h): the pauses' share of the run and, when one is longer
  // than a step, its size in steps and its cause; amber above 3% or over a step; nothing without pauses.
  void watchCostNamesTheLongestPauseInSteps() {
    tb::prof::AnalysisResult a;
    a.window = {0, 10'000'000'000};  // 10 s, of which 1 s traced
    a.untraced_ns = 9'000'000'000;
    a.step_median_ns = 2'000'000;
    a.profiler_ns = 260'000'000;
    a.profiler_longest_ns = 64'000'000;
    WatchCost c = watchCost(a);
    QVERIFY2(c.text == "watching costs 2.6% · a chunk's stop 64 ms = 32 steps", qPrintable(c.text));
    QVERIFY(c.high);
    QVERIFY(c.tip.contains("untraced steps between them"));
    a.profiler_longest_ns = 1'500'000;  // shorter than a step, 2.6%: stated, not flagged
    c = watchCost(a);
    QCOMPARE(c.text, QString("watching costs 2.6%"));
    QVERIFY(!c.high);
    a.profiler_ns = 400'000'000;  // 4%
    QVERIFY(watchCost(a).high);
    a.profiler_ns = 0;
    QVERIFY(watchCost(a).text.isEmpty());
  }
};

QTEST_MAIN(TestObserverCost)
#include "test_observer_cost.moc"
