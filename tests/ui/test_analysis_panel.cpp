// The analysis of an opened trace in the GUI (offscreen): the panel's step and kernel tables and its time bar
// on the real V100 trace, find-by-name on the timeline model and widget, the window opening a static trace
// on its first steps with the live panels hidden, and File → Compare with… on two real traces.
#include <QDockWidget>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#include "profiler/trace_io.h"
#include "ui/analysis_panel.h"
#include "ui/main_window.h"
#include "ui/segments.h"
#include "ui/timeline_widget.h"
#include "ui/trace_loader.h"
#include "ui_test_util.h"

using namespace tb::ui;

class TestAnalysisPanel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("TuneBenchTestAnalysis");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    initResources();
  }

  void panelShowsStepsKernelsAndAFullBar() {
    const QString path = tbtest::kinetoTrace();
    if (path.isEmpty()) QSKIP("kineto_train_step_rank0.json.gz not found");
    const LoadedTrace t = loadTraceFile(path);
    QVERIFY2(t.ok, qPrintable(t.error));
    AnalysisPanel p;
    p.setAnalysis(t.analysis);
    QCOMPARE(p.stepsTable()->rowCount(), 5);
    QCOMPARE(p.kernelsTable()->rowCount(), 10);
    QCOMPARE(p.opsTable()->rowCount(), 20);
    // Each step row says 870 kernels (the work it launched).
    for (int r = 0; r < 5; ++r) QCOMPARE(p.stepsTable()->item(r, 12)->data(Qt::DisplayRole).toInt(), 870);
    QVERIFY(p.summaryText().contains("5 steps"));
    // The bar's slices are the whole window, nothing more, nothing less.
    int64_t sum = 0;
    for (const auto& s : timeSlices(*t.analysis)) {
      QVERIFY2(s.ns >= 0, qPrintable(s.label));
      sum += s.ns;
    }
    QCOMPARE(sum, t.analysis->window.length());
    // Double-clicking a step asks the timeline for that step.
    QSignalSpy spy(&p, &AnalysisPanel::intervalRequested);
    emit p.stepsTable()->cellDoubleClicked(1, 0);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toLongLong(), qint64(t.analysis->steps[1].start_ns));
  }

  void findNextByNameWrapsAround() {
    TimelineData d;
    Track cpu;
    cpu.name = "cpu";
    cpu.lanes.resize(1);
    const uint32_t a = d.intern("aten::conv2d"), k = d.intern("volta_sgemm_128x64_nn");
    cpu.lanes[0].push(0, 10, a, EventCat::Range);
    cpu.lanes[0].push(20, 30, a, EventCat::Range);
    Track gpu;
    gpu.name = "gpu";
    gpu.kind = TrackKind::GpuStream;
    gpu.sort_key = 1;
    gpu.lanes.resize(1);
    gpu.lanes[0].push(15, 25, k, EventCat::Kernel);
    d.tracks = {cpu, gpu};
    d.finalize();
    auto first = findNextEvent(d, "CONV", nullptr);  // case-insensitive
    QVERIFY(first);
    QCOMPARE(d.tracks[first->track].lanes[first->lane].start[first->index], int64_t(0));
    auto second = findNextEvent(d, "conv", &*first);
    QVERIFY(second);
    QCOMPARE(d.tracks[second->track].lanes[second->lane].start[second->index], int64_t(20));
    auto wrapped = findNextEvent(d, "conv", &*second);
    QVERIFY(wrapped);
    QCOMPARE(d.tracks[wrapped->track].lanes[wrapped->lane].start[wrapped->index], int64_t(0));
    auto kernel = findNextEvent(d, "sgemm", &*first);
    QVERIFY(kernel);
    QCOMPARE(d.tracks[kernel->track].name, std::string("gpu"));
    QVERIFY(!findNextEvent(d, "nccl", nullptr));
    // Summaries of a range count the events that start inside it.
    auto all = summarizeRange(d, 0, 30);
    QCOMPARE(int(all.size()), 2);
    QCOMPARE(d.names[all[0].name], std::string("aten::conv2d"));  // 2 x 10 ns, before the kernel's 10
    QCOMPARE(all[0].count, uint64_t(2));
    QCOMPARE(all[0].total_ns, int64_t(20));
    QVERIFY(!all[0].gpu && all[1].gpu);
    auto part = summarizeRange(d, 12, 17);  // only the kernel starts in there
    QCOMPARE(int(part.size()), 1);
    QVERIFY(part[0].gpu);
  }

  void toggleChunksArePickedInsideEachConfiguration() {
    RunRecord rec;
    rec.chunks = {{"c0", 0, 9}, {"c1", 10, 19}, {"c2", 20, 29}, {"c3", 30, 39}, {"c4", 40, 49}};
    std::vector<Segment> segs(2);
    segs[0].first_step = 0;
    segs[0].last_step = 24;  // the toggle took effect at step 25: c2 straddles it
    segs[1].first_step = 25;
    segs[1].last_step = 49;
    Comparison c;
    c.index = 1;
    const auto [before, after] = chunksForComparison(rec, segs, c);
    QCOMPARE(before, QString("c1"));  // the last chunk wholly before
    QCOMPARE(after, QString("c3"));   // the first wholly after
    segs[1].last_step = 35;           // no chunk wholly after: nothing
    QVERIFY(chunksForComparison(rec, segs, c).first.isEmpty());
    c.index = 0;
    QVERIFY(chunksForComparison(rec, segs, c).first.isEmpty());
  }

  void windowOpensOnStepsFindsAndCompares() {
    const QString path = tbtest::kinetoTrace();
    const QString other = QStringLiteral(TB_TESTDATA_DIR "/kineto_nccl_sampled_rank0.json.gz");
    if (path.isEmpty() || !QFileInfo::exists(other)) QSKIP("test traces not found");
    MainWindow w;
    w.setQuiet(true);
    w.resize(1400, 900);
    w.show();
    QSignalSpy spy(&w, &MainWindow::traceOpenFinished);
    w.openTrace(path);
    QVERIFY(spy.wait(60000));
    QVERIFY(spy.at(0).at(0).toBool());
    QCOMPARE(w.analysis()->stepsTable()->rowCount(), 5);
    // memcpy/memset on their own row per stream, kernels alone on theirs.
    int copy_rows = 0;
    for (const auto& tr : w.timeline()->data()->tracks) {
      if (tr.kind != TrackKind::GpuStream) continue;
      const bool copies = tr.name.find("memcpy/memset") != std::string::npos;
      copy_rows += copies;
      for (const auto& l : tr.lanes)
        for (EventCat c : l.cat)
          if (c == EventCat::Memcpy || c == EventCat::Memset) QVERIFY2(copies, tr.name.c_str());
          else if (c == EventCat::Kernel) QVERIFY2(!copies, tr.name.c_str());
    }
    QVERIFY(copy_rows >= 1);
    // A static trace: the analysis is shown, the live panels are not.
    QVERIFY(w.findChild<QDockWidget*>("dock_analysis")->isVisible());
    QVERIFY(!w.findChild<QDockWidget*>("dock_chart")->isVisible());
    QVERIFY(!w.findChild<QDockWidget*>("dock_compare")->isVisible());
    // Opened on the first three steps, not the whole file.
    const auto& a = *w.currentTrace().analysis;
    const double span = w.timeline()->mapper().span();
    QVERIFY2(span < 0.8 * double(a.window.length()), qPrintable(QString::number(span)));
    QVERIFY(w.timeline()->mapper().start() <= double(a.steps[0].start_ns));
    // Go to step 103: selected, in view.
    QVERIFY(w.goToStep(103));
    QVERIFY(w.timeline()->hasSelection());
    QCOMPARE(w.timeline()->selection().first, qint64(std::min(a.steps[2].start_ns, a.steps[2].gpu_start_ns)));
    QVERIFY(!w.goToStep(7));
    QVERIFY(w.analysis()->selectionTable()->rowCount() > 10);  // the step's kernels and ops, summed
    // Ctrl+F: a kernel by part of its name is selected and in view.
    QSignalSpy sel(w.timeline(), &TimelineWidget::eventSelected);
    QVERIFY(w.findOnTimeline("bn_bw_1C11"));
    QCOMPARE(sel.count(), 1);
    QVERIFY(sel.at(0).at(0).toString().contains("bn_bw_1C11"));
    QVERIFY(!w.findOnTimeline("no_such_kernel_anywhere"));
    // Compare with another trace.
    QSignalSpy cmp(&w, &MainWindow::compareFinished);
    w.compareWith(other);
    QVERIFY(cmp.wait(60000));
    QVERIFY2(cmp.at(0).at(0).toBool(), qPrintable(cmp.at(0).at(1).toString()));
    QVERIFY(w.lastComparisonHtml().contains("median step"));
    QVERIFY(w.lastComparisonHtml().contains("Changed most"));
    // A bad file: an error, no crash, the trace stays.
    cmp.clear();
    w.compareWith("/nonexistent/trace.json");
    QVERIFY(cmp.wait(20000));
    QVERIFY(!cmp.at(0).at(0).toBool());
    QVERIFY(w.currentTrace().ok);
  }
};

QTEST_MAIN(TestAnalysisPanel)
#include "test_analysis_panel.moc"
