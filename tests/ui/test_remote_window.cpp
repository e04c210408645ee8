// The GUI on a remote target (docs/remote.md): a real sshd on this machine (tests/remote/sshd_fixture.h), the window
// connected to it, a real `serve` on the other side. Steps and trace chunks arrive (the chunks' bytes in the
// stream, written here), a toggle applies, a killed ssh leaves the window with what it had and nothing
// running on the server, and each connection failure is one clear line.
#include <signal.h>
#include <unistd.h>

#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <set>

#include "../remote/processes.h"
#include "../remote/sshd_fixture.h"
#include "ui/main_window.h"
#include "ui/run_controller.h"
#include "ui/timeline_widget.h"
#include "ui_test_util.h"
#include "client/inline_files.h"
#include <nlohmann/json.hpp>

using namespace tb::ui;
using tbtest::waitFor;

namespace {
// Remote serves of this test: their command line has --inline-files, only a remote serve's has.
std::vector<pid_t> remoteServes() {
  std::vector<pid_t> out;
  for (pid_t p : tb::test_util::processes_with("--inline-files"))
    if (tb::test_util::command_line(p).rfind(TB_CLI_PATH " serve", 0) == 0) out.push_back(p);
  return out;
}
}  // namespace

class TestRemoteWindow : public QObject {
  Q_OBJECT
  tb::test_util::SshdFixture sshd_;
  QTemporaryDir settings_;
  QString skip_;

