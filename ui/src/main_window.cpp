// MainWindow (main_window.h): construction, the docks and the status bar, the run protocol's wiring, errors
// and the log. The menus, run control and trace opening/exports live in main_window_{menus,run,trace}.cpp.
#include "ui/main_window.h"

#include <algorithm>

#include <QApplication>
#include <QComboBox>
#include <QDesktopServices>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyleFactory>
#include <QStyleHints>
#include <QTemporaryDir>
#include <QTime>
#include <QTimer>
#include <QUrl>

#include "client/inputs.h"
#include "ui/analysis_panel.h"
#include "ui/compare_panel.h"
#include "ui/findings_panel.h"
#include "ui/live_loader.h"
#include "ui/segments.h"
#include "ui/throughput_chart.h"
#include "ui/timeline_widget.h"
#include "ui/toggles_panel.h"
#include "ui/tune_summary.h"

static void initTbResources() { Q_INIT_RESOURCE(tunebench); }

namespace tb::ui {

void initResources() { initTbResources(); }

void applyPalette() {
  const QString theme = qEnvironmentVariable("TUNEBENCH_THEME").toLower();
  bool dark = theme == "dark";
#if QT_VERSION >= QT_VERSION_CHECK(6, 5, 0)
  if (theme.isEmpty()) dark = QGuiApplication::styleHints()->colorScheme() == Qt::ColorScheme::Dark;
#else
  if (theme.isEmpty()) dark = QApplication::palette().color(QPalette::Window).lightness() < 128;
#endif
  if (!dark) return;  // the system palette as is
  QApplication::setStyle(QStyleFactory::create("Fusion"));
  QPalette p;
  p.setColor(QPalette::Window, QColor(0x26, 0x2a, 0x33));
  p.setColor(QPalette::WindowText, QColor(0xdc, 0xe1, 0xea));
  p.setColor(QPalette::Base, QColor(0x1d, 0x20, 0x27));
  p.setColor(QPalette::AlternateBase, QColor(0x24, 0x28, 0x30));
  p.setColor(QPalette::Text, QColor(0xdc, 0xe1, 0xea));
  p.setColor(QPalette::Button, QColor(0x2e, 0x33, 0x3d));
  p.setColor(QPalette::ButtonText, QColor(0xdc, 0xe1, 0xea));
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xd6));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::ToolTipBase, QColor(0x1d, 0x20, 0x27));
  p.setColor(QPalette::ToolTipText, QColor(0xdc, 0xe1, 0xea));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x6b, 0x72, 0x80));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x6b, 0x72, 0x80));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x6b, 0x72, 0x80));
  QApplication::setPalette(p);
}

