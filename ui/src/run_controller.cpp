#include "ui/run_controller.h"

#include <QJsonDocument>

#include "client/compile_events.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QFutureWatcher>
#include <QStandardPaths>
#include <QtConcurrent/QtConcurrent>
#include <nlohmann/json.hpp>

#include "client/inline_files.h"
#include "client/protocol.h"
#include "client/remote_script.h"
#include "ui/observer_cost.h"

namespace msg = tb::client::protocol::msg;

namespace tb::ui {

double StepSample::evaluatedSamples() const {
  return double(client::protocol::evaluated_samples(qint64(samples), evaluations));
}

namespace {
// The remote words of serve: the GUI's arguments quoted, its trace directory the remote working directory
// ("$d"), and --inline-files (the chunks come back through the channel) before the script's own arguments.
std::vector<std::string> remoteServeWords(const QStringList& args) {
  std::vector<std::string> w;
  bool inlined = false;
  for (qsizetype i = 0; i < args.size(); ++i) {
    if (args[i] == "--trace-dir" && i + 1 < args.size()) {
      w.insert(w.end(), {"--trace-dir", "\"$d\""});
      ++i;
      continue;
    }
    if (args[i] == "--" && !inlined) {
      w.push_back("--inline-files");
      inlined = true;
    }
    w.push_back(client::shell_quote(args[i].toStdString()));
  }
  if (!inlined) w.push_back("--inline-files");
  return w;
}
}  // namespace

QJsonObject restoreInlineFiles(const QByteArray& line, const QString& dir, const QString& prefix, QString* error) {
  auto m = nlohmann::json::parse(line.constData(), line.constData() + line.size(), nullptr, false);
  if (m.is_discarded() || !m.is_object()) {
    if (error) *error = QStringLiteral("not a JSON object");
    return {};
  }
  const Status restored = client::restore_files(m, dir.toStdString(), prefix.toStdString());
  if (!restored && error) *error = QString::fromStdString(restored.error().message);
  return QJsonDocument::fromJson(QByteArray::fromStdString(m.dump())).object();
}

QString RunController::setRemote(const QString& spec, const QString& remote_cli) {
  remote_.reset();
  group_.clear();
  if (spec.trimmed().isEmpty()) return {};
  QStringList hosts;
  std::optional<client::RemoteTarget> first;
  for (const QString& h : spec.split(',')) {
    auto t = client::parse_remote(h.trimmed().toStdString());
    if (!t)
      return QString::fromStdString(t.error().message) + (spec.contains(',') ? QStringLiteral(" (in %1)").arg(spec) : QString());
    if (!remote_cli.isEmpty()) t->cli = remote_cli.toStdString();
    if (!first) first = *t;
    hosts << QString::fromStdString(t->display());
  }
  remote_ = first;
  if (hosts.size() > 1) group_ = hosts.join(',');
  return {};
}

QString findCli() {
  const QString env = qEnvironmentVariable("TUNEBENCH_CLI");
  if (!env.isEmpty() && QFileInfo(env).isExecutable()) return env;
  const QString dir = QCoreApplication::applicationDirPath();
  for (const QString& cand : {dir + "/tunebench-cli", dir + "/../app/tunebench-cli", dir + "/../../app/tunebench-cli"}) {
    if (QFileInfo(cand).isExecutable()) return QFileInfo(cand).canonicalFilePath();
  }
  return QStandardPaths::findExecutable("tunebench-cli");
}

RunController::RunController(QObject* parent) : QObject(parent) {
  qRegisterMetaType<tb::ui::StepSample>();
  qRegisterMetaType<tb::ui::ConfigChange>();
  term_timer_.setSingleShot(true);
  kill_timer_.setSingleShot(true);
  connect(&term_timer_, &QTimer::timeout, this, [this] {
    if (proc_ && proc_->state() != QProcess::NotRunning) proc_->terminate();
  });
  connect(&kill_timer_, &QTimer::timeout, this, [this] {
    if (proc_ && proc_->state() != QProcess::NotRunning) proc_->kill();
  });
}

RunController::~RunController() {
  if (proc_) {
    proc_->disconnect(this);
    if (proc_->state() != QProcess::NotRunning) {
      proc_->kill();
      proc_->waitForFinished(1000);
    }
  }
}

bool RunController::isRunning() const { return proc_ && proc_->state() != QProcess::NotRunning; }

bool RunController::start(const QString& program, const QStringList& args) {
  if (isRunning()) {
    proc_->disconnect(this);
    proc_->kill();
    proc_->waitForFinished(1000);
  }
  if (proc_) proc_->deleteLater();
  rec_.clear();
  buf_.clear();
  pending_.clear();
  unpacking_ = false;
  deferred_finish_ = {};
  ++generation_;
  stderr_tail_.clear();
  stopping_ = got_done_ = false;
  fetched_.reset();
  fetched_count_ = 0;
  QString prog = program;
  QStringList argv = args;
  if (remote_ && isGroup()) {  // tunebench-cli serve --remote HOST1,HOST2 ...: it starts and ends the group
    if (program.isEmpty() || !QFileInfo(program).isExecutable()) {
      rec_.failure = QStringLiteral("a group across hosts is started by tunebench-cli here, which was not found "
                                    "(set TUNEBENCH_CLI or put it next to tunebench)");
      emit failed(rec_.failure);
      return false;
    }
    argv = args.mid(0, 1) + QStringList{"--remote", group_, "--remote-cli", QString::fromStdString(remote_->cli)} + args.mid(1);
  } else if (remote_) {  // ssh ... HOST 'sh -c ...'
    const auto ssh = client::ssh_argv(*remote_, client::remote_serve_script(*remote_, client::remote_id(), remoteServeWords(args)));
    prog = QStandardPaths::findExecutable(QString::fromStdString(ssh[0]));
    if (prog.isEmpty() && QFileInfo(QString::fromStdString(ssh[0])).isExecutable()) prog = QString::fromStdString(ssh[0]);
    argv.clear();
    for (size_t i = 1; i < ssh.size(); ++i) argv << QString::fromStdString(ssh[i]);
    if (prog.isEmpty()) {
      rec_.failure = QStringLiteral("remote runs need OpenSSH's ssh, which is not on PATH (install openssh-client)");
      emit failed(rec_.failure);
      return false;
    }
  } else if (program.isEmpty() || !QFileInfo(program).isExecutable()) {
    const QString msg = program.isEmpty()
                            ? QStringLiteral("tunebench-cli not found (set TUNEBENCH_CLI or put it next to tunebench)")
                            : QStringLiteral("cannot run %1: not an executable file").arg(program);
    rec_.failure = msg;
    emit failed(msg);
    return false;
  }
  proc_ = new QProcess(this);
  proc_->setProgram(prog);
  proc_->setArguments(argv);
  connect(proc_, &QProcess::readyReadStandardOutput, this, [this] { feed(proc_->readAllStandardOutput()); });
  connect(proc_, &QProcess::readyReadStandardError, this, [this] {
    stderr_tail_ += proc_->readAllStandardError();
    if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_ = stderr_tail_.right(kStderrTailBytes);
  });
  connect(proc_, &QProcess::finished, this, &RunController::onFinished);
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) {
      rec_.failure = QStringLiteral("could not start %1: %2").arg(proc_->program(), proc_->errorString());
      emit failed(rec_.failure);
      emit runningChanged(false);
    }
  });
  proc_->start();
  emit runningChanged(true);
  return true;
}

