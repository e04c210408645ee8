#include "ui/segments.h"

#include "ui/observer_cost.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <cmath>

namespace tb::ui {

QString Segment::label() const {
  if (changed.isEmpty()) return QStringLiteral("baseline");
  QStringList parts;
  for (auto it = changed.begin(); it != changed.end(); ++it) parts << it.key() + "=" + knobValueText(it.value());
  return (source.isEmpty() ? QString() : source + ": ") + parts.join(", ");
}

std::vector<Segment> segmentRun(const RunRecord& rec) {
  std::vector<Segment> segs;
  QJsonObject current;  // config of the running segment
  if (!rec.configs.empty()) current = rec.configs.front().knobs;
  for (const StepSample& s : rec.steps) {
    if (segs.empty() || segs.back().rev != s.config_rev) {
      Segment seg;
      seg.rev = s.config_rev;
      seg.first_step = s.i;
      // Every change since the previous segment: two knobs set at one step boundary are two revisions with
      // no step between them, and the comparison is about both.
      const int64_t from = segs.empty() ? -1 : segs.back().rev;
      for (const ConfigChange& c : rec.configs) {
        if (c.rev <= from || c.rev > s.config_rev) continue;
        QJsonObject changed = c.changed;
        if (changed.isEmpty()) {  // older children: diff the full configs
          for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it)
            if (knobValueText(current.value(it.key())) != knobValueText(it.value())) changed.insert(it.key(), it.value());
        }
        if (!segs.empty())
          for (auto it = changed.begin(); it != changed.end(); ++it) {
            if (!seg.previous.contains(it.key())) seg.previous.insert(it.key(), current.value(it.key()));
            seg.changed.insert(it.key(), it.value());
          }
        current = c.knobs.isEmpty() ? current : c.knobs;
        if (!c.source.isEmpty()) seg.source = c.source;
      }
      // The tune whose result this is: the last one that ended before this segment's first step.
      if (seg.source == QLatin1String("auto-tune"))
        for (const TuneEvent& t : rec.tunes)
          if (!t.done.isEmpty() && t.before_step < s.i) seg.tune = t.done;
      for (const QString& k : seg.changed.keys())  // set and set back between two steps: no change
        if (knobValueText(seg.changed.value(k)) == knobValueText(seg.previous.value(k))) {
          seg.changed.remove(k);
          seg.previous.remove(k);
        }
      segs.push_back(seg);
    }
    Segment& seg = segs.back();
    seg.last_step = s.i;
    if (s.warmup) ++seg.warmup_steps;
    else if (s.wall_ns > 0) {
      seg.sps.push_back(s.samplesPerSec());
      seg.timings.push_back({static_cast<int64_t>(s.samples), s.t_ns, s.wall_ns, s.data_wait_ns, s.minor_faults});
      seg.wait_share.push_back(double(s.data_wait_ns) / double(s.wall_ns));
      if (s.observer_wall_ns >= 0 && s.observer_cpu_ns >= 0) {
        if (seg.observer_wall0 < 0) seg.observer_cpu0 = s.observer_cpu_ns, seg.observer_wall0 = s.observer_wall_ns;
        seg.observer_cpu1 = s.observer_cpu_ns;
        seg.observer_wall1 = s.observer_wall_ns;
      }
    }
  }
  return segs;
}

std::pair<QString, QString> chunksForComparison(const RunRecord& rec, const std::vector<Segment>& segs,
                                                const Comparison& c) {
  if (c.index <= 0 || c.index >= static_cast<int>(segs.size())) return {};
  const Segment &b = segs[size_t(c.index) - 1], &a = segs[size_t(c.index)];
  QString before, after;
  for (const TraceChunk& ch : rec.chunks) {
    if (ch.first_step >= b.first_step && ch.last_step <= b.last_step) before = ch.path;  // the last one
    if (after.isEmpty() && ch.first_step >= a.first_step && ch.last_step <= a.last_step) after = ch.path;
  }
  if (before.isEmpty() || after.isEmpty()) return {};
  return {before, after};
}

std::vector<measure::Window> Segment::windows() const { return measure::windows_of(timings, kWindowSteps); }

double Segment::observerShare() const { return cpuShare(observer_cpu0, observer_wall0, observer_cpu1, observer_wall1); }

QString Comparison::trustText() const {
  if (from_tune)
    return QStringLiteral("measured by the auto-tune: %1; the machine: %2%3")
        .arg(QString::fromStdString(stats.method), QString::fromStdString(stats.noise_before.text),
             report_html.isEmpty() ? QString() : QStringLiteral("\nreport: ") + report_html);
  QString t = QString::fromStdString(stats.noise_text());
  if (const QString w = observerCostText(observer_share); !w.isEmpty()) t += '\n' + w;
  return t;
}

double Segment::throughput() const {
  return timings.empty() ? std::nan("") : measure::pooled_throughput(windows());
}

