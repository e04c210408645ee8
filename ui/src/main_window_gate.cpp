// MainWindow (main_window.h): File → Compare two versions…, the CI gate in the window. A tunebench-cli child
// (`gate --script S --baseline REV [--candidate REV] --json F --traces DIR`, on this machine) whose progress
// lines go to the log; at the end the same verdict line, noise and why lines the CLI prints, and after a change
// the two traced processes in the trace comparison (File → Compare with…'s view).
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>

#include "client/inputs.h"
#include "ui/main_window.h"

namespace tb::ui {

bool MainWindow::startGate(const GateRequest& req) {
  if (run_->isRemote()) {
    showError(tr("Compare two versions"), tr("The gate runs on this machine: connect back to (this machine) first"));
    return false;
  }
  if (req.script.isEmpty() || req.baseline.isEmpty()) {
    showError(tr("Compare two versions"), tr("Give the script and the baseline revision"));
    return false;
  }
  gate_tmp_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/tunebench-gate-ui-XXXXXX");
  const QString json = gate_tmp_->filePath("gate.json"), traces = gate_tmp_->filePath("traces");
  QStringList args{"gate", "--script", QFileInfo(req.script).absoluteFilePath(), "--baseline", req.baseline,
                   "--max-time", QString::number(req.max_time_s), "--steps", QString::number(req.steps),
                   "--json", json, "--traces", traces};
  if (!req.candidate.isEmpty()) args << "--candidate" << req.candidate;
  if (!req.args.isEmpty()) args << "--" << req.args;
  const QString what = req.candidate.isEmpty() ? tr("the working tree") : req.candidate;
  last_gate_ = {};
  return startCliChild(
      args, tr("comparing %1 with %2…").arg(what, req.baseline), tr("gate: %1 against %2…").arg(what, req.baseline),
      [this](const QString& l) {
        if (!l.startsWith("gate: ")) return;
        log(l);
        if (l.startsWith("gate: look at ")) progress_->setFormat(l.mid(6, 60));
      },
      [this, json, traces](int code, const QString& out) {
        progress_->hide();
        QFile f(json);
        const QJsonObject doc = f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
        if (doc.isEmpty()) {  // a bad option or revision: the CLI's one line
          const QString why = out.split('\n').filter("error:").value(0, out.right(500)).trimmed();
          run_label_->setText(tr("gate: could not run"));
          showError(tr("The comparison could not run"), why);
          emit gateFinished(false, why);
          return;
        }
        last_gate_ = doc;
        const QString line = doc.value("line").toString();
        run_label_->setText(tr("gate: %1").arg(doc.value("verdict").toString()));
        log(tr("gate (exit %1): %2").arg(code).arg(line));
        QStringList why;
        for (const auto& v : doc.value("why").toObject().value("lines").toArray()) why << v.toString();
        if (!quiet_) {
          QMessageBox box(this);
          box.setWindowTitle(tr("Compare two versions: %1").arg(doc.value("verdict").toString()));
          box.setText(line);
          box.setInformativeText(
              tr("baseline %1: %2 %4\ncandidate %3: %5 %4")
                  .arg(doc.value("baseline").toObject().value("describe").toString())
                  .arg(doc.value("baseline").toObject().value("throughput").toDouble(), 0, 'f', 1)
                  .arg(doc.value("candidate").toObject().value("describe").toString())
                  .arg(doc.value("unit").toString())
                  .arg(doc.value("candidate").toObject().value("throughput").toDouble(), 0, 'f', 1));
          if (!why.isEmpty()) box.setDetailedText(why.join('\n'));
          box.exec();
        }
        // After a change: the two traced processes side by side, as File → Compare with… shows two traces.
        const QString a = traces + "/baseline.json", b = traces + "/candidate.json";
        if (QFileInfo::exists(a) && QFileInfo::exists(b)) compareFiles(a, b);
        emit gateFinished(true, line);
      });
}

void MainWindow::gateDialog() {
  QDialog dlg(this);
  dlg.setWindowTitle(tr("Compare two versions"));
  auto* form = new QFormLayout(&dlg);
  auto* script = new QLineEdit(&dlg);
  script->setObjectName("gate_script");
  if (model_->currentText() == "script") script->setText(model_path_->text());
  auto* browse = new QPushButton(tr("Browse…"), &dlg);
  auto* srow = new QHBoxLayout;
  srow->addWidget(script);
  srow->addWidget(browse);
  connect(browse, &QPushButton::clicked, &dlg, [&] {
    const QString f = QFileDialog::getOpenFileName(&dlg, tr("Training script in a git repository"), {},
                                                   tr("Python (*.py);;All files (*)"));
    if (!f.isEmpty()) script->setText(f);
  });
  auto* baseline = new QLineEdit("HEAD", &dlg);
  auto* candidate = new QLineEdit(&dlg);
  candidate->setPlaceholderText(tr("the working tree as it is"));
  auto* args = new QLineEdit(model_->currentText() == "script" ? script_args_->text() : QString(), &dlg);
  auto* max_time = new QSpinBox(&dlg);
  max_time->setRange(int(client::inputs::kGateMaxTimeMinS), int(client::inputs::kGateMaxTimeMaxS));  // the CLI's rule
  max_time->setValue(int(client::inputs::kGateMaxTimeDefaultS));
  max_time->setSuffix(tr(" s"));
  form->addRow(tr("Script"), srow);
  form->addRow(tr("Baseline revision"), baseline);
  form->addRow(tr("Candidate revision"), candidate);
  form->addRow(tr("Arguments"), args);
  form->addRow(tr("At most"), max_time);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Compare"));
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  if (dlg.exec() != QDialog::Accepted) return;
  GateRequest r;
  r.script = script->text().trimmed();
  r.baseline = baseline->text().trimmed();
  r.candidate = candidate->text().trimmed();
  r.args = QProcess::splitCommand(args->text());
  r.max_time_s = max_time->value();
  startGate(r);
}

}  // namespace tb::ui