void RunController::stop() {
  if (!isRunning()) return;
  stopping_ = true;
  send(QJsonObject{{"type", msg::stop}});
  proc_->closeWriteChannel();
  term_timer_.start(isGroup() ? kGroupStopTermMs : kStopTermMs);
  kill_timer_.start(isGroup() ? kGroupStopKillMs : kStopKillMs);
}

void RunController::stopAndWait(int ms) {
  if (!isRunning()) return;
  proc_->disconnect(this);
  send(QJsonObject{{"type", msg::stop}});
  proc_->closeWriteChannel();
  const int step = std::max(100, ms / 3);
  if (proc_->waitForFinished(step)) return;
  proc_->terminate();
  if (proc_->waitForFinished(step)) return;
  proc_->kill();
  proc_->waitForFinished(step);
}

void RunController::send(const QJsonObject& m) {
  if (!isRunning()) return;
  QJsonObject msg = m;
  msg.insert("v", client::protocol::kVersion);
  proc_->write(QJsonDocument(msg).toJson(QJsonDocument::Compact) + '\n');
}

void RunController::sendSet(const QString& knob, const QString& value) {
  send(QJsonObject{{"type", msg::set}, {"knob", knob}, {"value", value}});
}
void RunController::sendTrace(bool s) { send(QJsonObject{{"type", msg::trace}, {"action", s ? "start" : "stop"}}); }
void RunController::sendTune(std::optional<double> budget_s, const QStringList& knobs, qint64 run_steps, bool plan_only) {
  QJsonObject m{{"type", msg::tune}, {"budget_s", budget_s ? QJsonValue(*budget_s) : QJsonValue("auto")}};
  if (!knobs.isEmpty()) m.insert("knobs", QJsonArray::fromStringList(knobs));
  if (run_steps > 0) m.insert("run_steps", run_steps);
  if (plan_only) m.insert("plan_only", true);
  send(m);
}
void RunController::sendStart(const QJsonObject& startMsg) {
  QJsonObject m = startMsg;
  m.insert("type", msg::start);
  send(m);
}