RatioCI tunerStats(const QJsonObject& done) {
  RatioCI r;
  const double nan = std::nan("");
  auto num = [&](const char* key) { return done.value(key).isDouble() ? done.value(key).toDouble() : nan; };
  r.before = num("baseline_throughput");
  r.after = num("final_throughput");
  const QJsonArray ci = done.value("speedup_ci").toArray();
  r.n_before = r.n_after = size_t(done.value("speedup_pairs").toInt(0));  // a window of each side per pair
  r.noise_before.text = r.noise_after.text = done.value("noise").toString().toStdString();
  r.method = done.value("speedup_method").toString(QStringLiteral("the tuner's final alternation")).toStdString();
  if (done.value("speedup").isDouble() && ci.size() == 2) {
    r.ratio = done.value("speedup").toDouble();
    r.lo = ci[0].toDouble();
    r.hi = ci[1].toDouble();
    r.valid = true;
  }
  return r;
}

std::vector<Comparison> compareSegments(const std::vector<Segment>& segs) {
  std::vector<Comparison> out;
  for (size_t k = 1; k < segs.size(); ++k) {
    Comparison c;
    c.index = int(k);
    c.changed = segs[k].changed;
    c.previous = segs[k].previous;
    QStringList parts;
    for (auto it = c.changed.begin(); it != c.changed.end(); ++it)
      parts << QStringLiteral("%1 %2 → %3").arg(it.key(), knobValueText(c.previous.value(it.key())), knobValueText(it.value()));
    c.change = parts.isEmpty() ? QStringLiteral("config rev %1").arg(segs[k].rev) : parts.join(", ");
    if (!segs[k].source.isEmpty()) c.change = segs[k].source + ": " + c.change;  // the tuner's result, not a toggle
    c.stats = segs[k].tune.isEmpty() ? compareWindows(segs[k - 1].windows(), segs[k].windows()) : tunerStats(segs[k].tune);
    if (!segs[k].tune.isEmpty()) {
      c.from_tune = true;
      c.report_html = segs[k].tune.value("report_html").toString();
    }
    c.wait_before = segs[k - 1].wait_share.empty() ? 0.0 : median(segs[k - 1].wait_share);
    c.wait_after = segs[k].wait_share.empty() ? 0.0 : median(segs[k].wait_share);
    c.observer_share = cpuShare(segs[k - 1].observer_cpu0, segs[k - 1].observer_wall0, segs[k].observer_cpu1, segs[k].observer_wall1);
    out.push_back(c);
  }
  return out;
}

static QString fmt(double v, int prec = 1) { return std::isfinite(v) ? QString::number(v, 'f', prec) : QStringLiteral("–"); }

static QString runTitle(const RunRecord& rec) {
  const QJsonObject dev = rec.hello.value("device").toObject();
  const QJsonObject ver = rec.hello.value("versions").toObject();
  return QStringLiteral("model %1, data %2, device %3 (%4), LibTorch %5")
      .arg(rec.started.value("model").toString("?"), rec.started.value("data").toString("?"),
           dev.value("name").toString("?"), dev.value("kind").toString("?"), ver.value("libtorch").toString("?"));
}

