#include "ui/tune_summary.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>

namespace tb::ui {

TuneSummary tuneSummary(const QJsonObject& m) {
  TuneSummary s;
  QStringList kept;
  for (const auto& k : m.value("kept").toArray()) kept << k.toString();
  const QJsonArray ci = m.value("speedup_ci").toArray();
  const bool gain = m.value("speedup").isDouble() && !kept.isEmpty();
  QStringList lines;
  if (m.value("plan_only").toBool()) {
    // Only the price was asked: the tuner's headline, its plan line (what one pass costs, what the budget buys)
    // and what measuring it cost.
    s.title = m.value("headline").toObject().value("title").toString();
    lines << m.value("plan").toString()
          << QObject::tr("Measured in %1 s (the calibration and the noise floor, which a tune measures again); "
                         "nothing was tried.")
                 .arg(m.value("elapsed_s").toDouble(), 0, 'f', 0);
    s.detail = lines.join('\n');
    return s;
  } else if (gain) {
    s.title = QObject::tr("×%1 faster").arg(m.value("speedup").toDouble(), 0, 'f', 2);
    QString line = QObject::tr("%1 → %2 samples/s")
                       .arg(m.value("baseline_throughput").toDouble(), 0, 'f', 1)
                       .arg(m.value("final_throughput").toDouble(), 0, 'f', 1);
    if (ci.size() == 2)
      line += QObject::tr(", 95% interval ×%1–%2").arg(ci[0].toDouble(), 0, 'f', 2).arg(ci[1].toDouble(), 0, 'f', 2);
    line += m.value("fresh_processes").toBool() ? QObject::tr(" (fresh processes: what a new start gets)")
                                                : QObject::tr(" (baseline and final alternating at the end)");
    lines << line;
    // Which confirmation the headline has (fresh processes, or this process's final and why), as the CLI says.
    if (!m.value("confirmation").toString().isEmpty())
      lines << QObject::tr("Confirmed: %1").arg(m.value("confirmation").toString());
    lines << QObject::tr("Keep: %1").arg(kept.join(", "));
  } else if (m.value("verdict").toString() == "undecided") {
    // The tuner keeps nothing it could not confirm: the title says so, the changes are named as not confirmed.
    QStringList unconfirmed;
    for (const auto& k : m.value("unconfirmed").toArray()) unconfirmed << k.toString();
    s.title = QObject::tr("Could not decide: nothing kept");
    QString line = QObject::tr("%1 measured ×%2").arg(unconfirmed.join(", ")).arg(m.value("speedup").toDouble(), 0, 'f', 2);
    if (ci.size() == 2)
      line += QObject::tr(", 95% interval ×%1–%2, which covers 1").arg(ci[0].toDouble(), 0, 'f', 2).arg(ci[1].toDouble(), 0, 'f', 2);
    lines << line << QObject::tr("Keep: nothing (not confirmed; tune again with a larger budget)");
  } else {
    // The tuner's own headline when it sent one: "Too noisy to tune here" is not "No change beat the baseline".
    const QString title = m.value("headline").toObject().value("title").toString();
    s.title = title.isEmpty() ? QObject::tr("No change beat the baseline") : title;
    if (m.value("baseline_throughput").isDouble())
      lines << QObject::tr("Baseline %1 samples/s.").arg(m.value("baseline_throughput").toDouble(), 0, 'f', 1);
  }
  if (m.contains("elapsed_s") && m.contains("budget_s")) {
    QString used = QObject::tr("Used %1 of %2 s, %3 trials")
                       .arg(m.value("elapsed_s").toDouble(), 0, 'f', 0)
                       .arg(m.value("budget_s").toDouble(), 0, 'f', 0)
                       .arg(m.value("trials").toInt());
    const QString ended = m.value("ended").toString();
    lines << (ended.isEmpty() ? used + "." : used + QObject::tr(": ") + ended + ".");
  }
  if (!m.value("memory").toString().isEmpty()) lines << QObject::tr("Memory: %1").arg(m.value("memory").toString());
  if (!m.value("noise").toString().isEmpty()) lines << QObject::tr("Measurement: %1").arg(m.value("noise").toString());
  s.detail = lines.join('\n');
  return s;
}

}  // namespace tb::ui