void RunController::feed(const QByteArray& bytes) {
  buf_ += bytes;
  // A child that prints megabytes without a newline is not speaking the protocol: drop it, keep going.
  constexpr qsizetype kMaxLine = 64 << 20;
  if (buf_.size() > kMaxLine && buf_.indexOf('\n') < 0) {
    emit badLine(QStringLiteral("(%1 bytes without a newline dropped)").arg(buf_.size()));
    buf_.clear();
    return;
  }
  qsizetype nl;
  while ((nl = buf_.indexOf('\n')) >= 0) {
    const QByteArray line = buf_.left(nl).trimmed();
    buf_.remove(0, nl + 1);
    if (!line.isEmpty()) pending_.push_back(line);
  }
  drainPending();
}

namespace {
// Cheap test before parsing: only a remote serve's trace / tune_done lines carry files.
bool carriesFile(const QByteArray& line) {
  return line.contains("\"data\":\"") || line.contains("\"files\":{");
}
}  // namespace

void RunController::drainPending() {
  struct FinishWhenDrained {  // runs a deferred `finished` once nothing is left to handle
    RunController* rc;
    ~FinishWhenDrained() {
      if (!rc->unpacking_ && rc->pending_.empty() && rc->deferred_finish_) {
        auto f = std::move(rc->deferred_finish_);
        rc->deferred_finish_ = {};
        f();
      }
    }
  } finish_when_drained{this};
  while (!unpacking_ && !pending_.empty()) {
    QByteArray line = std::move(pending_.front());
    pending_.pop_front();
    if (!carriesFile(line)) {
      handleLine(line);
      continue;
    }
    if (!fetched_) fetched_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/tunebench-remote-XXXXXX");
    unpacking_ = true;
    const QString dir = fetched_->path(), prefix = QStringLiteral("%1-").arg(fetched_count_++);
    auto* watcher = new QFutureWatcher<std::pair<QByteArray, QString>>(this);
    connect(watcher, &QFutureWatcher<std::pair<QByteArray, QString>>::finished, this, [this, watcher, gen = generation_] {
      const auto [local, why] = watcher->result();
      watcher->deleteLater();
      if (gen != generation_) return;  // a file of a run that has been replaced since
      unpacking_ = false;
      if (!why.isEmpty()) {
        rec_.warnings << QStringLiteral("a file of the remote run could not be kept: %1").arg(why);
        emit warning(rec_.warnings.last());
      } else {
        handleLine(local);
      }
      if (gen == generation_) drainPending();
    });
    watcher->setFuture(QtConcurrent::run([line, dir, prefix] {
      QString why;
      const QJsonObject m = restoreInlineFiles(line, dir, prefix, &why);
      return std::make_pair(QJsonDocument(m).toJson(QJsonDocument::Compact), why);
    }));
  }
}

static qint64 toInt(const QJsonValue& v) { return qint64(v.toDouble(0)); }

