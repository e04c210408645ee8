// MainWindow (main_window.h): the menus, the toolbar and their actions, recent files, saved settings,
// drag & drop.
#include "ui/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QInputDialog>
#include <QScreen>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolBar>
#include <QUrl>

#include "client/inputs.h"
#include "ui/timeline_widget.h"

namespace tb::ui {

namespace {
constexpr int kMaxRecent = 10;
}  // namespace

void MainWindow::buildMenus() {
  QAction* open = buildFileMenu();
  buildRunMenu();
  buildEditMenu();
  buildViewMenu();

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Shortcuts"), this, [this] {
    QMessageBox::information(this, tr("Timeline shortcuts"),
                             tr("Ctrl+wheel, W / S: zoom\nDrag, A / D, Shift+wheel: pan\nWheel: scroll rows\nF: fit\n"
                                "Shift+drag or right-drag: select a range; Z: zoom to it\nClick: select an event (shows its "
                                "launch → kernel flow)\nDouble-click: zoom to the event\nEsc: clear selection\n"
                                "Ctrl+F: find an op or kernel by name; F3: next"));
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
  tune_budget_->setObjectName("tune_budget");
  // The one rule every surface checks (client/inputs.h), and below its minimum "auto" (tune --budget auto).
  tune_budget_->setRange(int(client::inputs::kBudgetMinS) - 1, int(client::inputs::kBudgetMaxS));
  tune_budget_->setSpecialValueText(tr("auto"));
  tune_budget_->setValue(int(client::inputs::kBudgetDefaultS));
  tune_budget_->setSuffix(" s");
  tune_budget_->setToolTip(budgetToolTip());
  tb->addWidget(tune_budget_);
  tb->addAction(act_tune_);
  tb->addSeparator();
  tb->addWidget(find_edit_);
}

// Open, recent files, knobs, a server, comparisons, exports, quit; returns Open for the toolbar.
QAction* MainWindow::buildFileMenu() {
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
  file->addAction(tr("Connect to &server…"), this, [this] {
    // Runs on another machine over ssh: the user's ~/.ssh/config, keys and agent, never a password prompt.
    QStringList items = recentHosts();
    items.prepend(tr("(this machine)"));
    bool ok = false;
    const QString current = run_->isRemote() ? run_->remoteDisplay() : items.front();
    const QString host = QInputDialog::getItem(
        this, tr("Connect to server"),
        tr("Run on [user@]host[:port] over ssh (keys or agent; no password prompts).\n"
           "Several hosts (host1,host2): one data-parallel group across them, torchrun on each.\n"
           "Data, model and script paths are then paths on that server."),
        items, std::max<qsizetype>(0, items.indexOf(current)), true, &ok);
    if (ok) connectTo(host == items.front() ? QString() : host);
  });
  file->addAction(tr("&Compare with…"), this, [this] {
    if (!trace_.ok || trace_.sources.isEmpty()) {
      showError(tr("Compare"), tr("Open a trace first: it is A, the file you pick is B"));
      return;
    }
    const QString f = QFileDialog::getOpenFileName(this, tr("Compare the trace on screen with"), {},
                                                   tr("Traces (*.json *.json.gz *.gz);;All files (*)"));
    if (!f.isEmpty()) compareWith(f);
  })->setShortcut(QKeySequence(tr("Ctrl+Shift+C")));
  // The CI gate on a script at two git revisions (docs/ci.md).
  file->addAction(tr("Compare two &versions…"), this, [this] { gateDialog(); });
  file->addSeparator();
  auto* exp = file->addMenu(tr("&Export"));
  exp->addAction(tr("&Report (HTML, Markdown, JSON)…"), this, [this] { exportDialog("report"); })
      ->setShortcut(QKeySequence(tr("Ctrl+E")));
  exp->addAction(tr("Report as &Markdown only…"), this, [this] { exportDialog("md"); });
  exp->addAction(tr("Report as &JSON only…"), this, [this] { exportDialog("json"); });
  exp->addSeparator();
  exp->addAction(tr("Timeline as &PNG…"), this, [this] { exportDialog("png"); })->setShortcut(QKeySequence(tr("Ctrl+Shift+P")));
  exp->addAction(tr("&Chrome trace (Perfetto)…"), this, [this] { exportDialog("trace"); });
  file->addSeparator();
  file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);
  return open;
}

