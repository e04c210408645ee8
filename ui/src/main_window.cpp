#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QInputDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyleFactory>
#include <QStyleHints>
#include <QTemporaryDir>
#include <QTime>
#include <QTimer>
#include <QToolBar>
#include <QUrl>
#include <QtConcurrent/QtConcurrent>

#include "ui/compare_panel.h"
#include "ui/findings_panel.h"
#include "ui/segments.h"
#include "ui/throughput_chart.h"
#include "ui/timeline_widget.h"
#include "ui/toggles_panel.h"

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
constexpr int kMaxRecent = 10;
constexpr int kLiveChunks = 3;  // the timeline shows the latest few trace chunks of a live run

QDockWidget* makeDock(QMainWindow* w, const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area) {
  auto* d = new QDockWidget(title, w);
  d->setObjectName(name);  // saveState() needs names
  d->setWidget(content);
  w->addDockWidget(area, d);
  return d;
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
  refresh_timer_->setInterval(150);  // coalesce step bursts into one chart/compare refresh
  buildUi();
  buildMenus();
  restoreSettings();

  connect(refresh_timer_, &QTimer::timeout, this, [this] {
    chart_->refresh();
    compare_->refresh();
  });
  connect(loader_, &QFutureWatcher<LoadedTrace>::finished, this, [this] {
    progress_->hide();
    onTraceLoaded(loader_->result(), loader_live_);
    if (live_pending_) {
      live_pending_ = false;
      loadLiveChunks();
    }
  });

  // Run protocol wiring.
  connect(run_, &RunController::hello, this, [this](const QJsonObject& m) {
    setStatusFromHello(m);
    toggles_->setKnobs(run_->record().knobs);
    toggles_->setLive(true);
    log(tr("connected: %1").arg(m.value("device").toObject().value("name").toString()));
  });
  connect(run_, &RunController::started, this, [this](const QJsonObject& m) {
    QHash<QString, QString> v;
    const QJsonObject cfg = m.value("config").toObject();
    for (auto it = cfg.begin(); it != cfg.end(); ++it) v.insert(it.key(), knobValueText(it.value()));
    toggles_->setValues(v);
    run_label_->setText(tr("running %1 on %2").arg(m.value("model").toString(), m.value("data").toString()));
    log(tr("started %1 on %2").arg(m.value("model").toString(), m.value("data").toString()));
  });
  connect(run_, &RunController::step, this, [this](const StepSample& s) {
    perf_label_->setText(tr("step %1 · %2 samples/s%3").arg(s.i).arg(s.samplesPerSec(), 0, 'f', 1).arg(s.warmup ? tr(" (warm-up)") : ""));
    scheduleRefresh();
  });
  connect(run_, &RunController::configApplied, this, [this](const ConfigChange& c) {
    QHash<QString, QString> v;
    for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) v.insert(it.key(), knobValueText(it.value()));
    toggles_->setValues(v);
    QStringList ch;
    for (auto it = c.changed.begin(); it != c.changed.end(); ++it) ch << it.key() + "=" + knobValueText(it.value());
    log(tr("config rev %1 applied: %2").arg(c.rev).arg(ch.join(", ")));
    scheduleRefresh();
  });
  connect(run_, &RunController::traceChunk, this, [this](const QString& path, qint64 a, qint64 b) {
    live_chunks_ << path;
    while (live_chunks_.size() > kLiveChunks) live_chunks_.removeFirst();
    log(tr("trace chunk steps %1–%2: %3").arg(a).arg(b).arg(QFileInfo(path).fileName()));
    loadLiveChunks();
  });
  connect(run_, &RunController::finding, this, [this](const QJsonObject& m) { findings_->addRunFinding(m); });
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
  });
  connect(run_, &RunController::tuneDone, this, [this](const QJsonObject& m) {
    progress_->hide();
    const QString html = m.value("report_html").toString();
    log(tr("auto-tune done: ×%1, report %2").arg(m.value("speedup").toDouble(), 0, 'f', 2).arg(html));
    if (!quiet_ && !html.isEmpty()) {
      auto* box = new QMessageBox(QMessageBox::Information, tr("Auto-tune done"),
                                  tr("Speed-up ×%1.\nReport: %2").arg(m.value("speedup").toDouble(), 0, 'f', 2).arg(html),
                                  QMessageBox::Open | QMessageBox::Close, this);
      box->setAttribute(Qt::WA_DeleteOnClose);
      connect(box, &QMessageBox::finished, this, [html](int r) {
        if (r == QMessageBox::Open) QDesktopServices::openUrl(QUrl::fromLocalFile(html));
      });
      box->open();
    }
  });
  connect(run_, &RunController::done, this, [this](const QJsonObject& s) {
    log(tr("done: %1 steps, median %2 %3 (%4)")
            .arg(s.value("steps").toInt())
            .arg(s.value("throughput_median").toDouble(), 0, 'f', 1)
            .arg(s.value("unit").toString("samples/s"), s.value("reason").toString()));
  });
  connect(run_, &RunController::failed, this, [this](const QString& msg) { showError(tr("Cannot start the run"), msg); });
  connect(run_, &RunController::finished, this, [this](bool ok, const QString& msg) {
    scheduleRefresh();
    toggles_->setLive(false);
    run_label_->setText(ok ? tr("run finished") : tr("run failed"));
    if (!ok) {
      showError(tr("The run failed"), msg + tr("\n\nEverything received so far is kept and can be exported."));
      emit runFailed(msg);
    }
  });
  connect(run_, &RunController::runningChanged, this, [this](bool) { updateRunActions(); });

  connect(toggles_, &TogglesPanel::knobChanged, this, [this](const QString& id, const QString& v) {
    if (run_->isRunning()) {
      run_->sendSet(id, v);
      log(tr("set %1=%2 (live)").arg(id, v));
    } else {
      pending_knobs_.insert(id, v);
    }
  });
  connect(findings_, &FindingsPanel::evidenceRequested, this, [this](qint64 a, qint64 b) { timeline_->selectInterval(a, b); });
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
  chart_->setRecord(&run_->record());
  compare_->setRecord(&run_->record());
  updateRunActions();
}

