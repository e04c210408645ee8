// A user's script in the main window (offscreen), with the real CLI and the project's Python: opened, run and
// watched live (its profiler chunks on the timeline, what watching costs it, its loader's verdict), stopped, and
// started again with other arguments.
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/analysis_panel.h"
#include "ui/main_window.h"
#include "ui/timeline_widget.h"
#include "ui_test_util.h"

using namespace tb::ui;

class TestScriptWindow : public QObject {
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

  // A user's script opened in the GUI: the panel shows it (Start runs it again, not the built-in model),
  // its torch.profiler chunks reach the timeline, and the status bar says what traced it.
  void liveScriptFromRealCli() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");
    qputenv("TUNEBENCH_CLI", cli.toUtf8());
    QFile script(tmp_.filePath("tiny train.py"));  // a space in the path: quoted in the panel
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write("import sys, torch\n"
                 "from torch.utils.data import DataLoader, TensorDataset\n"
                 "ds = TensorDataset(torch.randn(256, 3, 8, 8), torch.randint(0, 4, (256,)))\n"
                 "loader = DataLoader(ds, batch_size=16)\n"
                 "model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 4))\n"
                 "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "for epoch in range(int(sys.argv[2])):\n"
                 "    for x, y in loader:\n"
                 "        opt.zero_grad()\n"
                 "        torch.nn.functional.cross_entropy(model(x), y).backward()\n"
                 "        opt.step()\n");
    script.close();
    MainWindow w;
    w.setQuiet(true);
    w.findChild<QSpinBox*>("trace_every")->setValue(4);
    QVERIFY(w.openScript(script.fileName(), {"--epochs", "1000"}));
    auto* model = w.findChild<QComboBox*>("model");
    auto* args = w.findChild<QLineEdit*>("script_args");
    QCOMPARE(model->currentText(), QString("script"));
    QCOMPARE(w.findChild<QLineEdit*>("model_path")->text(), QFileInfo(script.fileName()).absoluteFilePath());
    QCOMPARE(QProcess::splitCommand(args->text()), QStringList({"--epochs", "1000"}));
    const bool up = waitFor([&] { return w.timeline()->data() != nullptr || !w.run()->isRunning(); }, 60000);
    if (!w.run()->isRunning() && w.lastError().contains("torch")) QSKIP("no python3 with torch here");
    QVERIFY2(up && w.timeline()->data(), qPrintable(w.lastError() + w.run()->stderrTail()));
    QVERIFY(w.timeline()->data()->eventCount() > 0);
    const QString device = w.findChild<QLabel*>("device_label")->text();
    QVERIFY2(device.contains("PyTorch"), qPrintable(device));
    const QString collector = w.findChild<QLabel*>("collector_label")->text();
    QVERIFY2(collector.contains("off") && collector.contains("no CUDA device"), qPrintable(collector));
    // What watching costs the script, beside its throughput, once a chunk's stop lies on screen.
    auto* watch = w.findChild<QLabel*>("watch_label");
    QVERIFY(watch);
    QVERIFY2(waitFor([&] { return watch->text().startsWith("watching costs "); }, 60000),
             qPrintable(watch->text()));
    // The loader's verdict, live (the launcher's loader_parts after a chunk, against the steps so far).
    QVERIFY2(waitFor([&] { return w.analysis()->loaderText().startsWith("loader: "); }, 60000),
             qPrintable(w.analysis()->loaderText()));
    QVERIFY2(w.analysis()->loaderText().contains("in the training process (num_workers=0)"),
             qPrintable(w.analysis()->loaderText()));
    // TB_SCREENSHOT_DIR: the window watching the script, to look at (not a check).
    if (const QString dir = qEnvironmentVariable("TB_SCREENSHOT_DIR"); !dir.isEmpty()) {
      w.resize(1400, 900);
      w.show();
      QTest::qWait(8000);
      w.grab().save(dir + "/script_live.png");
    }
    QSignalSpy fin(w.run(), &RunController::finished);
    w.stopRun();
    QVERIFY(waitFor([&] { return fin.count() == 1; }, 10000));
    // Start runs the script again, with its arguments.
    args->setText("--epochs 1");
    w.findChild<QPushButton*>("start_button")->click();
    QVERIFY(waitFor([&] { return fin.count() == 2; }, 60000));
    QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
    QCOMPARE(int(w.run()->record().steps.size()), 16);  // one epoch of 256 / 16
  }
};

QTEST_MAIN(TestScriptWindow)
#include "test_script_window.moc"
