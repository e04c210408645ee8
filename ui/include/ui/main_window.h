// The TuneBench main window: the timeline as the central widget, dock panels (model & data, toggles,
// throughput, findings, compare, log), menus with shortcuts and recent files, drag & drop, a status bar with
// device / LibTorch / CUDA versions and the collector's state. Runs go through a RunController child process;
// traces load on a worker thread. Every failure (bad file, crashed child) ends in a message and lastError(),
// never in lost data: what was loaded or received stays on screen and exportable.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QHash>
#include <QJsonObject>
#include <QMainWindow>
#include <QStringList>
#include <functional>
#include <memory>
#include <optional>

#include "client/loader_verdict.h"
#include "ui/run_controller.h"
#include "ui/tune_summary.h"
#include "ui/trace_loader.h"

class QAction;
class QComboBox;
class QDockWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTemporaryDir;
class QTimer;

namespace tb::ui {

class TimelineWidget;
class TogglesPanel;
class ThroughputChart;
class FindingsPanel;
class ComparePanel;
class AnalysisPanel;

// Registers the compiled-in resources (icons); call once before creating windows.
void initResources();
// Dark Fusion palette when the system asks for dark (or TUNEBENCH_THEME=dark); otherwise the system palette.
void applyPalette();

struct RunOptions {
  QString model = "mnist_cnn";
  QString data = "synthetic";
  QHash<QString, QString> knobs;  // overrides of the defaults
  int steps = 0;                  // 0 = until stop
  int trace_every = 20;           // steps per trace chunk (0 = no tracing)
  QString script;                 // a user's Python training script (then model/data are unused)
  QStringList script_args;        // its own arguments
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a trace (.json/.json.gz), a TorchScript model (.pt/.pth/.ts: becomes the run's model) or a report
  // (.html: shown in the browser). Returns false for an unknown kind (with a message).
  bool openPath(const QString& path);
  // Runs a user's PyTorch training script, unmodified, as the live run (tunebench-cli serve --script):
  // the same timeline, toggles, compare and auto-tune as an engine run.
  bool openScript(const QString& path, const QStringList& args);
  void openTrace(const QString& path);  // async; emits traceOpenFinished
  // Starts `tunebench-cli serve` with the options (the CLI from findCli()); `program` overrides it (tests).
  bool startRun(const RunOptions& opt, const QString& program = {});
  bool startProcess(const QString& program, const QStringList& args);  // raw (tests: fake child)
  void stopRun();
  // The newcomer's demo: a demo image folder in the cache (made once, with progress), then a mnist_cnn run
  // with workers=0 and tracing on.
  void startDemo(bool start_run = true);
  // A live data-parallel run of the panel's model and data on `ranks` processes (`serve --set ranks=N`, on
  // the connected server when there is one): the panel's `ranks` becomes N, the toggles change every rank at
  // the same step, the trace chunks have a row group per rank and the Ranks tab. `steps` 0: the panel's.
  // False when it cannot start (a message says why).
  bool startRanksRun(int ranks, int steps = 0);
  // The auto-tune of such a run (`tunebench-cli tune --ranks N`, a group led by its rank 0; budget 0: the
  // panel's). Progress on the progress bar; at the end the same summary and report as a live Auto-tune, and
  // ranksTuneFinished. False when it cannot start (a message says why).
  bool startRanksTune(int ranks, int budget_s = 0);
  void loadKnobsFile(const QString& path);

  // File ▸ Export: the tuner's report (HTML, Markdown, JSON: charts, the trust table, the code to keep) of
  // this window's run: its live comparisons, an Auto-tune's as the tuner measured it, and every tune's report
  // whole (`tunebench-cli report --session`). exportComparisons writes the format its suffix names;
  // exportReport the given {"--html"/"--md"/"--json", path} pairs. Synchronous (about a second).
  bool exportComparisons(const QString& path);
  bool exportReport(const QList<QPair<QString, QString>>& outputs);
  bool exportTimelinePng(const QString& path, const QSize& size = {});
  bool exportChromeTrace(const QString& path);  // synchronous (tests, scripted use)
  // The menu's export: re-reading the source (about 1 s per million events) runs on a worker thread, so
  // the window stays live; emits chromeTraceExported when done.
  void exportChromeTraceAsync(const QString& path);

  RunController* run() const { return run_; }
  TimelineWidget* timeline() const { return timeline_; }
  TogglesPanel* toggles() const { return toggles_; }
  FindingsPanel* findings() const { return findings_; }
  ComparePanel* compare() const { return compare_; }
  ThroughputChart* chart() const { return chart_; }
  AnalysisPanel* analysis() const { return analysis_; }
  // Ctrl+F: selects the next event named like `text` on the timeline; false (and a status message) if none.
  bool findOnTimeline(const QString& text);
  // View → Go to step (Ctrl+G): selects step `index` of the trace on screen (CPU time and the GPU work it
  // launched) and zooms to it; false when there is no such step.
  bool goToStep(int64_t index);
  // File → Compare with…: diffs the trace on screen (A) against `path` (B) on a worker thread and shows the
  // result; emits compareFinished with the HTML (or the error).
  void compareWith(const QString& path);
  // Diffs two trace files (A before, B after) the same way: a toggle's before/after chunks.
  void compareFiles(const QString& a, const QString& b);
  QString lastComparisonHtml() const { return last_compare_html_; }
  // File → Compare two versions…: the CI gate (`tunebench-cli gate`, docs/ci.md) on a script at two git
  // revisions, alternated in fresh processes on this machine; the verdict, its interval and what changed go to
  // the log and a dialog, and after a change the two traced processes open in the trace comparison.
  struct GateRequest {
    QString script, baseline, candidate;  // candidate "": the working tree
    QStringList args;
    int max_time_s = 600;
    int steps = 100;
  };
  bool startGate(const GateRequest& request);
  // The last gate's JSON (gate --json), empty before one ended.
  QJsonObject lastGate() const { return last_gate_; }
  QString lastError() const { return last_error_; }
  const TuneSummary& lastTuneSummary() const { return last_tune_; }
  const LoadedTrace& currentTrace() const { return trace_; }
  QStringList recentFiles() const;
  // Runs go to [user@]host[:port] over ssh from now on ("" = this machine again); remembered in the recent
  // hosts. False (with a message shown) on a bad spec. Paths in Data / Model / script are the server's then.
  bool connectTo(const QString& spec, const QString& remote_cli = {});
  QStringList recentHosts() const;
  // Tests and scripted use: errors go to lastError()/the log only, no dialog.
  void setQuiet(bool quiet) { quiet_ = quiet; }

 signals:
  void traceOpenFinished(bool ok, const QString& error);
  void runFailed(const QString& message);
  void demoDatasetReady(const QString& dir);
  void chromeTraceExported(bool ok, const QString& error);
  void compareFinished(bool ok, const QString& html_or_error);
  void ranksTuneFinished(bool ok);
  // A gate ended: `ran` false when it could not run; `line` is its verdict line (or why it could not run).
  void gateFinished(bool ran, const QString& line);

 protected:
  void closeEvent(QCloseEvent*) override;
  void dragEnterEvent(QDragEnterEvent*) override;
  void dropEvent(QDropEvent*) override;

 private:
  void buildUi();
  void buildMenus();
  // Parts of buildMenus (main_window_menus.cpp); the File menu's Open is the toolbar's first action too.
  QAction* buildFileMenu();
  void buildRunMenu();
  void buildEditMenu();
  void buildViewMenu();
  // Parts of the constructor: the run protocol's messages (a run starting, its changes and chunks; warnings,
  // tunes and its end) and the panels' requests to the window.
  void connectRunStart();
  void connectRunMessages();
  void connectPanels();
  void restoreSettings();
  void fitToScreen();  // the window inside the available area of its screen
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void showError(const QString& title, const QString& message);
  // The end of an auto-tune (the protocol's tune_done, or a data-parallel tune's summary): log, dialog.
  void showTuneDone(const QJsonObject& tune_done);
  // main_window_ranks.cpp: the arguments of a data-parallel `verb` of the panel, and a tunebench-cli child.
  QStringList ranksArgs(const QString& verb, int ranks, const QString& what);
  // The end of a live group (done's "ranks"): in step or apart, in the log.
  void logGroupEnd(const QJsonObject& summary);
  bool startCliChild(QStringList args, const QString& busy, const QString& label,
                     const std::function<void(const QString&)>& line, const std::function<void(int, const QString&)>& done);
  void log(const QString& line);
  void setStatusFromHello(const QJsonObject& hello);
  void onTraceLoaded(LoadedTrace t, bool live);
  // A static trace shows its analysis; the live panels (throughput, compare) come back with a run.
  void showStaticTracePanels(bool static_trace);
  void loadLiveChunks();
  void showTraceFindings(const tb::client::LoaderVerdict& verdict, bool live);
  void scheduleRefresh();
  void refreshLive();  // the status bar's step, the chart and the compare panel, from the record
  void refreshLane();  // a live script's step lane, redrawn as steps arrive (at most every kLaneRefreshMs)
  void updateRunActions();
  RunOptions optionsFromPanel() const;
  void exportDialog(const QString& kind);

  RunController* run_ = nullptr;
  TimelineWidget* timeline_ = nullptr;
  TogglesPanel* toggles_ = nullptr;
  ThroughputChart* chart_ = nullptr;
  FindingsPanel* findings_ = nullptr;
  ComparePanel* compare_ = nullptr;
  AnalysisPanel* analysis_ = nullptr;
  QDockWidget *dock_chart_ = nullptr, *dock_compare_ = nullptr, *dock_analysis_ = nullptr;
  QLineEdit* find_edit_ = nullptr;
  QString last_compare_html_;
  QJsonObject last_gate_;
  std::unique_ptr<QTemporaryDir> gate_tmp_;  // the last gate's JSON and traces
  void gateDialog();  // main_window_gate.cpp
  bool trace_live_ = false;               // the trace on screen comes from the run going here
  QHash<QString, QString> current_knobs_;  // the run's knob values (configApplied): no stale findings
  QPlainTextEdit* log_ = nullptr;
  // Model & data panel.
  QComboBox* model_ = nullptr;
  QLineEdit* model_path_ = nullptr;
  QComboBox* data_ = nullptr;
  QLineEdit* data_path_ = nullptr;
  QLineEdit* script_args_ = nullptr;
  TuneSummary last_tune_;  // what the last Auto-tune's dialog said (tests read it)  // the script's own arguments, when Model is "script"
  QSpinBox* steps_ = nullptr;
  QSpinBox* trace_every_ = nullptr;
  QPushButton *start_btn_ = nullptr, *stop_btn_ = nullptr;
  QSpinBox* tune_budget_ = nullptr;  // at its minimum, "auto"
  std::optional<double> tuneBudget() const;  // the box's seconds, or nullopt for "auto"
  QString budgetToolTip() const;
  // Status bar.
  QLabel *device_label_ = nullptr, *collector_label_ = nullptr, *run_label_ = nullptr, *perf_label_ = nullptr;
  QLabel* watch_label_ = nullptr;  // what the live trace costs the run (watch_cost.h)
  QProgressBar* progress_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QAction *act_start_ = nullptr, *act_stop_ = nullptr, *act_tune_ = nullptr, *act_price_ = nullptr, *act_trace_ = nullptr;
  QTimer* refresh_timer_ = nullptr;
  QElapsedTimer last_refresh_;
  static constexpr int kCoalesceMs = 150, kMinRefreshGapMs = 500;

  LoadedTrace trace_;
  QFutureWatcher<LoadedTrace>* loader_ = nullptr;
  bool loader_live_ = false;
  bool live_pending_ = false;
  QStringList live_chunks_;
  tb::client::LoaderVerdict live_loader_;  // a live script's loader verdict (its latest loader_parts)
  QHash<QString, qint64> live_chunk_first_;  // each live chunk's first step
  QHash<QString, QString> pending_knobs_;  // toggles changed while no run is going
  QString last_error_;
  std::unique_ptr<QTemporaryDir> tmp_;  // trace chunks of the current run
  std::unique_ptr<QTemporaryDir> ranks_tune_tmp_;  // the report of the last data-parallel auto-tune
  bool quiet_ = false;
  bool first_live_trace_ = true;
  // A live script's step lane: every step it sent after lane_after_step_ (the last tune's start), redrawn with the
  // chunks on screen as steps arrive; each redraw reads those chunks again, so it waits kLaneRefreshMs.
  bool live_script_ = false;
  qint64 lane_after_step_ = -1, lane_drawn_step_ = -1;
  QElapsedTimer lane_clock_;
  static constexpr int kLaneRefreshMs = 2000;
};

}  // namespace tb::ui