namespace {
constexpr int kLiveChunks = 3;  // the timeline shows the latest few trace chunks of a live run

QDockWidget* makeDock(QMainWindow* w, const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area) {
  auto* d = new QDockWidget(title, w);
  d->setObjectName(name);  // saveState() needs names
  d->setWidget(content);
  w->addDockWidget(area, d);
  return d;
}

// A path's line and its "…" button, one row; the remote mode finds the button by its object name.
struct PathRow {
  QHBoxLayout* row;
  QPushButton* browse;
};
PathRow pathRow(QLineEdit* path, const char* browse_name, QWidget* parent) {
  auto* browse = new QPushButton(MainWindow::tr("…"), parent);
  browse->setObjectName(browse_name);
  browse->setMaximumWidth(32);
  auto* row = new QHBoxLayout;
  row->addWidget(path);
  row->addWidget(browse);
  return {row, browse};
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("TuneBench");
  setWindowIcon(QIcon(":/tunebench/icon.svg"));
  setAcceptDrops(true);
  run_ = new RunController(this);
  loader_ = new QFutureWatcher<LoadedTrace>(this);
  refresh_timer_ = new QTimer(this);
  refresh_timer_->setSingleShot(true);
  buildUi();
  buildMenus();
  restoreSettings();

  connect(refresh_timer_, &QTimer::timeout, this, &MainWindow::refreshLive);
  connect(loader_, &QFutureWatcher<LoadedTrace>::finished, this, [this] {
    progress_->hide();
    onTraceLoaded(loader_->result(), loader_live_);
    if (live_pending_) {
      live_pending_ = false;
      loadLiveChunks();
    }
  });

  connectRunStart();
  connectRunMessages();
  connectPanels();
  chart_->setRecord(&run_->record());
  compare_->setRecord(&run_->record());
  updateRunActions();
}

// A run starting (hello, started) and what it sends while it goes: steps, applied changes, trace chunks.
void MainWindow::connectRunStart() {
  connect(run_, &RunController::hello, this, [this](const QJsonObject& m) {
    setStatusFromHello(m);
    toggles_->setKnobs(run_->record().knobs);
    findings_->refresh();  // re-gate "Try" against what this run can apply
    toggles_->setLive(true);
    log(tr("connected: %1").arg(m.value("device").toObject().value("name").toString()));
  });
  connect(run_, &RunController::started, this, [this](const QJsonObject& m) {
    QHash<QString, QString> v;
    const QJsonObject cfg = m.value("config").toObject();
    for (auto it = cfg.begin(); it != cfg.end(); ++it) v.insert(it.key(), knobValueText(it.value()));
    toggles_->setValues(v);
    // A script's label is its file name (the path and its arguments in the tip): the status bar also holds the
    // throughput and what watching costs.
    const QString model = m.value("model").toString(), data = m.value("data").toString();
    if (model.startsWith("script:")) {
      run_label_->setText(tr("running %1").arg(QFileInfo(model.mid(7)).fileName()));
      run_label_->setToolTip(tr("%1 %2").arg(model.mid(7), data));
    } else {
      run_label_->setText(tr("running %1 on %2").arg(model, data));
      run_label_->setToolTip(QString());
    }
    log(tr("started %1 on %2").arg(m.value("model").toString(), m.value("data").toString()));
  });
  connect(run_, &RunController::step, this, [this](const StepSample&) { scheduleRefresh(); });
  connect(run_, &RunController::configApplied, this, [this](const ConfigChange& c) {
    QHash<QString, QString> v;
    for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) v.insert(it.key(), knobValueText(it.value()));
    toggles_->setValues(v);
    current_knobs_ = v;
    findings_->applyKnobValues(v);  // a fix now in place is no finding any more
    QStringList ch;
    for (auto it = c.changed.begin(); it != c.changed.end(); ++it) ch << it.key() + "=" + knobValueText(it.value());
    log(tr("config rev %1 applied: %2").arg(c.rev).arg(ch.join(", ")));
    scheduleRefresh();
  });
  connect(run_, &RunController::traceChunk, this, [this](const QString& path, qint64 a, qint64 b) {
    // An Auto-tune paused the run between the chunks on screen and this one: drawn together they would span
    // the whole tune, a long empty stretch with the steps squeezed at both ends. The timeline starts over.
    const auto& tunes = run_->record().tunes;
    if (!tunes.empty() && tunes.back().before_step < a && !live_chunks_.isEmpty() &&
        live_chunk_first_.value(live_chunks_.last(), a) <= tunes.back().before_step)
      live_chunks_.clear();
    live_chunk_first_.insert(path, a);
    live_chunks_ << path;
    // The latest chunks, each with the loader's lanes written after it (a "lanes-" file: not a chunk of its own).
    auto lanes = [](const QString& p) { return QFileInfo(p).fileName().startsWith("lanes-"); };
    while (std::count_if(live_chunks_.begin(), live_chunks_.end(), [&](const QString& p) { return !lanes(p); }) > kLiveChunks ||
           (!live_chunks_.isEmpty() && lanes(live_chunks_.first())))
      live_chunks_.removeFirst();
    log(tr("trace chunk steps %1–%2: %3").arg(a).arg(b).arg(QFileInfo(path).fileName()));
    loadLiveChunks();
  });
}