MainWindow::~MainWindow() {
  loader_->waitForFinished();
  if (run_->isRunning()) {
    run_->disconnect(this);
    run_->stop();
  }
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
  model_->addItems({"mnist_cnn", "resnet18", "resnet50", "vit_tiny", "torchscript"});
  model_path_ = new QLineEdit(md);
  model_path_->setPlaceholderText(tr("TorchScript file (.pt)"));
  auto* model_browse = new QPushButton(tr("…"), md);
  model_browse->setMaximumWidth(32);
  auto* mrow = new QHBoxLayout;
  mrow->addWidget(model_path_);
  mrow->addWidget(model_browse);
  data_ = new QComboBox(md);
  data_->setObjectName("data");
  data_->addItems({"synthetic", "imagefolder", "mnist"});
  data_path_ = new QLineEdit(md);
  data_path_->setPlaceholderText(tr("folder (image folder / MNIST IDX files)"));
  auto* data_browse = new QPushButton(tr("…"), md);
  data_browse->setMaximumWidth(32);
  auto* drow = new QHBoxLayout;
  drow->addWidget(data_path_);
  drow->addWidget(data_browse);
  auto* make_demo = new QPushButton(tr("Make demo dataset"), md);
  make_demo->setToolTip(tr("512 JPEGs, 160×160, 10 classes, in the cache directory (made once)"));
  steps_ = new QSpinBox(md);
  steps_->setRange(0, 1000000);
  steps_->setSpecialValueText(tr("until Stop"));
  trace_every_ = new QSpinBox(md);
  trace_every_->setRange(0, 10000);
  trace_every_->setValue(20);
  trace_every_->setSpecialValueText(tr("off"));
  trace_every_->setSuffix(tr(" steps"));
  start_btn_ = new QPushButton(QIcon::fromTheme("media-playback-start"), tr("Start"), md);
  stop_btn_ = new QPushButton(QIcon::fromTheme("media-playback-stop"), tr("Stop"), md);
  auto* brow = new QHBoxLayout;
  brow->addWidget(start_btn_);
  brow->addWidget(stop_btn_);
  form->addRow(tr("Model"), model_);
  form->addRow(QString(), mrow);
  form->addRow(tr("Data"), data_);
  form->addRow(QString(), drow);
  form->addRow(QString(), make_demo);
  form->addRow(tr("Steps"), steps_);
  form->addRow(tr("Trace every"), trace_every_);
  form->addRow(brow);
  connect(model_browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("TorchScript model"), {}, tr("TorchScript (*.pt *.pth *.ts *.zip);;All files (*)"));
    if (!f.isEmpty()) {
      model_->setCurrentText("torchscript");
      model_path_->setText(f);
    }
  });
  connect(data_browse, &QPushButton::clicked, this, [this] {
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
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);

  auto* d1 = makeDock(this, tr("Model & data"), "dock_model", md, Qt::LeftDockWidgetArea);
  auto* d2 = makeDock(this, tr("Toggles"), "dock_toggles", toggles_, Qt::LeftDockWidgetArea);
  auto* d3 = makeDock(this, tr("Throughput"), "dock_chart", chart_, Qt::BottomDockWidgetArea);
  auto* d4 = makeDock(this, tr("Findings"), "dock_findings", findings_, Qt::RightDockWidgetArea);
  auto* d5 = makeDock(this, tr("Compare"), "dock_compare", compare_, Qt::BottomDockWidgetArea);
  auto* d6 = makeDock(this, tr("Log"), "dock_log", log_, Qt::RightDockWidgetArea);
  splitDockWidget(d1, d2, Qt::Vertical);
  splitDockWidget(d4, d6, Qt::Vertical);
  splitDockWidget(d3, d5, Qt::Horizontal);
  resizeDocks({d1, d4}, {270, 330}, Qt::Horizontal);
  resizeDocks({d3}, {260}, Qt::Vertical);
  resizeDocks({d3, d5}, {760, 640}, Qt::Horizontal);

  // Status bar.
  device_label_ = new QLabel(tr("no run"));
  collector_label_ = new QLabel;
  run_label_ = new QLabel;
  perf_label_ = new QLabel;
  progress_ = new QProgressBar;
  progress_->setMaximumWidth(220);
  progress_->hide();
  statusBar()->addWidget(device_label_);
  statusBar()->addWidget(collector_label_);
  statusBar()->addPermanentWidget(run_label_);
  statusBar()->addPermanentWidget(perf_label_);
  statusBar()->addPermanentWidget(progress_);
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(QIcon::fromTheme("document-open"), tr("&Open…"), this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Open trace, model or report"), {},
                                                   tr("Traces (*.json *.json.gz *.gz);;Training scripts (*.py);;TorchScript models (*.pt *.pth *.ts);;Reports (*.html);;All files (*)"));
    if (!f.isEmpty()) openPath(f);
  });
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addAction(tr("Load &knobs JSON…"), this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Knobs JSON (tunebench-cli knobs --json)"), {}, tr("JSON (*.json)"));
    if (!f.isEmpty()) loadKnobsFile(f);
  });
  file->addSeparator();
  auto* exp = file->addMenu(tr("&Export"));
  exp->addAction(tr("Comparisons as &HTML…"), this, [this] { exportDialog("html"); });
  exp->addAction(tr("Comparisons as &Markdown…"), this, [this] { exportDialog("md"); });
  exp->addAction(tr("Comparisons as &JSON…"), this, [this] { exportDialog("json"); });
  exp->addSeparator();
  exp->addAction(tr("Timeline as &PNG…"), this, [this] { exportDialog("png"); })->setShortcut(QKeySequence(tr("Ctrl+Shift+P")));
  exp->addAction(tr("&Chrome trace (Perfetto)…"), this, [this] { exportDialog("trace"); });
  file->addSeparator();
  file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);

  auto* runm = menuBar()->addMenu(tr("&Run"));
  act_start_ = runm->addAction(QIcon::fromTheme("media-playback-start"), tr("&Start"), this, [this] { startRun(optionsFromPanel()); });
  act_start_->setShortcut(QKeySequence(tr("F5")));
  act_stop_ = runm->addAction(QIcon::fromTheme("media-playback-stop"), tr("S&top"), this, &MainWindow::stopRun);
  act_stop_->setShortcut(QKeySequence(tr("Shift+F5")));
  runm->addAction(tr("Start the &demo"), this, [this] { startDemo(); })->setShortcut(QKeySequence(tr("Ctrl+D")));
  runm->addSeparator();
  act_trace_ = runm->addAction(tr("Record &trace"), this, [this](bool on) { run_->sendTrace(on); });
  act_trace_->setCheckable(true);
  act_trace_->setChecked(true);
  act_tune_ = runm->addAction(tr("&Auto-tune"), this, [this] {
    run_->sendTune(tune_budget_->value());
    progress_->show();
    progress_->setRange(0, 0);
    log(tr("auto-tune started (budget %1 s)").arg(tune_budget_->value()));
  });
  act_tune_->setShortcut(QKeySequence(tr("Ctrl+T")));

  auto* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Fit timeline"), timeline_, &TimelineWidget::fit);
  view->addAction(tr("&Zoom to selection"), timeline_, &TimelineWidget::zoomToSelection);
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
  view->addSeparator();
  view->addAction(tr("&Reset layout"), this, [this] {
    QSettings().remove("window/state");
    for (QDockWidget* d : findChildren<QDockWidget*>()) d->show();
    statusBar()->showMessage(tr("Layout resets on the next start"), 4000);
  });

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Shortcuts"), this, [this] {
    QMessageBox::information(this, tr("Timeline shortcuts"),
                             tr("Ctrl+wheel, W / S: zoom\nDrag, A / D, Shift+wheel: pan\nWheel: scroll rows\nF: fit\n"
                                "Shift+drag or right-drag: select a range; Z: zoom to it\nClick: select an event (shows its "
                                "launch → kernel flow)\nDouble-click: zoom to the event\nEsc: clear selection"));
  });
  help->addAction(tr("&About TuneBench"), this, [this] {
    QMessageBox::about(this, tr("About TuneBench"),
                       tr("TuneBench — make GPU training fast: run, see the timeline, flip one knob, measure.\nQt %1").arg(qVersion()));
  });

  auto* tb = addToolBar(tr("Main"));
  tb->setObjectName("toolbar_main");
  tb->addAction(open);
  tb->addSeparator();
  tb->addAction(act_start_);
  tb->addAction(act_stop_);
  tb->addSeparator();
  tb->addWidget(new QLabel(tr(" budget ")));
  tune_budget_ = new QSpinBox;
  tune_budget_->setRange(10, 3600);
  tune_budget_->setValue(120);
  tune_budget_->setSuffix(" s");
  tb->addWidget(tune_budget_);
  tb->addAction(act_tune_);
}

