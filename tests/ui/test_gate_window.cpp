// File → Compare two versions… runs the CI gate from the window as a `tunebench-cli gate` child: what the window
// passes it, and what it shows of each end a gate can have. The child here is a stand-in (TUNEBENCH_CLI, a
// shell script written below) that plays a gate recorded from the real CLI on the MLP of tests/gate at two widths
// (its log lines, its --json document, its --traces) and exits with its code: a regression with its why and
// traces, no change, undecided, a script that failed at one revision, a child killed mid-run. A bad revision goes
// to the real CLI, which parses every option the window passes before it says the revision's one line. The real
// gate's verdicts are tests/gate's (E2eGate) and bench/bench_gate_cli.py's.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/main_window.h"
#include "ui_test_util.h"

using namespace tb::ui;

namespace {

// The stand-in: records its arguments, prints the recorded log, copies the recorded document to --json and the
// recorded traces to --traces, then exits with the recorded code ("kill": SIGKILLs itself, as the OOM killer
// would).
const char* kFakeGate = R"(#!/bin/sh
d="$TB_FAKE_GATE"
printf '%s\n' "$@" > "$d/argv"
json=
traces=
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json="$2"; shift ;;
    --traces) traces="$2"; shift ;;
    --) break ;;
  esac
  shift
done
cat "$d/log"
if [ -f "$d/gate.json" ]; then cp "$d/gate.json" "$json"; fi
if [ -d "$d/traces" ]; then mkdir -p "$traces" && cp "$d/traces/"* "$traces/"; fi
code=$(cat "$d/code")
if [ "$code" = kill ]; then kill -9 $$; fi
exit "$code"
)";

// What the real gate printed (stderr's progress, then stdout) on the MLP at widths 256 and 1024, 40 steps a
// process, on a busy 2-core machine.
const char* kRegressionLog = R"(gate: a6657be Wider hidden layers (HEAD) against ad6b110 MLP baseline (HEAD~1), 80 steps a process, at most 600 s
gate: pair 1: baseline 7289.8 samples/s (35 steps measured, 3.6 s)
gate: pair 1: candidate 1900.2 samples/s (35 steps measured, 2.6 s)
gate: pair 2: candidate 2201.7 samples/s (31 steps measured, 2.5 s)
gate: pair 2: baseline 7915.0 samples/s (35 steps measured, 2.1 s)
gate: pair 3: baseline 13068.9 samples/s (35 steps measured, 2.0 s)
gate: pair 3: candidate 600.4 samples/s (35 steps measured, 4.7 s)
gate: look at 3 pairs: undecided: 0.149x [interval unknown: 3 pairs too far apart] (99% per look; 3 pairs, A/A floor ±28.5% per pair over 2)
gate: pair 4: candidate 1487.0 samples/s (32 steps measured, 4.4 s)
gate: pair 4: baseline 13170.3 samples/s (31 steps measured, 2.7 s)
gate: look at 4 pairs: regression: 0.139x [0.034, 0.569] (99% per look; 4 pairs, A/A floor ±46.2% per pair over 3)
gate: why: one more process of each side, every step traced
gate: baseline  ad6b110 MLP baseline (HEAD~1)
gate: candidate a6657be Wider hidden layers (HEAD)
gate: baseline 9540.5 samples/s, candidate 1184.1 samples/s
gate: 4 alternated pairs of fresh processes, A/A floor ±46.2% per pair (3 seams); decided at pair 4, 24 s in all
gate: why: median step 2.89 ms -> 26.96 ms (baseline -> candidate, one traced process each)
gate: why: memory peak (host RSS): 0.63 GiB -> 0.69 GiB (+8.8%)
gate: why: grew: aten::mm +7.02 ms a step (0.49 ms -> 7.52 ms, 7 -> 7 calls)
gate: warning: the machine was busy (load 6.8 on 2 cores): the noise floor above includes it
gate: regression: the candidate is 86.1% slower, beyond the 3% tolerance (0.139x [0.034, 0.569] candidate/baseline throughput, 99% per look)
)";

