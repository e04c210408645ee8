// One change, one number (the story a user follows): the demo runs on a JPEG folder with the real CLI, a
// toggle is clicked (workers 0 -> 2), an Auto-tune runs, and File ▸ Export writes the report. Every place that
// shows the tune's result - its dialog, its Compare row, the chart's tune label, the exported HTML, Markdown
// and JSON - must give the same figures, and the status bar the same throughput as the chart's line.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/compare_panel.h"
#include "ui/main_window.h"
#include "ui/segments.h"
#include "ui/throughput_chart.h"
#include "ui/timeline_model.h"
#include "ui/timeline_widget.h"
#include "ui/toggles_panel.h"
#include "ui/tune_summary.h"
#include "ui_test_util.h"

using namespace tb::ui;
using tbtest::measuredSteps;
using tbtest::waitFor;

namespace {
QString fixed(double v, int prec) { return QString::number(v, 'f', prec); }
QString readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}
}  // namespace

class TestOneNumber : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void demoToggleTuneExportAgree() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");

    MainWindow w;
    w.setQuiet(true);
    RunOptions o;
    o.model = "mnist_cnn";
    // Synthetic batches: compute-bound, so that mixed precision has something to win on any x86-64 CPU
    // with bf16 kernels (1.3-1.5x here); a folder of JPEGs makes the loader the limit.
    o.data = "synthetic";
    // The demo's start, on one intra-op thread: the Auto-tune measures for its whole budget, and two threads
    // took both cores from the test beside it that long.
    o.knobs = {{"workers", "0"}, {"cpu_allocator", "glibc_tuned"}, {"intra_op_threads", "1"}};
    o.trace_every = 20;
    QVERIFY(w.startRun(o, cli));
    QVERIFY2(waitFor([&] { return w.toggles()->editorFor("workers") && measuredSteps(w, 0) >= 25; }, 90000),
             qPrintable(w.run()->stderrTail()));
    // The status bar: the configuration's throughput as the chart's line gives it.
    QVERIFY(waitFor([&] { return w.findChild<QLabel*>("perf_label")->text().contains("this configuration"); }, 30000));
    {
      // Both read the record as it was at the last refresh: the chart's line label and the status bar agree.
      const QString perf = w.findChild<QLabel*>("perf_label")->text();
      const QString line = w.chart()->labelTexts().join('|');
      QVERIFY2(perf.contains(" samples/s (this configuration, "), qPrintable(perf));
      const QString value = perf.section(" · ", 1).section(' ', 0, 0);  // "523.4"
      const QRegularExpression per_s("(\\d+(?:\\.\\d)?)/s");
      const double on_chart = per_s.match(line).captured(1).toDouble();
      QVERIFY2(value.toDouble() > 0 && qAbs(on_chart - value.toDouble()) <= 0.55, qPrintable(perf + " | " + line));
    }

    // A toggle, as a user clicks it.
    qobject_cast<QSpinBox*>(w.toggles()->editorFor("workers"))->setValue(2);
    QVERIFY2(waitFor([&] { return w.compare()->comparisons().size() == 1 && measuredSteps(w, 1) >= 20; }, 90000),
             qPrintable(w.run()->stderrTail()));

    // Auto-tune (mixed precision only, to stay short), as the Run menu sends it.
    QSignalSpy done(w.run(), &RunController::tuneDone);
    w.run()->sendTune(60, {"amp"});
    QVERIFY2(done.wait(240000), qPrintable(w.run()->stderrTail()));
    const QJsonObject td = done.at(0).at(0).toJsonObject();
    const TuneSummary& dialog = w.lastTuneSummary();
    QVERIFY(!dialog.title.isEmpty());
    const auto& tunes = w.run()->record().tunes;
    QCOMPARE(int(tunes.size()), 1);
    // The chart has the tune's label, with the dialog's figures.
    QVERIFY(waitFor([&] { return w.chart()->labelTexts().join('|').contains("auto-tune ") &&
                                 !w.chart()->labelTexts().join('|').contains("running"); }, 10000));
    const QString labels = w.chart()->labelTexts().join('|');
    QVERIFY(!w.chart()->labelsOverlap());
    const bool kept = tunes[0].kept();
    qInfo().noquote() << "the tune:" << dialog.title << "|" << labels;
    const RatioCI st = tunerStats(td);
    if (kept) {
      // Dialog: "×1.39 faster", "748.8 → 1038.8 samples/s, 95% interval ×1.36–1.42".
      QVERIFY2(dialog.title.contains("×" + fixed(st.ratio, 2)), qPrintable(dialog.title));
      QVERIFY2(dialog.detail.contains(fixed(st.before, 1) + " → " + fixed(st.after, 1)), qPrintable(dialog.detail));
      QVERIFY2(dialog.detail.contains("×" + fixed(st.lo, 2) + "–" + fixed(st.hi, 2)), qPrintable(dialog.detail));
      QVERIFY2(labels.contains(QStringLiteral("×%1 [%2–%3]").arg(fixed(st.ratio, 2), fixed(st.lo, 2), fixed(st.hi, 2))),
               qPrintable(labels));
      // Compare: the tune's row holds the same figures, once the tuned configuration has steps.
      QVERIFY(waitFor([&] { return w.compare()->comparisons().size() == 2; }, 60000));
      const Comparison& row = w.compare()->comparisons()[1];
      QVERIFY(row.from_tune);
      QVERIFY2(row.change.startsWith("auto-tune: "), qPrintable(row.change));
      QCOMPARE(fixed(row.stats.before, 1), fixed(st.before, 1));
      QCOMPARE(fixed(row.stats.after, 1), fixed(st.after, 1));
      QCOMPARE(fixed(row.stats.ratio, 2), fixed(st.ratio, 2));
      QCOMPARE(fixed(row.stats.lo, 2), fixed(st.lo, 2));
    } else {
      // The tuner's own headline: "No change beat the baseline" where its trials told, "Too noisy to tune here ..."
      // where a busy machine's could not.
      const QString head = td.value("headline").toObject().value("title").toString();
      QVERIFY2(head == "No change beat the baseline" || head.startsWith("Too noisy to tune here"), qPrintable(head));
      QCOMPARE(dialog.title, head);
      QVERIFY2(labels.contains("nothing kept"), qPrintable(labels));
      QCOMPARE(int(w.compare()->comparisons().size()), 1);  // no row of its own: nothing changed
    }
    QVERIFY(waitFor([&] { return w.run()->record().steps.back().i > tunes[0].before_step + 10; }, 60000));
    // The timeline is not blank after the tune: it shows the chunks recorded since.
    QVERIFY(waitFor([&] { return w.timeline()->data() && w.timeline()->data()->eventCount() > 0; }, 30000));

    // File ▸ Export: the tuner's report with the live rows and the tune's report inside.
    const QString stem = tmp_.filePath("report");
    QVERIFY2(w.exportReport({{"--html", stem + ".html"}, {"--md", stem + ".md"}, {"--json", stem + ".json"}}),
             qPrintable(w.lastError()));
    const QString html = readAll(stem + ".html"), md = readAll(stem + ".md");
    const QJsonObject json = QJsonDocument::fromJson(readAll(stem + ".json").toUtf8()).object();
    QCOMPARE(json.value("format").toString(), QString("tunebench-session"));
    const QJsonArray rows = json.value("comparisons").toArray();
    QVERIFY(rows.size() >= 1);
    QCOMPARE(rows[0].toObject().value("change").toString(), QString("workers 0 → 2"));
    // The toggle's figures: the Compare row's, in every export.
    const Comparison& toggle = w.compare()->comparisons()[0];
    QCOMPARE(fixed(rows[0].toObject().value("after").toDouble(), 1), fixed(toggle.stats.after, 1));
    QVERIFY(md.contains(fixed(toggle.stats.before, 1)) && md.contains(fixed(toggle.stats.after, 1)));
    QVERIFY(html.contains(fixed(toggle.stats.after, 1)));
    QCOMPARE(json.value("tunes").toArray().size(), 1);
    const QJsonObject tune_report = json.value("tunes").toArray()[0].toObject();
    QVERIFY2(!tune_report.contains("missing"), qPrintable(QJsonDocument(tune_report).toJson()));
    QVERIFY(html.contains("Auto-tune 1") && md.contains("Auto-tune 1"));
    QVERIFY(html.contains("How far to trust these numbers") && html.contains("The code that keeps it"));
    QVERIFY(html.contains("<svg"));
    if (kept) {
      // The tune's row and the tune's own report: the dialog's numbers.
      QCOMPARE(rows.size(), 2);
      const QJsonObject r = rows[1].toObject();
      QCOMPARE(r.value("source").toString(), QString("auto-tune"));
      QCOMPARE(fixed(r.value("before").toDouble(), 1), fixed(st.before, 1));
      QCOMPARE(fixed(r.value("after").toDouble(), 1), fixed(st.after, 1));
      QCOMPARE(fixed(r.value("ratio").toDouble(), 2), fixed(st.ratio, 2));
      QCOMPARE(fixed(tune_report.value("speedup").toDouble(), 2), fixed(st.ratio, 2));
      QCOMPARE(fixed(tune_report.value("baseline_throughput").toDouble(), 1), fixed(st.before, 1));
      const QString shown = fixed(st.before, 1) + " → " + fixed(st.after, 1);
      QVERIFY2(md.contains(fixed(st.before, 1)) && md.contains(fixed(st.after, 1)) && html.contains(shown.toHtmlEscaped()),
               qPrintable(shown));
    }
    QSignalSpy fin(w.run(), &RunController::finished);
    w.stopRun();
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 30000));
  }
};

QTEST_MAIN(TestOneNumber)
#include "test_one_number.moc"
