#include "ui/segments.h"

#include "ui/observer_cost.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <cmath>

#include "base/count_text.h"

namespace tb::ui {

QString Segment::label() const {
  if (changed.isEmpty()) return QStringLiteral("baseline");
  QStringList parts;
  for (auto it = changed.begin(); it != changed.end(); ++it) parts << it.key() + "=" + knobValueText(it.value());
  return (source.isEmpty() ? QString() : source + ": ") + parts.join(", ");
}

namespace {

// Leaves a segment's traced steps out of its figures when it has two windows of untraced ones (as `run --script
// --trace` takes its figures from 10 untraced steps): a step inside a
// trace chunk is stretched by the recording (0.63x on a 1.9 ms step here), so a toggle watched through the
// timeline would otherwise compare chunks against untraced stretches by chance of where they fell.
void leaveTracedOut(Segment& seg, const std::vector<char>& traced) {
  const auto n = static_cast<int>(std::count(traced.begin(), traced.end(), char(1)));
  if (n == 0) return;
  if (static_cast<int>(traced.size()) - n < 2 * kWindowSteps) {
    seg.traced_in_figures = n;
    return;
  }
  seg.traced_left_out = n;
  size_t k = 0;
  for (size_t j = 0; j < traced.size(); ++j) {
    if (traced[j]) continue;
    seg.sps[k] = seg.sps[j];
    seg.timings[k] = seg.timings[j];
    seg.wait_share[k] = seg.wait_share[j];
    ++k;
  }
  seg.sps.resize(k);
  seg.timings.resize(k);
  seg.wait_share.resize(k);
}

}  // namespace

std::vector<Segment> segmentRun(const RunRecord& rec) {
  std::vector<Segment> segs;
  std::vector<std::vector<char>> traced;  // per segment, per measured step
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
      traced.emplace_back();
    }
    Segment& seg = segs.back();
    seg.last_step = s.i;
    if (s.warmup) ++seg.warmup_steps;
    else if (s.compile_ns > 0) ++seg.compiling_left_out, seg.compile_ns += s.compile_ns;
    else if (s.wall_ns > 0) {
      seg.sps.push_back(s.samplesPerSec());
      seg.timings.push_back({static_cast<int64_t>(s.evaluatedSamples()), s.t_ns, s.wall_ns, s.data_wait_ns, s.minor_faults});
      seg.wait_share.push_back(double(s.data_wait_ns) / double(s.wall_ns));
      traced.back().push_back(s.traced ? 1 : 0);
      if (s.observer_wall_ns >= 0 && s.observer_cpu_ns >= 0) {
        if (seg.observer_wall0 < 0) seg.observer_cpu0 = s.observer_cpu_ns, seg.observer_wall0 = s.observer_wall_ns;
        seg.observer_cpu1 = s.observer_cpu_ns;
        seg.observer_wall1 = s.observer_wall_ns;
      }
    }
  }
  for (size_t k = 0; k < segs.size(); ++k) leaveTracedOut(segs[k], traced[k]);
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
  if (traced_left_out > 0)
    t += QStringLiteral("\nfrom untraced steps: %1 traced steps left out (the recording stretches them)").arg(traced_left_out);
  if (one_time_s >= 0.05)
    t += std::isfinite(break_even_steps)
             ? QStringLiteral("\ntorch.compile took %1 s once: paid back after ~%2 steps at the time it saves a step")
                   .arg(one_time_s, 0, 'f', 1)
                   .arg(QString::fromStdString(tb::about_count(break_even_steps)))
             : QStringLiteral("\ntorch.compile took %1 s once: never paid back by a step no faster").arg(one_time_s, 0, 'f', 1);
  if (compiling_left_out > 0)
    t += (compiling_left_out == 1 ? QStringLiteral("\n1 step that compiled left out (torch.compile's one-time cost)")
                                  : QStringLiteral("\n%1 steps that compiled left out (torch.compile's one-time cost)")
                                        .arg(compiling_left_out));
  if (traced_in_figures > 0)
    t += QStringLiteral("\nincludes %1 traced steps (too few untraced ones): the recording's cost is in the figures")
             .arg(traced_in_figures);
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

namespace {

// Seconds a measured step of `s` takes on average (NaN: none measured).
double stepSeconds(const Segment& s) {
  double wall = 0;
  for (const auto& t : s.timings) wall += t.wall_ns * 1e-9;
  return s.timings.empty() ? std::nan("") : wall / double(s.timings.size());
}

}  // namespace

