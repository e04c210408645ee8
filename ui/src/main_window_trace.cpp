// MainWindow (main_window.h): opening files (traces, models, scripts, reports), loading traces and live
// chunks on a worker thread, and the exports (comparisons, timeline PNG, Chrome trace).
#include "ui/main_window.h"
#include "ui/live_lane.h"

#include "client/loader_findings.h"
#include "client/loader_verdict.h"
#include "profiler/recording_cost.h"
#include "ui/watch_cost.h"

#include <optional>

#include <QComboBox>
#include <QDesktopServices>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "ui/analysis_panel.h"
#include "ui/compare_panel.h"
#include "ui/trace_compare.h"
#include "ui/findings_panel.h"
#include "ui/segments.h"
#include "ui/timeline_widget.h"

namespace tb::ui {

namespace {

// Where the detailed chunks on screen begin: the earliest event of a row that is not the step lane.
std::optional<int64_t> detailStart(const TimelineData& d) {
  std::optional<int64_t> t0;
  for (const Track& t : d.tracks) {
    if (t.name == tb::prof::kStepLaneTrackName || t.name == tb::prof::kStepLaneOutsideTrackName || t.lanes.empty() ||
        t.lanes[0].start.empty())
      continue;
    t0 = std::min(t0.value_or(t.lanes[0].start.front()), t.lanes[0].start.front());
  }
  return t0;
}

}  // namespace

bool MainWindow::openPath(const QString& path) {
  const QString lower = path.toLower();
  if (!QFileInfo::exists(path)) {
    showError(tr("Cannot open"), tr("%1: no such file").arg(path));
    return false;
  }
  if (lower.endsWith(".json") || lower.endsWith(".json.gz") || lower.endsWith(".gz") || lower.endsWith(".trace")) {
    openTrace(path);
    return true;
  }
  if (lower.endsWith(".pt") || lower.endsWith(".pth") || lower.endsWith(".ts") || lower.endsWith(".zip")) {
    model_->setCurrentText("torchscript");
    model_path_->setText(QFileInfo(path).absoluteFilePath());
    addRecent(path);
    statusBar()->showMessage(tr("Model set to %1 — press Start").arg(QFileInfo(path).fileName()), 8000);
    return true;
  }
  if (lower.endsWith(".py")) {
    bool ok = false;
    const QString args = QInputDialog::getText(this, tr("Run a training script"),
                                               tr("Arguments of %1 (as on its command line):").arg(QFileInfo(path).fileName()),
                                               QLineEdit::Normal, QString(), &ok);
    if (!ok) return false;
    return openScript(path, QProcess::splitCommand(args));
  }
  if (lower.endsWith(".html") || lower.endsWith(".htm") || lower.endsWith(".md")) {
    addRecent(path);
    QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(path).absoluteFilePath()));
    return true;
  }
  showError(tr("Cannot open"), tr("%1: not a trace (.json/.json.gz), training script (.py), TorchScript model (.pt) or report (.html)").arg(path));
  return false;
}

void MainWindow::openTrace(const QString& path) {
  if (loader_->isRunning()) loader_->waitForFinished();
  loader_live_ = false;
  progress_->show();
  progress_->setRange(0, 0);
  progress_->setFormat(tr("loading…"));
  statusBar()->showMessage(tr("Loading %1…").arg(path));
  loader_->setProperty("path", path);
  loader_->setFuture(QtConcurrent::run([path] { return loadTraceFile(path); }));
}

void MainWindow::loadLiveChunks() {
  // A script's steps are drawn whether or not a chunk came yet: every step has its box on the step lane.
  const RunRecord& rec = run_->record();
  if (live_chunks_.isEmpty() && (!live_script_ || rec.steps.empty())) return;
  if (loader_->isRunning()) {
    live_pending_ = true;
    return;
  }
  loader_live_ = true;
  const QStringList paths = live_chunks_;
  auto lane = live_script_ ? liveLane(rec, lane_after_step_) : nullptr;
  lane_clock_.start();
  lane_drawn_step_ = rec.steps.empty() ? -1 : rec.steps.back().i;
  loader_->setFuture(QtConcurrent::run([paths, lane] { return loadTraceChunks(paths, lane); }));
}

void MainWindow::refreshLane() {
  const RunRecord& rec = run_->record();
  if (!live_script_ || rec.steps.empty() || rec.steps.back().i == lane_drawn_step_) return;
  if (lane_clock_.isValid() && lane_clock_.elapsed() < kLaneRefreshMs) return;
  loadLiveChunks();
}

