// The report writer of engine/report.h: HTML (its SVG charts in report_svg.cpp), Markdown, JSON.
#include "engine/report.h"

#include "tuner/report/report_loader.h"
#include "tuner/report/report_parts.h"
#include "tuner/report/report_script.h"
#include "client/protocol.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

namespace msg = tb::client::protocol::msg;

namespace tb::engine {
namespace {

using nlohmann::json;
using namespace report_detail;

// Markdown table cell: no pipes or newlines.
std::string md(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

std::string config_text(const Config& base, const Config& c) {
  std::string s;
  for (const auto& k : changed_knobs(base, c)) s += (s.empty() ? "" : ", ") + k + "=" + value_in(c, k);
  return s.empty() ? "(the baseline)" : s;
}

// What to keep, one line for every output: the changes, or why nothing is kept. An undecided headline keeps
// nothing; what it measured is named "not confirmed" so that no reader takes it for a result.
std::string keep_text(const TuneResult& r) {
  if (!unconfirmed_knobs(r).empty())
    return "nothing (not confirmed: " + config_text(r.baseline, r.unconfirmed_config) + ")";
  return config_text(r.baseline, r.final_config);
}

std::string change_text(const Trial& t) {
  if (t.knob.empty()) return t.value;
  return t.from + " → " + t.value + (t.also.empty() ? "" : " (" + t.also + ")");
}

std::string result_text(const Trial& t) {
  if (t.phase == "noise floor") return "noise floor";
  return t.accepted ? "kept" : t.outcome;
}

// The trial's reason without the verdict it starts with ("no effect: the interval ..." under a "no effect"
// result read "no effect no effect: the interval ...").
std::string reason_after(const Trial& t, const std::string& result) {
  std::string r = t.reason;
  for (const std::string& lead : {result, t.outcome}) {
    if (!lead.empty() && r.rfind(lead, 0) == 0) {
      r = r.substr(lead.size());
      while (!r.empty() && (r[0] == ':' || r[0] == ' ')) r.erase(0, 1);
      break;
    }
  }
  return r;
}

const char* kCss = R"CSS(
:root { color-scheme: light; }
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 60rem;
       padding: 1rem; line-height: 1.45; color: #222; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.25rem; border-bottom: 1px solid #ddd; margin-top: 2rem; }
.sub { color: #555; margin-top: 0; }
.headline { font-size: 2.2rem; font-weight: bold; color: #444; }
.headline.good { color: #2e7d32; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: .6rem 1rem; margin: .6rem 0; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border-bottom: 1px solid #e5e5e5; padding: .3rem .45rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; } td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.accepted td { background: #edf7ee; } tr.drift td, tr.oom td, tr.failed td { background: #fff4e5; }
tr.slower td { background: #fdecea; }
td.n.ci { white-space: normal; min-width: 8rem; } td.n.wrap { white-space: normal; } table.env td { overflow-wrap: anywhere; } tr.has-why td { border-bottom: none; } tr.why td { padding-top: 0; font-size: .82rem; color: #555; }
pre { background: #f6f8fa; padding: .7rem; overflow-x: auto; font-size: .85rem; border-radius: 4px; }
code { font-family: ui-monospace, Menlo, Consolas, monospace; }
svg { max-width: 100%; height: auto; display: block; margin: .4rem 0; }
.muted { color: #666; font-size: .85rem; }
@media (max-width: 600px) { body { padding: .5rem; } .headline { font-size: 1.7rem; } th, td { padding: .2rem .3rem; } }
@media print { body { max-width: none; color: #000; } .card, pre { border: 1px solid #999; background: none; }
  h2 { page-break-after: avoid; } tr, svg, pre, .card { page-break-inside: avoid; } .scroll { overflow: visible; }
  tr.accepted td, tr.drift td, tr.slower td, tr.oom td, tr.failed td, th { background: none; } }
)CSS";

}  // namespace

json windows_json(const std::vector<measure::Window>& ws) {
  json a = json::array();
  for (const auto& w : ws) a.push_back(num(w.throughput()));
  return a;
}

// Where the budget went and why the search ended, one line.
static std::string budget_text(const TuneResult& r) {
  std::string s = fmt(r.elapsed_s, 0) + " s of " + fmt(r.budget_s, 0) + " s";
  if (!r.budget_phases.empty()) {
    s += " (";
    bool first = true;
    for (const auto& [phase, sec] : r.budget_phases) {
      if (sec < 0.5) continue;
      s += (first ? "" : ", ") + phase + " " + fmt(sec, 0) + " s";
      first = false;
    }
    s += ")";
  }
  if (!r.ended.empty()) s += "; " + r.ended;
  return s;
}

json report_json(const TuneResult& r) {
  json j;
  j["format"] = "tunebench-tune";
  j["version"] = 1;
  j["unit"] = "samples/s";
  j["environment"] = r.environment.is_null() ? json::object() : r.environment;
  j["baseline_config"] = r.baseline;
  j["final_config"] = r.final_config;
  json changed = json::object();
  for (const auto& k : changed_knobs(r.baseline, r.final_config)) changed[k] = value_in(r.final_config, k);
  j["changed"] = changed;
  json unconfirmed = json::object();
  for (const auto& k : unconfirmed_knobs(r)) unconfirmed[k] = value_in(r.unconfirmed_config, k);
  j["unconfirmed"] = unconfirmed;
  j["verdict"] = r.verdict;
  j["speedup"] = num(r.speedup.ratio);
  j["speedup_ci"] = {num(r.speedup.lo), num(r.speedup.hi)};
  j["speedup_method"] = r.speedup.method;
  j["speedup_fresh_processes"] = r.speedup_fresh_processes;
  j["confirmation"] = r.confirmation;
  j["speedup_in_process"] = {{"ratio", num(r.speedup_in_process.ratio)},
                             {"ci", {num(r.speedup_in_process.lo), num(r.speedup_in_process.hi)}}};
  j["noise_floor"] = {{"sd_log", num(r.noise_floor.sd_log)}, {"df", r.noise_floor.df}, {"pairs", r.noise_floor.pairs},
                      {"bias", num(r.noise_floor.bias)}, {"band", num(r.noise_band)}};
  json bl = json::array();
  for (const auto& b : r.baselines)
    bl.push_back({{"phase", b.phase}, {"throughput", num(b.throughput)}, {"windows", b.windows}, {"at_s", b.at_s}});
  j["baselines"] = bl;
  j["noise"] = {{"verdict", r.noise.verdict}, {"text", r.noise.text}, {"cv", num(r.noise.cv)},
                {"drift", num(r.noise.drift)}, {"windows", r.noise.windows}};
  j["drift_note"] = r.drift_note;
  j["baseline_throughput"] = num(r.baseline_throughput);
  j["final_throughput"] = num(r.final_throughput);
  j["budget_s"] = r.budget_s;
  j["elapsed_s"] = r.elapsed_s;
  // How much of the budget the search spent, and on what.
  j["budget_used_s"] = r.elapsed_s;
  json phases = json::array();
  for (const auto& [phase, s] : r.budget_phases) phases.push_back({{"phase", phase}, {"seconds", s}});
  j["budget_phases"] = phases;
  j["finals_reserved_s"] = num(r.finals_reserved_s);
  j["finals_extra_s"] = num(r.finals_extra_s);
  // What one pass over every applicable knob costs, said after the noise floor (--budget auto buys it).
  if (r.plan) {
    const PassPlan& p = *r.plan;
    json each = json::array();
    for (size_t i = 0; i < p.knobs.size(); ++i) each.push_back({{"knob", p.knobs[i]}, {"trial_s", p.trial_s[i]}});
    j["plan"] = {{"pass_s", p.pass_s}, {"spent_s", p.spent_s}, {"reserve_s", p.reserve_s},
                 {"knobs", p.knobs.size()}, {"fit", p.fit}, {"fit_none_kept", p.fit_none_kept},
                 {"fit_knobs", std::vector<std::string>(p.knobs.begin(), p.knobs.begin() + p.fit)},
                 {"trials", each}, {"auto", p.auto_budget}, {"clamped", p.clamped}, {"line", p.line},
                 {"process_knobs", p.process_knobs}, {"process_s", p.process_s}, {"process_fit", p.process_fit},
                 {"priced", p.priced}};
  }
  j["plan_only"] = r.plan_only;
  j["ended"] = r.ended;
  // A simulated tune names what a person reaches by hand on the simulated machine, beside the tuner's figure.
  if (r.environment.is_object() && r.environment.contains("simulation")) j["simulation"] = r.environment["simulation"];
  j["window"] = r.window;
  // What the GUI's dialog says (the protocol's tune_done without the file names): a tune run as a child
  // process (`tune --ranks N` from the GUI) is summed up from this file the same way as a live one.
  json summary = tune_done_message(r, "", "", "");
  for (const char* k : {"type", "report_html", "report_markdown", "report_json"}) summary.erase(k);
  j["summary"] = summary;
  json trials = json::array();
  for (const auto& t : r.trials) {
    trials.push_back({{"phase", t.phase},
                      {"knob", t.knob},
                      {"value", t.value},
                      {"from", t.from},
                      {"reference", t.reference},
                      {"before", num(t.before)},
                      {"after", num(t.after)},
                      {"also", t.also},
                      {"ratio", num(t.estimate.ratio)},
                      {"ci_low", num(t.estimate.lo)},
                      {"ci_high", num(t.estimate.hi)},
                      {"method", t.estimate.method},
                      {"fresh_processes", t.fresh_processes},
                      {"windows_before", windows_json(t.a)},
                      {"windows_after", windows_json(t.b)},
                      {"accepted", t.accepted},
                      {"outcome", t.outcome},
                      {"reason", t.reason},
                      {"loss_drift", num(t.loss_drift)},
                      {"peak_memory_before", t.peak_before >= 0 ? json(t.peak_before) : json(nullptr)},
                      {"peak_memory_after", t.peak_after >= 0 ? json(t.peak_after) : json(nullptr)},
                      {"memory_total", t.memory_total > 0 ? json(t.memory_total) : json(nullptr)},
                      {"window", t.window},
                      {"rounds", t.rounds},
                      {"seconds", t.seconds}});
    // A start-up of the candidate's own only where one was said, a one-time cost (torch.compile's compiles) only
    // where one was paid: the other trials' records stay as they were.
    if (t.startup_s > 0) {
      trials.back()["startup_s"] = t.startup_s;
      trials.back()["break_even_steps"] = num(t.break_even_steps);
      if (t.startup_each_pass_steps > 0) trials.back()["startup_each_pass_steps"] = t.startup_each_pass_steps;
    }
    if (t.one_time_before_s > 0 || t.one_time_after_s > 0) {
      trials.back()["one_time_s_before"] = t.one_time_before_s;
      trials.back()["one_time_s_after"] = t.one_time_after_s;
      trials.back()["break_even_steps"] = num(t.break_even_steps);
    }
  }
  j["trials"] = trials;
  json skipped = json::array();
  for (const auto& s : r.skipped)
    skipped.push_back({{"knob", s.knob}, {"value", s.value}, {"reason", s.reason}, {"left_s", num(s.left_s)}});
  j["skipped"] = skipped;
  json wf = json::array();
  for (const auto& [l, v] : r.waterfall) wf.push_back({{"label", l}, {"throughput", num(v)}});
  j["waterfall"] = wf;
  json snaps = json::array();
  for (const auto& s : r.snapshots) {
    json b = json::object();
    for (const auto& [p, v] : s.breakdown_ms) b[p] = num(v);
    snaps.push_back({{"label", s.label},
                     {"config", s.config},
                     {"throughput", num(s.throughput)},
                     {"step_ms", num(s.step_ms)},
                     {"bottleneck", s.bottleneck},
                     {"worst_stall_ms", num(s.worst_stall_ms)},
                     {"worst_stall_kind", s.worst_stall_kind},
                     {"breakdown_ms", b},
                     {"findings", s.findings},
                     {"ranks", s.ranks}});
    if (s.loader.is_object()) snaps.back()["loader"] = s.loader;
  }
  j["snapshots"] = snaps;
  j["code"] = {{"pytorch", final_code_pytorch(r)}, {"libtorch", final_code_libtorch(r)}};
  j["notes"] = r.notes;
  return j;
}

namespace {

// The headline, what to keep, what was slow, the budget and the measurement.
std::string html_summary(const TuneResult& r, const std::vector<std::string>& changed) {
  std::string h;
  // Summary.
  h += "<div class=\"card\">\n";
  const Headline head = tune_headline(r);
  h += std::string("<div class=\"headline") + (head.good ? " good" : "") + "\">" + esc(head.title) + "</div>\n";
  if (r.speedup.valid() && !changed.empty()) {
    h += "<p>" + esc(fmt(r.baseline_throughput, 1) + " → " + fmt(r.final_throughput, 1) +
                     " samples/s (95% interval of the ratio " + fmt(r.speedup.lo, 2) + "–" + fmt(r.speedup.hi, 2) +
                     ", baseline and final measured alternately at the end" +
                     (r.speedup_fresh_processes ? ", each window a fresh process" : "") + ").") +
         "</p>\n";
    if (!r.confirmation.empty()) h += "<p><strong>Confirmed:</strong> " + esc(r.confirmation) + "</p>\n";
  } else {
    h += "<p>" + esc("Baseline " + fmt(r.baseline_throughput, 1) + " samples/s (measured " +
                     (r.plan_only ? "against itself, the noise floor's pairs" : "at the end of the tune") + ").") +
         "</p>\n";
  }
  h += "<p><strong>Keep:</strong> " + esc(keep_text(r)) + "</p>\n";
  if (r.plan) h += "<p><strong>One pass:</strong> " + esc(r.plan->line) + "</p>\n";
  if (!r.snapshots.empty()) {
    const auto& b = r.snapshots.front();
    h += "<p><strong>What was slow:</strong> " + esc(b.bottleneck.empty() ? "see the breakdown" : b.bottleneck) +
         (b.findings.empty() ? "" : " — " + esc(b.findings.front())) + "</p>\n";
  }
  if (!r.budget_phases.empty() || !r.ended.empty())
    h += "<p><strong>The budget:</strong> " + esc(budget_text(r)) + "</p>\n";
  if (const std::string mem = memory_headline(r); !mem.empty()) h += "<p><strong>Memory:</strong> " + esc(mem) + "</p>\n";
  h += "<p class=\"muted\">" +
       esc(std::to_string(r.trials.size()) + " trials in " + fmt(r.elapsed_s, 0) + " s of a " + fmt(r.budget_s, 0) +
           " s budget; " + std::to_string(r.skipped.size()) + " skipped. Each trial runs the reference and the " +
           "candidate in pairs of windows (AB, BA, ...), each after a warm-up until stable; a window's throughput " +
           "is its samples over its wall time; the interval is Student's t on the paired log ratios, pooled with " +
           "the A/A noise floor; a change inside the interval or the noise floor counts as no effect.") +
       "</p>\n<p><strong>Measurement:</strong> " + esc(r.noise.text.empty() ? "n/a" : r.noise.text) +
       (jstr(r.environment, "rate", "").empty() ? "" : "<br/>Rate " + esc(jstr(r.environment, "rate", ""))) +
       (r.drift_note.empty() ? "" : "<br/>" + esc(r.drift_note)) + "</p>\n</div>\n";

  return h;
}

// How far to trust the numbers: the noise floor, the verdict, the baselines (the headline's marked).
std::string html_trust(const TuneResult& r, const std::vector<std::string>& changed) {
  std::string h;
  h += "<h2>How far to trust these numbers</h2>\n<div class=\"scroll\"><table><tbody>\n";
  h += "<tr><th>noise floor (A/A)</th><td>" +
       esc(r.noise_floor.valid() ? "a pair of windows differs by " + fmt(100 * r.noise_floor.sd_log, 2) + "% (sd of the log " +
                                       "ratio, " + std::to_string(r.noise_floor.pairs) + " pairs); one trial resolves " +
                                       "changes beyond ±" + fmt(100 * r.noise_band, 1) + "%"
                                 : std::string("not measured")) +
       "</td></tr>\n";
  h += "<tr><th>verdict</th><td>" + esc(r.noise.text.empty() ? "n/a" : r.noise.text) + "</td></tr>\n";
  // One baseline for the reader: the headline's figure is one of these rows, marked, or a row of its own
  // (fresh processes); before, the header said 363.4 and the table 377.0 with nothing to tie them.
  bool headline_listed = false;
  const bool fresh_headline = r.speedup_fresh_processes && r.speedup.valid() && !changed.empty();
  for (const auto& b : r.baselines) {
    const bool is_headline = !fresh_headline && !headline_listed && fmt(b.throughput, 1) == fmt(r.baseline_throughput, 1);
    headline_listed |= is_headline;
    h += "<tr><th>baseline, " + esc(b.phase) + "</th><td>" +
         esc(fmt(b.throughput, 1) + " samples/s over " + std::to_string(b.windows) + " windows (at " + fmt(b.at_s, 0) + " s)" +
             (is_headline ? ": the headline's baseline" : "")) +
         "</td></tr>\n";
  }
  if (!headline_listed && std::isfinite(r.baseline_throughput))
    h += "<tr><th>baseline, headline</th><td>" +
         esc(fmt(r.baseline_throughput, 1) + " samples/s" +
             (fresh_headline ? " (fresh processes, alternating with the final configuration)"
                             : " (the final alternation's baseline arm)")) +
         "</td></tr>\n";
  if (!r.drift_note.empty()) h += "<tr><th>drift</th><td>" + esc(r.drift_note) + "</td></tr>\n";
  h += "</tbody></table></div>\n";
  return h;
}

// The waterfall, the step breakdowns after each kept change, the worst stall.
std::string html_steps(const TuneResult& r) {
  std::string h;
  h += "<h2>From baseline to final</h2>\n" + svg_waterfall(r);
  h += "<h2>Where the time went, step by step</h2>\n<p>Each accepted change moved the bottleneck; the bars split "
       "one step into its parts.</p>\n" + svg_breakdown(r);
  if (!r.snapshots.empty()) {
    h += "<div class=\"scroll\"><table>\n<thead><tr><th>after</th><th>samples/s</th><th>step ms</th><th>bottleneck</th>"
         "<th>findings</th></tr></thead>\n<tbody>\n";
    for (const auto& s : r.snapshots) {
      std::string f;
      for (const auto& x : s.findings) f += (f.empty() ? "" : "<br/>") + esc(x);
      h += "<tr><td>" + esc(s.label) + "</td><td class=\"n\">" + esc(fmt(s.throughput, 1)) + "</td><td class=\"n\">" +
           esc(fmt(s.step_ms, 1)) + "</td><td>" + esc(s.bottleneck) + "</td><td>" + f + "</td></tr>\n";
    }
    h += "</tbody></table></div>\n";
    h += "<h2>Worst stall before and after</h2>\n" + svg_stall(r);
  }
  return h;
}

// Every trial, as a forest plot and a table, and what was skipped.
std::string html_trials(const TuneResult& r) {
  std::string h;
  h += "<h2>Every knob, before and after</h2>\n<p>Ratio after/before with its 95% interval (log scale). Green: kept "
       "(or held in the final alternation); grey: no effect or not the best value; red: slower; orange: rejected by the "
       "loss-drift guard; purple: kept earlier but dropped in the final alternation.</p>\n" +
       svg_forest(r);
  // A tune that kept several changes compares against long configurations: they break after a knob's `=` and its
  // `_` (<wbr>), the samples/s and the memory after their arrow, so the table fits a 1000 px page (it was 1197 px).
  h += "<div class=\"scroll\"><table>\n<thead><tr><th>#</th><th>phase</th><th>knob</th><th>change</th><th>vs</th>"
       "<th>samples/s before → after</th><th>ratio [95% CI]</th><th>peak memory</th><th>loss drift</th><th>result</th>"
       "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const Trial& t = r.trials[i];
    const std::string cls = t.accepted ? "accepted" : t.outcome == "no effect" ? "" : t.outcome;
    // The reason is a line of its own under the row: in the last column it made rows a screen tall and pushed the
    // table past the page's edge.
    const std::string why = reason_after(t, result_text(t));
    const std::string row_cls = cls + (why.empty() ? "" : std::string(cls.empty() ? "" : " ") + "has-why");
    h += "<tr" + (row_cls.empty() ? std::string() : " class=\"" + esc(row_cls) + "\"") + "><td class=\"n\">" +
         std::to_string(i + 1) + "</td><td>" + esc(t.phase) + "</td><td>" + esc(t.knob.empty() ? "all" : t.knob) +
         "</td><td>" + breakable(change_text(t)) + "</td><td>" + breakable(t.reference) +
         "</td><td class=\"n wrap\">" + esc(fmt(t.before, 1)) + " →<wbr/> " + esc(fmt(t.after, 1)) +
         "</td><td class=\"n ci\">" + esc(interval_text(t.estimate)) + "</td><td class=\"n wrap\">" + esc(memory_text(t)) +
         "</td><td class=\"n\">" + esc(std::isfinite(t.loss_drift) ? fmt(t.loss_drift * 100, 1) + "%" : "") + "</td><td><strong>" +
         esc(result_text(t)) + "</strong></td></tr>\n";
    if (!why.empty())
      h += "<tr class=\"why" + (cls.empty() ? std::string() : " " + esc(cls)) + "\"><td></td><td colspan=\"9\">" +
           esc(why) + "</td></tr>\n";
  }
  h += "</tbody></table></div>\n";
  if (!r.skipped.empty()) {
    h += "<h2>Skipped</h2>\n<ul>\n";
    for (const auto& s : r.skipped)
      h += "<li><strong>" + esc(s.knob + (s.value.empty() ? "" : "=" + s.value)) + "</strong>: " + esc(s.reason) + "</li>\n";
    h += "</ul>\n";
  }

  return h;
}

// The final configuration and the code that keeps it.
std::string html_final(const TuneResult& r) {
  std::string h;
  h += "<h2>Final configuration</h2>\n<div class=\"scroll\"><table>\n<thead><tr><th>knob</th><th>baseline</th>"
       "<th>final</th><th>what it does</th></tr></thead>\n<tbody>\n";
  for (const auto& [k, v] : r.final_config) {
    const KnobInfo* info = info_of(r, k);
    const bool ch = value_in(r.baseline, k) != v;
    h += std::string("<tr") + (ch ? " class=\"accepted\"" : "") + "><td>" + esc(k) + "</td><td>" +
         esc(value_in(r.baseline, k)) + "</td><td>" + (ch ? "<strong>" + esc(v) + "</strong>" : esc(v)) + "</td><td>" +
         esc(info ? info->title : "") + "</td></tr>\n";
  }
  h += "</tbody></table></div>\n";
  h += "<h2>The code that keeps it</h2>\n<h3>PyTorch (Python)</h3>\n<pre><code>" + esc(final_code_pytorch(r)) +
       "</code></pre>\n<h3>LibTorch (C++)</h3>\n<pre><code>" + esc(final_code_libtorch(r)) + "</code></pre>\n";

  return h;
}

// The environment: the device, the versions, the model and data, what else the workload said, the protocol.
std::string html_environment(const TuneResult& r) {
  const json& env = r.environment;
  std::string versions;
  if (env.is_object() && env.contains("versions") && env["versions"].is_object())
    for (const auto& [k, v] : env["versions"].items())
      versions += (versions.empty() ? "" : ", ") + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  std::string h;
  h += "<h2>Environment</h2>\n<div class=\"scroll\"><table class=\"env\"><tbody>\n";
  h += "<tr><th>device</th><td>" + esc(jstr(env, "device")) + "</td></tr>\n";
  h += "<tr><th>versions</th><td>" + esc(versions.empty() ? "unknown" : versions) + "</td></tr>\n";
  h += "<tr><th>model</th><td>" + esc(jstr(env, "model")) + "</td></tr>\n<tr><th>data</th><td>" + esc(jstr(env, "data")) + "</td></tr>\n";
  if (env.is_object())
    for (const auto& [k, v] : env.items()) {
      if (k == "device" || k == "versions" || k == "model" || k == "data") continue;
      h += "<tr><th>" + esc(k) + "</th><td>" + esc(v.is_string() ? v.get<std::string>() : v.dump()) + "</td></tr>\n";
    }
  h += "<tr><th>protocol</th><td>" +
       esc(std::to_string(r.trials.size() > 1 ? r.trials[1].rounds : 0) + " pairs of windows per trial (AB, BA, ...), " +
           std::to_string(r.window) + " measured steps per window in every phase, warm-up until stable") +
       "</td></tr>\n</tbody></table></div>\n";
  return h;
}

}  // namespace

std::string report_html(const TuneResult& r) {
  const json& env = r.environment;
  const std::string model = jstr(env, "model"), data = jstr(env, "data"), device = jstr(env, "device");
  const auto changed = r.unconfirmed_config.empty() ? changed_knobs(r.baseline, r.final_config) : unconfirmed_knobs(r);

  std::string h;
  h += "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  h += "<title>" + esc("TuneBench tuning report: " + model + " on " + data) + "</title>\n";
  h += "<style>" + std::string(kCss) + "</style>\n</head>\n<body>\n";
  h += "<h1>Tuning report: " + esc(model) + "</h1>\n";
  h += "<p class=\"sub\">" + esc(data) + " on " + esc(device) + " &#183; " + esc(now_utc()) + "</p>\n";
  h += html_summary(r, changed) + html_trust(r, changed) + html_steps(r) + tune_loader_html(r) + html_trials(r) +
       html_final(r) + html_environment(r);
  if (!r.notes.empty()) {
    h += "<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : r.notes) h += "<li>" + esc(n) + "</li>\n";
    h += "</ul>\n";
  }
  h += "<p class=\"muted\">Generated by TuneBench (tunebench-cli tune).</p>\n</body>\n</html>\n";
  return h;
}

std::string report_markdown(const TuneResult& r) {
  const json& env = r.environment;
  std::ostringstream m;
  m << "# Tuning report: " << jstr(env, "model") << "\n\n";
  m << jstr(env, "data") << " on " << jstr(env, "device") << " · " << now_utc() << "\n\n";
  const auto changed = r.unconfirmed_config.empty() ? changed_knobs(r.baseline, r.final_config) : unconfirmed_knobs(r);
  const Headline head = tune_headline(r);
  if (r.speedup.valid() && !changed.empty()) {
    m << "**" << head.title << "**: " << fmt(r.baseline_throughput, 1) << " → "
      << fmt(r.final_throughput, 1) << " samples/s (95% interval " << fmt(r.speedup.lo, 2) << "–"
      << fmt(r.speedup.hi, 2) << (r.speedup_fresh_processes ? ", fresh processes" : "") << ")\n\n";
    if (!r.confirmation.empty()) m << "**Confirmed:** " << r.confirmation << "\n\n";
  } else {
    m << "**" << head.title << "** (baseline " << fmt(r.baseline_throughput, 1) << " samples/s)\n\n";
  }
  m << "**Keep:** " << keep_text(r) << "\n\n";
  if (r.plan) m << "**One pass:** " << r.plan->line << "\n\n";
  if (const std::string mem = memory_headline(r); !mem.empty()) m << "**Memory:** " << mem << "\n\n";
  m << "**Measurement:** " << (r.noise.text.empty() ? "n/a" : r.noise.text);
  if (r.noise_floor.valid())
    m << "; noise floor (A/A): one trial resolves changes beyond ±" << fmt(100 * r.noise_band, 1) << "%";
  if (const std::string rate = jstr(r.environment, "rate", ""); !rate.empty()) m << "; rate " << rate;
  m << "\n\n";
  if (!r.baselines.empty()) {
    m << "| baseline measured in | samples/s | windows | at |\n|---|---:|---:|---:|\n";
    for (const auto& b : r.baselines)
      m << "| " << b.phase << " | " << fmt(b.throughput, 1) << " | " << b.windows << " | " << fmt(b.at_s, 0) << " s |\n";
    m << "\n";
  }
  if (!r.drift_note.empty()) m << "**Drift:** " << r.drift_note << "\n\n";
  if (!r.snapshots.empty()) {
    m << "## Where the bottleneck moved\n\n| after | samples/s | step ms | bottleneck | worst stall | findings |\n"
         "|---|---:|---:|---|---|---|\n";
    for (const auto& s : r.snapshots) {
      std::string f;
      for (const auto& x : s.findings) f += (f.empty() ? "" : "; ") + x;
      m << "| " << md(s.label) << " | " << fmt(s.throughput, 1) << " | " << fmt(s.step_ms, 1) << " | "
        << md(s.bottleneck) << " | " << fmt(s.worst_stall_ms, 1) << " ms " << md(s.worst_stall_kind) << " | " << md(f)
        << " |\n";
    }
    m << tune_loader_markdown(r) << "\n";
  }
  m << "## Trials\n\n| # | phase | knob | change | before | after | ratio [95% CI] | peak memory | loss drift | result |\n"
       "|---:|---|---|---|---:|---:|---|---:|---:|---|\n";
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const Trial& t = r.trials[i];
    m << "| " << i + 1 << " | " << t.phase << " | " << md(t.knob.empty() ? "all" : t.knob) << " | "
      << md(change_text(t)) << " | " << fmt(t.before, 1) << " | "
      << fmt(t.after, 1) << " | " << interval_text(t.estimate) << " | " << memory_text(t) << " | "
      << (std::isfinite(t.loss_drift) ? fmt(t.loss_drift * 100, 1) + "%" : "") << " | **"
      << result_text(t) << "** " << md(reason_after(t, result_text(t))) << " |\n";
  }
  m << "\n";
  if (!r.skipped.empty()) {
    m << "## Skipped\n\n";
    for (const auto& s : r.skipped) m << "- **" << s.knob << (s.value.empty() ? "" : "=" + s.value) << "**: " << s.reason << "\n";
    m << "\n";
  }
  m << "## The code that keeps it\n\n```python\n" << final_code_pytorch(r) << "```\n\n```cpp\n"
    << final_code_libtorch(r) << "```\n\n";
  m << "## Environment\n\n- device: " << jstr(env, "device") << "\n";
  if (env.is_object() && env.contains("versions")) m << "- versions: " << env["versions"].dump() << "\n";
  m << "- model: " << jstr(env, "model") << "\n- data: " << jstr(env, "data") << "\n- budget: " << fmt(r.budget_s, 0)
    << " s, used " << fmt(r.elapsed_s, 0) << " s\n";
  if (!r.budget_phases.empty() || !r.ended.empty()) m << "- " << budget_text(r) << "\n";
  for (const auto& n : r.notes) m << "- " << n << "\n";
  return m.str();
}

namespace report_detail {
const char* report_css() { return kCss; }
std::string report_time_utc() { return now_utc(); }
std::string config_text_of(const Config& base, const Config& c) { return config_text(base, c); }
void write_report_file(const std::string& path, const std::string& content) {
  if (path.empty()) return;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write '" + path + "'");
  f << content;
  f.close();
  if (!f) throw std::runtime_error("cannot write '" + path + "' (disk full?)");
}
}  // namespace report_detail

void write_report(const TuneResult& r, const std::string& html_path, const std::string& markdown_path,
                  const std::string& json_path) {
  write_report_file(html_path, report_html(r));
  write_report_file(markdown_path, report_markdown(r));
  write_report_file(json_path, json_path.empty() ? std::string() : report_json(r).dump(2) + "\n");
}

}  // namespace tb::engine