// The fields of its --json document the window reads (the rest left out).
QJsonObject gateJson(const QString& verdict, int exit_code, const QString& line, const QStringList& why = {}) {
  QJsonObject j{{"verdict", verdict},
                {"exit_code", exit_code},
                {"line", line},
                {"unit", "samples/s"},
                {"baseline", QJsonObject{{"describe", "ad6b110 MLP baseline (HEAD~1)"}, {"throughput", 9540.45}}},
                {"candidate",
                 QJsonObject{{"describe", "a6657be Wider hidden layers (HEAD)"}, {"throughput", 1184.15}}}};
  if (!why.isEmpty()) j["why"] = QJsonObject{{"error", ""}, {"lines", QJsonArray::fromStringList(why)}};
  return j;
}

const QString kRegression = "regression: the candidate is 86.1% slower, beyond the 3% tolerance (0.139x [0.034, 0.569] "
                            "candidate/baseline throughput, 99% per look)";
const QString kNoChange = "no change: within ±3% (0.995x [0.981, 1.009] candidate/baseline throughput, 99% per look)";
const QString kUndecided = "undecided: too noisy to tell a change of 3% (0.988x [0.967, 1.010] candidate/baseline "
                           "throughput, 99% per look); about 7 more pairs would likely decide (1 min more: "
                           "--max-time 636)";
const QString kFailed = "could not run: candidate (a6657be Typo (HEAD)): AttributeError: 'Tensor' object has no "
                        "attribute 'backwards'. Did you mean: 'backward'?";

bool writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

// One recorded gate for the stand-in to play, in its own folder.
struct Recorded {
  QTemporaryDir dir;
  Recorded(const QByteArray& log, const QJsonObject& json, const QByteArray& code, bool traces = false) {
    writeFile(dir.filePath("log"), log);
    writeFile(dir.filePath("code"), code);
    if (!json.isEmpty()) writeFile(dir.filePath("gate.json"), QJsonDocument(json).toJson());
    if (traces) {
      // Two real traces stand for the two traced processes (the comparison's content is the profiler's tests').
      QDir().mkpath(dir.filePath("traces"));
      QFile::copy(TB_TESTDATA_DIR "/kineto_alexnet_a100.json.gz", dir.filePath("traces/baseline.json"));
      QFile::copy(TB_TESTDATA_DIR "/kineto_alexnet_a100.json.gz", dir.filePath("traces/candidate.json"));
    }
    qputenv("TB_FAKE_GATE", dir.path().toUtf8());
  }
  QStringList argv() const {
    QFile f(dir.filePath("argv"));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts) : QStringList();
  }
};

QString logText(MainWindow& w) { return w.findChild<QPlainTextEdit*>("log")->toPlainText(); }

// The status bar's run label ("gate: regression"), the one label that starts with "gate:".
QString runLabel(MainWindow& w) {
  for (auto* l : w.statusBar()->findChildren<QLabel*>())
    if (l->text().startsWith("gate:")) return l->text();
  return {};
}

MainWindow::GateRequest request(const QString& script) {
  MainWindow::GateRequest r;
  r.script = script;
  r.baseline = "HEAD~1";
  r.candidate = "HEAD";
  r.args = {"--epochs", "100"};
  r.steps = 80;
  r.max_time_s = 600;
  return r;
}

}  // namespace

class TestGateWindow : public QObject {
  Q_OBJECT

  QTemporaryDir bin_;

  // Starts a gate in `w` on the recorded child and waits for its end: the signal's (ran, line).
  static QVariantList runGate(MainWindow& w, const MainWindow::GateRequest& r = request("train.py")) {
    QSignalSpy done(&w, &MainWindow::gateFinished);
    if (!w.startGate(r) || !done.wait(20000)) return {};
    return done.at(0);
  }

