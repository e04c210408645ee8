// The main window with real children (offscreen): a live run of the engine traced and toggled, the demo's
// dataset made once, a live data-parallel group, a data-parallel auto-tune's summary. A user's script watched
// live is test_script_window.cpp; the window on traces and fake children, test_main_window.cpp.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include <algorithm>

#include "ui/analysis_panel.h"
#include "ui/compare_panel.h"
#include "ui/main_window.h"
#include "ui/segments.h"
#include "ui/timeline_model.h"
#include "ui/timeline_widget.h"
#include "ui/tune_summary.h"
#include "ui_test_util.h"

using namespace tb::ui;

class TestMainWindowLive : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  static bool waitFor(const std::function<bool()>& cond, int ms) { return tbtest::waitFor(cond, ms); }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QCoreApplication::setOrganizationName("TuneBenchTest");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, tmp_.path());
    initResources();
  }

  void liveTraceFromRealCli() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");
    MainWindow w;
    w.setQuiet(true);
    RunOptions o;
    o.model = "mnist_cnn";
    o.data = "synthetic";
    o.trace_every = 4;
    QSignalSpy loaded(&w, &MainWindow::traceOpenFinished);
    QVERIFY(w.startRun(o, cli));
    QVERIFY2(waitFor([&] { return w.timeline()->data() != nullptr || !w.run()->isRunning(); }, 45000),
             qPrintable(w.run()->stderrTail()));
    QVERIFY2(w.timeline()->data(), qPrintable(w.lastError() + w.run()->stderrTail()));
    QVERIFY(w.timeline()->data()->eventCount() > 0);
    QVERIFY(!w.run()->record().trace_paths.isEmpty());
    QVERIFY(w.exportChromeTrace(tmp_.filePath("live.json")));
    // A toggle, then its "Traces" button: the chunk before and the chunk after, diffed.
    const size_t chunks_before = w.run()->record().chunks.size();
    w.run()->sendSet("workers", "1");
    QVERIFY2(waitFor([&] { return w.compare()->comparisons().size() == 1 &&
                                  w.run()->record().chunks.size() >= chunks_before + 2; }, 60000),
             qPrintable(w.run()->stderrTail()));
    QSignalSpy cmp(&w, &MainWindow::compareFinished);
    auto* traces = w.compare()->findChild<QToolButton*>("traces_0");
    QVERIFY(traces);
    traces->click();
    QVERIFY(cmp.wait(30000));
    QVERIFY2(cmp.at(0).at(0).toBool(), qPrintable(cmp.at(0).at(1).toString()));
    QVERIFY(w.lastComparisonHtml().contains("median step"));
    QSignalSpy fin(w.run(), &RunController::finished);
    w.stopRun();
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 30000));
  }

  // Demo ▸ the dataset: made once by a real make-dataset child (its progress on the bar), then found again.
  void demoDatasetIsMadeOnce() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");
    qputenv("TUNEBENCH_CLI", cli.toUtf8());
    const QByteArray cache = qgetenv("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", tmp_.filePath("cache").toUtf8());
    MainWindow w;
    w.setQuiet(true);
    QSignalSpy ready(&w, &MainWindow::demoDatasetReady);
    w.startDemo(false);
    QVERIFY2(ready.count() > 0 || ready.wait(180000), qPrintable(w.lastError()));
    const QString dir = ready.at(0).at(0).toString();
    QVERIFY2(dir.startsWith(tmp_.filePath("cache")), qPrintable(dir));
    QCOMPARE(QDir(dir).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 10);  // one folder per class
    QVERIFY(QFile::exists(dir + "/.tunebench-demo-complete"));
    QCOMPARE(w.findChild<QProgressBar*>()->maximum(), 256);  // "make-dataset: N/256 images" reached the bar
    w.startDemo(false);  // made already: ready at once, no child
    QCOMPARE(ready.count(), 2);
    if (cache.isNull()) qunsetenv("XDG_CACHE_HOME");
    else qputenv("XDG_CACHE_HOME", cache);
  }

  // Run ▸ Data-parallel run: a live group of two real ranks (Gloo). Its trace chunks have a row group per rank
  // and the Ranks tab; a toggle reaches both ranks at the same step (they end with the same configuration
  // and weights, which the log says); stop ends the whole group.
  void dataParallelRunIsLive() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");
    qputenv("TUNEBENCH_CLI", cli.toUtf8());
    MainWindow w;
    w.setQuiet(true);
    w.findChild<QComboBox*>("model")->setCurrentText("mnist_cnn");
    w.findChild<QComboBox*>("data")->setCurrentText("synthetic");
    w.findChild<QSpinBox*>("trace_every")->setValue(4);
    QVERIFY(w.startRanksRun(2));
    auto groups = [&] {
      int n = 0;
      if (w.timeline()->data())
        for (const auto& row : layoutRows(*w.timeline()->data())) n += row.group;
      return n;
    };
    QVERIFY2(waitFor([&] { return groups() == 2 || !w.run()->isRunning(); }, 120000),
             qPrintable(w.lastError() + w.run()->stderrTail()));
    QCOMPARE(groups(), 2);
    QCOMPARE(w.findChild<QTableView*>("analysis_ranks")->model()->rowCount(), 2);
    QStringList names;  // each rank names its process
    for (const auto& row : layoutRows(*w.timeline()->data()))
      if (row.group) names << QString::fromStdString(rowGroupOf(w.timeline()->data()->tracks[row.track]));
    QCOMPARE(names.size(), 2);
    QVERIFY2(names[0].startsWith("rank ") && names[1].startsWith("rank ") && names[0] != names[1] &&
                 names.join(" ").contains("rank 0 (pid "),
             qPrintable(names.join(", ")));
    // TB_SCREENSHOT_DIR: the window with the live group on screen, to look at (not a check).
    if (const QString dir = qEnvironmentVariable("TB_SCREENSHOT_DIR"); !dir.isEmpty()) {
      w.resize(1400, 900);
      w.show();
      QTest::qWait(3000);
      w.grab().save(dir + "/ranks_live.png");
    }
    QSignalSpy applied(w.run(), &RunController::configApplied);
    w.run()->sendSet("bucket_cap_mb", "5");
    QVERIFY2(applied.wait(60000), qPrintable(w.lastError() + w.run()->stderrTail()));
    const int steps = int(w.run()->record().steps.size());
    QVERIFY(waitFor([&] { return int(w.run()->record().steps.size()) >= steps + 3 || !w.run()->isRunning(); }, 60000));
    QSignalSpy fin(w.run(), &RunController::finished);
    w.stopRun();
    QVERIFY(fin.count() == 1 || fin.wait(10000));
    QVERIFY2(fin.at(0).at(0).toBool(), qPrintable(fin.at(0).at(1).toString()));
    const QString log = w.findChild<QPlainTextEdit*>("log")->toPlainText();
    QVERIFY2(log.contains("the 2 ranks ended in step") && log.contains("bucket_cap_mb=5"), qPrintable(log.right(2000)));
  }

  // Run ▸ Data-parallel auto-tune: the window starts `tune --ranks 2` of the panel's model and data, follows
  // its progress lines and, at the end, shows the summary of its JSON document, like a live Auto-tune's. The
  // child is tests/ui/sim_tune_cli.sh: it checks that command and answers with the real CLI's simulated tune
  // (its real progress, document and report in a second). A real tune of two ranks is e2e.ranks'.
  void dataParallelTuneShowsItsSummary() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");
    qputenv("TB_REAL_CLI", cli.toUtf8());
    qputenv("TUNEBENCH_CLI", QByteArray(TB_SIM_TUNE_CLI));
    MainWindow w;
    w.setQuiet(true);
    w.findChild<QComboBox*>("model")->setCurrentText("mnist_cnn");
    w.findChild<QComboBox*>("data")->setCurrentText("synthetic");
    QSignalSpy done(&w, &MainWindow::ranksTuneFinished);
    QVERIFY(w.startRanksTune(2, 40));
    auto* bar = w.findChild<QProgressBar*>();
    int most = 0;  // the progress bar follows the tune's "[tune  42%]" lines
    QVERIFY2(waitFor([&] {
               if (bar && bar->maximum() == 100) most = std::max(most, bar->value());
               return done.count() > 0;
             }, 60000),
             qPrintable(w.lastError()));
    qputenv("TUNEBENCH_CLI", cli.toUtf8());
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(w.lastError()));
    QVERIFY2(most > 0, "the progress bar never moved");
    const QString log = w.findChild<QPlainTextEdit*>("log")->toPlainText();
    QVERIFY2(log.contains("tune noise floor: ") && log.contains("--ranks 2"), qPrintable(log.right(2000)));
    const TuneSummary& s = w.lastTuneSummary();
    QVERIFY2(!s.title.isEmpty() && s.detail.contains("Measurement"), qPrintable(s.title + "\n" + s.detail));
  }
};

QTEST_MAIN(TestMainWindowLive)
#include "test_main_window_live.moc"
