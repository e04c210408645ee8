// Drives one `tunebench-cli serve` child over the run protocol (docs/protocol.md): starts it with QProcess,
// splits stdout into JSON lines, emits one signal per message type and keeps everything received in a
// RunRecord that outlives the child (a crash, OOM kill or non-zero exit never loses what was already sent).
//
// Threading: lives on the UI thread; QProcess delivers readyRead there. No blocking waits except in tests.
// Stop: sends {"type":"stop"}, then terminate() after kStopTermMs and kill() after kStopKillMs, so a run ends
// within 2 s even when the child hangs. A group across hosts gets kGroupStopTermMs / kGroupStopKillMs: its
// client waits for every host's torchrun to end, and on SIGTERM stops them (at most 20 s) before it ends.
#pragma once

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QTimer>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "client/remote.h"
#include "profiler/compile_lane.h"

#include "ui/knob_spec.h"

namespace tb::ui {

struct StepSample {
  qint64 i = 0;
  double samples = 0;     // the step's batch, as the loader delivered it
  qint64 evaluations = 0;  // a step(closure) call's closure evaluations (LBFGS), 0 when not counted
  qint64 wall_ns = 0, data_wait_ns = 0, h2d_ns = 0, t_ns = 0;
  qint64 minor_faults = 0;
  double loss = 0;
  bool has_loss = false;
  int config_rev = 0;
  bool warmup = false, skipped = false;
  bool traced = false;  // ran inside a trace chunk (a script's step.traced): stretched by the recording
  // A script's phases (summed over the step; 0 when not sent) and memory after it (-1: not measured): the step
  // lane draws every step from them (profiler/step_lane.h).
  qint64 forward_ns = 0, backward_ns = 0, optim_ns = 0;
  qint64 compile_ns = 0;  // torch.compile's time inside the step (a one-time cost: no figure counts the step)
  qint64 host_rss = -1, device_allocated = -1;
  // This process's CPU time and the monotonic clock when the step arrived (observer_cost.h); -1: not stamped.
  qint64 observer_cpu_ns = -1, observer_wall_ns = -1;
  // What every rate of the run counts: the batch once per closure evaluation (client/protocol.h), as the
  // tuner's windows and a plain run do, so an LBFGS script's chart does not climb as it converges.
  double evaluatedSamples() const;
  double samplesPerSec() const { return wall_ns > 0 ? evaluatedSamples() * 1e9 / double(wall_ns) : 0.0; }
};

struct ConfigChange {
  int rev = 0;
  qint64 at_step = 0;          // first step index measured under this revision (known once it arrives)
  QJsonObject knobs, changed;  // full config and the delta
  QString source;              // who changed it: "" (a toggle, a set) or "auto-tune" (the tuner's result)
};

// Time a script spent between steps on other things than training (its `outside` message).
struct OutsideInterval {
  qint64 t_ns = 0, wall_ns = 0;
  qint64 after_step = -1;
  QString kind;  // evaluation, checkpoint, other
};

// Everything a run sent, in arrival order.
// A trace file the run wrote, with the steps it covers.
struct TraceChunk {
  QString path;
  qint64 first_step = 0, last_step = 0;
};

// One Auto-tune of the run. The live loop is paused while it runs (its trials run in their own sessions or
// processes), so no step arrives between before_step and after_step: on a step axis it sits at one boundary.
struct TuneEvent {
  qint64 before_step = -1;  // the last step received before it began (-1: none)
  qint64 after_step = -1;   // the first step after it (-1: none yet)
  QJsonObject done;         // its tune_done ({} while it runs, or when it failed)
  bool failed = false;      // an error ended it without a tune_done
  bool finished() const { return failed || !done.isEmpty(); }
  // Its headline as the tuner measured it (baseline and kept configuration alternating at the end); false when
  // it kept nothing.
  bool kept() const { return done.value("speedup").isDouble() && !done.value("kept").toArray().isEmpty(); }
};

struct RunRecord {
  QJsonObject hello, started, done;
  std::vector<KnobSpec> knobs;
  std::vector<StepSample> steps;
  std::vector<OutsideInterval> outside;
  std::vector<tb::prof::LaneCompile> compiles;  // a script's `compile` messages: what torch.compile did
  std::vector<ConfigChange> configs;
  QStringList trace_paths;
  std::vector<TraceChunk> chunks;  // the same files with their steps
  QJsonObject loader_parts;        // the latest `loader_parts` (a traced script's loader, live)
  std::vector<QJsonObject> findings;
  std::vector<TuneEvent> tunes;
  QStringList warnings, errors;
  QString failure;  // non-empty when the child died badly: message + exit status + stderr tail
  int generation = 0;  // counts clear(): views that append what arrived since they last looked start over
  void clear() {
    const int next = generation + 1;
    *this = RunRecord{};
    generation = next;
  }
};

// Where tunebench-cli is: $TUNEBENCH_CLI, then next to this executable, then the build tree's app/, then PATH.
QString findCli();

// The files a remote serve sends in the stream (client/inline_files.h), written under `dir` with `prefix`:
// the message with local paths, or the error. Exposed for tests.
QJsonObject restoreInlineFiles(const QByteArray& line, const QString& dir, const QString& prefix, QString* error);

class RunController : public QObject {
  Q_OBJECT
 public:
  static constexpr int kStopTermMs = 1200;
  static constexpr int kStopKillMs = 1800;
  static constexpr int kGroupStopTermMs = 15000;
  static constexpr int kGroupStopKillMs = 40000;
  static constexpr int kStderrTailBytes = 4000;

  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  // Starts `program args` (program "" = findCli() + "serve" is prepended by the caller). Returns false and
  // emits failed() when the program is missing. A previous child is stopped first.
  // Remote target set: `program` is ignored; `args` (serve ...) run as the remote CLI over ssh, with
  // --trace-dir moved to a directory on the server and --inline-files added; files come back in the stream.
  // Several hosts: `program` (tunebench-cli here) runs `serve --remote HOST1,HOST2 ...`, which starts the
  // group with torchrun on every host and passes rank 0's protocol through (cmd_remote_group.cpp).
  bool start(const QString& program, const QStringList& args);