 private slots:
  void initTestCase() {
    // The recent hosts go to this test's own settings file, not the user's.
    QCoreApplication::setOrganizationName("TuneBenchTest");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings_.path());
    if (tbtest::realCliWithEngine().isEmpty()) {
      skip_ = "no tunebench-cli with the engine";
      return;
    }
    skip_ = QString::fromStdString(sshd_.start());
    if (skip_.isEmpty()) qputenv("TUNEBENCH_SSH_COMMAND", QByteArray::fromStdString(sshd_.ssh_command()));
  }

  void aRemoteRunFillsTheWindowAndALostConnectionKeepsWhatArrived() {
    if (!skip_.isEmpty()) QSKIP(qPrintable("cannot start a private sshd: " + skip_));
    MainWindow w;
    w.setQuiet(true);
    QVERIFY(w.connectTo("tbtest", TB_CLI_PATH));
    QVERIFY(w.windowTitle().contains("tbtest"));
    QCOMPARE(w.recentHosts().value(0), QString("tbtest"));
    // The host's CLI path is remembered: connecting by name alone (the dialog) finds it again.
    QVERIFY(w.connectTo(""));
    QVERIFY(!w.run()->isRemote());
    QVERIFY(w.connectTo("tbtest"));
    QCOMPARE(QString::fromStdString(w.run()->remoteCli()), QString(TB_CLI_PATH));
    // The paths are the server's: no local file dialogs.
    QVERIFY(!w.findChild<QPushButton*>("data_browse")->isEnabled());
    RunOptions o;
    o.model = "mnist_cnn";
    o.data = "synthetic";
    o.trace_every = 4;
    QVERIFY(w.startRun(o));
    QVERIFY2(waitFor([&] { return w.timeline()->data() != nullptr || !w.run()->isRunning(); }, 60000),
             qPrintable(w.run()->stderrTail()));
    QVERIFY2(w.timeline()->data(), qPrintable(w.lastError() + w.run()->record().failure + w.run()->stderrTail()));
    QVERIFY(w.timeline()->data()->eventCount() > 0);
    // The chunk is a file here, not the server's path.
    const auto& chunk = w.run()->record().chunks.front();
    QVERIFY2(QFileInfo::exists(chunk.path), qPrintable(chunk.path));
    QVERIFY2(!chunk.path.startsWith(QString::fromStdString(sshd_.remote_tmp())), qPrintable(chunk.path));
    auto* device = w.findChild<QLabel*>("device_label");
    if (device) QVERIFY2(device->text().contains("on tbtest"), qPrintable(device->text()));
    // A toggle reaches the remote run.
    QSignalSpy applied(w.run(), &RunController::configApplied);
    w.run()->sendSet("zero_grad_none", "on");
    QVERIFY2(waitFor([&] { return applied.count() >= 1; }, 30000), qPrintable(w.run()->stderrTail()));
    // The link dies: the window keeps every step, says so, and the server runs nothing more.
    const size_t steps = w.run()->record().steps.size();
    const pid_t ssh = tb::test_util::ssh_child_of(::getpid());
    QVERIFY(ssh > 0);
    QSignalSpy fin(w.run(), &RunController::finished);
    ::kill(ssh, SIGKILL);
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 10000));
    QVERIFY(!fin.at(0).at(0).toBool());
    QVERIFY(w.run()->record().steps.size() >= steps);
    QVERIFY2(w.run()->record().failure.contains("steps received and kept"), qPrintable(w.run()->record().failure));
    QVERIFY2(w.run()->record().failure.startsWith("the connection to tbtest ended"), qPrintable(w.run()->record().failure));
    QVERIFY2(waitFor([&] { return remoteServes().empty(); }, 20000), "the remote serve outlived its connection");
    QVERIFY(waitFor([&] { return std::filesystem::is_empty(sshd_.remote_tmp()); }, 30000));
  }

  // Connected to two hosts (this machine twice): Start runs one live group across them, started by
  // tunebench-cli here with torchrun on each host; the chunks hold both ranks, a toggle reaches them, and Stop
  // ends the group with nothing left on either host.
  void aGroupAcrossHostsRunsLiveInTheWindow() {
    if (!skip_.isEmpty()) QSKIP(qPrintable("cannot start a private sshd: " + skip_));
    if (QStandardPaths::findExecutable("torchrun").isEmpty()) QSKIP("torchrun is not installed");
    MainWindow w;
    w.setQuiet(true);
    QVERIFY(w.connectTo("tbtest,tbtest", TB_CLI_PATH));
    QVERIFY(w.run()->isGroup());
    QVERIFY2(w.windowTitle().contains("tbtest,tbtest"), qPrintable(w.windowTitle()));
    RunOptions o;
    o.model = "mnist_cnn";
    o.data = "synthetic";
    o.knobs = {{"batch_size", "4"}};
    o.trace_every = 3;
    QVERIFY(w.startRun(o));
    QVERIFY2(waitFor([&] { return !w.run()->record().chunks.empty() || !w.run()->isRunning(); }, 120000),
             qPrintable(w.run()->stderrTail()));
    QVERIFY2(!w.run()->record().chunks.empty(), qPrintable(w.run()->record().failure + w.run()->stderrTail()));
    std::ifstream f(w.run()->record().chunks.front().path.toStdString());
    const auto chunk = nlohmann::json::parse(f, nullptr, false);
    QVERIFY(chunk.is_object());
    std::set<int64_t> ranks;
    for (const auto& e : chunk["traceEvents"])
      if (e.value("name", "") == "step") ranks.insert(e.value("pid", int64_t(0)));
    QCOMPARE(ranks.size(), size_t(2));
    QCOMPARE(w.run()->record().steps.front().samples, 8.0);  // two ranks at batch 4
    QSignalSpy applied(w.run(), &RunController::configApplied);
    w.run()->sendSet("zero_grad_none", "on");
    QVERIFY2(waitFor([&] { return applied.count() >= 1; }, 30000), qPrintable(w.run()->stderrTail()));
    QSignalSpy fin(w.run(), &RunController::finished);
    w.run()->stop();
    QVERIFY2(waitFor([&] { return fin.count() == 1; }, 60000), qPrintable(w.run()->stderrTail()));
    QVERIFY2(fin.at(0).at(0).toBool(), qPrintable(fin.at(0).at(1).toString() + w.run()->stderrTail()));
    QVERIFY(waitFor([&] { return remoteServes().empty(); }, 20000));
    const bool clean = waitFor([&] { return std::filesystem::is_empty(sshd_.remote_tmp()); }, 15000);
    std::string left;
    for (const auto& e : std::filesystem::recursive_directory_iterator(sshd_.remote_tmp())) left += e.path().string() + " ";
    QVERIFY2(clean, left.c_str());
  }

  // The serve on the server dies (OOM killer, a crash): the window keeps its steps and shows why.
  void aCrashedRemoteServeKeepsWhatArrived() {
    if (!skip_.isEmpty()) QSKIP(qPrintable("cannot start a private sshd: " + skip_));
    RunController rc;
    QVERIFY(rc.setRemote("tbtest", TB_CLI_PATH).isEmpty());
    QSignalSpy fin(&rc, &RunController::finished);
    QVERIFY(rc.start({}, {"serve", "--model", "mnist_cnn", "--data", "synthetic"}));
    QVERIFY2(waitFor([&] { return rc.record().steps.size() >= 3 || fin.count() > 0; }, 60000), qPrintable(rc.stderrTail()));
    QVERIFY(fin.count() == 0);
    int killed = 0;
    for (pid_t p : remoteServes()) killed += ::kill(p, SIGKILL) == 0;
    QCOMPARE(killed, 1);
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 15000));
    QVERIFY(!fin.at(0).at(0).toBool());
    const QString msg = fin.at(0).at(1).toString();
    QVERIFY2(msg.contains("steps received and kept") && msg.contains("137"), qPrintable(msg));
    QVERIFY(rc.record().steps.size() >= 3);
    QVERIFY(waitFor([&] { return std::filesystem::is_empty(sshd_.remote_tmp()); }, 30000));
  }

  void eachConnectionFailureIsOneClearLine() {
    if (!skip_.isEmpty()) QSKIP(qPrintable("cannot start a private sshd: " + skip_));
    struct Case {
      QString host, cli, says;
    };
    const Case cases[] = {
        {"127.0.0.1:1", TB_CLI_PATH, "refused the connection"},
        {"tbbadkey", TB_CLI_PATH, "refused the authentication"},
        {"tbtest", "/nonexistent/tunebench-cli", "has no '/nonexistent/tunebench-cli'"},
    };
    for (const auto& c : cases) {
      RunController rc;
      QVERIFY(rc.setRemote(c.host, c.cli).isEmpty());
      QSignalSpy fin(&rc, &RunController::finished);
      QVERIFY(rc.start({}, {"serve", "--model", "mnist_cnn", "--data", "synthetic"}));
      QVERIFY2(waitFor([&] { return fin.count() == 1; }, 30000), qPrintable(c.host));
      QVERIFY(!fin.at(0).at(0).toBool());
      const QString msg = fin.at(0).at(1).toString();
      QVERIFY2(msg.section('\n', 0, 0).contains(c.says), qPrintable(c.host + ": " + msg));
    }
    RunController rc;
    QVERIFY(rc.setRemote("-oProxyCommand=x").contains("starts with '-'"));
  }

  // A carried chunk is unpacked off the UI thread; the messages after it wait, so the order holds.
  void aCarriedChunkIsUnpackedOffTheUiThreadInOrder() {
    RunController rc;
    QStringList order;
    QString chunk_path;
    connect(&rc, &RunController::traceChunk, [&](const QString& p, qint64, qint64) {
      order << "trace";
      chunk_path = p;
    });
    connect(&rc, &RunController::step, [&](const StepSample&) { order << "step"; });
    std::string big = R"({"traceEvents":[)";
    for (int i = 0; i < 20000; ++i) big += R"({"name":"aten::add","ph":"X","ts":)" + std::to_string(i) + R"(,"dur":1},)";
    big += R"({"name":"end","ph":"X","ts":0,"dur":1}]})";
    const nlohmann::json trace = {{"v", 1}, {"type", "trace"}, {"path", "/srv/tunebench-serve-1/chunk-0.json"},
                                  {"first_step", 0}, {"last_step", 3}, {"data", tb::client::pack_bytes(big)}};
    const nlohmann::json step = {{"v", 1}, {"type", "step"}, {"i", 4}, {"samples", 32}, {"wall_ns", 1000}};
    rc.feed(QByteArray::fromStdString(trace.dump() + "\n" + step.dump() + "\n"));
    QVERIFY2(order.isEmpty(), qPrintable(order.join(',')));  // nothing handled inside feed()
    QVERIFY(waitFor([&] { return order.size() == 2; }, 10000));
    QCOMPARE(order, QStringList({"trace", "step"}));
    QVERIFY(QFileInfo(chunk_path).fileName().endsWith("chunk-0.json"));
    QFile f(chunk_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll().toStdString(), big);
    QCOMPARE(rc.record().chunks.front().path, chunk_path);
  }

  void aCorruptCarriedFileIsAWarningNotACrash() {
    QTemporaryDir dir;
    QString why;
    restoreInlineFiles(R"({"type":"trace","path":"/srv/c.json","data":"@@@"})", dir.path(), "0-", &why);
    QVERIFY(why.contains("not base64"));
    restoreInlineFiles(R"({"type":"trace","path":"/srv/c.json","data":"H4sIAAAA"})", dir.path(), "0-", &why);
    QVERIFY2(why.contains("corrupt"), qPrintable(why));
  }
};

QTEST_MAIN(TestRemoteWindow)
#include "test_remote_window.moc"
