// The session report of engine/session_report.h: the live comparisons as trials of one TuneResult, so that
// the forest chart and the code that keeps the result are the tuner's own, then each tune's report whole.
#include "engine/session_report.h"

#include "client/loader_verdict.h"
#include "engine/report.h"
#include "tuner/report/report_loader.h"
#include "tuner/report/report_parts.h"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace tb::engine {
namespace {

using nlohmann::json;
using namespace report_detail;

double num_of(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::numeric_limits<double>::quiet_NaN();
}
std::string str_of(const json& j, const char* key, const std::string& dflt = "") {
  if (!j.is_object() || !j.contains(key)) return dflt;
  return j[key].is_string() ? j[key].get<std::string>() : j[key].is_null() ? dflt : j[key].dump();
}
Config config_of(const json& j) {
  Config c;
  if (j.is_object())
    for (const auto& [k, v] : j.items()) c[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return c;
}

void check(const json& in) {
  if (!in.is_object() || str_of(in, "format") != "tunebench-session-input")
    throw std::invalid_argument("not a TuneBench session document (format \"tunebench-session-input\" expected)");
}

// One live comparison as a trial: its knobs, its figures and its verdict.
Trial trial_of(const json& c) {
  Trial t;
  const bool tune = str_of(c, "source") == "auto-tune";
  t.phase = tune ? "auto-tune" : "live";
  const json changed = c.value("changed", json::object()), previous = c.value("previous", json::object());
  for (const auto& [k, v] : changed.items()) {
    const std::string val = v.is_string() ? v.get<std::string>() : v.dump();
    if (t.knob.empty()) {
      t.knob = k;
      t.value = val;
      t.from = str_of(previous, k.c_str(), "?");
    } else {
      t.also += (t.also.empty() ? "" : ", ") + k + "=" + val;
    }
  }
  if (t.knob.empty()) t.value = str_of(c, "change");
  t.reference = tune ? "the tuner's baseline" : "the segment before";
  t.before = num_of(c, "before");
  t.after = num_of(c, "after");
  t.estimate.ratio = num_of(c, "ratio");
  if (c.contains("ci95") && c["ci95"].is_array() && c["ci95"].size() == 2 && c["ci95"][0].is_number() &&
      c["ci95"][1].is_number()) {
    t.estimate.lo = c["ci95"][0].get<double>();
    t.estimate.hi = c["ci95"][1].get<double>();
  }
  t.estimate.method = str_of(c, "method");
  const std::string verdict = str_of(c, "verdict");
  t.outcome = verdict.rfind("faster", 0) == 0 ? "gain" : verdict.rfind("slower", 0) == 0 ? "slower" : "no effect";
  t.accepted = t.outcome == "gain" && str_of(c, "decision") != "reverted";
  t.reason = verdict;
  t.rounds = int(num_of(c, "n_after") == num_of(c, "n_after") ? num_of(c, "n_after") : 0);
  return t;
}

// The session as one TuneResult: the first configuration is the baseline, the current one the final.
TuneResult result_of(const json& in) {
  TuneResult r;
  r.environment = {{"device", in.value("device", json::object()).value("name", std::string("unknown"))},
                   {"versions", in.value("versions", json::object())},
                   {"model", str_of(in, "model", "unknown")},
                   {"data", str_of(in, "data", "unknown")}};
  r.baseline = config_of(in.value("first_config", json::object()));
  r.final_config = config_of(in.value("current_config", json::object()));
  for (const KnobInfo& k : knob_catalog()) r.knobs.push_back({k, r.final_config.count(k.id) ? r.final_config[k.id] : "", {}});
  for (const auto& c : in.value("comparisons", json::array())) r.trials.push_back(trial_of(c));
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A file next to the tune's JSON report with another suffix (the tuner writes all three with one stem).
std::string sibling(const std::string& json_path, const std::string& suffix) {
  const auto dot = json_path.rfind('.');
  return (dot == std::string::npos ? json_path : json_path.substr(0, dot)) + suffix;
}
std::string tune_path(const json& t, const char* key, const std::string& suffix) {
  const std::string p = str_of(t, key);
  return p.empty() ? sibling(str_of(t, "report_json"), suffix) : p;
}

// The tune's HTML report between <body> and </body>, its headings one level down.
std::string tune_body(const std::string& html) {
  const auto b = html.find("<body>"), e = html.rfind("</body>");
  if (b == std::string::npos || e == std::string::npos || e < b) return {};
  std::string body = html.substr(b + 6, e - b - 6);
  body = std::regex_replace(body, std::regex("<(/?)h2>"), "<$1h3>");
  body = std::regex_replace(body, std::regex("<(/?)h1>"), "<$1h2>");
  return body;
}

std::string tune_title(size_t i, const json& t) {
  return "Auto-tune " + std::to_string(i + 1) + (str_of(t, "at_step").empty() ? "" : " (after step " + str_of(t, "at_step") + ")");
}

// Why the loader is slow, when the session's script was traced with its loader timed (the "loader" object: the
// verdict `run`, `analyze` and the window's Loader tab show, client/loader_verdict.h): drawn as the tab draws it
// (report_loader.h).
client::LoaderVerdict loader_of(const json& in) {
  return in.contains("loader") ? client::LoaderVerdict::from_json(in["loader"]) : client::LoaderVerdict{};
}

}  // namespace

std::string session_report_html(const json& in) {
  check(in);
  const TuneResult r = result_of(in);
  const std::string model = str_of(in, "model", "unknown"), data = str_of(in, "data", "unknown");
  const json cmps = in.value("comparisons", json::array()), tunes = in.value("tunes", json::array());
  std::string h;
  h += "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  h += "<title>" + esc("TuneBench session report: " + model + " on " + data) + "</title>\n";
  h += "<style>" + std::string(report_css()) + "</style>\n</head>\n<body>\n";
  h += "<h1>Session report: " + esc(model) + "</h1>\n";
  h += "<p class=\"sub\">" + esc(data) + " on " + esc(str_of(r.environment, "device")) + " &#183; " +
       esc(report_time_utc()) + "</p>\n";
  h += "<div class=\"card\">\n<div class=\"headline\">" +
       esc(std::to_string(cmps.size()) + (cmps.size() == 1 ? " change" : " changes") + " measured, " +
           std::to_string(tunes.size()) + (tunes.size() == 1 ? " auto-tune" : " auto-tunes")) +
       "</div>\n";
  h += "<p><strong>Running now, against the start:</strong> " + esc(config_text_of(r.baseline, r.final_config)) + "</p>\n";
  h += "<p class=\"muted\">Throughput is samples over the wall time of a window of steps (data loading included), "
       "warm-up excluded. A live change is measured before, then after (5-step windows, Welch's t on their log "
       "throughputs): drift between the two is not cancelled, and each side's noise verdict says how far to trust "
       "it. An auto-tune's row is the tuner's own final alternation (baseline and kept configuration, alternating), "
       "the figure its dialog and its report below give.</p>\n</div>\n";
  if (!str_of(in, "failure").empty())
    h += "<p><strong>The run ended with an error:</strong> " + esc(str_of(in, "failure")) + "</p>\n";
  h += "<h2>Every change, before and after</h2>\n" + svg_forest(r);
  h += "<div class=\"scroll\"><table>\n<thead><tr><th>#</th><th>change</th><th>measured by</th><th>before</th>"
       "<th>after</th><th>ratio [95% CI]</th><th>data wait</th><th>windows</th><th>verdict</th><th>decision</th></tr>"
       "</thead>\n<tbody>\n";
  for (size_t i = 0; i < cmps.size(); ++i) {
    const json& c = cmps[i];
    const Trial& t = r.trials[i];
    h += std::string("<tr") + (t.accepted ? " class=\"accepted\"" : t.outcome == "slower" ? " class=\"slower\"" : "") +
         "><td class=\"n\">" + std::to_string(i + 1) + "</td><td>" + esc(str_of(c, "change")) + "</td><td>" +
         esc(t.phase == "auto-tune" ? "the tuner's final alternation" : "live, before then after") +
         "</td><td class=\"n\">" + esc(fmt(t.before, 1)) + "</td><td class=\"n\">" + esc(fmt(t.after, 1)) +
         "</td><td class=\"n\">" + esc(interval_text(t.estimate)) + "</td><td class=\"n\">" +
         esc(fmt(100 * num_of(c, "data_wait_share_before"), 1) + "% → " + fmt(100 * num_of(c, "data_wait_share_after"), 1) + "%") +
         "</td><td class=\"n\">" + esc(str_of(c, "n_before") + "/" + str_of(c, "n_after")) + "</td><td><strong>" +
         esc(str_of(c, "verdict")) + "</strong></td><td>" + esc(str_of(c, "decision")) + "</td></tr>\n";
  }
  if (cmps.empty()) h += "<tr><td colspan=\"10\">No configuration change was measured.</td></tr>\n";
  h += "</tbody></table></div>\n";
  h += "<h2>How far to trust these numbers</h2>\n<div class=\"scroll\"><table><tbody>\n";
  for (size_t i = 0; i < cmps.size(); ++i)
    h += "<tr><th>" + esc(std::to_string(i + 1) + ". " + str_of(cmps[i], "change")) + "</th><td>" +
         std::regex_replace(esc(str_of(cmps[i], "trust")), std::regex("\n"), "<br/>") + "</td></tr>\n";
  if (cmps.empty()) h += "<tr><td>Nothing measured.</td></tr>\n";
  h += "</tbody></table></div>\n";
  h += loader_section_html(loader_of(in));
  h += "<h2>The code that keeps it</h2>\n<p>What runs now, against the configuration the session started with.</p>\n"
       "<h3>PyTorch (Python)</h3>\n<pre><code>" + esc(final_code_pytorch(r)) +
       "</code></pre>\n<h3>LibTorch (C++)</h3>\n<pre><code>" + esc(final_code_libtorch(r)) + "</code></pre>\n";
  for (size_t i = 0; i < tunes.size(); ++i) {
    const std::string path = tune_path(tunes[i], "report_html", ".html");
    const std::string body = tune_body(read_file(path));
    h += "<section>\n<h2>" + esc(tune_title(i, tunes[i])) + "</h2>\n" +
         (body.empty() ? "<p>" + esc("Its report is missing: " + path) + "</p>\n" : body) + "</section>\n";
  }
  h += "<h2>Environment</h2>\n<div class=\"scroll\"><table><tbody>\n<tr><th>device</th><td>" +
       esc(str_of(r.environment, "device")) + "</td></tr>\n<tr><th>versions</th><td>" +
       esc(in.value("versions", json::object()).dump()) + "</td></tr>\n<tr><th>model</th><td>" + esc(model) +
       "</td></tr>\n<tr><th>data</th><td>" + esc(data) + "</td></tr>\n</tbody></table></div>\n";
  h += "<p class=\"muted\">Generated by TuneBench (File &#9656; Export).</p>\n</body>\n</html>\n";
  return h;
}

std::string session_report_markdown(const json& in) {
  check(in);
  const TuneResult r = result_of(in);
  const json cmps = in.value("comparisons", json::array()), tunes = in.value("tunes", json::array());
  std::ostringstream m;
  m << "# Session report: " << str_of(in, "model", "unknown") << "\n\n" << str_of(in, "data", "unknown") << " on "
    << str_of(r.environment, "device") << " · " << report_time_utc() << "\n\n";
  m << "**" << cmps.size() << (cmps.size() == 1 ? " change" : " changes") << " measured, " << tunes.size()
    << (tunes.size() == 1 ? " auto-tune" : " auto-tunes") << ".** Running now, against the start: "
    << config_text_of(r.baseline, r.final_config) << "\n\n";
  m << "Throughput is samples over the wall time of a window of steps (data loading included), warm-up excluded. A "
       "live change is measured before, then after (5-step windows, Welch's t); an auto-tune's row is the tuner's "
       "own final alternation.\n\n";
  if (!str_of(in, "failure").empty()) m << "**The run ended with an error:** " << str_of(in, "failure") << "\n\n";
  m << "## Every change, before and after\n\n| # | change | measured by | before | after | ratio [95% CI] | data wait | "
       "windows | verdict | decision |\n|---:|---|---|---:|---:|---|---|---|---|---|\n";
  for (size_t i = 0; i < cmps.size(); ++i) {
    const json& c = cmps[i];
    const Trial& t = r.trials[i];
    m << "| " << i + 1 << " | " << str_of(c, "change") << " | "
      << (t.phase == "auto-tune" ? "the tuner's final alternation" : "live, before then after") << " | " << fmt(t.before, 1)
      << " | " << fmt(t.after, 1) << " | " << interval_text(t.estimate) << " | "
      << fmt(100 * num_of(c, "data_wait_share_before"), 1) << "% → " << fmt(100 * num_of(c, "data_wait_share_after"), 1)
      << "% | " << str_of(c, "n_before") << "/" << str_of(c, "n_after") << " | **" << str_of(c, "verdict") << "** | "
      << str_of(c, "decision") << " |\n";
  }
  if (cmps.empty()) m << "| | No configuration change was measured. | | | | | | | | |\n";
  m << "\n## How far to trust these numbers\n\n";
  for (size_t i = 0; i < cmps.size(); ++i)
    m << "- " << i + 1 << ". " << str_of(cmps[i], "change") << ": "
      << std::regex_replace(str_of(cmps[i], "trust"), std::regex("\n"), "; ") << "\n";
  m << loader_section_markdown(loader_of(in));
  m << "\n## The code that keeps it\n\n```python\n" << final_code_pytorch(r) << "```\n\n```cpp\n"
    << final_code_libtorch(r) << "```\n";
  for (size_t i = 0; i < tunes.size(); ++i) {
    const std::string path = tune_path(tunes[i], "report_markdown", ".md");
    std::string md = read_file(path);
    md = std::regex_replace(md, std::regex("(^|\n)#"), "$1##");
    m << "\n## " << tune_title(i, tunes[i]) << "\n\n" << (md.empty() ? "Its report is missing: " + path + "\n" : md);
  }
  return m.str();
}

json session_report_json(const json& in) {
  check(in);
  const TuneResult r = result_of(in);
  json out = in;
  out["format"] = "tunebench-session";
  out["version"] = 1;
  out["unit"] = "samples/s";
  json tunes = json::array();
  for (const auto& t : in.value("tunes", json::array())) {
    const std::string path = str_of(t, "report_json");
    json j = json::parse(read_file(path), nullptr, false);
    tunes.push_back(j.is_discarded() || !j.is_object() ? json{{"missing", path}} : j);
  }
  out["tunes"] = tunes;
  out["code"] = {{"pytorch", final_code_pytorch(r)}, {"libtorch", final_code_libtorch(r)}};
  return out;
}

void write_session_report(const json& in, const std::string& html_path, const std::string& markdown_path,
                          const std::string& json_path) {
  write_report_file(html_path, html_path.empty() ? std::string() : session_report_html(in));
  write_report_file(markdown_path, markdown_path.empty() ? std::string() : session_report_markdown(in));
  write_report_file(json_path, json_path.empty() ? std::string() : session_report_json(in).dump(2) + "\n");
}

}  // namespace tb::engine
