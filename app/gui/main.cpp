// tunebench: the desktop app. No arguments: the demo (demo image folder made once in the cache, a mnist_cnn
// run with naive defaults and tracing). With a file: opens that trace (or model / report).
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include "ui/timeline_widget.h"

#include "ui/analysis_panel.h"
#include "ui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("TuneBench");
  QApplication::setApplicationName("tunebench");
  QApplication::setApplicationVersion("0.1.0");
  tb::ui::initResources();
  tb::ui::applyPalette();

  QCommandLineParser cli;
  cli.setApplicationDescription("TuneBench: watch the training timeline, flip one knob, measure the speed-up.");
  cli.addHelpOption();
  cli.addVersionOption();
  QCommandLineOption no_demo("no-demo", "Start with an empty window instead of the demo run.");
  cli.addOption(no_demo);
  // Scripted use (docs, demos, CI screenshots): apply a knob after S seconds, save a screenshot, quit.
  QCommandLineOption set_after("set-after", "Apply KNOB=VALUE at SECONDS into the session (repeatable).", "knob=value@seconds");
  QCommandLineOption screenshot("screenshot", "Save a PNG of the window (and FILE.timeline.png) before quitting.", "file");
  QCommandLineOption quit_after("quit-after", "Quit after SECONDS.", "seconds");
  QCommandLineOption tab("tab", "Show the analysis panel's tab NAME (Loader, Steps, ...) in the screenshot.", "name");
  QCommandLineOption export_after("export", "Export the measured comparisons (.html/.md/.json) before quitting.", "file");
  QCommandLineOption remote("remote", "Run on [user@]host[:port] over ssh (your ~/.ssh/config, keys, agent); host1,host2,...: one data-parallel group across them.", "host");
  QCommandLineOption remote_cli("remote-cli", "The tunebench-cli on the server (default: on its PATH).", "path");
  cli.addOption(remote);
  cli.addOption(remote_cli);
  cli.addOption(set_after);
  cli.addOption(screenshot);
  cli.addOption(quit_after);
  cli.addOption(export_after);
  cli.addOption(tab);
  cli.addPositionalArgument("file", "A trace (.json / .json.gz, Kineto or Chrome), a TorchScript model, a report, "
                            "or a training script (.py) followed by its arguments after --.", "[file]");
  cli.process(app);

  tb::ui::MainWindow w;
  w.show();
  if (cli.isSet(remote) && !w.connectTo(cli.value(remote), cli.value(remote_cli))) return 2;
  const QStringList files = cli.positionalArguments();
  QTimer::singleShot(0, &w, [&] {
    if (!files.isEmpty() && files.front().endsWith(".py", Qt::CaseInsensitive)) {
      // tunebench train.py [-- ARGS]: everything after the script is its own command line.
      w.openScript(files.front(), files.mid(1));
    } else if (!files.isEmpty()) {
      for (const QString& f : files) w.openPath(f);
    } else if (!cli.isSet(no_demo)) {
      w.startDemo();
    }
  });
  for (const QString& spec : cli.values(set_after)) {
    const QString kv = spec.section('@', 0, 0);
    const double at = spec.section('@', 1).toDouble();
    QTimer::singleShot(int(at * 1000), &w, [&w, kv] {
      if (w.run()->isRunning()) w.run()->sendSet(kv.section('=', 0, 0), kv.section('=', 1));
    });
  }
  if (cli.isSet(quit_after)) {
    QTimer::singleShot(int(cli.value(quit_after).toDouble() * 1000), &w, [&] {
      if (cli.isSet(export_after)) w.exportComparisons(cli.value(export_after));
      if (cli.isSet(screenshot)) {
        if (cli.isSet(tab) && !w.analysis()->showTab(cli.value(tab)))
          fprintf(stderr, "tunebench: no tab '%s' in the analysis panel at the screenshot\n", qPrintable(cli.value(tab)));
        w.grab().save(cli.value(screenshot));
        w.exportTimelinePng(cli.value(screenshot) + ".timeline.png", QSize(1600, 700));
      }
      w.close();
    });
  }
  return app.exec();
}