// The run's findings, loader verdicts, warnings and errors, its tunes and its end.
void MainWindow::connectRunMessages() {
  connect(run_, &RunController::finding, this, [this](const QJsonObject& m) { findings_->addRunFinding(m); });
  connect(run_, &RunController::loaderParts, this, [this](const QJsonObject& m) {
    live_loader_ = liveLoaderVerdict(run_->record(), m);
    analysis_->setLoader(live_loader_);
    if (trace_live_) showTraceFindings(live_loader_, true);  // the stall finding follows the newer verdict
  });
  connect(run_, &RunController::warning, this, [this](const QString& w) { log(tr("warning: %1").arg(w)); });
  connect(run_, &RunController::protocolError, this, [this](const QString& msg, bool recoverable) {
    log(tr("error%1: %2").arg(recoverable ? tr(" (recoverable)") : "").arg(msg));
    if (recoverable) statusBar()->showMessage(msg, 8000);
  });
  connect(run_, &RunController::badLine, this, [this](const QString& l) { log(tr("ignored non-protocol line: %1").arg(l)); });
  connect(run_, &RunController::tuneProgress, this, [this](const QString& phase, const QString& msg, double f) {
    progress_->show();
    progress_->setRange(0, 100);
    progress_->setValue(int(f * 100));
    progress_->setFormat(phase + ": %p%");
    log(tr("tune %1: %2").arg(phase, msg));
    scheduleRefresh();  // the tune's band on the chart
  });
  connect(run_, &RunController::tuneDone, this, [this](const QJsonObject& m) {
    // The live loop waited for the tune: its steps and chunks start over after it (as the chart's line does).
    if (live_script_ && !run_->record().tunes.empty()) {
      lane_after_step_ = run_->record().tunes.back().before_step;
      live_chunks_.clear();
    }
    showTuneDone(m);
    scheduleRefresh();  // the chart's tune label and the Compare row take the tuner's figures now
  });
  connect(run_, &RunController::done, this, [this](const QJsonObject& s) {
    if (s.contains("throughput_median")) {  // the engine's serve states its median
      log(tr("done: %1 steps, median %2 %3 (%4)")
              .arg(s.value("steps").toInt())
              .arg(s.value("throughput_median").toDouble(), 0, 'f', 1)
              .arg(s.value("unit").toString("samples/s"), s.value("reason").toString()));
    } else {
      // A script's launcher states none (it logged "median 0.0 samples/s" for every script): the figure the
      // status bar and the chart give, the last configuration's measured steps.
      const auto segs = segmentRun(run_->record());
      const bool measured = !segs.empty() && !segs.back().timings.empty();
      log(measured ? tr("done: %1 steps, %2 samples/s over the last configuration's %3 measured steps (%4)")
                         .arg(s.value("steps").toInt())
                         .arg(segs.back().throughput(), 0, 'f', 1)
                         .arg(segs.back().timings.size())
                         .arg(s.value("reason").toString())
                   : tr("done: %1 steps, none measured (%2)").arg(s.value("steps").toInt()).arg(s.value("reason").toString()));
    }
    if (s.value("ranks").isArray()) logGroupEnd(s);
    if (auto v = loaderVerdictAtEnd(run_->record(), s); v.valid) {
      live_loader_ = v;
      analysis_->setLoader(live_loader_);
    }
  });
  connect(run_, &RunController::failed, this, [this](const QString& msg) { showError(tr("Cannot start the run"), msg); });
  connect(run_, &RunController::finished, this, [this](bool ok, const QString& msg) {
    scheduleRefresh();
    if (live_script_) loadLiveChunks();  // its last steps, past the lane's wait
    toggles_->setLive(false);
    run_label_->setText(ok ? tr("run finished") : tr("run failed"));
    if (!ok) {
      showError(tr("The run failed"), msg + tr("\n\nEverything received so far is kept and can be exported."));
      emit runFailed(msg);
    }
  });
  connect(run_, &RunController::runningChanged, this, [this](bool) { updateRunActions(); });
}

