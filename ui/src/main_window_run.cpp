// MainWindow (main_window.h): run control: the panel's options, starting and stopping the `serve` child
// (an engine run or a user's script), the demo dataset, knobs files.
#include "ui/main_window.h"

#include <QDockWidget>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include "ui/compare_panel.h"
#include "ui/findings_panel.h"
#include "ui/observer_cost.h"
#include "ui/segments.h"
#include "ui/throughput_chart.h"
#include "ui/toggles_panel.h"

namespace tb::ui {

namespace {
// Arguments back into one line that QProcess::splitCommand reads the same (quotes where needed).
QString joinCommand(const QStringList& args) {
  QStringList out;
  for (QString a : args) {
    if (a.isEmpty() || a.contains(QRegularExpression(R"([\s"'])"))) a = '"' + a.replace('"', R"(""")") + '"';
    out << a;
  }
  return out.join(' ');
}
}  // namespace

RunOptions MainWindow::optionsFromPanel() const {
  RunOptions o;
  if (model_->currentText() == "script") {
    // A server's path stays as typed (relative to the remote home); a local one is made absolute.
    o.script = run_->isRemote() ? model_path_->text() : QFileInfo(model_path_->text()).absoluteFilePath();
    o.script_args = QProcess::splitCommand(script_args_->text());
  }
  o.model = model_->currentText() == "torchscript" ? "torchscript:" + model_path_->text() : model_->currentText();
  o.data = data_->currentText() == "synthetic" ? QStringLiteral("synthetic") : data_->currentText() + ":" + data_path_->text();
  o.knobs = pending_knobs_;
  o.steps = steps_->value();
  o.trace_every = trace_every_->value();
  return o;
}

bool MainWindow::startRun(const RunOptions& opt, const QString& program) {
  if (model_->currentText() == "script" && opt.script.isEmpty() && program.isEmpty()) {
    showError(tr("Cannot run the script"), tr("Model is \"script\": choose a training script (.py) first."));
    return false;
  }
  if (run_->isGroup() && !opt.script.isEmpty()) {
    showError(tr("Cannot run the script"), tr("A script's ranks are its own launcher's (torchrun): connect to one "
                                              "host to run a script there."));
    return false;
  }
  // ranks > 1: serve starts a live data-parallel group (serve --set ranks=N); the toggles reach every rank.
  if (run_->isGroup() && opt.script.isEmpty())
    log(tr("a live data-parallel group across %1, %2 rank(s) on each (torchrun on every host); a toggle changes "
           "every rank at the same step, and the trace has a row group per rank")
            .arg(run_->remoteDisplay(), opt.knobs.value("ranks", "1")));
  else if (const int n = opt.knobs.value("ranks", "1").toInt(); n > 1 && opt.script.isEmpty())
    log(tr("ranks=%1: a live data-parallel group of %1 processes (DDP over Gloo); a toggle changes every rank at "
           "the same step, and the trace has a row group per rank").arg(n));
  const QString cli = program.isEmpty() ? findCli() : program;
  live_script_ = !opt.script.isEmpty();
  lane_after_step_ = lane_drawn_step_ = -1;
  lane_clock_.invalidate();
  QStringList args{"serve"};
  if (opt.script.isEmpty()) args << "--model" << opt.model << "--data" << opt.data;
  else args << "--script" << opt.script;
  auto knobs = opt.knobs;
  // A group across hosts: every host runs `ranks` ranks (torchrun's --nproc_per_node), so the group has
  // hosts x ranks; the engine sees its size from torchrun, not from the knob.
  if (run_->isGroup() && knobs.contains("ranks")) args << "--ranks-per-host" << knobs.take("ranks");
  if (!knobs.isEmpty()) {
    QStringList kv;
    for (auto it = knobs.begin(); it != knobs.end(); ++it) kv << it.key() + "=" + it.value();
    kv.sort();
    args << "--set" << kv.join(",");
  }
  if (opt.steps > 0) args << "--steps" << QString::number(opt.steps);
  // One folder of this window's for everything the run writes here (trace chunks, a tune's reports); it goes
  // with the run. A remote run writes on its server and sends the files back in the stream.
  const bool local = !run_->isRemote() && !run_->isGroup();
  if (opt.trace_every > 0 || local) tmp_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/tunebench-run-XXXXXX");
  if (opt.trace_every > 0) args << "--trace-dir" << tmp_->path() << "--trace-every" << QString::number(opt.trace_every);
  if (local) args << "--report-dir" << tmp_->path();
  if (!opt.script.isEmpty()) args << "--" << opt.script_args;
  return startProcess(cli, args);
}

bool MainWindow::openScript(const QString& path, const QStringList& script_args) {
  if (run_->isRunning()) {
    showError(tr("Cannot run the script"), tr("A run is going on: stop it first."));
    return false;
  }
  RunOptions o;
  o.script = QFileInfo(path).absoluteFilePath();
  o.script_args = script_args;
  o.trace_every = trace_every_->value();
  // The panel shows what runs, so that Start runs it again.
  model_->setCurrentText("script");
  model_path_->setText(o.script);
  script_args_->setText(joinCommand(script_args));
  addRecent(path);
  log(tr("script %1 %2 (run unmodified under python -m tunebench.launch)").arg(o.script, script_args.join(' ')));
  return startRun(o);
}

bool MainWindow::startProcess(const QString& program, const QStringList& args) {
  live_chunks_.clear();
  live_loader_ = {};
  watch_label_->clear();
  current_knobs_.clear();
  first_live_trace_ = true;
  findings_->clearRunFindings();
  if (run_->isGroup())  // tunebench-cli starts torchrun on every host over ssh (RunController::start)
    log(tr("$ %1 %2 --remote %3 %4").arg(program, args.value(0), run_->remoteDisplay(), args.mid(1).join(' ')));
  else if (run_->isRemote())  // the trace directory is moved to the server (RunController::start)
    log(tr("$ ssh %1 %2 %3").arg(run_->remoteDisplay(), QString::fromStdString(run_->remoteCli()), args.join(' ')));
  else
    log(tr("$ %1 %2").arg(program, args.join(' ')));
  const bool ok = run_->start(program, args);
  if (ok) {
    run_label_->setText(tr("starting…"));
    showStaticTracePanels(false);  // a run: throughput and compare again
    dock_chart_->raise();
  }
  chart_->refresh();
  compare_->refresh();
  updateRunActions();
  return ok;
}

void MainWindow::stopRun() {
  if (!run_->isRunning()) return;
  run_->stop();
  run_label_->setText(tr("stopping…"));
}

void MainWindow::updateRunActions() {
  const bool running = run_->isRunning();
  act_start_->setEnabled(!running);
  start_btn_->setEnabled(!running);
  act_stop_->setEnabled(running);
  stop_btn_->setEnabled(running);
  act_tune_->setEnabled(running);
  act_price_->setEnabled(running);
  act_trace_->setEnabled(running);
}

void MainWindow::scheduleRefresh() {
  if (refresh_timer_->isActive()) return;
  // A burst of steps is one refresh kCoalesceMs after its first; a steady run is refreshed every
  // kMinRefreshGapMs (each refresh repaints the chart: at every step it was most of what the window cost).
  const qint64 since = last_refresh_.isValid() ? last_refresh_.elapsed() : kMinRefreshGapMs;
  refresh_timer_->start(int(std::max<qint64>(kCoalesceMs, kMinRefreshGapMs - since)));
}

void MainWindow::refreshLive() {
  last_refresh_.start();
  const RunRecord& rec = run_->record();
  // Segments and comparisons once for both panels.
  const auto segs = segmentRun(rec);
  if (!rec.steps.empty()) {
    const StepSample& s = rec.steps.back();
    // The current configuration's throughput as the chart's line and the Compare row give it (samples over the
    // wall time of its measured steps), not the last step's own rate.
    const Segment* cur = segs.empty() ? nullptr : &segs.back();
    QString text = cur && !cur->timings.empty()
                       ? tr("step %1 · %2 samples/s (this configuration, %3 %4steps)")
                             .arg(s.i)
                             .arg(cur->throughput(), 0, 'f', 1)
                             .arg(cur->timings.size())
                             .arg(cur->traced_left_out > 0 ? tr("untraced ") : QString())
                       : tr("step %1 · warm-up").arg(s.i);
    // The window's own cost over the current configuration's measured steps, when it is high enough to matter.
    const QString cost = segs.empty() ? QString() : observerCostText(segs.back().observerShare());
    if (!cost.isEmpty()) text += tr(" · window %1% of a core").arg(100 * segs.back().observerShare(), 0, 'f', 0);
    if (perf_label_->text() != text) perf_label_->setText(text);
    if (perf_label_->toolTip() != cost) perf_label_->setToolTip(cost);
  }
  refreshLane();
  auto cmp = compareSegments(segs);
  chart_->refresh(segs, cmp);
  compare_->refresh(std::move(cmp));
}

void MainWindow::startDemo(bool start_run) {
  const QString cli = findCli();
  if (cli.isEmpty()) {
    showError(tr("Cannot start the demo"), tr("tunebench-cli not found (set TUNEBENCH_CLI or install it next to tunebench)"));
    return;
  }
  // On a server: the images are made there, under its home (make-dataset --remote), every time (seconds).
  const bool remote = run_->isRemote();
  const QString dir = remote ? QStringLiteral(".cache/tunebench/demo-images-640x480")
                             : QStandardPaths::writableLocation(QStandardPaths::CacheLocation) + "/demo-images-640x480";
  const QString marker = remote ? QString() : dir + "/.tunebench-demo-complete";
  auto launch = [this, dir, start_run] {
    emit demoDatasetReady(dir);
    data_->setCurrentText("imagefolder");
    data_path_->setText(dir);
    model_->setCurrentText("mnist_cnn");
    if (!start_run) {
      run_label_->setText(tr("demo dataset ready"));
      return;
    }
    RunOptions o;
    o.model = "mnist_cnn";
    o.data = "imagefolder:" + dir;
    // The demo shows the loader stall and its fix. Under glibc's default malloc this 2-core demo spends
    // its time in page faults (7968 per step) and loader threads make that worse (workers=2 measured 0.83x;
    // with pinned thresholds 1.62x), so it runs with the steady allocator the tuner measures with; the
    // allocator's own effect is the tuner's first finding on a run without it (docs/cpu-results.md).
    o.knobs = {{"workers", "0"}, {"cpu_allocator", "glibc_tuned"}};
    o.trace_every = 20;
    log(tr("demo: mnist_cnn on 256 JPEGs, workers=0, cpu_allocator=glibc_tuned (steady malloc; docs/protocol.md)"));
    startRun(o);
  };
  if (!remote && QFileInfo::exists(marker)) {
    launch();
    return;
  }
  if (!remote) QDir().mkpath(dir);
  log(tr("making the demo dataset in %1").arg(dir));
  QStringList args{"make-dataset", "--out", dir, "--images", "256", "--size", "640x480", "--classes", "10"};
  startCliChild(
      args, tr("making the demo dataset…"), tr("making the demo dataset (once)…"),
      [this](const QString& line) {  // "make-dataset: 120/256 images (46%)"
        static const QRegularExpression re("(\\d+)\\s*/\\s*(\\d+)");
        const auto m = re.match(line);
        if (m.hasMatch() && m.captured(2).toInt() > 0) {
          progress_->setRange(0, m.captured(2).toInt());
          progress_->setValue(m.captured(1).toInt());
        }
      },
      [this, marker, launch](int code, const QString& out) {
        progress_->hide();
        if (code != 0) {
          showError(tr("Cannot make the demo dataset"),
                    tr("tunebench-cli make-dataset exited with status %1\n\n%2").arg(code).arg(out.right(2000)));
          return;
        }
        if (!marker.isEmpty()) {
          QFile f(marker);
          if (f.open(QIODevice::WriteOnly)) f.write("ok\n");
        }
        launch();
      });
}

void MainWindow::loadKnobsFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    showError(tr("Cannot load knobs"), tr("%1: %2").arg(path, f.errorString()));
    return;
  }
  const auto knobs = parseKnobsJson(f.readAll());
  if (!knobs) {
    showError(tr("Cannot load knobs"), tr("%1: %2").arg(path, QString::fromStdString(knobs.error().message)));
    return;
  }
  toggles_->setKnobs(*knobs);
  findings_->refresh();
}

}  // namespace tb::ui