void MainWindow::restoreSettings() {
  QSettings s;
  if (!restoreGeometry(s.value("window/geometry").toByteArray())) resize(1500, 920);
  restoreState(s.value("window/state").toByteArray());
  model_->setCurrentText(s.value("run/model", "mnist_cnn").toString());
  data_->setCurrentText(s.value("run/data", "synthetic").toString());
  data_path_->setText(s.value("run/data_path").toString());
  model_path_->setText(s.value("run/model_path").toString());
  rebuildRecentMenu();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("run/model", model_->currentText());
  s.setValue("run/data", data_->currentText());
  s.setValue("run/data_path", data_path_->text());
  s.setValue("run/model_path", model_path_->text());
  stopRun();
  e->accept();
}

QStringList MainWindow::recentFiles() const { return QSettings().value("recent").toStringList(); }

void MainWindow::addRecent(const QString& path) {
  QStringList r = recentFiles();
  const QString abs = QFileInfo(path).absoluteFilePath();
  r.removeAll(abs);
  r.prepend(abs);
  while (r.size() > kMaxRecent) r.removeLast();
  QSettings().setValue("recent", r);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList r = recentFiles();
  for (int i = 0; i < r.size(); ++i) {
    auto* a = recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(r[i]).fileName()), this, [this, p = r[i]] { openPath(p); });
    a->setToolTip(r[i]);
    a->setStatusTip(r[i]);
  }
  recent_menu_->setEnabled(!r.isEmpty());
  if (!r.isEmpty()) {
    recent_menu_->addSeparator();
    recent_menu_->addAction(tr("Clear"), this, [this] {
      QSettings().remove("recent");
      rebuildRecentMenu();
    });
  }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) openPath(u.toLocalFile());
  e->acceptProposedAction();
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
  device_label_->setText(tr("%1 · LibTorch %2 · CUDA %3").arg(dev, v.value("libtorch").toString("?"), cuda.isEmpty() ? tr("none") : cuda));
  // CPU throughput depends on which GEMM path the engine's dense layers took (reference BLAS vs oneDNN).
  const QString dense = m.value("cpu_dense").toString();
  device_label_->setToolTip(dense.isEmpty() ? QString() : tr("CPU dense layers: %1").arg(dense));
  const QJsonObject c = m.value("collector").toObject();
  const bool on = c.value("enabled").toBool(false);
  collector_label_->setText(on ? tr("GPU collector on") : tr("GPU collector off"));
  collector_label_->setToolTip(on ? QString() : c.value("reason").toString());
  collector_label_->setStyleSheet(on ? "color:#2ea043" : "color:#d29922");
  if (!on && !c.value("reason").toString().isEmpty()) collector_label_->setText(tr("GPU collector off: %1").arg(c.value("reason").toString()));
}