// The panels' requests: a knob toggled or tried, evidence or a step to show, a comparison's traces, a revert.
void MainWindow::connectPanels() {
  connect(toggles_, &TogglesPanel::knobChanged, this, [this](const QString& id, const QString& v) {
    if (run_->isRunning()) {
      run_->sendSet(id, v);
      log(tr("set %1=%2 (live)").arg(id, v));
    } else {
      pending_knobs_.insert(id, v);
    }
  });
  connect(findings_, &FindingsPanel::evidenceRequested, this, [this](qint64 a, qint64 b) { timeline_->selectInterval(a, b); });
  connect(compare_, &ComparePanel::tracesRequested, this, [this](int row) {
    const auto& cmp = compare_->comparisons();
    if (row < 0 || row >= static_cast<int>(cmp.size())) return;
    const auto [before, after] = chunksForComparison(run_->record(), segmentRun(run_->record()), cmp[size_t(row)]);
    if (before.isEmpty()) {
      showError(tr("No traces to compare"),
                tr("No trace chunk lies wholly before and after %1: the run traces chunks of up to %2 steps; let it run longer "
                   "after the change").arg(cmp[size_t(row)].change).arg(trace_every_->value()));
      return;
    }
    compareFiles(before, after);
  });
  connect(timeline_, &TimelineWidget::selectionChanged, this, [this](int64_t a, int64_t b) {
    if (auto d = timeline_->data()) analysis_->setSelection(*d, a, b);
  });
  connect(analysis_, &AnalysisPanel::intervalRequested, this, [this](qint64 a, qint64 b) { timeline_->selectInterval(a, b); });
  connect(analysis_, &AnalysisPanel::findRequested, this, [this](const QString& name) { findOnTimeline(name); });
  // "Try" only what can run here, for this run: a knob this machine cannot apply, or a finding from a file
  // recorded elsewhere, is disabled with the reason.
  findings_->setTryGate([this](const FindingEntry& e) -> QString {
    if (e.knob.isEmpty()) return {};
    if (e.source == "trace" && !trace_live_) {
      const QString dev = QString::fromStdString(trace_.meta.device);
      return tr("From an opened trace%1: its fix belongs to that run. Start a run here to get findings for this "
                "machine.").arg(dev.isEmpty() ? QString() : tr(" recorded on %1").arg(dev));
    }
    for (const KnobSpec& k : toggles_->knobs()) {
      if (k.id != e.knob) continue;
      if (!k.applicable) return tr("%1 cannot take effect here: %2").arg(k.id, k.reason);
      if (k.unavailable.contains(e.value)) return tr("%1=%2 cannot take effect here: %3").arg(k.id, e.value, k.reason);
      return {};
    }
    if (!toggles_->knobs().empty()) return tr("%1 is not a knob of this run").arg(e.knob);
    return {};
  });
  connect(findings_, &FindingsPanel::tryIt, this, [this](const QString& knob, const QString& value) {
    if (knob.isEmpty()) return;
    if (run_->isRunning()) {
      run_->sendSet(knob, value);
      log(tr("try it: set %1=%2 (live)").arg(knob, value));
      statusBar()->showMessage(tr("%1=%2 sent; watch the throughput chart").arg(knob, value), 6000);
    } else {
      pending_knobs_.insert(knob, value);
      toggles_->setValues({{knob, value}});
      statusBar()->showMessage(tr("%1=%2 will apply to the next run (Run ▸ Start)").arg(knob, value), 6000);
    }
  });
  connect(compare_, &ComparePanel::revertRequested, this, [this](const QJsonObject& prev) {
    for (auto it = prev.begin(); it != prev.end(); ++it) {
      const QString v = knobValueText(it.value());
      if (run_->isRunning()) run_->sendSet(it.key(), v);
      else pending_knobs_.insert(it.key(), v);
      log(tr("revert %1=%2").arg(it.key(), v));
    }
  });
  connect(timeline_, &TimelineWidget::eventSelected, this, [this](const QString& d) { statusBar()->showMessage(d, 10000); });
}

MainWindow::~MainWindow() {
  loader_->waitForFinished();
  // The child ends before its trace directory goes: a child still writing its last chunk into it left the
  // directory behind ("QTemporaryDir: Unable to remove").
  run_->disconnect(this);
  run_->stopAndWait();
}