  // "[user@]host[:port]", or several separated by commas (one data-parallel group across them; empty: local
  // runs again), and the CLI there ("" = tunebench-cli on its PATH). Returns "" or why the spec is bad.
  // Takes effect at the next start().
  QString setRemote(const QString& spec, const QString& remote_cli = {});
  bool isRemote() const { return remote_.has_value(); }
  bool isGroup() const { return !group_.isEmpty(); }
  // The host, or the group's hosts as "host1,host2" (what --remote takes back).
  QString remoteDisplay() const {
    return !group_.isEmpty() ? group_ : remote_ ? QString::fromStdString(remote_->display()) : QString();
  }
  std::string remoteCli() const { return remote_ ? remote_->cli : std::string(); }
  bool isRunning() const;
  void stop();
  // stop() without the event loop (a window being destroyed): stop, then SIGTERM, then SIGKILL, waiting at most
  // about `ms` in all, so that the child has ended before the files it writes are removed.
  void stopAndWait(int ms = kStopKillMs);
  void sendSet(const QString& knob, const QString& value);
  void sendTrace(bool start);
  // budget_s: seconds, nullopt "auto" (one pass over every applicable knob, priced after the noise floor);
  // knobs: tune only these; run_steps: the user's run length, 0 unsaid; plan_only: price one pass after the
  // calibration and the noise floor, and stop (protocol `tune`).
  void sendTune(std::optional<double> budget_s, const QStringList& knobs = {}, qint64 run_steps = 0,
                bool plan_only = false);
  void sendStart(const QJsonObject& startMsg);  // for a serve started without --model
  void send(const QJsonObject& msg);            // adds the protocol's version "v"

  const RunRecord& record() const { return rec_; }
  RunRecord& record() { return rec_; }
  QString stderrTail() const { return QString::fromUtf8(stderr_tail_); }

  // Feeds raw stdout bytes (exposed so tests can drive the parser without a process). A message that
  // carries a file (a remote run's) is unpacked on a worker thread; it and the lines after it are handled
  // when that is done, in order.
  void feed(const QByteArray& bytes);

 signals:
  void hello(const QJsonObject& msg);
  void started(const QJsonObject& msg);
  void step(const tb::ui::StepSample& s);
  void configApplied(const tb::ui::ConfigChange& c);
  void traceChunk(const QString& path, qint64 first_step, qint64 last_step);
  void loaderParts(const QJsonObject& msg);  // a traced script's loader totals so far (after each chunk)
  void finding(const QJsonObject& msg);
  void warning(const QString& message);
  void tuneProgress(const QString& phase, const QString& message, double fraction);
  void tuneDone(const QJsonObject& msg);
  void protocolError(const QString& message, bool recoverable);
  void done(const QJsonObject& summary);
  void badLine(const QString& line);  // not JSON: logged, never fatal
  // The child ended: ok = exit 0 after done/stop. When !ok, `message` holds exit status + stderr tail.
  void finished(bool ok, const QString& message);
  void failed(const QString& message);  // could not start
  void runningChanged(bool running);

 private:
  void handleLine(const QByteArray& line);
  void openTune();  // a tune began (its first tune_progress, or a tune_done with none before it)
  void onFinished(int code, QProcess::ExitStatus status);
  QString remoteFailure(int code) const;  // ssh's or the remote script's failure, "" if neither
  // Lines wait here while a carried file is unpacked off the UI thread (a trace chunk of megabytes), so
  // that messages keep their order; `unpacking_` while one is.
  void drainPending();
  std::deque<QByteArray> pending_;
  bool unpacking_ = false;
  int generation_ = 0;                     // start() count: an unpack of an older run is dropped
  std::function<void()> deferred_finish_;  // onFinished's end, once pending_ is drained
  void finishRun(int code, QProcess::ExitStatus status);
  std::optional<client::RemoteTarget> remote_;  // the host, or a group's first host
  QString group_;                                // a group's hosts, "host1,host2,..."; empty for one host
  std::unique_ptr<QTemporaryDir> fetched_;  // the remote run's files, here
  int fetched_count_ = 0;
  QProcess* proc_ = nullptr;
  QByteArray buf_, stderr_tail_;
  RunRecord rec_;
  bool stopping_ = false, got_done_ = false;
  QTimer term_timer_, kill_timer_;
};

}  // namespace tb::ui

Q_DECLARE_METATYPE(tb::ui::StepSample)
Q_DECLARE_METATYPE(tb::ui::ConfigChange)