void MainWindow::onTraceLoaded(LoadedTrace t, bool live) {
  if (!t.ok) {
    if (live) log(tr("live trace not loaded: %1").arg(t.error));
    else showError(tr("Cannot open the trace"), t.error);
    emit traceOpenFinished(false, t.error);
    return;
  }
  if (!t.error.isEmpty()) log(tr("some trace chunks were skipped: %1").arg(t.error));
  if (live && !t.lane_note.isEmpty() && t.lane_note != trace_.lane_note) log(tr("step lane: %1").arg(t.lane_note));
  // Live: follow the newest chunks until the user zooms or pans, then keep their view.
  const bool keep_view = live && !first_live_trace_ && timeline_->userInteracted();
  trace_ = std::move(t);
  if (live) {
    trace_.timeline->source = "live run";
    first_live_trace_ = false;
  }
  timeline_->setData(trace_.timeline, keep_view);
  // A live script's lane reaches back to its first step: the view opens on the chunks on screen and the steps
  // since (the whole run is a zoom out away).
  if (live && !keep_view && trace_.lane)
    if (const auto t0 = detailStart(*trace_.timeline); t0 && *t0 < trace_.timeline->t_max) {
      const double pad = double(trace_.timeline->t_max - *t0) * 0.02;
      timeline_->setView(double(*t0) - pad, double(trace_.timeline->t_max) + pad);
    }
  trace_live_ = live;
  // A script's trace whose loader was timed carries the verdict its run printed (the "loader" document); a live
  // script's chunks do not: its verdict comes from the run's loader_parts messages.
  const auto loader = trace_.meta.documents.find("loader");
  auto verdict = tb::client::LoaderVerdict::from_text(loader == trace_.meta.documents.end() ? "" : loader->second);
  if (!verdict.valid && live) verdict = live_loader_;
  // Its copies to the device, seen only on a GPU trace (a trace written before its run took them, a live one).
  if (trace_.analysis) verdict.add_trace_transfer(trace_.analysis->input_copy_ns(), trace_.analysis->own_ns());
  showTraceFindings(verdict, live);
  analysis_->setAnalysis(trace_.analysis);
  analysis_->setRanks(trace_.ranks);
  analysis_->setLoader(verdict);
  if (live) {  // what watching costs the run, beside its throughput
    const WatchCost c = trace_.analysis ? watchCost(*trace_.analysis) : WatchCost{};
    watch_label_->setText(c.text);
    watch_label_->setToolTip(c.tip);
    watch_label_->setStyleSheet(c.high ? "color:#d29922" : "");
  }
  if (!live) {
    showStaticTracePanels(!run_->isRunning());
    // Open on a few steps, not the whole file: the first three steps with their GPU work.
    if (trace_.analysis && !trace_.analysis->steps.empty()) {
      const auto& st = trace_.analysis->steps;
      const auto& last = st[std::min<size_t>(2, st.size() - 1)];
      const double t0 = static_cast<double>(st.front().start_ns);
      const double t1 = static_cast<double>(std::max(last.end_ns, last.gpu_end_ns));
      timeline_->setView(t0 - (t1 - t0) * 0.02, t1 + (t1 - t0) * 0.02);
    }
    const QString path = loader_->property("path").toString();
    addRecent(path);
    setWindowTitle(QStringLiteral("TuneBench — %1").arg(QFileInfo(path).fileName()));
    const auto& meta = trace_.meta;
    if (!meta.device.empty() && !run_->isRunning())
      device_label_->setText(tr("trace: %1 (%2)").arg(QString::fromStdString(meta.device), QString::fromStdString(meta.source_format)));
    // What recording cost the program, from the trace's own metadata: how much of it is the profiler's.
    const auto cost = tb::prof::recording_cost(meta, trace_.timeline->t_max - trace_.timeline->t_min);
    statusBar()->showMessage(tr("Opened %1: %2 events, %3 tracks").arg(path).arg(trace_.timeline->eventCount()).arg(trace_.timeline->tracks.size()) +
                                 (cost.text.empty() ? QString() : tr("; recording: %1").arg(QString::fromStdString(cost.text))),
                             15000);
    if (!cost.text.empty()) device_label_->setToolTip(tr("Recording: %1").arg(QString::fromStdString(cost.text)));
    log(tr("opened %1").arg(path));
  }
  emit traceOpenFinished(true, QString());
}

void MainWindow::showStaticTracePanels(bool static_trace) {
  // A file on screen has no throughput or live comparisons to show; its analysis is what to read.
  dock_chart_->setVisible(!static_trace);
  dock_compare_->setVisible(!static_trace);
  dock_analysis_->show();
  if (static_trace) dock_analysis_->raise();
}

bool MainWindow::goToStep(int64_t index) {
  if (!trace_.analysis) return false;
  for (const auto& s : trace_.analysis->steps) {
    if (s.index != index) continue;
    timeline_->selectInterval(std::min(s.start_ns, s.gpu_start_ns), std::max(s.end_ns, s.gpu_end_ns));
    statusBar()->showMessage(tr("step %1: %2 ms").arg(index).arg(s.duration_ns() / 1e6, 0, 'f', 3), 8000);
    return true;
  }
  statusBar()->showMessage(tr("No step %1 in the trace on screen").arg(index), 5000);
  return false;
}