void MainWindow::buildUi() {
  timeline_ = new TimelineWidget(this);
  setCentralWidget(timeline_);
  setDockNestingEnabled(true);

  // Model & data.
  auto* md = new QWidget;
  auto* form = new QFormLayout(md);
  model_ = new QComboBox(md);
  model_->setObjectName("model");
  model_->addItems({"mnist_cnn", "resnet18", "resnet50", "vit_tiny", "torchscript", "script"});
  model_->setItemData(5, tr("A PyTorch training script (.py), run unmodified"), Qt::ToolTipRole);
  model_path_ = new QLineEdit(md);
  model_path_->setObjectName("model_path");
  model_path_->setPlaceholderText(tr("TorchScript file (.pt)"));
  const PathRow model_row = pathRow(model_path_, "model_browse", md);
  QHBoxLayout* mrow = model_row.row;
  data_ = new QComboBox(md);
  data_->setObjectName("data");
  data_->addItems({"synthetic", "imagefolder", "mnist"});
  data_path_ = new QLineEdit(md);
  data_path_->setPlaceholderText(tr("folder (image folder / MNIST IDX files)"));
  const PathRow data_row = pathRow(data_path_, "data_browse", md);
  QHBoxLayout* drow = data_row.row;
  auto* make_demo = new QPushButton(tr("Make demo dataset"), md);
  make_demo->setToolTip(tr("512 JPEGs, 160×160, 10 classes, in the cache directory (made once)"));
  steps_ = new QSpinBox(md);
  steps_->setObjectName("steps");
  // serve's rule (client/inputs.h): 0 runs until stopped.
  steps_->setRange(int(client::inputs::kServeStepsMin), int(client::inputs::kStepsMax));
  steps_->setSpecialValueText(tr("until Stop"));
  trace_every_ = new QSpinBox(md);
  trace_every_->setObjectName("trace_every");
  trace_every_->setRange(0, 10000);
  trace_every_->setValue(20);
  trace_every_->setSpecialValueText(tr("off"));
  trace_every_->setSuffix(tr(" steps"));
  // It was labelled "Trace every", which a sampled script's trace does not do: it is each chunk's length.
  trace_every_->setToolTip(tr("The longest chunk of full detail (ops, kernels, the loader's lanes) the trace records. "
                              "The engine's runs are traced chunk after chunk; a script's chunks are sampled to keep "
                              "tracing near 1% of its run. Every step is on the timeline either way (the step lane). "
                              "Off: no trace."));
  start_btn_ = new QPushButton(QIcon::fromTheme("media-playback-start"), tr("Start"), md);
  start_btn_->setObjectName("start_button");
  stop_btn_ = new QPushButton(QIcon::fromTheme("media-playback-stop"), tr("Stop"), md);
  auto* brow = new QHBoxLayout;
  brow->addWidget(start_btn_);
  brow->addWidget(stop_btn_);
  form->addRow(tr("Model"), model_);
  form->addRow(QString(), mrow);
  form->addRow(tr("Data"), data_);
  form->addRow(QString(), drow);
  form->addRow(QString(), make_demo);
  script_args_ = new QLineEdit(md);
  script_args_->setObjectName("script_args");
  script_args_->setPlaceholderText(tr("its arguments, e.g. --data DIR"));
  form->addRow(tr("Arguments"), script_args_);
  // A script brings its own data: the data rows give way to its command line, and Start runs the script.
  auto show_model = [this, form, mrow, drow, make_demo](const QString& m) {
    const bool script = m == "script";
    model_path_->setPlaceholderText(script ? tr("training script (.py)") : tr("TorchScript file (.pt)"));
    form->setRowVisible(mrow, script || m == "torchscript");
    form->setRowVisible(data_, !script);
    form->setRowVisible(drow, !script);
    form->setRowVisible(make_demo, !script);
    form->setRowVisible(script_args_, script);
  };
  connect(model_, &QComboBox::currentTextChanged, this, show_model);
  show_model(model_->currentText());
  form->addRow(tr("Steps"), steps_);
  form->addRow(tr("Detail chunks of"), trace_every_);
  form->addRow(brow);
  connect(model_row.browse, &QPushButton::clicked, this, [this] {
    const bool script = model_->currentText() == "script";
    const QString f = script ? QFileDialog::getOpenFileName(this, tr("Training script"), {}, tr("Python (*.py);;All files (*)"))
                             : QFileDialog::getOpenFileName(this, tr("TorchScript model"), {}, tr("TorchScript (*.pt *.pth *.ts *.zip);;All files (*)"));
    if (!f.isEmpty()) {
      if (!script) model_->setCurrentText("torchscript");
      model_path_->setText(f);
    }
  });
  connect(data_row.browse, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, tr("Dataset folder"));
    if (!d.isEmpty()) {
      if (data_->currentText() == "synthetic") data_->setCurrentText("imagefolder");
      data_path_->setText(d);
    }
  });
  connect(make_demo, &QPushButton::clicked, this, [this] {
    startDemo(false);  // the dataset only; Start runs it
  });
  connect(start_btn_, &QPushButton::clicked, this, [this] { startRun(optionsFromPanel()); });
  connect(stop_btn_, &QPushButton::clicked, this, &MainWindow::stopRun);

  toggles_ = new TogglesPanel;
  chart_ = new ThroughputChart;
  findings_ = new FindingsPanel;
  compare_ = new ComparePanel;
  log_ = new QPlainTextEdit;
  log_->setObjectName("log");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);

  auto* d1 = makeDock(this, tr("Model & data"), "dock_model", md, Qt::LeftDockWidgetArea);
  auto* d2 = makeDock(this, tr("Toggles"), "dock_toggles", toggles_, Qt::LeftDockWidgetArea);
  auto* d3 = makeDock(this, tr("Throughput"), "dock_chart", chart_, Qt::BottomDockWidgetArea);
  auto* d4 = makeDock(this, tr("Findings"), "dock_findings", findings_, Qt::RightDockWidgetArea);
  auto* d5 = makeDock(this, tr("Compare"), "dock_compare", compare_, Qt::BottomDockWidgetArea);
  auto* d6 = makeDock(this, tr("Log"), "dock_log", log_, Qt::RightDockWidgetArea);
  analysis_ = new AnalysisPanel;
  auto* d7 = makeDock(this, tr("Analysis"), "dock_analysis", analysis_, Qt::BottomDockWidgetArea);
  dock_chart_ = d3;
  dock_compare_ = d5;
  dock_analysis_ = d7;
  splitDockWidget(d1, d2, Qt::Vertical);
  splitDockWidget(d4, d6, Qt::Vertical);
  splitDockWidget(d3, d5, Qt::Horizontal);
  tabifyDockWidget(d5, d7);
  d5->raise();
  // Model & data needs its rows only; the Toggles list (27 knobs) gets the rest of the column.
  md->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
  resizeDocks({d1, d2}, {md->sizeHint().height(), 2000}, Qt::Vertical);
  resizeDocks({d1, d4}, {270, 330}, Qt::Horizontal);
  resizeDocks({d3}, {260}, Qt::Vertical);
  resizeDocks({d3, d5}, {760, 640}, Qt::Horizontal);

  // Status bar.
  device_label_ = new QLabel(tr("no run"));
  collector_label_ = new QLabel;
  device_label_->setObjectName("device_label");
  collector_label_->setObjectName("collector_label");
  run_label_ = new QLabel;
  perf_label_ = new QLabel;
  perf_label_->setObjectName("perf_label");
  watch_label_ = new QLabel;
  watch_label_->setObjectName("watch_label");
  progress_ = new QProgressBar;
  progress_->setMaximumWidth(220);
  progress_->hide();
  statusBar()->addWidget(device_label_);
  statusBar()->addWidget(collector_label_);
  statusBar()->addPermanentWidget(run_label_);
  statusBar()->addPermanentWidget(perf_label_);
  statusBar()->addPermanentWidget(watch_label_);
  statusBar()->addPermanentWidget(progress_);
}