void breakEven(const Segment& before, const Segment& after, Comparison& c) {
  c.one_time_s = after.compile_ns * 1e-9;
  if (c.one_time_s < 0.05) return;
  const double saved = stepSeconds(before) - stepSeconds(after);
  if (c.stats.ratio > 1 && saved > 0) c.break_even_steps = c.one_time_s / saved;
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
    c.traced_left_out = segs[k - 1].traced_left_out + segs[k].traced_left_out;
    c.compiling_left_out = segs[k - 1].compiling_left_out + segs[k].compiling_left_out;
    breakEven(segs[k - 1], segs[k], c);
    c.traced_in_figures = segs[k - 1].traced_in_figures + segs[k].traced_in_figures;
    c.observer_share = cpuShare(segs[k - 1].observer_cpu0, segs[k - 1].observer_wall0, segs[k].observer_cpu1, segs[k].observer_wall1);
    out.push_back(c);
  }
  return out;
}

QJsonObject sessionDocument(const RunRecord& rec, const std::vector<Comparison>& cmp,
                            const QHash<QString, QString>& decisions, const QJsonObject& loader) {
  auto finite = [](double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(); };
  QJsonArray arr;
  for (const auto& c : cmp) {
    arr.append(QJsonObject{{"change", c.change},
                           {"changed", c.changed},
                           {"previous", c.previous},
                           {"source", c.from_tune ? "auto-tune" : "toggle"},
                           {"before", finite(c.stats.before)},
                           {"after", finite(c.stats.after)},
                           {"noise_before", QString::fromStdString(c.stats.noise_before.text)},
                           {"noise_after", QString::fromStdString(c.stats.noise_after.text)},
                           {"ratio", c.stats.valid ? finite(c.stats.ratio) : QJsonValue()},
                           {"ci95", c.stats.valid ? QJsonValue(QJsonArray{c.stats.lo, c.stats.hi}) : QJsonValue()},
                           {"method", QString::fromStdString(c.stats.method)},
                           {"n_before", qint64(c.stats.n_before)},
                           {"n_after", qint64(c.stats.n_after)},
                           {"verdict", QString::fromStdString(c.stats.verdict())},
                           {"trust", c.trustText()},
                           {"decision", decisions.value(c.change)},
                           {"report_html", c.report_html},
                           {"data_wait_share_before", c.wait_before},
                           {"one_time_s", c.one_time_s},
                           {"break_even_steps", finite(c.break_even_steps)},
                           {"data_wait_share_after", c.wait_after},
                           {"observer_cpu_share", finite(c.observer_share)}});
  }
  // Each segment's throughput as the chart shows it: what a benchmark compares with `tunebench-cli run`.
  QJsonArray segments;
  for (const Segment& s : segmentRun(rec))
    segments.append(QJsonObject{{"label", s.label()},
                                {"first_step", s.first_step},
                                {"last_step", s.last_step},
                                {"warmup_steps", s.warmup_steps},
                                {"measured_steps", qint64(s.timings.size())},
                                {"traced_steps_left_out", s.traced_left_out},
                                {"compiling_steps_left_out", s.compiling_left_out},
                                {"traced_steps_in_figures", s.traced_in_figures},
                                {"samples_per_s", s.timings.empty() ? QJsonValue() : QJsonValue(s.throughput())},
                                {"observer_cpu_share", finite(s.observerShare())}});
  QJsonArray tunes;
  for (const TuneEvent& t : rec.tunes) {
    if (t.done.isEmpty()) continue;
    tunes.append(QJsonObject{{"at_step", t.before_step},
                             {"report_html", t.done.value("report_html")},
                             {"report_markdown", t.done.value("report_markdown")},
                             {"report_json", t.done.value("report_json")},
                             {"kept", t.done.value("kept")},
                             {"speedup", t.done.value("speedup")},
                             {"speedup_ci", t.done.value("speedup_ci")}});
  }
  QJsonObject root{{"format", "tunebench-session-input"},
                   {"unit", "samples/s"},
                   {"versions", rec.hello.value("versions")},
                   {"device", rec.hello.value("device")},
                   {"model", rec.started.value("model")},
                   {"data", rec.started.value("data")},
                   {"steps", qint64(rec.steps.size())},
                   {"first_config", rec.configs.empty() ? QJsonObject() : rec.configs.front().knobs},
                   {"current_config", rec.configs.empty() ? QJsonObject() : rec.configs.back().knobs},
                   {"comparisons", arr},
                   {"segments", segments},
                   {"tunes", tunes}};
  if (!rec.failure.isEmpty()) root.insert("failure", rec.failure);
  if (!loader.isEmpty()) root.insert("loader", loader);
  return root;
}

}  // namespace tb::ui