// Start and stop, data-parallel runs and tunes, the demo, tracing and the auto-tune.
void MainWindow::buildRunMenu() {
  auto* runm = menuBar()->addMenu(tr("&Run"));
  act_start_ = runm->addAction(QIcon::fromTheme("media-playback-start"), tr("&Start"), this, [this] { startRun(optionsFromPanel()); });
  act_start_->setShortcut(QKeySequence(tr("F5")));
  act_stop_ = runm->addAction(QIcon::fromTheme("media-playback-stop"), tr("S&top"), this, &MainWindow::stopRun);
  act_stop_->setShortcut(QKeySequence(tr("Shift+F5")));
  // An action that asks for a whole number (its default, range and step) and then does `act` with it; a
  // cancelled dialog does nothing.
  auto asking = [this](const QString& title, const QString& label, int value, int min, int max, int step, auto act) {
    return [this, title, label, value, min, max, step, act] {
      bool ok = false;
      const int n = QInputDialog::getInt(this, title, label, value, min, max, step, &ok);
      if (ok) act(n);
    };
  };
  // The live run's auto-tune, for a run of `run_steps` steps (0: not said), or only its price (plan_only: the
  // calibration and the noise floor, then what one pass costs); its progress bar runs until the result.
  auto start_tune = [this](int run_steps, bool plan_only = false) {
    const std::optional<double> budget = tuneBudget();
    run_->sendTune(budget, {}, run_steps, plan_only);
    progress_->show();
    progress_->setRange(0, 0);
    const QString b = budget ? tr("budget %1 s").arg(*budget)
                             : tr("budget auto: one pass over every knob, its cost said after the noise floor");
    log(plan_only       ? tr("pricing the auto-tune (%1): the calibration and the noise floor, then what one pass "
                             "costs; nothing is tried")
                              .arg(b)
        : run_steps > 0 ? tr("auto-tune started (%1, a run of %2 steps)").arg(b).arg(run_steps)
                        : tr("auto-tune started (%1)").arg(b));
  };
  // DDP over c10d (docs/distributed.md): a live group of N processes of the panel's model and data.
  runm->addAction(tr("&Data-parallel run…"), this,
                  asking(tr("Data-parallel run"), tr("Ranks (processes, one model replica each; Gloo on the CPU):"), 2,
                         2, 64, 1, [this](int n) { startRanksRun(n); }));
  // The tuner on a group of N ranks (tune --ranks N): the DDP knobs, every rank changing together.
  runm->addAction(tr("Data-parallel auto-&tune…"), this,
                  asking(tr("Data-parallel auto-tune"),
                         tr("Ranks (one group, every rank changing at the same step; budget from the Auto-tune box):"),
                         2, 2, 64, 1, [this](int n) { startRanksTune(n); }));
  runm->addAction(tr("Start the &demo"), this, [this] { startDemo(); })->setShortcut(QKeySequence(tr("Ctrl+D")));
  runm->addSeparator();
  act_trace_ = runm->addAction(tr("Record &trace"), this, [this](bool on) { run_->sendTrace(on); });
  act_trace_->setCheckable(true);
  act_trace_->setChecked(true);
  act_tune_ = runm->addAction(tr("&Auto-tune"), this, [start_tune] { start_tune(0); });
  act_tune_->setShortcut(QKeySequence(tr("Ctrl+T")));
  // What the budget buys, before one is spent: the tune's first phases, its plan line, and nothing tried (tune --plan).
  act_price_ = runm->addAction(tr("&Price the auto-tune (what one pass costs)"), this, [start_tune] { start_tune(0, true); });
  act_price_->setObjectName("act_price_tune");
  // tune --run-steps: a change whose one-time cost (a compile) pays back only after more steps is not kept.
  runm->addAction(tr("Auto-tune for a run of N &steps…"), this,
                  asking(tr("Auto-tune for a run of N steps"),
                         tr("Steps your run will take (a change whose one-time cost, a compile, pays back only after "
                            "more steps is not kept; budget from the Auto-tune box):"),
                         10000, 1, 2000000000, 1000, start_tune));
}

