// Helpers shared by the UI tests: where the fake child and the test traces are, and a real CLI when present.
#pragma once

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QString>
#include <QTest>
#include <functional>

namespace tbtest {

// Spins the event loop until `cond` holds or `ms` pass; returns `cond` at the end.
inline bool waitFor(const std::function<bool()>& cond, int ms) {
  QElapsedTimer t;
  t.start();
  while (!cond() && t.elapsed() < ms) QTest::qWait(20);
  return cond();
}

inline QString python() { return QStandardPaths::findExecutable("python3"); }
inline QString fakeChild() { return QStringLiteral(TB_FAKE_CHILD); }

// The Kineto test trace: the profiler engineer's copy in tests/testdata, else ../shared/traces.
inline QString kinetoTrace() {
  for (const QString& p : {QStringLiteral(TB_TESTDATA_DIR "/kineto_train_step_rank0.json.gz"),
                           QStringLiteral(TB_SHARED_TRACES_DIR "/kineto_train_step_rank0.json.gz"),
                           QStringLiteral("/work/shared/traces/kineto_train_step_rank0.json.gz")})
    if (QFileInfo::exists(p)) return p;
  return {};
}

// A tunebench-cli that has the engine (`knobs --json` works): $TUNEBENCH_CLI, else this build's CLI.
inline QString realCliWithEngine() {
  QStringList cands;
  if (!qEnvironmentVariable("TUNEBENCH_CLI").isEmpty()) cands << qEnvironmentVariable("TUNEBENCH_CLI");
  cands << QStringLiteral(TB_CLI_PATH);
  for (const QString& c : cands) {
    if (!QFileInfo(c).isExecutable()) continue;
    QProcess p;
    p.start(c, {"knobs", "--json"});
    if (p.waitForFinished(20000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0) return c;
  }
  return {};
}

// Steps measured (past the warm-up) under config revision `rev` of a window's run. A template so that this
// header needs no MainWindow (tests without one include it too).
template <class Window>
int measuredSteps(const Window& w, int rev) {
  int n = 0;
  for (const auto& x : w.run()->record().steps) n += x.config_rev == rev && !x.warmup;
  return n;
}

// Opens a trace in a window and waits for it: "" when it opened, else why not (the window's reason, or the
// wait's end). A template for the same reason as measuredSteps.
template <class Window>
QString openTraceAndWait(Window& w, const QString& path, int ms) {
  QSignalSpy spy(&w, &Window::traceOpenFinished);
  w.openTrace(path);
  if (!spy.wait(ms)) return QStringLiteral("no traceOpenFinished within %1 ms").arg(ms);
  return spy.at(0).at(0).toBool() ? QString() : QStringLiteral("failed: ") + spy.at(0).at(1).toString();
}

}  // namespace tbtest