RunOptions MainWindow::optionsFromPanel() const {
  RunOptions o;
  o.model = model_->currentText() == "torchscript" ? "torchscript:" + model_path_->text() : model_->currentText();
  o.data = data_->currentText() == "synthetic" ? QStringLiteral("synthetic") : data_->currentText() + ":" + data_path_->text();
  o.knobs = pending_knobs_;
  o.steps = steps_->value();
  o.trace_every = trace_every_->value();
  return o;
}

bool MainWindow::startRun(const RunOptions& opt, const QString& program) {
  const QString cli = program.isEmpty() ? findCli() : program;
  QStringList args{"serve"};
  if (opt.script.isEmpty()) args << "--model" << opt.model << "--data" << opt.data;
  else args << "--script" << opt.script;
  if (!opt.knobs.isEmpty()) {
    QStringList kv;
    for (auto it = opt.knobs.begin(); it != opt.knobs.end(); ++it) kv << it.key() + "=" + it.value();
    kv.sort();
    args << "--set" << kv.join(",");
  }
  if (opt.steps > 0) args << "--steps" << QString::number(opt.steps);
  if (opt.trace_every > 0) {
    tmp_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/tunebench-run-XXXXXX");
    args << "--trace-dir" << tmp_->path() << "--trace-every" << QString::number(opt.trace_every);
  }
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
  addRecent(path);
  log(tr("script %1 %2 (run unmodified under python -m tunebench.launch)").arg(o.script, script_args.join(' ')));
  return startRun(o);
}