void RunController::handleLine(const QByteArray& line) {
  QJsonParseError pe;
  const QJsonDocument d = QJsonDocument::fromJson(line, &pe);
  if (pe.error != QJsonParseError::NoError || !d.isObject()) {
    emit badLine(QString::fromUtf8(line.left(300)));
    return;
  }
  const QJsonObject m = d.object();
  const QString type = m.value("type").toString();
  if (type == msg::hello && m.value("v").toInt(client::protocol::kVersion) != client::protocol::kVersion) {
    // Another protocol: nothing it sends can be trusted to mean what we think. Stop it, say so.
    rec_.failure = QStringLiteral("the run speaks protocol %1, this TuneBench speaks %2: install the same TuneBench "
                                  "version %3")
                       .arg(m.value("v").toInt())
                       .arg(client::protocol::kVersion)
                       .arg(remote_ ? QStringLiteral("on ") + remoteDisplay() : QStringLiteral("here"));
    emit protocolError(rec_.failure, false);
    stop();
    return;
  }
  if (type == msg::hello) {
    rec_.hello = m;
    auto knobs = parseKnobs(m);
    rec_.knobs = knobs ? std::move(knobs).value() : std::vector<KnobSpec>{};
    emit hello(m);
  } else if (type == msg::started) {
    rec_.started = m;
    if (rec_.configs.empty()) {
      ConfigChange c;
      c.rev = int(toInt(m.value("rev")));
      c.knobs = m.value("config").toObject();
      c.at_step = -1;
      rec_.configs.push_back(c);
    }
    emit started(m);
  } else if (type == msg::step) {
    StepSample s;
    s.i = toInt(m.value("i"));
    s.samples = m.value("samples").toDouble();
    s.evaluations = toInt(m.value("evaluations"));
    s.wall_ns = toInt(m.value("wall_ns"));
    s.data_wait_ns = toInt(m.value("data_wait_ns"));
    s.h2d_ns = toInt(m.value("h2d_ns"));
    s.t_ns = toInt(m.value("t_ns"));
    s.minor_faults = toInt(m.value("minor_faults"));
    s.has_loss = m.value("loss").isDouble();
    s.loss = m.value("loss").toDouble();
    s.config_rev = int(toInt(m.value("config_rev")));
    s.warmup = m.value("warmup").toBool(false);
    s.skipped = m.value("skipped").toBool(false);
    s.traced = m.value("traced").toBool(false);
    s.forward_ns = toInt(m.value("forward_ns"));
    s.compile_ns = toInt(m.value("compile_ns"));
    s.backward_ns = toInt(m.value("backward_ns"));
    s.optim_ns = toInt(m.value("optim_ns"));
    const QJsonObject mem = m.value("memory").toObject();
    if (mem.value("host_rss").isDouble()) s.host_rss = toInt(mem.value("host_rss"));
    if (mem.value("device_allocated").isDouble()) s.device_allocated = toInt(mem.value("device_allocated"));
    s.observer_cpu_ns = processCpuNs();
    s.observer_wall_ns = monotonicNs();
    for (auto& c : rec_.configs)
      if (c.rev == s.config_rev && c.at_step < 0) c.at_step = s.i;
    for (auto& t : rec_.tunes)
      if (t.after_step < 0 && t.finished()) t.after_step = s.i;
    rec_.steps.push_back(s);
    emit step(s);
  } else if (type == msg::config_applied) {
    ConfigChange c;
    c.rev = int(toInt(m.value("rev")));
    c.knobs = m.value("knobs").toObject();
    c.changed = m.value("changed").toObject();
    c.source = m.value("source").toString();
    c.at_step = -1;
    rec_.configs.push_back(c);
    for (auto& k : rec_.knobs)
      if (c.knobs.contains(k.id)) k.value = knobValueText(c.knobs.value(k.id));
    emit configApplied(c);
  } else if (type == msg::trace || type == msg::trace_lanes) {
    const QString path = m.value("path").toString();
    rec_.trace_paths << path;
    // trace_lanes: the loader's lanes beside the chunk of these steps, drawn with it, not a chunk of steps itself.
    if (type == msg::trace) rec_.chunks.push_back({path, toInt(m.value("first_step")), toInt(m.value("last_step"))});
    emit traceChunk(path, toInt(m.value("first_step")), toInt(m.value("last_step")));
  } else if (type == msg::outside) {
    OutsideInterval o;
    o.t_ns = toInt(m.value("t_ns"));
    o.wall_ns = toInt(m.value("wall_ns"));
    o.after_step = m.value("after_step").isDouble() ? toInt(m.value("after_step")) : -1;
    o.kind = m.value("kind").toString();
    rec_.outside.push_back(o);
  } else if (type == msg::compile) {
    // One reader of the message for the CLI and the GUI (client/compile_events.h); a compile is rare.
    rec_.compiles.push_back(tb::client::lane_compile_of(
        nlohmann::json::parse(QJsonDocument(m).toJson(QJsonDocument::Compact).toStdString(), nullptr, false)));
  } else if (type == msg::loader_parts) {
    rec_.loader_parts = m;
    emit loaderParts(m);
  } else if (type == msg::finding) {
    rec_.findings.push_back(m);
    emit finding(m);
  } else if (type == msg::warning) {
    rec_.warnings << m.value("message").toString();
    emit warning(m.value("message").toString());
  } else if (type == msg::tune_progress) {
    if (rec_.tunes.empty() || rec_.tunes.back().finished()) openTune();
    emit tuneProgress(m.value("phase").toString(), m.value("message").toString(), m.value("fraction").toDouble());
  } else if (type == msg::tune_done) {
    if (rec_.tunes.empty() || rec_.tunes.back().finished()) openTune();
    rec_.tunes.back().done = m;
    emit tuneDone(m);
  } else if (type == msg::error) {
    rec_.errors << m.value("message").toString();
    // "auto-tune failed: ..." ends the tune that was running.
    if (!rec_.tunes.empty() && !rec_.tunes.back().finished() && m.value("message").toString().startsWith("auto-tune"))
      rec_.tunes.back().failed = true;
    emit protocolError(m.value("message").toString(), m.value("recoverable").toBool(false));
  } else if (type == msg::done) {
    got_done_ = true;
    rec_.done = m;
    emit done(m.value("summary").toObject());
  }
  // Unknown types are ignored (forward compatibility, docs/protocol.md).
}