 private slots:
  void initTestCase() {
    const QString fake = bin_.filePath("tunebench-cli");
    QVERIFY(writeFile(fake, kFakeGate));
    QVERIFY(QFile::setPermissions(fake, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    qputenv("TUNEBENCH_CLI", fake.toUtf8());
  }

  // A regression: the CLI's verdict line is the window's (one figure), the log has the progress, the look and why
  // lines and the exit code, and the two traced processes open in the trace comparison.
  void aRegressionShowsTheLineItsWhyAndTheTracedPair() {
    const QStringList why = {"median step 2.89 ms -> 26.96 ms (baseline -> candidate, one traced process each)",
                             "memory peak (host RSS): 0.63 GiB -> 0.69 GiB (+8.8%)",
                             "grew: aten::mm +7.02 ms a step (0.49 ms -> 7.52 ms, 7 -> 7 calls)"};
    Recorded rec(kRegressionLog, gateJson("regression", 1, kRegression, why), "1", true);
    MainWindow w;
    w.setQuiet(true);
    QSignalSpy compared(&w, &MainWindow::compareFinished);
    const auto end = runGate(w);
    QCOMPARE(end.size(), 2);
    QCOMPARE(end.at(0).toBool(), true);
    QCOMPARE(end.at(1).toString(), kRegression);
    QCOMPARE(w.lastGate().value("verdict").toString(), QString("regression"));
    QCOMPARE(runLabel(w), QString("gate: regression"));
    const QString log = logText(w);
    for (const QString& l : {QString("gate: pair 4: baseline 13170.3 samples/s"),
                             QString("gate: look at 4 pairs: regression"), "gate: why: " + why.last(),
                             "gate (exit 1): " + kRegression})
      QVERIFY2(log.contains(l), qPrintable(l + "\n---\n" + log.right(2000)));
    QVERIFY(!w.statusBar()->findChild<QProgressBar*>()->isVisible());
    QVERIFY2(compared.count() > 0 || compared.wait(20000), "no trace comparison");
    QVERIFY2(compared.at(0).at(0).toBool(), qPrintable(compared.at(0).at(1).toString()));
    QVERIFY(!w.lastComparisonHtml().isEmpty());
    // TB_SCREENSHOT_DIR: the window at the end, to look at (not a check).
    if (const QString dir = qEnvironmentVariable("TB_SCREENSHOT_DIR"); !dir.isEmpty()) {
      w.resize(1400, 900);
      w.show();
      QTest::qWait(200);
      w.grab().save(dir + "/gate_window.png");
    }
  }

  // The child's command line: the script by its absolute path, both revisions, the limits, the document and the
  // traces in a folder of the window's own, the script's arguments after --.
  void theChildIsTheGateOfTheRequest() {
    Recorded rec("gate: no change: x\n", gateJson("no change", 0, kNoChange), "0");
    MainWindow w;
    w.setQuiet(true);
    QVERIFY(!runGate(w, request("train.py")).isEmpty());
    const QStringList a = rec.argv();
    QVERIFY2(a.size() == 18, qPrintable(a.join(' ')));
    QCOMPARE(a.mid(0, 3), (QStringList{"gate", "--script", QDir::current().absoluteFilePath("train.py")}));
    QCOMPARE(a.mid(3, 6), (QStringList{"--baseline", "HEAD~1", "--max-time", "600", "--steps", "80"}));
    QCOMPARE(a.at(9), QString("--json"));
    QVERIFY2(a.at(10).endsWith("/gate.json") && a.at(10).contains("tunebench-gate-ui-"), qPrintable(a.at(10)));
    QCOMPARE(a.at(11), QString("--traces"));
    QCOMPARE(a.mid(13), (QStringList{"--candidate", "HEAD", "--", "--epochs", "100"}));
    // No candidate: the working tree, no --candidate at all.
    auto r = request("train.py");
    r.candidate.clear();
    QVERIFY(!runGate(w, r).isEmpty());
    QVERIFY2(!rec.argv().contains("--candidate"), qPrintable(rec.argv().join(' ')));
  }

  // No change and undecided: the line, the verdict in the status bar, the exit code in the log, and no
  // comparison (no traces).
  void noChangeAndUndecidedSayTheLineAndOpenNoComparison() {
    struct End {
      QString verdict, line;
      int code;
    };
    for (const End& e : {End{"no change", kNoChange, 0}, End{"undecided", kUndecided, 2}}) {
      Recorded rec(("gate: " + e.line + "\n").toUtf8(), gateJson(e.verdict, e.code, e.line),
                   QByteArray::number(e.code));
      MainWindow w;
      w.setQuiet(true);
      const auto end = runGate(w);
      QCOMPARE(end.size(), 2);
      QCOMPARE(end.at(0).toBool(), true);
      QCOMPARE(end.at(1).toString(), e.line);
      QCOMPARE(runLabel(w), "gate: " + e.verdict);
      QVERIFY2(logText(w).contains(QString("gate (exit %1): %2").arg(e.code).arg(e.line)),
               qPrintable(logText(w).right(800)));
      // compareFiles says so in the status bar at once, before the gate's end is signalled.
      QVERIFY2(!w.statusBar()->currentMessage().startsWith("Comparing"), qPrintable(w.statusBar()->currentMessage()));
      QVERIFY(w.lastComparisonHtml().isEmpty());
    }
  }

  // A script that failed at one revision: the gate wrote its document (verdict "could not run", exit 3) and the
  // window says its line, the side and the script's own error.
  void aScriptThatFailedAtOneRevisionSaysItsLine() {
    Recorded rec(("tunebench-cli: error: " + kFailed.mid(15) + "\n").toUtf8(), gateJson("could not run", 3, kFailed),
                 "3");
    MainWindow w;
    w.setQuiet(true);
    const auto end = runGate(w);
    QCOMPARE(end.size(), 2);
    QCOMPARE(end.at(1).toString(), kFailed);
    QCOMPARE(w.lastGate().value("verdict").toString(), QString("could not run"));
    QCOMPARE(runLabel(w), QString("gate: could not run"));
    QVERIFY2(logText(w).contains("gate (exit 3): " + kFailed), qPrintable(logText(w).right(800)));
    QVERIFY(w.lastComparisonHtml().isEmpty());
  }

  // A child that dies mid-run (no document): could not run, with the tail of what it said; nothing kept.
  void aChildKilledMidRunIsCouldNotRun() {
    Recorded rec("gate: pair 1: baseline 7289.8 samples/s (35 steps measured, 3.6 s)\n", {}, "kill");
    MainWindow w;
    w.setQuiet(true);
    const auto end = runGate(w);
    QCOMPARE(end.size(), 2);
    QCOMPARE(end.at(0).toBool(), false);
    QVERIFY2(end.at(1).toString().contains("gate: pair 1: baseline"), qPrintable(end.at(1).toString()));
    QCOMPARE(runLabel(w), QString("gate: could not run"));
    QVERIFY(w.lastGate().isEmpty());
    QVERIFY(!w.statusBar()->findChild<QProgressBar*>()->isVisible());
  }

  // A request without a script or a baseline starts nothing.
  void anIncompleteRequestStartsNothing() {
    MainWindow w;
    w.setQuiet(true);
    auto r = request("");
    QVERIFY(!w.startGate(r));
    QVERIFY2(w.lastError().contains("Give the script and the baseline revision"), qPrintable(w.lastError()));
  }

  // The real CLI with the window's options and a revision that does not exist: its one line, no document.
  void aBadRevisionIsTheRealClisOneLine() {
    const QString cli = QStringLiteral(TB_CLI_PATH);
    if (!QFileInfo(cli).isExecutable()) QSKIP("no tunebench-cli in this build");
    qputenv("TUNEBENCH_CLI", cli.toUtf8());
    QTemporaryDir repo;
    QProcess git;
    git.setWorkingDirectory(repo.path());
    git.start("sh", {"-c", "git init -q -b main . && echo 'print(1)' > train.py && git add train.py && "
                           "git -c user.email=t@example.com -c user.name=t commit -q -m one"});
    QVERIFY(git.waitForFinished(30000) && git.exitCode() == 0);
    MainWindow w;
    w.setQuiet(true);
    auto r = request(repo.filePath("train.py"));
    r.baseline = "no-such-revision";
    const auto end = runGate(w, r);
    qputenv("TUNEBENCH_CLI", bin_.filePath("tunebench-cli").toUtf8());
    QCOMPARE(end.size(), 2);
    QCOMPARE(end.at(0).toBool(), false);
    QVERIFY2(end.at(1).toString().contains("no revision 'no-such-revision'"), qPrintable(end.at(1).toString()));
    QVERIFY(w.lastGate().isEmpty());
    QCOMPARE(runLabel(w), QString("gate: could not run"));
  }
};

QTEST_MAIN(TestGateWindow)
#include "test_gate_window.moc"
