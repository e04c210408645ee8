#include "ui/trace_compare.h"

#include <QFileInfo>
#include <QObject>

#include "profiler/analysis.h"
#include "profiler/trace_io.h"

namespace tb::ui {
namespace {

QString ms(double ns) { return QString::number(ns / 1e6, 'f', 3); }
QString signedMs(double ns) { return (ns >= 0 ? QStringLiteral("+") : QString()) + ms(ns); }

QString namesTable(const QString& title, const std::vector<tb::prof::NameDelta>& v) {
  if (v.empty()) return {};
  QString h = QStringLiteral("<h3>%1</h3><table border=1 cellspacing=0 cellpadding=3><tr><th>Δ ms</th><th>A ms</th>"
                             "<th>B ms</th><th>A n</th><th>B n</th><th>name</th></tr>")
                  .arg(title);
  for (const auto& n : v)
    h += QStringLiteral("<tr><td align=right>%1</td><td align=right>%2</td><td align=right>%3</td><td align=right>%4</td>"
                        "<td align=right>%5</td><td>%6%7</td></tr>")
             .arg(signedMs(n.delta_ns()), ms(n.a_ns), ms(n.b_ns), QString::number(n.a_count, 'f', 1),
                  QString::number(n.b_count, 'f', 1), n.kernel ? QString() : QStringLiteral("[op] "),
                  QString::fromStdString(n.name).left(140).toHtmlEscaped());
  return h + "</table>";
}

}  // namespace

QString diffHtml(const QString& a_name, const QString& b_name, const tb::prof::TraceDiff& d) {
  QString h = QStringLiteral("<p><b>A</b> %1 (%2 steps)<br><b>B</b> %3 (%4 steps)</p>")
                  .arg(a_name.toHtmlEscaped()).arg(d.a_steps).arg(b_name.toHtmlEscaped()).arg(d.b_steps);
  h += QStringLiteral("<p>%1 %2 ms → %3 ms").arg(d.per_step ? QObject::tr("median step") : QObject::tr("window"),
                                                ms(d.a_step_ns), ms(d.b_step_ns));
  if (d.speedup > 0)
    h += QStringLiteral(" — <b>B %1: %2×</b>")
             .arg(d.speedup >= 1 ? QObject::tr("faster") : QObject::tr("slower"))
             .arg(d.speedup, 0, 'f', 2);
  h += QStringLiteral("</p><table border=1 cellspacing=0 cellpadding=3><tr><th>%1</th><th>A</th><th>B</th><th>Δ</th></tr>")
           .arg(d.per_step ? QObject::tr("ms per step") : QObject::tr("ms"));
  for (const auto& c : d.classes)
    h += QStringLiteral("<tr><td>%1</td><td align=right>%2</td><td align=right>%3</td><td align=right>%4</td></tr>")
             .arg(QString::fromStdString(c.name), ms(c.a_ns), ms(c.b_ns), signedMs(c.delta_ns()));
  h += "</table>";
  h += namesTable(QObject::tr("Changed most (time = count × mean)"), d.changed);
  h += namesTable(QObject::tr("Added in B"), d.added);
  h += namesTable(QObject::tr("Removed in B"), d.removed);
  auto list = [](const std::vector<std::string>& v) {
    QString s;
    for (const auto& x : v) s += (s.isEmpty() ? "" : ", ") + QString::fromStdString(x);
    return s.isEmpty() ? QObject::tr("none") : s;
  };
  h += QStringLiteral("<p>%1 %2<br>%3 %4</p>")
           .arg(QObject::tr("Findings that appeared:"), list(d.findings_appeared), QObject::tr("disappeared:"),
                list(d.findings_disappeared));
  for (const auto& n : d.notes) h += QStringLiteral("<p><i>%1</i></p>").arg(QString::fromStdString(n).toHtmlEscaped());
  return h;
}

TraceComparison compareTraceFiles(const QString& a, const QString& b) {
  TraceComparison out;
  auto ta = tb::prof::load_trace(a.toStdString());
  if (!ta.ok()) {
    out.error = QStringLiteral("%1: %2").arg(a, QString::fromStdString(ta.error().to_string()));
    return out;
  }
  auto tb_ = tb::prof::load_trace(b.toStdString());
  if (!tb_.ok()) {
    out.error = QStringLiteral("%1: %2").arg(b, QString::fromStdString(tb_.error().to_string()));
    return out;
  }
  const auto ra = tb::prof::analyze(*ta.value()), rb = tb::prof::analyze(*tb_.value());
  const auto d = tb::prof::diff_traces(*ta.value(), ra, *tb_.value(), rb);
  out.ok = true;
  out.html = diffHtml(QFileInfo(a).fileName(), QFileInfo(b).fileName(), d);
  return out;
}

}  // namespace tb::ui