void RunController::openTune() {
  TuneEvent t;
  t.before_step = rec_.steps.empty() ? -1 : rec_.steps.back().i;
  rec_.tunes.push_back(t);
}

void RunController::onFinished(int code, QProcess::ExitStatus status) {
  term_timer_.stop();
  kill_timer_.stop();
  feed(proc_->readAllStandardOutput());
  if (!buf_.trimmed().isEmpty()) {
    pending_.push_back(buf_.trimmed());
    buf_.clear();
  }
  stderr_tail_ += proc_->readAllStandardError();
  if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_ = stderr_tail_.right(kStderrTailBytes);
  // `finished` comes after every message the run sent, a file still being unpacked included.
  deferred_finish_ = [this, code, status] { finishRun(code, status); };
  drainPending();
}

void RunController::finishRun(int code, QProcess::ExitStatus status) {
  const bool crashed = status == QProcess::CrashExit;
  const bool ok = !crashed && code == 0;
  const bool stopped_by_us = stopping_ && (ok || crashed);
  QString msg;
  if (!ok && !stopped_by_us) {
    // The last few stderr lines usually say why (OOM, CUDA error, assertion).
    QString tail = QString::fromUtf8(stderr_tail_).trimmed();
    const QStringList lines = tail.split('\n');
    if (lines.size() > 12) tail = lines.mid(lines.size() - 12).join('\n');
    QString why = crashed ? QStringLiteral("the run crashed (killed by a signal; out of memory?)")
                          : QStringLiteral("the run exited with status %1").arg(code);
    if (crashed && remote_ && !isGroup())
      why = QStringLiteral("the connection to %1 ended (ssh was killed); the run there stops as its channel closed")
                .arg(remoteDisplay());
    else if (const QString remote = crashed ? QString() : remoteFailure(code); !remote.isEmpty())
      why = remote;
    if (!rec_.errors.isEmpty()) why += QStringLiteral(": ") + rec_.errors.last();
    msg = why + QStringLiteral(" — %1 steps received and kept").arg(rec_.steps.size());
    if (!tail.isEmpty()) msg += QStringLiteral("\n\nstderr (last lines):\n") + tail;
    rec_.failure = msg;
  }
  emit finished(ok || stopped_by_us, msg);
  emit runningChanged(false);
}

QString RunController::remoteFailure(int code) const {
  if (!remote_ || isGroup()) return {};  // a group's client says what failed on stderr itself
  std::vector<std::string> lines;
  for (const QByteArray& l : stderr_tail_.split('\n')) lines.push_back(l.toStdString());
  return QString::fromStdString(client::explain_remote_exit(*remote_, code, lines));
}

}  // namespace tb::ui