bool MainWindow::startProcess(const QString& program, const QStringList& args) {
  live_chunks_.clear();
  first_live_trace_ = true;
  findings_->clearRunFindings();
  log(tr("$ %1 %2").arg(program, args.join(' ')));
  const bool ok = run_->start(program, args);
  if (ok) run_label_->setText(tr("starting…"));
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
  act_trace_->setEnabled(running);
}

void MainWindow::scheduleRefresh() {
  if (!refresh_timer_->isActive()) refresh_timer_->start();
}

void MainWindow::startDemo(bool start_run) {
  const QString cli = findCli();
  if (cli.isEmpty()) {
    showError(tr("Cannot start the demo"), tr("tunebench-cli not found (set TUNEBENCH_CLI or install it next to tunebench)"));
    return;
  }
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::CacheLocation) + "/demo-images-640x480";
  const QString marker = dir + "/.tunebench-demo-complete";
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
    o.knobs = {{"workers", "0"}};
    o.trace_every = 20;
    startRun(o);
  };
  if (QFileInfo::exists(marker)) {
    launch();
    return;
  }
  QDir().mkpath(dir);
  auto* proc = new QProcess(this);
  progress_->show();
  progress_->setRange(0, 0);
  progress_->setFormat(tr("making the demo dataset…"));
  run_label_->setText(tr("making the demo dataset (once)…"));
  log(tr("making the demo dataset in %1").arg(dir));
  connect(proc, &QProcess::readyReadStandardError, this, [this, proc] {
    const QString s = QString::fromUtf8(proc->readAllStandardError());
    proc->setProperty("err", (proc->property("err").toString() + s).right(2000));
    // make-dataset prints "\rN/M images" progress on stderr; show the latest one.
    const QStringList parts = s.split(QRegularExpression("[\r\n]"), Qt::SkipEmptyParts);
    const QString last = parts.isEmpty() ? QString() : parts.last();
    const QRegularExpression re("(\\d+)\\s*/\\s*(\\d+)");
    const auto m = re.match(last);
    if (m.hasMatch() && m.captured(2).toInt() > 0) {
      progress_->setRange(0, m.captured(2).toInt());
      progress_->setValue(m.captured(1).toInt());
    }
  });
  connect(proc, &QProcess::finished, this, [this, proc, marker, launch](int code, QProcess::ExitStatus st) {
    progress_->hide();
    proc->deleteLater();
    if (st != QProcess::NormalExit || code != 0) {
      showError(tr("Cannot make the demo dataset"),
                tr("tunebench-cli make-dataset exited with status %1\n\n%2").arg(code).arg(proc->property("err").toString().trimmed()));
      return;
    }
    QFile f(marker);
    if (f.open(QIODevice::WriteOnly)) f.write("ok\n");
    launch();
  });
  proc->start(cli, {"make-dataset", "--out", dir, "--images", "256", "--size", "640x480", "--classes", "10"});
}

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
  if (live_chunks_.isEmpty()) return;
  if (loader_->isRunning()) {
    live_pending_ = true;
    return;
  }
  loader_live_ = true;
  const QStringList paths = live_chunks_;
  loader_->setFuture(QtConcurrent::run([paths] { return loadTraceChunks(paths); }));
}