void MainWindow::showError(const QString& title, const QString& message) {
  last_error_ = message;
  log(title + ": " + message.section('\n', 0, 0));
  statusBar()->showMessage(title + ": " + message.section('\n', 0, 0), 15000);
  if (quiet_) return;
  auto* box = new QMessageBox(QMessageBox::Warning, title, message.section("\n\n", 0, 0), QMessageBox::Ok, this);
  if (message.contains("\n\n")) box->setDetailedText(message.section("\n\n", 1));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setObjectName("error_dialog");
  box->open();  // non-blocking: the GUI keeps running (and tests keep going)
}

void MainWindow::log(const QString& line) { log_->appendPlainText(QTime::currentTime().toString("HH:mm:ss ") + line); }

void MainWindow::setStatusFromHello(const QJsonObject& m) {
  const QJsonObject v = m.value("versions").toObject();
  const QJsonObject d = m.value("device").toObject();
  QString dev = d.value("name").toString(d.value("kind").toString("?"));
  if (d.value("kind").toString() == "cpu" && d.contains("cores")) dev += tr(" (%1 cores)").arg(d.value("cores").toInt());
  if (d.value("kind").toString() == "cuda" && d.contains("sm")) dev += tr(" (sm %1)").arg(knobValueText(d.value("sm")));
  QString cuda = v.value("cuda").toString();
  // A script run reports its interpreter's torch, an engine run its LibTorch.
  const QString torch = v.contains("torch") ? tr("PyTorch %1").arg(v.value("torch").toString())
                                            : tr("LibTorch %1").arg(v.value("libtorch").toString("?"));
  const QString where = run_->isRemote() ? tr("on %1: ").arg(run_->remoteDisplay()) : QString();
  device_label_->setText(where + tr("%1 · %2 · CUDA %3").arg(dev, torch, cuda.isEmpty() ? tr("none") : cuda));
  // Without a GPU the device says why (a CPU-only LibTorch, or no driver for a CUDA one).
  const QString no_cuda = d.value("no_cuda").toString();
  device_label_->setToolTip(no_cuda.isEmpty() ? QString() : tr("No GPU: %1").arg(no_cuda));
  const QJsonObject c = m.value("collector").toObject();
  const bool on = c.value("enabled").toBool(false);
  collector_label_->setText(on ? tr("GPU collector on") : tr("GPU collector off"));
  collector_label_->setToolTip(on ? QString() : c.value("reason").toString());
  collector_label_->setStyleSheet(on ? "color:#2ea043" : "color:#d29922");
  // Its reason's first clause on the bar ("no CUDA device"), all of it in the tip: the bar also holds the
  // run, its throughput and what watching costs.
  if (!on && !c.value("reason").toString().isEmpty())
    collector_label_->setText(tr("GPU collector off: %1").arg(c.value("reason").toString().section(':', 0, 0)));
}