bool MainWindow::findOnTimeline(const QString& text) {
  if (text.trimmed().isEmpty()) return false;
  if (timeline_->findNext(text.trimmed())) return true;
  statusBar()->showMessage(tr("No op or kernel named like '%1' on the timeline").arg(text.trimmed()), 6000);
  return false;
}

void MainWindow::compareWith(const QString& path) {
  if (!trace_.ok || trace_.sources.isEmpty()) {
    emit compareFinished(false, tr("no trace on screen to compare"));
    return;
  }
  compareFiles(trace_.sources.front(), path);
}

void MainWindow::compareFiles(const QString& a, const QString& path) {
  statusBar()->showMessage(tr("Comparing with %1…").arg(path));
  auto* watcher = new QFutureWatcher<TraceComparison>(this);
  connect(watcher, &QFutureWatcher<TraceComparison>::finished, this, [this, watcher, a, path] {
    const TraceComparison c = watcher->result();
    watcher->deleteLater();
    statusBar()->clearMessage();
    if (!c.ok) {
      showError(tr("Cannot compare"), c.error);
      emit compareFinished(false, c.error);
      return;
    }
    last_compare_html_ = c.html;
    log(tr("compared %1 (A) with %2 (B)").arg(a, path));
    if (!quiet_) {
      auto* dlg = new QDialog(this);
      dlg->setAttribute(Qt::WA_DeleteOnClose);
      dlg->setWindowTitle(tr("Compare: %1 vs %2").arg(QFileInfo(a).fileName(), QFileInfo(path).fileName()));
      auto* v = new QVBoxLayout(dlg);
      auto* text = new QTextBrowser;
      text->setHtml(c.html);
      v->addWidget(text);
      dlg->resize(1000, 720);
      dlg->show();
    }
    emit compareFinished(true, c.html);
  });
  watcher->setFuture(QtConcurrent::run([a, path] { return compareTraceFiles(a, path); }));
}

bool MainWindow::exportComparisons(const QString& path) {
  const QString lower = path.toLower();
  const QString flag = lower.endsWith(".json") ? "--json" : lower.endsWith(".md") || lower.endsWith(".markdown") ? "--md" : "--html";
  return exportReport({{flag, path}});
}

bool MainWindow::exportReport(const QList<QPair<QString, QString>>& outputs) {
  // The tuner's own report writer renders it (engine/session_report.h): one report, whether a tune or the
  // window wrote it. The document goes to the CLI in a file; what it could not render is still written.
  // The loader's verdict the Loader tab shows goes with it: the report says why the loader is slow too.
  QJsonObject loader;
  if (analysis_->loader().valid) {
    const std::string text = analysis_->loader().to_json().dump();
    loader = QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
  }
  const QJsonObject doc = sessionDocument(run_->record(), compare_->comparisons(), compare_->decisions(), loader);
  const QByteArray bytes = QJsonDocument(doc).toJson(QJsonDocument::Indented);
  QTemporaryDir dir(QDir::tempPath() + "/tunebench-export-XXXXXX");
  const QString in = dir.path() + "/session.json";
  QFile f(in);
  if (!dir.isValid() || !f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) {
    showError(tr("Export failed"), tr("cannot write the session document: %1").arg(f.errorString()));
    return false;
  }
  f.close();
  QStringList args{"report", "--session", in};
  QStringList paths;
  for (const auto& [flag, p] : outputs) args << flag << p, paths << p;
  QString why;
  const QString cli = findCli();
  if (cli.isEmpty()) {
    why = tr("tunebench-cli not found (set TUNEBENCH_CLI or put it next to tunebench)");
  } else {
    QProcess proc;
    proc.start(cli, args);
    // The report writer needs about a second (the engine's start-up); a minute is a hang.
    if (!proc.waitForFinished(60000)) {
      proc.kill();
      proc.waitForFinished(1000);
      why = tr("tunebench-cli report did not finish within 60 s");
    } else if (proc.exitStatus() != QProcess::NormalExit || proc.exitCode() != 0) {
      why = QString::fromUtf8(proc.readAllStandardError()).trimmed().section('\n', -1);
      if (why.isEmpty()) why = tr("tunebench-cli report exited with status %1").arg(proc.exitCode());
    }
  }
  if (!why.isEmpty()) {
    // Nothing measured is lost: the document itself lands next to the first output.
    const QString keep = QFileInfo(paths.value(0)).absolutePath() + "/" + QFileInfo(paths.value(0)).completeBaseName() +
                         ".session.json";
    QFile::remove(keep);
    const bool kept = QFile::copy(in, keep);
    showError(tr("Export failed"), why + (kept ? tr(" (the measurements are in %1)").arg(keep) : QString()));
    return false;
  }
  log(tr("exported %1").arg(paths.join(", ")));
  return true;
}