QString MainWindow::budgetToolTip() const {
  return tr("The auto-tune's budget. auto (below %1 s): one pass over every applicable knob, the finals included; "
            "the tune says what that costs once its noise floor is measured, and Run > Price the auto-tune says it "
            "before a tune is started")
      .arg(int(client::inputs::kBudgetMinS));
}

std::optional<double> MainWindow::tuneBudget() const {
  if (tune_budget_->value() == tune_budget_->minimum()) return std::nullopt;
  return double(tune_budget_->value());
}

// Find on the timeline: the toolbar's find box (made here) and its shortcuts.
void MainWindow::buildEditMenu() {
  auto* edit = menuBar()->addMenu(tr("&Edit"));
  find_edit_ = new QLineEdit;
  find_edit_->setObjectName("find_edit");
  find_edit_->setPlaceholderText(tr("Find op or kernel (Ctrl+F)"));
  find_edit_->setClearButtonEnabled(true);
  find_edit_->setMaximumWidth(260);
  connect(find_edit_, &QLineEdit::returnPressed, this, [this] { findOnTimeline(find_edit_->text()); });
  edit->addAction(tr("&Find…"), this, [this] {
    find_edit_->setFocus();
    find_edit_->selectAll();
  })->setShortcut(QKeySequence::Find);
  edit->addAction(tr("Find &next"), this, [this] { findOnTimeline(find_edit_->text()); })->setShortcut(QKeySequence::FindNext);
}

// The timeline's zoom, go to step, the docks shown and the layout's reset.
void MainWindow::buildViewMenu() {
  auto* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Fit timeline"), timeline_, &TimelineWidget::fit);
  view->addAction(tr("&Zoom to selection"), timeline_, &TimelineWidget::zoomToSelection);
  view->addAction(tr("Go to &step…"), this, [this] {
    const auto& a = trace_.analysis;
    if (!a || a->steps.empty()) {
      statusBar()->showMessage(tr("The trace on screen has no steps"), 5000);
      return;
    }
    bool ok = false;
    const int n = QInputDialog::getInt(this, tr("Go to step"), tr("Step number (%1–%2):").arg(a->steps.front().index).arg(a->steps.back().index),
                                       int(a->steps.front().index), int(a->steps.front().index), int(a->steps.back().index), 1, &ok);
    if (ok) goToStep(n);
  })->setShortcut(QKeySequence(tr("Ctrl+G")));
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
  view->addSeparator();
  view->addAction(tr("&Reset layout"), this, [this] {
    QSettings().remove("window/state");
    for (QDockWidget* d : findChildren<QDockWidget*>()) d->show();
    statusBar()->showMessage(tr("Layout resets on the next start"), 4000);
  });
}

void MainWindow::restoreSettings() {
  QSettings s;
  if (!restoreGeometry(s.value("window/geometry").toByteArray())) {
    // First start: most of the screen (a timeline wants width), not a fixed size.
    const QRect avail = screen() ? screen()->availableGeometry() : QRect(0, 0, 1500, 920);
    // Never past the screen: room is left for a window manager's frame, which is not known before show().
    resize(std::min(std::max(1000, avail.width() * 9 / 10), avail.width() - 16),
           std::min(std::max(700, avail.height() * 9 / 10), avail.height() - 48));
  }
  fitToScreen();
  restoreState(s.value("window/state").toByteArray());
  model_->setCurrentText(s.value("run/model", "mnist_cnn").toString());
  data_->setCurrentText(s.value("run/data", "synthetic").toString());
  data_path_->setText(s.value("run/data_path").toString());
  model_path_->setText(s.value("run/model_path").toString());
  script_args_->setText(s.value("run/script_args").toString());
  rebuildRecentMenu();
}

