// The live panels while a run goes on (offscreen, records built here): a refresh with more steps of the same
// configurations changes points, values and texts in place; markers, rows and buttons are built again only
// when a configuration starts or a change is decided; a long run is drawn with a bounded number of points.
#include <QChart>
#include <QChartView>
#include <QJsonArray>
#include <QLineSeries>
#include <QTableWidget>
#include <QToolButton>
#include <QtTest>

#include "ui/compare_panel.h"
#include "ui/live_lane.h"
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
    // A point per whole window of 5 measured steps (27 measured: 5 windows), and the 3 warm-up steps.
    QCOMPARE(chart.drawnPointCount(), 3 + 27 / kWindowSteps);
    QCOMPARE(chart.segmentLabelCount(), 1);  // the segment's throughput
    for (int k = 1; k <= 5; ++k) {  // the run goes on: points appended, the line moves, nothing rebuilt
      addSteps(rec, 30 * k, 30 * (k + 1), 0);
      chart.refresh();
      QCOMPARE(chart.drawnPointCount(), 3 + (27 + 30 * k) / kWindowSteps);  // a partial window waits for its steps
      QCOMPARE(chart.rebuildCount(), built);
    }
    rec.configs.push_back(config(1, "4"));  // a toggle: marker, shading and a second line
    addSteps(rec, 180, 200, 1, 2);
    chart.refresh();
    QCOMPARE(chart.rebuildCount(), built + 1);
    QCOMPARE(chart.segmentLabelCount(), 3);
    QVERIFY(!chart.labelsOverlap());
    // Another run in the same record: it starts over.
    rec.clear();
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 10, 0);
    chart.refresh();
    QCOMPARE(chart.drawnPointCount(), 2);
    QCOMPARE(chart.segmentLabelCount(), 1);
  }

  // Every point is samples over the wall time of a window (the segments' and Compare's definition), so the
  // segment's line is the points' pooled throughput, not a median of step rates.
  void pointsAreWindowThroughputs() {
    RunRecord rec;
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 40, 0);
    ThroughputChart chart;
    chart.setRecord(&rec);
    auto* line = qobject_cast<QLineSeries*>(chart.view()->chart()->series().front());
    QVERIFY(line);
    QCOMPARE(line->count(), 8);
    double samples = 0, seconds = 0;
    for (const QPointF& p : line->points()) samples += 160, seconds += 160 / p.y();
    const auto segs = segmentRun(rec);
    QVERIFY(qAbs(samples / seconds - segs[0].throughput()) < 1e-9 * segs[0].throughput());
    QCOMPARE(chart.rateTitle(), QString("samples/s"));
  }

  // An LBFGS script's steps evaluate their closure several times: each point counts the batch once per
  // evaluation, and the rate's axis says so.
  void aClosureStepsRateIsPerEvaluationAndSaysSo() {
    RunRecord rec;
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 40, 0);
    for (auto& s : rec.steps) s.evaluations = 4;
    ThroughputChart chart;
    chart.setRecord(&rec);
    auto* line = qobject_cast<QLineSeries*>(chart.view()->chart()->series().front());
    QVERIFY(line);
    QCOMPARE(line->count(), 8);
    const double step_s = 0.1 + 0.002;  // the mean of a window's steps: 100 ms + (0..4) ms
    QVERIFY2(qAbs(line->points().front().y() - 4 * 32 / step_s) < 1e-6, qPrintable(QString::number(line->points().front().y())));
    QCOMPARE(chart.rateTitle(), QString("evaluated samples/s"));
  }

  // A sampled trace's chunks stretch their steps (0.63x on a 1.9 ms step here): a toggle watched through the
  // timeline compares the untraced steps, so it gives the figure it gives unwatched, and the traced windows
  // are drawn apart. A configuration with too few untraced steps keeps its traced ones, and says so.
  void tracedStepsAreLeftOutOfTheFigures() {
    auto run = [](bool watched, int untraced_after) {
      RunRecord rec;
      rec.configs = {config(0, "0"), config(1, "4")};
      addSteps(rec, 0, 60, 0, 2);
      addSteps(rec, 60, 80 + untraced_after, 1, 2);
      if (watched)  // chunks of 20 steps at 40-59 and 60-79, each step 1.6x as long
        for (auto& s : rec.steps)
          if (s.i >= 40 && s.i < 80) {
            s.traced = true;
            s.wall_ns = s.wall_ns * 16 / 10;
          }
      return rec;
    };
    const RunRecord plain = run(false, 40), watched = run(true, 40);
    const auto c0 = compareSegments(segmentRun(plain)), c1 = compareSegments(segmentRun(watched));
    QCOMPARE(int(c1.size()), 1);
    const auto segs = segmentRun(watched);
    QCOMPARE(segs[0].traced_left_out, 20);
    QCOMPARE(segs[1].traced_left_out, 18);  // 2 of the chunk's steps are the change's warm-up
    QCOMPARE(int(segs[0].timings.size()), 38);  // the traced steps are not in its figure
    QVERIFY(std::abs(segs[0].throughput() / segmentRun(plain)[0].throughput() - 1) < 0.01);
    QVERIFY2(std::abs(c1[0].stats.ratio / c0[0].stats.ratio - 1) < 0.02,
             qPrintable(QString("%1 against %2").arg(c1[0].stats.ratio).arg(c0[0].stats.ratio)));
    QVERIFY2(c1[0].trustText().contains("38 traced steps left out"), qPrintable(c1[0].trustText()));
    ThroughputChart chart;
    chart.setRecord(&watched);
    auto* line = qobject_cast<QLineSeries*>(chart.view()->chart()->series().front());
    QCOMPARE(line->count(), 7 + 8);  // 38 + 40 untraced measured steps, a window of 5 each
    QCOMPARE(chart.drawnPointCount() - line->count() - 4, 4 + 3);  // 20 + 18 traced: 4 + 3 windows; 4 warm-up
    // Only 5 untraced steps after the change: its traced steps stay in the figures, and the trust line says so.
    const auto few = segmentRun(run(true, 5));
    QCOMPARE(few[1].traced_left_out, 0);
    QCOMPARE(few[1].traced_in_figures, 18);
    QVERIFY(compareSegments(few)[0].trustText().contains("includes 18 traced steps"));
  }

  // A step that compiled (torch.compile's one-time cost inside it) is in no figure: the comparison is the
  // steady steps', the trust line says how many were left out, and the live lane draws the compile.
  void compilingStepsAreLeftOutOfTheFigures() {
    auto run = [](bool compiled) {
      RunRecord rec;
      rec.configs = {config(0, "0"), config(1, "4")};
      addSteps(rec, 0, 60, 0, 2);
      addSteps(rec, 60, 100, 1, 2);
      if (compiled) {
        for (auto& s : rec.steps)
          if (s.i == 63 || s.i == 80) {  // the compile, then a recompile
            s.compile_ns = 4'000'000'000;
            s.wall_ns += s.compile_ns;
          }
        tb::prof::LaneCompile c;
        c.id = "0/0";
        c.frame = "forward";
        c.t_ns = qint64(63) * 100'000'000 + 1000;
        c.dur_ns = 4'000'000'000;
        rec.compiles.push_back(c);
      }
      return rec;
    };
    const RunRecord plain = run(false), compiled = run(true);
    const auto segs = segmentRun(compiled);
    QCOMPARE(segs[1].compiling_left_out, 2);
    QCOMPARE(segs[0].compiling_left_out, 0);
    QCOMPARE(int(segs[1].timings.size()), int(segmentRun(plain)[1].timings.size()) - 2);
    QVERIFY(std::abs(segs[1].throughput() / segmentRun(plain)[1].throughput() - 1) < 0.01);
    const auto c = compareSegments(segs);
    QVERIFY2(std::abs(c[0].stats.ratio / compareSegments(segmentRun(plain))[0].stats.ratio - 1) < 0.02,
             qPrintable(QString::number(c[0].stats.ratio)));
    QVERIFY2(c[0].trustText().contains("2 steps that compiled left out"), qPrintable(c[0].trustText()));
    // 8 s compiled once; workers=4 halved the step (about 102 ms to 52 ms): paid back after about 160 steps,
    // said rounded up to two figures.
    QCOMPARE(c[0].one_time_s, 8.0);
    QVERIFY2(c[0].break_even_steps > 155 && c[0].break_even_steps < 165, qPrintable(QString::number(c[0].break_even_steps)));
    QVERIFY2(c[0].trustText().contains("torch.compile took 8.0 s once: paid back after ~170 steps"),
             qPrintable(c[0].trustText()));
    QVERIFY(std::isnan(compareSegments(segmentRun(plain))[0].break_even_steps));
    const auto lane = liveLane(compiled, -1);
    QVERIFY(lane);
    QCOMPARE(int(lane->compiles.size()), 1);
    QCOMPARE(lane->compiles[0].frame, std::string("forward"));
    QVERIFY(liveLane(plain, -1)->compiles.empty());
  }

  // Labels never print over each other: markers of changes a few steps apart share two lines, and what fits
  // in neither is hidden (the older label), never drawn on top.
  void labelsNeverOverlap() {
    RunRecord rec;
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 40, 0, 2);
    for (int k = 1; k <= 6; ++k) {  // six changes, 6 steps apart, each with a long label
      ConfigChange c = config(k, QString::number(k));
      c.changed.insert("prefetch_factor_with_a_long_name", QString::number(k));
      rec.configs.push_back(c);
      addSteps(rec, 40 + 6 * (k - 1), 40 + 6 * k, k, 1);
    }
    ThroughputChart chart;
    chart.resize(700, 260);
    chart.show();
    chart.setRecord(&rec);
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.refresh();
    QVERIFY(!chart.labelsOverlap());
    QVERIFY(chart.labelTexts().size() >= 2);
    QVERIFY2(chart.labelTexts().join('|').contains("workers=6"), qPrintable(chart.labelTexts().join('|')));  // the newest stays
  }

  // An Auto-tune is one comparison: the tuner's final alternation in the Compare row, on the chart's tune label
  // and nowhere a live before/after of its own.
  void autoTuneIsTheTunersComparison() {
    RunRecord rec;
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 40, 0, 3);
    TuneEvent t;
    t.before_step = 39;
    t.after_step = 40;
    t.done = QJsonObject{{"type", "tune_done"}, {"speedup", 1.39}, {"speedup_ci", QJsonArray{1.36, 1.42}},
                         {"kept", QJsonArray{"workers=4"}}, {"baseline_throughput", 748.8},
                         {"final_throughput", 1038.8}, {"elapsed_s", 114.0}, {"speedup_pairs", 4},
                         {"speedup_method", "paired t (4 pairs)"}, {"noise", "quiet: ±2%"}};
    rec.tunes.push_back(t);
    ConfigChange c = config(1, "4");
    c.source = "auto-tune";
    rec.configs.push_back(c);
    addSteps(rec, 40, 80, 1, 2);
    const auto segs = segmentRun(rec);
    const auto cmp = compareSegments(segs);
    QCOMPARE(int(cmp.size()), 1);
    QVERIFY(cmp[0].from_tune);
    QCOMPARE(cmp[0].stats.before, 748.8);
    QCOMPARE(cmp[0].stats.after, 1038.8);
    QCOMPARE(cmp[0].stats.ratio, 1.39);
    QCOMPARE(QString::fromStdString(cmp[0].stats.verdict()), QString("faster"));
    ThroughputChart chart;
    chart.resize(800, 300);
    chart.setRecord(&rec);
    const QString labels = chart.labelTexts().join('|');
    QVERIFY2(labels.contains("auto-tune 114 s: workers=4 ×1.39 [1.36–1.42]"), qPrintable(labels));
    QVERIFY2(labels.count("×") == 1, qPrintable(labels));  // the live line after it carries no ratio of its own
    ComparePanel p;
    p.setRecord(&rec);
    QCOMPARE(p.table()->item(0, 1)->text(), QString("748.8"));
    QCOMPARE(p.table()->item(0, 2)->text(), QString("1038.8"));
  }

  void longRunIsDrawnWithBoundedPoints() {
    RunRecord rec;
    rec.configs = {config(0, "0")};
    addSteps(rec, 0, 40000, 0);
    rec.steps[12345].wall_ns = 400'000'000;  // one slow step: its window's dip must stay on the line
    ThroughputChart chart;
    chart.setRecord(&rec);
    QVERIFY(chart.drawnPointCount() <= ThroughputChart::kMaxPoints + 2);
    QVERIFY(chart.drawnPointCount() >= ThroughputChart::kMaxPoints / 2);
    auto* line = qobject_cast<QLineSeries*>(chart.view()->chart()->series().front());
    QVERIFY(line);
    double lowest = 1e30;
    for (const QPointF& pt : line->points()) lowest = std::min(lowest, pt.y());
    QVERIFY2(qAbs(lowest - 160 / 0.810) < 1e-6, qPrintable(QString::number(lowest)));  // 5 steps: 0.4 + 0.101..0.104 s
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
