// The run controller against a fake child speaking the protocol (tests/ui/fake_serve.py), and against the
// real `tunebench-cli serve` when one with the engine is found ($TUNEBENCH_CLI or this build's CLI).
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

#include "ui/run_controller.h"
#include "ui/segments.h"
#include "ui_test_util.h"

using namespace tb::ui;

class TestRunController : public QObject {
  Q_OBJECT

  static bool waitFor(const std::function<bool()>& cond, int ms) { return tbtest::waitFor(cond, ms); }

 private slots:
  void initTestCase() {
    if (tbtest::python().isEmpty()) QSKIP("python3 not found: the fake child cannot run");
  }

  void parsesLinesSplitAcrossReads() {
    RunController rc;
    QSignalSpy steps(&rc, &RunController::step);
    QSignalSpy bad(&rc, &RunController::badLine);
    rc.feed("{\"v\":1,\"type\":\"step\",\"i\":3,\"samples\":32,\"wall");
    QCOMPARE(steps.count(), 0);
    rc.feed("_ns\":1000000,\"config_rev\":0}\nnot json\n{\"v\":1,\"type\":\"future_thing\"}\n");
    QCOMPARE(steps.count(), 1);
    QCOMPARE(bad.count(), 1);
    QCOMPARE(rc.record().steps.size(), size_t(1));
    QCOMPARE(rc.record().steps[0].samplesPerSec(), 32000.0);
  }