void MainWindow::showTuneDone(const QJsonObject& m) {
  progress_->hide();
  const QString html = m.value("report_html").toString();
  last_tune_ = tuneSummary(m);
  if (m.value("plan_only").toBool())
    log(tr("auto-tune priced: %1; report %2").arg(QString(last_tune_.detail).replace('\n', "; "), html));
  else
    log(tr("auto-tune done: %1; %2; report %3").arg(last_tune_.title, QString(last_tune_.detail).replace('\n', "; "), html));
  // The budget box keeps the last price beside its own explanation, for the tune the user starts next.
  if (m.value("plan").isString())
    tune_budget_->setToolTip(budgetToolTip() + tr("\n\nLast priced here: %1").arg(m.value("plan").toString()));
  if (!quiet_ && !html.isEmpty()) {
    auto* box = new QMessageBox(QMessageBox::Information,
                                m.value("plan_only").toBool() ? tr("Auto-tune priced") : tr("Auto-tune done"),
                                last_tune_.title + "\n\n" + last_tune_.detail + tr("\n\nReport: %1").arg(html),
                                QMessageBox::Open | QMessageBox::Close, this);
    box->setObjectName("tune_dialog");
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [html](int r) {
      if (r == QMessageBox::Open) QDesktopServices::openUrl(QUrl::fromLocalFile(html));
    });
    box->open();
  }
}

}  // namespace tb::ui