void MainWindow::onTraceLoaded(LoadedTrace t, bool live) {
  if (!t.ok) {
    if (live) log(tr("live trace not loaded: %1").arg(t.error));
    else showError(tr("Cannot open the trace"), t.error);
    emit traceOpenFinished(false, t.error);
    return;
  }
  if (!t.error.isEmpty()) log(tr("some trace chunks were skipped: %1").arg(t.error));
  // Live: follow the newest chunks until the user zooms or pans, then keep their view.
  const bool keep_view = live && !first_live_trace_ && timeline_->userInteracted();
  trace_ = std::move(t);
  if (live) {
    trace_.timeline->source = "live run";
    first_live_trace_ = false;
  }
  timeline_->setData(trace_.timeline, keep_view);
  findings_->setTraceFindings(trace_.analysis ? trace_.analysis->findings : std::vector<tb::prof::Finding>{});
  if (!live) {
    const QString path = loader_->property("path").toString();
    addRecent(path);
    setWindowTitle(QStringLiteral("TuneBench — %1").arg(QFileInfo(path).fileName()));
    const auto& meta = trace_.meta;
    if (!meta.device.empty() && !run_->isRunning())
      device_label_->setText(tr("trace: %1 (%2)").arg(QString::fromStdString(meta.device), QString::fromStdString(meta.source_format)));
    statusBar()->showMessage(tr("Opened %1: %2 events, %3 tracks").arg(path).arg(trace_.timeline->eventCount()).arg(trace_.timeline->tracks.size()), 8000);
    log(tr("opened %1").arg(path));
  }
  emit traceOpenFinished(true, QString());
}

void MainWindow::loadKnobsFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    showError(tr("Cannot load knobs"), tr("%1: %2").arg(path, f.errorString()));
    return;
  }
  QString err;
  const auto knobs = parseKnobsJson(f.readAll(), &err);
  if (knobs.empty()) {
    showError(tr("Cannot load knobs"), tr("%1: %2").arg(path, err));
    return;
  }
  toggles_->setKnobs(knobs);
}

bool MainWindow::exportComparisons(const QString& path) {
  const auto& cmp = compare_->comparisons();
  QByteArray bytes;
  const QString lower = path.toLower();
  if (lower.endsWith(".json")) bytes = comparisonsJson(run_->record(), cmp);
  else if (lower.endsWith(".md") || lower.endsWith(".markdown")) bytes = comparisonsMarkdown(run_->record(), cmp).toUtf8();
  else bytes = comparisonsHtml(run_->record(), cmp).toUtf8();
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size()) {
    showError(tr("Export failed"), tr("%1: %2").arg(path, f.errorString()));
    return false;
  }
  log(tr("exported %1").arg(path));
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
  const QHash<QString, QString> filters{{"html", tr("HTML (*.html)")}, {"md", tr("Markdown (*.md)")}, {"json", tr("JSON (*.json)")},
                                        {"png", tr("PNG image (*.png)")}, {"trace", tr("Chrome trace (*.json *.json.gz)")}};
  const QString def = kind == "png" ? "timeline.png" : kind == "trace" ? "trace.json" : "tunebench-comparisons." + kind;
  const QString f = QFileDialog::getSaveFileName(this, tr("Export"), def, filters.value(kind));
  if (f.isEmpty()) return;
  if (kind == "png") exportTimelinePng(f);
  else if (kind == "trace") exportChromeTraceAsync(f);
  else exportComparisons(f);
}

}  // namespace tb::ui