  void stepsArriveAndLiveSetChangesRevision() {
    RunController rc;
    QSignalSpy hello(&rc, &RunController::hello);
    QSignalSpy applied(&rc, &RunController::configApplied);
    QVERIFY(rc.start(tbtest::python(), {tbtest::fakeChild(), "--step-ms", "5"}));
    auto measured = [&](int rev) {
      int n = 0;
      for (const auto& s : rc.record().steps) n += s.config_rev == rev && !s.warmup;
      return n;
    };
    QVERIFY(waitFor([&] { return measured(0) >= 16; }, 60000));  // 3 windows of 5 steps for the compare
    QCOMPARE(hello.count(), 1);
    QCOMPARE(int(rc.record().knobs.size()), 3);
    QVERIFY(!rc.record().knobs[1].applicable);
    rc.sendSet("workers", "4");
    QVERIFY(waitFor([&] { return measured(1) >= 16; }, 60000));
    QCOMPARE(applied.count(), 1);
    QCOMPARE(rc.record().knobs[0].value, QString("4"));
    // The compare logic sees two segments and a faster second one (the fake doubles throughput).
    const auto segs = segmentRun(rc.record());
    QCOMPARE(int(segs.size()), 2);
    QCOMPARE(segs[1].changed.value("workers").toString(), QString("4"));
    QCOMPARE(segs[1].previous.value("workers").toString(), QString("0"));
    const auto cmp = compareSegments(segs);
    QVERIFY(cmp[0].stats.valid);
    QVERIFY(cmp[0].stats.ratio > 1.8 && cmp[0].stats.ratio < 2.2);
    QCOMPARE(QString::fromStdString(cmp[0].stats.verdict()), QString("faster"));
    QSignalSpy fin(&rc, &RunController::finished);
    QElapsedTimer t;
    t.start();
    rc.stop();
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 30000));
    QVERIFY(t.elapsed() < 2000);
    QVERIFY(fin.at(0).at(0).toBool());
    QVERIFY(!rc.record().done.isEmpty());
  }

  // Two knobs set at one step boundary are two revisions with no step between them: the next segment is
  // compared as the change of both (it was labelled with the last one only), and a knob set and set back
  // in between is no change.
  void changesBetweenTwoStepsAreOneSegment() {
    RunRecord rec;
    auto config = [](int rev, QJsonObject knobs, QJsonObject changed) {
      ConfigChange c;
      c.rev = rev;
      c.knobs = knobs;
      c.changed = changed;
      return c;
    };
    rec.configs.push_back(config(0, {{"workers", "0"}, {"persistent_workers", "off"}, {"amp", "off"}}, {}));
    rec.configs.push_back(config(1, {{"workers", "2"}, {"persistent_workers", "off"}, {"amp", "off"}}, {{"workers", "2"}}));
    rec.configs.push_back(config(2, {{"workers", "2"}, {"persistent_workers", "on"}, {"amp", "off"}}, {{"persistent_workers", "on"}}));
    rec.configs.push_back(config(3, {{"workers", "2"}, {"persistent_workers", "on"}, {"amp", "bf16"}}, {{"amp", "bf16"}}));
    rec.configs.push_back(config(4, {{"workers", "2"}, {"persistent_workers", "on"}, {"amp", "off"}}, {{"amp", "off"}}));
    for (int i = 0; i < 20; ++i) {
      StepSample s;
      s.i = i;
      s.samples = 32;
      s.wall_ns = 100000000;
      s.config_rev = i < 10 ? 0 : 4;
      rec.steps.push_back(s);
    }
    const auto segs = segmentRun(rec);
    QCOMPARE(int(segs.size()), 2);
    QCOMPARE(segs[1].changed.size(), 2);
    QCOMPARE(segs[1].changed.value("workers").toString(), QString("2"));
    QCOMPARE(segs[1].changed.value("persistent_workers").toString(), QString("on"));
    QCOMPARE(segs[1].previous.value("workers").toString(), QString("0"));
    QVERIFY(!segs[1].changed.contains("amp"));
    QCOMPARE(compareSegments(segs)[0].change, QString("persistent_workers off → on, workers 0 → 2"));
  }

  // An LBFGS script's step(closure) call evaluates its closure fewer times as it converges, each step faster
  // with it: counted per step, a change made late in the run looked 3x faster on the same per-evaluation
  // speed. The chart, the segments and the Compare rows count the batch once per evaluation.
  void aClosureStepCountsItsBatchOncePerEvaluation() {
    RunController rc;
    QString lines;
    for (int i = 0; i < 80; ++i) {
      const int evaluations = i < 40 ? 20 - i / 4 : 10 - (i - 40) / 5;  // 20 down to 11, then 10 down to 3
      const qint64 wall = qint64(evaluations * 1e6 * (1.0 + 0.02 * ((i % 3) - 1)));  // 1 ms an evaluation
      lines += QString("{\"v\":1,\"type\":\"step\",\"i\":%1,\"samples\":32,\"evaluations\":%2,\"wall_ns\":%3,"
                       "\"config_rev\":%4}\n")
                   .arg(i)
                   .arg(evaluations)
                   .arg(wall)
                   .arg(i < 40 ? 0 : 1);
    }
    rc.feed(lines.toUtf8());
    QCOMPARE(rc.record().steps.size(), size_t(80));
    QCOMPARE(rc.record().steps[0].evaluations, qint64(20));
    QCOMPARE(rc.record().steps[0].samples, 32.0);  // the loader's batch, as delivered
    QCOMPARE(rc.record().steps[1].samplesPerSec(), 32.0 * 20 / 0.02);
    RunRecord rec = rc.record();
    ConfigChange before, after;
    before.rev = 0;
    before.knobs = {{"compile", "off"}};
    after.rev = 1;
    after.knobs = {{"compile", "on"}};
    after.changed = {{"compile", "on"}};
    rec.configs = {before, after};
    const auto segs = segmentRun(rec);
    QCOMPARE(int(segs.size()), 2);
    const auto cmp = compareSegments(segs);
    QVERIFY(cmp[0].stats.valid);
    QVERIFY2(cmp[0].stats.ratio > 0.95 && cmp[0].stats.ratio < 1.05, qPrintable(QString::number(cmp[0].stats.ratio)));
  }

  void killedChildKeepsDataAndReportsError() {
    RunController rc;
    QSignalSpy fin(&rc, &RunController::finished);
    QVERIFY(rc.start(tbtest::python(), {tbtest::fakeChild(), "--mode", "crash", "--crash-after", "6", "--step-ms", "5"}));
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 60000));
    QVERIFY(!fin.at(0).at(0).toBool());
    const QString msg = fin.at(0).at(1).toString();
    QVERIFY2(msg.contains("crashed"), qPrintable(msg));
    QVERIFY2(msg.contains("CUDA out of memory"), qPrintable(msg));  // the stderr tail
    QCOMPARE(rc.record().steps.size(), size_t(6));                 // everything sent survives
    QVERIFY(!rc.record().hello.isEmpty());
    QCOMPARE(rc.record().failure, msg);
    QVERIFY(!rc.isRunning());
  }

  void nonZeroExitIsReported() {
    RunController rc;
    QSignalSpy fin(&rc, &RunController::finished);
    QVERIFY(rc.start(tbtest::python(), {"-c", "import sys; print('{\"v\":1,\"type\":\"error\",\"message\":\"model not found\",\"recoverable\":false}'); sys.stderr.write('tunebench-cli: error: bad model\\n'); sys.exit(3)"}));
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 60000));
    const QString msg = fin.at(0).at(1).toString();
    QVERIFY2(msg.contains("status 3") && msg.contains("model not found") && msg.contains("bad model"), qPrintable(msg));
  }

  void hungChildIsKilledWithinTwoSeconds() {
    // The promise (a hung run ends within 2 s) is the ladder's: its kill comes that soon after the stop.
    static_assert(RunController::kStopTermMs < RunController::kStopKillMs && RunController::kStopKillMs <= 2000);
    RunController rc;
    QSignalSpy fin(&rc, &RunController::finished);
    QVERIFY(rc.start(tbtest::python(), {tbtest::fakeChild(), "--mode", "hang", "--step-ms", "5"}));
    QVERIFY(waitFor([&] { return rc.record().steps.size() >= 3; }, 60000));
    QElapsedTimer t;
    t.start();
    rc.stop();
    // The child ignores the stop, its stdin's end and SIGTERM: only the kill ends it, at the ladder's time (a
    // coarse timer may fire a few percent early), and when the machine lets this process see it: how much later
    // is the machine's, so the bound is far from it (a ladder that never kills, or waits far longer, fails).
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 30000));
    QVERIFY2(t.elapsed() >= RunController::kStopKillMs * 9 / 10, qPrintable(QString::number(t.elapsed())));
    QVERIFY2(t.elapsed() < RunController::kStopKillMs + 10000, qPrintable(QString::number(t.elapsed())));
    QVERIFY(rc.record().done.isEmpty());  // it never answered: the kill ended it
    QVERIFY(fin.at(0).at(0).toBool());  // we asked it to stop: not reported as a failure
    QVERIFY(rc.record().steps.size() >= 3);
  }

  void missingProgramFailsCleanly() {
    RunController rc;
    QSignalSpy failed(&rc, &RunController::failed);
    QVERIFY(!rc.start("/nonexistent/tunebench-cli", {"serve"}));
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains("/nonexistent/tunebench-cli"));
  }

  void realCliServe() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");
    RunController rc;
    QSignalSpy applied(&rc, &RunController::configApplied);
    QVERIFY(rc.start(cli, {"serve", "--model", "mnist_cnn", "--data", "synthetic"}));
    QVERIFY2(waitFor([&] { return rc.record().steps.size() >= 3 || !rc.isRunning(); }, 45000),
             qPrintable(rc.stderrTail()));
    QVERIFY2(rc.record().steps.size() >= 3, qPrintable(rc.record().failure + rc.stderrTail()));
    QVERIFY(!rc.record().hello.isEmpty());
    QVERIFY(!rc.record().knobs.empty());
    const int rev0 = rc.record().steps.back().config_rev;
    rc.sendSet("zero_grad_none", "on");
    QVERIFY2(waitFor([&] { return applied.count() >= 1 && rc.record().steps.back().config_rev != rev0; }, 30000),
             qPrintable(rc.stderrTail()));
    QSignalSpy fin(&rc, &RunController::finished);
    QElapsedTimer t;
    t.start();
    rc.stop();
    // The serve answers the stop itself (its `done`, at the next step boundary), before the ladder would
    // terminate it; the ladder ends it within its kill time in any case (how soon after is the machine's).
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 30000));
    QVERIFY2(!rc.record().done.isEmpty(), qPrintable(rc.stderrTail()));
    QVERIFY(fin.at(0).at(0).toBool());
    QVERIFY2(t.elapsed() < RunController::kStopKillMs + 10000, qPrintable(QString::number(t.elapsed())));
  }
};

QTEST_GUILESS_MAIN(TestRunController)
#include "test_run_controller.moc"