void MainWindow::fitToScreen() {
  // A geometry saved on a larger screen, or docks whose minimum sizes add up past a small one, must not leave
  // the window's edges off the screen it opens on: no larger than the available area, and inside it.
  QScreen* scr = screen();
  if (!scr) return;
  const QRect avail = scr->availableGeometry();
  const QSize frame_extra = frameGeometry().size() - geometry().size();
  const QSize most = avail.size() - frame_extra.expandedTo(QSize(0, 0));
  if (width() > most.width() || height() > most.height()) resize(std::min(width(), most.width()), std::min(height(), most.height()));
  QRect f = frameGeometry();
  if (!avail.contains(f)) {
    f.moveLeft(std::clamp(f.left(), avail.left(), std::max(avail.left(), avail.right() - f.width() + 1)));
    f.moveTop(std::clamp(f.top(), avail.top(), std::max(avail.top(), avail.bottom() - f.height() + 1)));
    move(f.topLeft());
  }
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("run/model", model_->currentText());
  s.setValue("run/data", data_->currentText());
  s.setValue("run/data_path", data_path_->text());
  s.setValue("run/model_path", model_path_->text());
  s.setValue("run/script_args", script_args_->text());
  stopRun();
  e->accept();
}

QStringList MainWindow::recentFiles() const { return QSettings().value("recent").toStringList(); }

QStringList MainWindow::recentHosts() const { return QSettings().value("remote/recent").toStringList(); }

bool MainWindow::connectTo(const QString& spec, const QString& remote_cli) {
  // A host's CLI path (--remote-cli) is remembered with it: File > Connect to server... finds it again.
  const QString host = spec.trimmed();
  const QString cli_key = "remote/cli/" + QString::fromUtf8(host.toUtf8().toHex());
  QString cli = remote_cli;
  if (!host.isEmpty() && cli.isEmpty()) cli = QSettings().value(cli_key).toString();
  if (const QString why = run_->setRemote(spec, cli); !why.isEmpty()) {
    showError(tr("Cannot connect"), why);
    return false;
  }
  const QString where = run_->isRemote() ? run_->remoteDisplay() : QString();
  setWindowTitle(where.isEmpty() ? tr("TuneBench") : tr("TuneBench — runs on %1").arg(where));
  // The paths are the server's then: a file dialog would show this machine's files.
  for (const char* name : {"model_browse", "data_browse"})
    if (auto* b = findChild<QPushButton*>(name)) {
      b->setEnabled(where.isEmpty());
      b->setToolTip(where.isEmpty() ? QString() : tr("Runs go to %1: type a path on that server").arg(where));
    }
  model_path_->setPlaceholderText(where.isEmpty() ? tr("TorchScript file (.pt)")
                                                  : tr("TorchScript file (.pt) on %1").arg(where));
  data_path_->setPlaceholderText(where.isEmpty() ? tr("folder (image folder / MNIST IDX files)")
                                                 : tr("folder on %1 (image folder / MNIST IDX files)").arg(where));
  device_label_->setText(where.isEmpty() ? tr("this machine") : tr("on %1 (connects at the next start)").arg(where));
  if (!where.isEmpty()) {
    QStringList r = recentHosts();
    r.removeAll(spec.trimmed());
    r.prepend(spec.trimmed());
    QSettings().setValue("remote/recent", r.mid(0, 8));
    if (!remote_cli.isEmpty()) QSettings().setValue(cli_key, remote_cli);
    log(tr("runs go to %1 over ssh; paths in Data, Model and script are that server's").arg(where));
  } else {
    log(tr("runs on this machine"));
  }
  return true;
}

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

}  // namespace tb::ui
