// MainWindow (main_window.h): data-parallel work on the panel's model and data. A run is a live group
// (`serve --set ranks=N`, the normal run path); its auto-tune is a tunebench-cli child (`tune --ranks N`, on
// the connected server when there is one) that shows progress and, at the end, the tune's summary and report.
#include "ui/main_window.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QProgressBar>
#include <QRegularExpression>
#include <QSet>
#include <QSpinBox>
#include <QTemporaryDir>

namespace tb::ui {

// `verb` (run / tune) of the panel's model and data on `ranks` processes, with the panel's knobs pinned.
// Empty (and a message shown) when it cannot run.
QStringList MainWindow::ranksArgs(const QString& verb, int ranks, const QString& what) {
  const RunOptions o = optionsFromPanel();
  if (!o.script.isEmpty()) {
    showError(tr("Cannot start a data-parallel %1").arg(what),
              tr("A script's ranks are its own launcher's (torchrun): choose a built-in model or TorchScript."));
    return {};
  }
  // Connected to a group of hosts: the ranks are per host, torchrun's --nproc_per_node on each.
  QStringList args{verb, "--model", o.model, "--data", o.data, run_->isGroup() ? "--ranks-per-host" : "--ranks",
                   QString::number(ranks)};
  if (!o.knobs.isEmpty()) {
    QStringList kv;
    for (auto it = o.knobs.begin(); it != o.knobs.end(); ++it) kv << it.key() + "=" + it.value();
    kv.sort();
    args << "--set" << kv.join(",");
  }
  return args;
}

// Starts `cli args` (over ssh when connected) with a busy progress bar (`busy`) and run label (`label`),
// keeps the tail of its output, calls `line` for each line it writes and `done` with its exit code and that
// tail when it ends.
bool MainWindow::startCliChild(QStringList args, const QString& busy, const QString& label,
                               const std::function<void(const QString&)>& line,
                               const std::function<void(int, const QString&)>& done) {
  const QString cli = findCli();
  if (cli.isEmpty()) {
    showError(tr("Cannot start"), tr("tunebench-cli not found (set TUNEBENCH_CLI)"));
    return false;
  }
  if (run_->isRemote())
    args << "--remote" << run_->remoteDisplay() << "--remote-cli" << QString::fromStdString(run_->remoteCli());
  auto* proc = new QProcess(this);
  proc->setProcessChannelMode(QProcess::MergedChannels);
  log(tr("$ %1 %2").arg(cli, args.join(' ')));
  connect(proc, &QProcess::readyRead, this, [proc, line] {
    QString buf = proc->property("partial").toString() + QString::fromUtf8(proc->readAll());
    const int cut = buf.lastIndexOf('\n');
    const QString complete = cut < 0 ? QString() : buf.left(cut);
    proc->setProperty("partial", cut < 0 ? buf : buf.mid(cut + 1));
    if (complete.isEmpty()) return;
    proc->setProperty("out", (proc->property("out").toString() + complete + '\n').right(3000));
    for (const QString& l : complete.split('\n', Qt::SkipEmptyParts)) line(l);
  });
  connect(proc, &QProcess::finished, this, [proc, done](int code, QProcess::ExitStatus st) {
    proc->deleteLater();
    const QString out = (proc->property("out").toString() + proc->property("partial").toString()).trimmed();
    done(st == QProcess::NormalExit ? code : -1, out);
  });
  proc->start(cli, args);
  progress_->show();
  progress_->setRange(0, 0);
  progress_->setFormat(busy);
  run_label_->setText(label);
  return true;
}

bool MainWindow::startRanksRun(int ranks, int steps) {
  if (model_->currentText() == "script") {
    showError(tr("Cannot start a data-parallel run"),
              tr("A script's ranks are its own launcher's (torchrun): choose a built-in model or TorchScript."));
    return false;
  }
  pending_knobs_.insert("ranks", QString::number(ranks));  // the panel says what runs: Start repeats it
  RunOptions o = optionsFromPanel();
  if (steps > 0) o.steps = steps;
  return startRun(o);
}

void MainWindow::logGroupEnd(const QJsonObject& summary) {
  // Every rank's last state (serve's done): DDP's invariant, checked where the user can see it.
  const QJsonArray ranks = summary.value("ranks").toArray();
  if (ranks.isEmpty()) return;  // the group failed: the error says why
  QSet<QString> configs, digests;
  QStringList steps;
  for (const auto& v : ranks) {
    const QJsonObject r = v.toObject();
    if (r.isEmpty()) {
      log(tr("warning: a rank of the group did not report its end"));
      return;
    }
    configs << QString::fromUtf8(QJsonDocument(r.value("config").toObject()).toJson(QJsonDocument::Compact));
    digests << r.value("parameter_digest").toString();
    steps << QString::number(r.value("steps").toInteger());
  }
  if (configs.size() == 1 && digests.size() == 1)
    log(tr("the %1 ranks ended in step: %2 steps each, the same configuration and the same weights")
            .arg(ranks.size()).arg(steps.front()));
  else
    log(tr("warning: the %1 ranks ended apart: steps %2, %3 configuration(s), %4 different weights")
            .arg(ranks.size()).arg(steps.join("/")).arg(configs.size()).arg(digests.size()));
}

bool MainWindow::startRanksTune(int ranks, int budget_s) {
  QStringList args = ranksArgs("tune", ranks, tr("auto-tune"));
  if (args.isEmpty()) return false;
  ranks_tune_tmp_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/tunebench-ranks-tune-XXXXXX");
  const QString html = ranks_tune_tmp_->filePath("report.html"), json = ranks_tune_tmp_->filePath("report.json");
  const std::optional<double> budget = budget_s > 0 ? std::optional<double>(budget_s) : tuneBudget();
  args << "--budget" << (budget ? QString::number(*budget) : QString("auto")) << "--report" << html
       << "--json" << json;
  // The tuner's progress lines: "[tune  42%] screen     bucket_cap_mb=5 vs baseline"; one phase has a space.
  static const QRegularExpression progress_line(R"(^\[tune\s+(\d+)%\]\s+(noise floor|\S+)\s+(.*)$)");
  return startCliChild(
      args, tr("auto-tune of %1 ranks…").arg(ranks), tr("data-parallel auto-tune on %1 ranks…").arg(ranks),
      [this](const QString& l) {
        const auto m = progress_line.match(l);
        if (!m.hasMatch()) return;
        progress_->setRange(0, 100);
        progress_->setValue(m.captured(1).toInt());
        progress_->setFormat(m.captured(2) + ": %p%");
        log(tr("tune %1: %2").arg(m.captured(2), m.captured(3)));
      },
      [this, html, json, ranks](int code, const QString& out) {
        progress_->hide();
        QFile f(json);
        const QJsonObject doc = f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
        if (code != 0 || !doc.value("summary").isObject()) {
          run_label_->setText(tr("data-parallel auto-tune failed"));
          showError(tr("The data-parallel auto-tune failed"),
                    tr("tunebench-cli tune --ranks %1 exited with status %2\n\n%3").arg(ranks).arg(code).arg(out));
          emit ranksTuneFinished(false);
          return;
        }
        QJsonObject m = doc.value("summary").toObject();
        m["report_html"] = html;
        m["report_json"] = json;
        run_label_->setText(tr("data-parallel auto-tune done: %1 ranks").arg(ranks));
        showTuneDone(m);
        emit ranksTuneFinished(true);
      });
}

}  // namespace tb::ui