bool MainWindow::exportTimelinePng(const QString& path, const QSize& size) {
  const QImage img = timeline_->toImage(size.isValid() ? size : timeline_->size().expandedTo(QSize(1200, 600)));
  if (!img.save(path, "PNG")) {
    showError(tr("Export failed"), tr("%1: cannot write PNG").arg(path));
    return false;
  }
  log(tr("exported %1").arg(path));
  return true;
}

bool MainWindow::exportChromeTrace(const QString& path) {
  const QString err = tb::ui::exportChromeTrace(trace_, path);
  if (!err.isEmpty()) {
    showError(tr("Export failed"), tr("%1: %2").arg(path, err));
    return false;
  }
  log(tr("exported %1").arg(path));
  return true;
}

void MainWindow::exportChromeTraceAsync(const QString& path) {
  if (!trace_.ok) {
    showError(tr("Export failed"), tr("%1: no trace to export").arg(path));
    emit chromeTraceExported(false, tr("no trace to export"));
    return;
  }
  statusBar()->showMessage(tr("Exporting %1…").arg(path));
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
    const QString err = watcher->result();
    watcher->deleteLater();
    statusBar()->clearMessage();
    if (!err.isEmpty()) {
      showError(tr("Export failed"), tr("%1: %2").arg(path, err));
    } else {
      log(tr("exported %1").arg(path));
    }
    emit chromeTraceExported(err.isEmpty(), err);
  });
  // The LoadedTrace is copied (shared pointers and file names): a trace opened meanwhile does not change
  // what this export writes.
  watcher->setFuture(QtConcurrent::run([t = trace_, path] { return tb::ui::exportChromeTrace(t, path); }));
}

void MainWindow::exportDialog(const QString& kind) {
  const QHash<QString, QString> filters{{"report", tr("Report: HTML, with .md and .json beside it (*.html)")},
                                        {"html", tr("HTML (*.html)")}, {"md", tr("Markdown (*.md)")}, {"json", tr("JSON (*.json)")},
                                        {"png", tr("PNG image (*.png)")}, {"trace", tr("Chrome trace (*.json *.json.gz)")}};
  const QString def = kind == "png" ? "timeline.png" : kind == "trace" ? "trace.json" : kind == "report" ? "tunebench-report.html" : "tunebench-report." + kind;
  const QString f = QFileDialog::getSaveFileName(this, tr("Export"), def, filters.value(kind));
  if (f.isEmpty()) return;
  if (kind == "png") exportTimelinePng(f);
  else if (kind == "trace") exportChromeTraceAsync(f);
  else if (kind == "report") {
    // The tuner's three files with one stem: R.html, R.md, R.json.
    const QString stem = f.endsWith(".html", Qt::CaseInsensitive) ? f.left(f.size() - 5) : f;
    exportReport({{"--html", stem + ".html"}, {"--md", stem + ".md"}, {"--json", stem + ".json"}});
  } else exportComparisons(f);
}

// The trace's findings in the Findings panel, the loader-stall one saying what `verdict`'s model says
// (client/loader_findings.h): at each trace, and again when a live script's loader_parts bring a newer verdict.
void MainWindow::showTraceFindings(const tb::client::LoaderVerdict& verdict, bool live) {
  if (trace_.analysis) tb::client::apply_loader_verdict(verdict, trace_.analysis->findings);
  std::vector<tb::prof::Finding> found = trace_.analysis ? trace_.analysis->findings : std::vector<tb::prof::Finding>{};
  if (trace_.ranks) found.insert(found.begin(), trace_.ranks->findings.begin(), trace_.ranks->findings.end());
  findings_->setTraceFindings(found);
  // Nothing found is a result too: say over what, so that 500 steps with nothing wrong do not read "not yet".
  size_t lane_steps = 0;
  if (trace_.timeline)
    for (const Track& t : trace_.timeline->tracks)
      if (t.name == tb::prof::kStepLaneTrackName && !t.lanes.empty()) lane_steps = t.lanes[0].size();
  const size_t detailed = trace_.analysis ? trace_.analysis->steps.size() : 0;
  findings_->setEmptyText(
      lane_steps > 0 ? tr("No findings in %1 steps (%2 in detail): no loader stall, time outside training, memory "
                          "climb or slowdown past the thresholds of docs/analysis.md.").arg(lane_steps).arg(detailed)
      : detailed > 0 ? tr("No findings in the %1 steps of the trace.").arg(detailed)
                     : QString());
  if (live) findings_->applyKnobValues(current_knobs_);  // chunks from before a fix do not bring it back
}

}  // namespace tb::ui
