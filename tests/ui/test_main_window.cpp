// The main window end to end (offscreen): opening traces (good, corrupt, unknown), findings -> timeline
// evidence, a live run against the fake child with a toggle sent as `set`, the compare numbers and their
// export, and a killed child that keeps its data and shows the error.
#include <QCheckBox>
#include <QComboBox>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QDir>
#include <QFile>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProgressBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTableWidget>
#include <QToolButton>
#include <QTemporaryDir>
#include <QtTest>

#include "client/inputs.h"
#include "ui/compare_panel.h"
#include "ui/findings_panel.h"
#include "ui/analysis_panel.h"
#include "ui/main_window.h"
#include "ui/throughput_chart.h"
#include "ui/timeline_widget.h"
#include "ui/toggles_panel.h"
#include "ui/tune_summary.h"
#include "ui_test_util.h"

using namespace tb::ui;

class TestMainWindow : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;


  static bool waitFor(const std::function<bool()>& cond, int ms) { return tbtest::waitFor(cond, ms); }
  static int measuredSteps(const MainWindow& w, int rev) { return tbtest::measuredSteps(w, rev); }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QCoreApplication::setOrganizationName("TuneBenchTest");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, tmp_.path());
    initResources();
  }

  // The mission on real hardware: ResNet-50 on an H200 with naive settings, recorded by our own CUPTI
  // collector. The window shows its kernels on GPU rows and names what the analysis found.
  void opensTheH200ResNet50TraceOfOurCollector() {
    const QString trace = QStringLiteral(TB_RESOURCE_TRACES_DIR "/h200-resnet50-naive.trace.json.gz");
    QVERIFY2(QFileInfo::exists(trace), qPrintable(trace));
    MainWindow w;
    w.setQuiet(true);
    const QString opened = tbtest::openTraceAndWait(w, trace, 120000);
    QVERIFY2(opened.isEmpty(), qPrintable(opened));
    auto data = w.timeline()->data();
    QVERIFY(data);
    size_t gpu_events = 0;
    int gpu_rows = 0, cpu_rows = 0;
    for (const auto& t : data->tracks) {
      if (t.kind == TrackKind::GpuStream) {
        ++gpu_rows;
        for (const auto& l : t.lanes) gpu_events += l.size();
      } else if (t.kind == TrackKind::CpuThread) {
        ++cpu_rows;
      }
    }
    QVERIFY(gpu_rows >= 1);
    QVERIFY(cpu_rows >= 1);
    // 26 374 kernels, 770 memcpy and 164 memset on the GPU rows.
    QVERIFY2(gpu_events >= 27000, qPrintable(QString::number(gpu_events)));
    // The bands: the loader stalls of 8 steps with one worker, and the launch gaps of 3 175 kernels a step.
    QVERIFY(data->stall_count >= 8);
    QVERIFY(data->gap_count > 1000);
    // The findings name both, each with the knob that addresses it, and the analysis says it was CUPTI's.
    const auto& f = w.findings()->entries();
    bool loader = false, launch = false;
    for (const auto& e : f) {
      loader |= e.message.contains("loader") && e.knob == "workers";
      launch |= e.message.contains("launch");
    }
    QVERIFY2(loader && launch, qPrintable(f.empty() ? QString("no findings") : f.front().message));
    const QString summary = w.analysis()->summaryText();
    QVERIFY2(summary.contains("8 steps") && summary.contains("GPU busy 20.4%"), qPrintable(summary));
    // Top kernels by total time: cuDNN's batch-norm backward leads (14.9 ms of 8 steps).
    auto* kernels = w.analysis()->kernelsTable()->model();
    QCOMPARE(kernels->rowCount(), 10);
    QVERIFY2(kernels->index(0, 0).data().toString().contains("bn_bw"), qPrintable(kernels->index(0, 0).data().toString()));
  }

  // The run's steps take serve's range (client/inputs.h): 0 is "until Stop", and no more than the CLI takes.
  void stepsAreTheCommandLinesRange() {
    MainWindow w;
    auto* steps = w.findChild<QSpinBox*>("steps");
    QVERIFY(steps);
    QCOMPARE(steps->minimum(), 0);
    QCOMPARE(steps->maximum(), int(tb::client::inputs::kStepsMax));
    QCOMPARE(steps->specialValueText(), QString("until Stop"));
  }

  void opensKinetoTraceThenRejectsCorruptOne() {
    const QString trace = tbtest::kinetoTrace();
    if (trace.isEmpty()) QSKIP("kineto_train_step_rank0.json.gz not found");
    MainWindow w;
    w.setQuiet(true);
    const QString opened = tbtest::openTraceAndWait(w, trace, 60000);
    QVERIFY2(opened.isEmpty(), qPrintable(opened));
    auto data = w.timeline()->data();
    QVERIFY(data);
    QVERIFY(data->eventCount() > 4000);
    bool gpu = false;
    for (const auto& t : data->tracks) gpu |= t.kind == TrackKind::GpuStream;
    QVERIFY(gpu);
    QVERIFY(w.recentFiles().value(0).endsWith("kineto_train_step_rank0.json.gz"));
    // Findings: clicking one selects its evidence interval on the timeline.
    const auto& f = w.findings()->entries();
    int with_evidence = -1;
    for (size_t i = 0; i < f.size(); ++i)
      if (f[i].t1 > f[i].t0) with_evidence = int(i);
    // A finding of someone else's trace never changes this machine's settings: its Try is disabled.
    for (int i = 0; i < int(f.size()); ++i)
      if (!f[size_t(i)].knob.isEmpty())
        QVERIFY2(w.findings()->tryBlockedReason(i).contains("opened trace"), qPrintable(w.findings()->tryBlockedReason(i)));
    if (with_evidence >= 0) {
      w.findings()->activate(with_evidence);
      QVERIFY(w.timeline()->hasSelection());
      QCOMPARE(w.timeline()->selection().first, int64_t(f[size_t(with_evidence)].t0));
    }
    // A corrupt file: an error, and the trace on screen stays.
    const QString bad = tmp_.filePath("corrupt.json");
    QFile out(bad);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 12, \"dur\": ");
    out.close();
    QSignalSpy spy(&w, &MainWindow::traceOpenFinished);
    w.openTrace(bad);
    QVERIFY(spy.wait(20000));
    QVERIFY(!spy.at(0).at(0).toBool());
    QVERIFY2(w.lastError().contains("corrupt.json"), qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains('\n'));
    QCOMPARE(w.timeline()->data(), data);
    // Unknown kinds and missing files: a clear message, nothing else changes.
    QVERIFY(!w.openPath(tmp_.filePath("missing.json")));
    QVERIFY(w.lastError().contains("no such file"));
    const QString odd = tmp_.filePath("notes.xyz");
    QFile o2(odd);
    QVERIFY(o2.open(QIODevice::WriteOnly));
    o2.close();
    QVERIFY(!w.openPath(odd));
    QVERIFY(w.lastError().contains("not a trace"));
    QCOMPARE(w.timeline()->data(), data);
    // Exports of the opened trace.
    QVERIFY(w.exportTimelinePng(tmp_.filePath("t.png"), QSize(800, 400)));
    QVERIFY(QImage(tmp_.filePath("t.png")).width() == 800);
    QVERIFY(w.exportChromeTrace(tmp_.filePath("out.json")));
    QVERIFY(QFileInfo(tmp_.filePath("out.json")).size() > 1000);
  }

  // The window keeps only the draw store; the export re-reads the source. A vanished source is a clear
  // error and the view stays.
  void exportRereadsTheSourceAndSaysWhenItIsGone() {
    const QString trace = tbtest::kinetoTrace();
    if (trace.isEmpty()) QSKIP("kineto_train_step_rank0.json.gz not found");
    const QString copy = tmp_.filePath("copy.json.gz");
    QFile::remove(copy);
    QVERIFY(QFile::copy(trace, copy));
    MainWindow w;
    w.setQuiet(true);
    const QString opened = tbtest::openTraceAndWait(w, copy, 60000);
    QVERIFY2(opened.isEmpty(), qPrintable(opened));
    auto data = w.timeline()->data();
    QVERIFY(w.exportChromeTrace(tmp_.filePath("copy-export.json")));
    QFile exported(tmp_.filePath("copy-export.json"));
    QVERIFY(exported.open(QIODevice::ReadOnly));
    const QByteArray text = exported.readAll();
    QVERIFY(text.contains("ProfilerStep#101"));
    // The menu's path runs on a worker and reports through a signal.
    QSignalSpy done_spy(&w, &MainWindow::chromeTraceExported);
    w.exportChromeTraceAsync(tmp_.filePath("copy-export-async.json.gz"));
    QVERIFY(done_spy.wait(60000));
    QVERIFY2(done_spy.at(0).at(0).toBool(), qPrintable(done_spy.at(0).at(1).toString()));
    QVERIFY(QFileInfo(tmp_.filePath("copy-export-async.json.gz")).size() > 1000);
    QVERIFY(QFile::remove(copy));
    QVERIFY(!w.exportChromeTrace(tmp_.filePath("copy-export2.json")));
    QVERIFY2(w.lastError().contains("cannot re-read"), qPrintable(w.lastError()));
    QCOMPARE(w.timeline()->data(), data);
  }

  void corruptTraceShowsDialog() {
    MainWindow w;  // not quiet: the user sees a dialog (non-modal, so the window stays usable)
    QSignalSpy spy(&w, &MainWindow::traceOpenFinished);
    const QString bad = tmp_.filePath("garbage.json.gz");
    QFile out(bad);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write("\x1f\x8b\x08\x00garbage-not-really-gzip");
    out.close();
    w.openTrace(bad);
    QVERIFY(spy.wait(20000));
    QVERIFY(!spy.at(0).at(0).toBool());
    auto* box = w.findChild<QMessageBox*>("error_dialog");
    QVERIFY(box);
    QVERIFY(box->text().contains("garbage.json.gz"));
  }

  void liveToggleIsSentAndCompared() {
    if (tbtest::python().isEmpty()) QSKIP("python3 not found");
    MainWindow w;
    w.setQuiet(true);
    QVERIFY(w.chart()->showsNoData());  // an empty chart says so instead of drawing a made-up axis
    QVERIFY(w.startProcess(tbtest::python(), {tbtest::fakeChild(), "--step-ms", "5"}));
    QVERIFY(waitFor([&] { return w.toggles()->editorFor("workers") && w.run()->record().steps.size() >= 15; }, 15000));
    QVERIFY(waitFor([&] { return !w.chart()->showsNoData(); }, 30000));
    QVERIFY(!w.toggles()->editorFor("pin_memory")->isEnabled());
    // Findings are safe to click: "Try workers=4" runs here, "Try pin_memory=on" cannot (no CUDA device).
    auto row_of = [&](const QString& knob) {
      const auto& f = w.findings()->entries();
      for (size_t i = 0; i < f.size(); ++i)
        if (f[i].knob == knob) return int(i);
      return -1;
    };
    QVERIFY(row_of("workers") >= 0 && row_of("pin_memory") >= 0);
    QCOMPARE(w.findings()->tryBlockedReason(row_of("workers")), QString());
    QVERIFY2(w.findings()->tryBlockedReason(row_of("pin_memory")).contains("no CUDA device"),
             qPrintable(w.findings()->tryBlockedReason(row_of("pin_memory"))));
    qobject_cast<QSpinBox*>(w.toggles()->editorFor("workers"))->setValue(4);  // a user edit -> live set
    QVERIFY(waitFor([&] { return measuredSteps(w, 1) >= 15; }, 15000));
    // The coalesced chart/compare refresh (at most every half second while steps arrive) with both sides.
    QVERIFY(waitFor([&] {
      const auto& c = w.compare()->comparisons();
      return c.size() == 1 && c[0].stats.valid && c[0].stats.n_after >= 3;
    }, 5000));
    QCOMPARE(row_of("workers"), -1);  // its fix is in place: no stale finding
    QVERIFY(row_of("pin_memory") >= 0);
    const auto& cmp = w.compare()->comparisons();
    QCOMPARE(int(cmp.size()), 1);
    QCOMPARE(cmp[0].change, QString("workers 0 → 4"));
    QCOMPARE(QString::fromStdString(cmp[0].stats.verdict()), QString("faster"));
    QVERIFY(w.chart()->segmentLabelCount() >= 3);  // 2 medians + 1 marker
    QCOMPARE(w.compare()->errorBarCount(), 1);        // the after bar with its interval
    QVERIFY(w.exportComparisons(tmp_.filePath("cmp.md")));
    QVERIFY(w.exportComparisons(tmp_.filePath("cmp.html")));
    QVERIFY(w.exportComparisons(tmp_.filePath("cmp.json")));
    QFile md(tmp_.filePath("cmp.md"));
    QVERIFY(md.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(md.readAll());
    QVERIFY2(text.contains("workers 0 → 4") && text.contains("faster"), qPrintable(text));
    QVERIFY2(text.contains("33.3% → 33.3%"), qPrintable(text));  // the fake child waits a third of each step
    // Once kept, Keep and Revert of that row are disabled.
    auto* keep = w.compare()->findChild<QToolButton*>("keep_0");
    QVERIFY(keep && keep->isEnabled());
    keep->click();
    QWidget* cell = w.compare()->table()->cellWidget(0, 5);  // the rebuilt row (the old one is deleted later)
    QVERIFY(cell);
    QVERIFY(!cell->findChild<QToolButton*>("keep_0")->isEnabled());
    QVERIFY(!cell->findChild<QToolButton*>("revert_0")->isEnabled());
    QSignalSpy fin(w.run(), &RunController::finished);
    w.stopRun();
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 30000));
  }

  // Auto-tune in the GUI: the dialog's text carries the interval, what to keep, the
  // budget used and why the tune ended early; the tuner's result is its own Compare row, named as such.
  void autoTuneSaysWhatItFoundAndWhyItEnded() {
    if (tbtest::python().isEmpty()) QSKIP("python3 not found");
    MainWindow w;
    w.setQuiet(true);
    QVERIFY(w.startProcess(tbtest::python(), {tbtest::fakeChild(), "--step-ms", "5"}));
    QVERIFY(waitFor([&] { return w.run()->record().steps.size() >= 20; }, 15000));
    QSignalSpy done(w.run(), &RunController::tuneDone);
    w.run()->sendTune(60);
    QVERIFY(done.wait(10000));
    const TuneSummary& t = w.lastTuneSummary();
    QCOMPARE(t.title, QString("×1.50 faster"));
    QVERIFY2(t.detail.contains("interval ×1.40–1.60"), qPrintable(t.detail));
    QVERIFY2(t.detail.contains("Keep: workers=4"), qPrintable(t.detail));
    QVERIFY2(t.detail.contains("Used 17 of 60 s, 9 trials: every applicable knob was tried"), qPrintable(t.detail));
    QVERIFY(waitFor([&] { return measuredSteps(w, 1) >= 15; }, 15000));
    QVERIFY(waitFor([&] { return w.compare()->comparisons().size() == 1; }, 30000));  // the coalesced refresh
    const auto& cmp = w.compare()->comparisons();
    QCOMPARE(int(cmp.size()), 1);
    QCOMPARE(cmp[0].change, QString("auto-tune: workers 0 → 4"));
    // The budget box below its minimum is "auto" (tune --budget auto): the Auto-tune action sends it as such.
    auto* budget = w.findChild<QSpinBox*>("tune_budget");
    QVERIFY(budget);
    budget->setValue(budget->minimum());
    QCOMPARE(budget->text(), QString("auto"));
    QAction* tune = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
      if (a->text() == "&Auto-tune") tune = a;
    QVERIFY(tune);
    tune->trigger();
    QVERIFY(done.wait(10000));
    const QString log = w.findChild<QPlainTextEdit*>("log")->toPlainText();
    QVERIFY2(log.contains("auto-tune started (budget auto: one pass over every knob"), qPrintable(log));
    QVERIFY2(log.contains("tune measure: baseline (budget \"auto\")"), qPrintable(log));
    QVERIFY2(log.contains("tune measure: baseline (budget 60)"), qPrintable(log));  // the first, in seconds
    // Run > Price the auto-tune: the tune's plan line before a tune is started, sent as plan_only; the budget box
    // keeps it, and nothing is applied (no new Compare row).
    QAction* price = w.findChild<QAction*>("act_price_tune");
    QVERIFY(price && price->isEnabled());
    budget->setValue(90);
    price->trigger();
    QVERIFY(done.wait(10000));
    QVERIFY(done.last().at(0).toJsonObject().value("plan_only").toBool());
    QCOMPARE(w.lastTuneSummary().title, QString("Priced: ~140 s to try each of the 6 knobs once; nothing was tried"));
    QVERIFY2(w.lastTuneSummary().detail.contains("finals included (budget 90)\nMeasured in 9 s"),
             qPrintable(w.lastTuneSummary().detail));
    QVERIFY2(budget->toolTip().contains("Last priced here: ~140 s to try each of the 6 knobs once, finals included"),
             qPrintable(budget->toolTip()));
    const QString priced_log = w.findChild<QPlainTextEdit*>("log")->toPlainText();
    QVERIFY2(priced_log.contains("pricing the auto-tune (budget 90 s)") &&
                 priced_log.contains("auto-tune priced: ~140 s to try each of the 6 knobs once, finals included"),
             qPrintable(priced_log));
    // No knob kept: said, not "Speed-up ×1.00".
    const TuneSummary none = tuneSummary(QJsonObject{{"speedup", QJsonValue()}, {"kept", QJsonArray()},
                                                     {"baseline_throughput", 250.0}, {"budget_s", 60.0},
                                                     {"elapsed_s", 61.0}, {"trials", 12},
                                                     {"ended", "the budget ran out"}});
    QCOMPARE(none.title, QString("No change beat the baseline"));
    QVERIFY2(none.detail.contains("Baseline 250.0 samples/s") && none.detail.contains("the budget ran out"),
             qPrintable(none.detail));
    // The tuner's own headline when it sends one: too noisy to tell is not "no change beat the baseline".
    const TuneSummary noisy = tuneSummary(QJsonObject{
        {"speedup", QJsonValue()}, {"kept", QJsonArray()}, {"baseline_throughput", 52.0},
        {"headline", QJsonObject{{"kind", "too_noisy"},
                                 {"title", "Too noisy to tune here: one trial resolves only changes beyond ±159%"}}}});
    QVERIFY2(noisy.title.startsWith("Too noisy to tune here"), qPrintable(noisy.title));
    // An undecided headline keeps nothing: never "×1.01 faster" beside "Keep: workers=1".
    const TuneSummary undecided = tuneSummary(QJsonObject{
        {"verdict", "undecided"}, {"speedup", 1.01}, {"speedup_ci", QJsonArray{0.65, 1.55}}, {"kept", QJsonArray()},
        {"unconfirmed", QJsonArray{"workers=1"}}, {"baseline_throughput", 272.0}, {"final_throughput", 274.7}});
    QCOMPARE(undecided.title, QString("Could not decide: nothing kept"));
    QVERIFY2(undecided.detail.contains("workers=1 measured ×1.01, 95% interval ×0.65–1.55, which covers 1") &&
                 undecided.detail.contains("Keep: nothing (not confirmed"),
             qPrintable(undecided.detail));
    // A kept change says how its headline was confirmed, as the CLI's `confirmed` line does.
    const TuneSummary in_process = tuneSummary(QJsonObject{
        {"verdict", "faster"}, {"speedup", 1.20}, {"speedup_ci", QJsonArray{1.17, 1.24}}, {"kept", QJsonArray{"workers=1"}},
        {"confirmation", "in this process: the final alternation, against the A/A floor (a fresh-process check needs ~31 s)"},
        {"baseline_throughput", 249.1}, {"final_throughput", 299.4}});
    QVERIFY2(in_process.detail.contains("Confirmed: in this process: the final alternation, against the A/A floor"),
             qPrintable(in_process.detail));
    QSignalSpy fin(w.run(), &RunController::finished);
    w.stopRun();
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 30000));
  }

  // Two ranks of a data-parallel job in one trace: a row group per process on the timeline, and the Ranks tab
  // names the one the other waits for (rank 2 loads 30 ms longer; rank 1 waits 25 ms for it in every step).
  void ranksOfAMergedTraceAreGroupedAndCompared() {
    QJsonArray ev;
    auto x = [&](int pid, int tid, const char* name, double ts_ms, double dur_ms, int arg = -1) {
      QJsonObject args{{"tb_kind", "range"}};
      if (arg >= 0) args.insert("arg", arg);
      ev.append(QJsonObject{{"ph", "X"}, {"cat", "tunebench"}, {"name", name}, {"pid", pid}, {"tid", tid},
                            {"ts", ts_ms * 1000}, {"dur", dur_ms * 1000}, {"args", args}});
    };
    for (int s = 0; s < 6; ++s) {
      const double t = s * 100;
      for (int pid : {1, 2}) {
        const double data = pid == 1 ? 5 : 35, wait = pid == 1 ? 30 : 5, bwd_end = t + 95 - wait;
        x(pid, pid, "step", t, 100, s);
        x(pid, pid, "data_wait", t, data);
        x(pid, pid, "forward", t + data, 20);
        x(pid, pid, "backward", t + data + 20, bwd_end - (t + data + 20));
        x(pid, pid, "comm_wait", bwd_end, wait);
        x(pid, pid + 10, "gloo:allreduce", bwd_end - 5, wait + 5, 4096);
        x(pid, pid, "optimizer", t + 95, 5);
      }
    }
    const QString path = tmp_.filePath("ranks.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(QJsonObject{{"traceEvents", ev}, {"displayTimeUnit", "ns"}}).toJson());
    f.close();
    MainWindow w;
    w.setQuiet(true);
    const QString opened = tbtest::openTraceAndWait(w, path, 30000);
    QVERIFY2(opened.isEmpty(), qPrintable(opened));
    QStringList groups;
    for (const auto& row : layoutRows(*w.timeline()->data()))
      if (row.group) groups << QString::fromStdString(rowGroupOf(w.timeline()->data()->tracks[row.track]));
    QCOMPARE(groups, QStringList({"process 1", "process 2"}));
    auto* ranks = w.findChild<QTableView*>("analysis_ranks");
    QVERIFY(ranks);
    QCOMPARE(ranks->model()->rowCount(), 2);
    const QString text = w.findChild<QLabel*>("analysis_ranks_label")->text();
    QVERIFY2(text.contains("Straggler: process 2") && text.contains("25.00 ms per step") && text.contains("loader"),
             qPrintable(text));
    QVERIFY2(w.analysis()->summaryText().contains("process 1, one of 2 ranks"), qPrintable(w.analysis()->summaryText()));
    // The straggler is a finding too, first.
    QVERIFY(!w.findings()->entries().empty());
    QCOMPARE(w.findings()->entries().front().id, QString("straggler"));
  }

  void killedChildKeepsDataAndShowsError() {
    if (tbtest::python().isEmpty()) QSKIP("python3 not found");
    MainWindow w;
    QSignalSpy failed(&w, &MainWindow::runFailed);
    QVERIFY(w.startProcess(tbtest::python(), {tbtest::fakeChild(), "--mode", "crash", "--crash-after", "12", "--step-ms", "5"}));
    QVERIFY(failed.wait(15000));
    QVERIFY(w.lastError().contains("crashed"));
    QVERIFY(w.lastError().contains("CUDA out of memory"));
    QCOMPARE(w.run()->record().steps.size(), size_t(12));
    auto* box = w.findChild<QMessageBox*>("error_dialog");
    QVERIFY(box);
    QVERIFY(box->isVisible());
    // Still exportable after the crash.
    QVERIFY(w.exportComparisons(tmp_.filePath("after_crash.json")));
    QFile f(tmp_.filePath("after_crash.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray j = f.readAll();
    QVERIFY(j.contains("\"steps\": 12"));
    QVERIFY(j.contains("failure"));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