QString comparisonsMarkdown(const RunRecord& rec, const std::vector<Comparison>& cmp) {
  QString md = QStringLiteral("# TuneBench — measured comparisons\n\n%1  \nexported %2\n\n")
                   .arg(runTitle(rec), QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
  md += "| change | before (samples/s) | after (samples/s) | ratio | 95% CI | data wait (share of step) | n before/after | verdict |\n";
  md += "|---|---:|---:|---:|---|---|---|---|\n";
  for (const auto& c : cmp)
    md += QStringLiteral("| %1 | %2 | %3 | %4× | [%5, %6] | %7% → %8% | %9/%10 | %11 |\n")
              .arg(c.change, fmt(c.stats.before), fmt(c.stats.after), fmt(c.stats.ratio, 2),
                   fmt(c.stats.lo, 2), fmt(c.stats.hi, 2), fmt(100 * c.wait_before), fmt(100 * c.wait_after))
              .arg(c.stats.n_before).arg(c.stats.n_after).arg(QString::fromStdString(c.stats.verdict()));
  if (cmp.empty()) md += "| (no configuration change measured yet) | | | | | | | |\n";
  md += "\nSamples over wall time of each side's measured steps (data loading included), warm-up excluded; the "
        "interval is Welch's t on the log throughputs of 5-step windows. \"no effect\" = the interval covers 1. A live "
        "toggle is measured before then after, not alternated: \"(drifting)\" marks a side whose throughput trended.\n";
  for (const auto& c : cmp)
    md += "\n- " + c.change + ": " + c.trustText().replace('\n', "; ");
  if (!cmp.empty()) md += "\n";
  if (!rec.failure.isEmpty()) md += "\n**The run ended with an error:** " + rec.failure.section('\n', 0, 0) + "\n";
  return md;
}

QString comparisonsHtml(const RunRecord& rec, const std::vector<Comparison>& cmp) {
  QString h = QStringLiteral(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>TuneBench comparisons</title><style>"
      "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{padding:4px 10px;"
      "border-bottom:1px solid #ddd;text-align:right}td:first-child,th:first-child{text-align:left}"
      ".faster{color:#1a7f37;font-weight:bold}.slower{color:#c62828;font-weight:bold}.bar{background:#4fa3ff;"
      "height:10px;display:inline-block}</style></head><body>");
  h += QStringLiteral("<h1>TuneBench — measured comparisons</h1><p>%1<br>exported %2</p>")
           .arg(runTitle(rec).toHtmlEscaped(), QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
  h += "<table><tr><th>change</th><th>before (samples/s)</th><th>after (samples/s)</th><th>ratio</th><th>95% CI</th>"
       "<th>data wait</th><th>n</th><th>verdict</th><th></th></tr>";
  for (const auto& c : cmp) {
    const QString v = QString::fromStdString(c.stats.verdict());
    const double w = std::isfinite(c.stats.ratio) ? std::min(300.0, 100.0 * c.stats.ratio) : 0;
    h += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4×</td><td>[%5, %6]</td><td>%7% → %8%</td><td>%9/%10</td>"
                        "<td class=\"%11\">%11</td><td><span class=\"bar\" style=\"width:%12px\"></span></td></tr>")
             .arg(c.change.toHtmlEscaped(), fmt(c.stats.before), fmt(c.stats.after), fmt(c.stats.ratio, 2),
                  fmt(c.stats.lo, 2), fmt(c.stats.hi, 2), fmt(100 * c.wait_before), fmt(100 * c.wait_after))
             .arg(c.stats.n_before).arg(c.stats.n_after).arg(v).arg(int(w));
  }
  h += "</table><p>Samples over wall time of each side's measured steps (data loading included), warm-up excluded; "
       "95% interval: Welch's t on the log throughputs of 5-step windows. \"no effect\" = the interval covers 1. A live "
       "toggle is measured before then after, not alternated: \"(drifting)\" marks a side whose throughput trended.</p>";
  for (const auto& c : cmp)
    if (const QString w = observerCostText(c.observer_share); !w.isEmpty())
      h += "<p>" + c.change.toHtmlEscaped() + ": " + w.toHtmlEscaped() + "</p>";
  if (!rec.failure.isEmpty()) h += "<p><b>The run ended with an error:</b> " + rec.failure.toHtmlEscaped() + "</p>";
  h += "</body></html>\n";
  return h;
}

QByteArray comparisonsJson(const RunRecord& rec, const std::vector<Comparison>& cmp) {
  QJsonArray arr;
  for (const auto& c : cmp) {
    arr.append(QJsonObject{{"change", c.change},
                           {"changed", c.changed},
                           {"previous", c.previous},
                           {"before", c.stats.before},
                           {"after", c.stats.after},
                           {"noise_before", QString::fromStdString(c.stats.noise_before.text)},
                           {"noise_after", QString::fromStdString(c.stats.noise_after.text)},
                           {"ratio", c.stats.ratio},
                           {"ci95", QJsonArray{c.stats.lo, c.stats.hi}},
                           {"n_before", qint64(c.stats.n_before)},
                           {"n_after", qint64(c.stats.n_after)},
                           {"verdict", QString::fromStdString(c.stats.verdict())},
                           {"data_wait_share_before", c.wait_before},
                           {"data_wait_share_after", c.wait_after},
                           {"observer_cpu_share", std::isfinite(c.observer_share) ? QJsonValue(c.observer_share) : QJsonValue()}});
  }
  // Each segment's throughput as the chart shows it: what a benchmark compares with `tunebench-cli run`.
  QJsonArray segments;
  for (const Segment& s : segmentRun(rec))
    segments.append(QJsonObject{{"label", s.label()},
                                {"first_step", s.first_step},
                                {"last_step", s.last_step},
                                {"warmup_steps", s.warmup_steps},
                                {"measured_steps", qint64(s.timings.size())},
                                {"samples_per_s", s.timings.empty() ? QJsonValue() : QJsonValue(s.throughput())},
                                {"observer_cpu_share", std::isfinite(s.observerShare()) ? QJsonValue(s.observerShare()) : QJsonValue()}});
  QJsonObject root{{"unit", "samples/s"},
                   {"versions", rec.hello.value("versions")},
                   {"device", rec.hello.value("device")},
                   {"model", rec.started.value("model")},
                   {"data", rec.started.value("data")},
                   {"steps", qint64(rec.steps.size())},
                   {"comparisons", arr},
                   {"segments", segments}};
  if (!rec.failure.isEmpty()) root.insert("failure", rec.failure);
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

}  // namespace tb::ui
