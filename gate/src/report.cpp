#include "gate/report.h"

#include <cmath>
#include <cstdio>

#include "base/xml.h"
#include "gate_util.h"

namespace tb::gate {
namespace {

std::string pct(double ratio) { return fmt("%.1f%%", 100 * std::fabs(ratio - 1)); }

int counted_pairs(const GateResult& r) { return r.look.pairs; }

std::string noise_text(const GateResult& r) {
  if (r.against)
    return std::to_string(r.look.pairs) + " fresh candidate processes against " + std::to_string(r.stored_runs) +
           " stored baseline ones (Welch; not alternated: a drift of the machine since it was stored is not cancelled)";
  std::string s = std::to_string(counted_pairs(r)) + " alternated pairs of fresh processes";
  if (r.look.floor.valid())
    s += ", A/A floor ±" + fmt("%.1f%%", 100 * std::expm1(r.look.floor.sd_log)) + " per pair (" +
         std::to_string(r.look.floor.pairs) + " seams)";
  if (r.look.outliers > 0) s += ", " + std::to_string(r.look.outliers) + " pair(s) left out as outliers";
  return s;
}

}  // namespace

std::string verdict_line(const GateOptions& o, const GateResult& r) {
  if (!r.ran) return "could not run: " + r.failure;
  const auto& i = r.look.interval;
  const std::string figure = i.text(3) + " candidate/baseline throughput, " +
                             fmt("%.0f%% per look", 100 * i.confidence);
  const std::string tol = fmt("%.0f%%", 100 * o.rule.tolerance);
  switch (r.look.verdict) {
    case measure::GateVerdict::kRegression:
      return "regression: the candidate is " + pct(i.ratio) + " slower, beyond the " + tol + " tolerance (" + figure + ")";
    case measure::GateVerdict::kImprovement:
      return "improvement: the candidate is " + pct(i.ratio) + " faster (" + figure + ")";
    case measure::GateVerdict::kNoChange:
      return "no change: within ±" + tol + " (" + figure + ")";
    case measure::GateVerdict::kUndecided: break;
  }
  // What a gate adds at a time: a pair, or against a stored baseline one candidate process.
  const std::string unit = r.against ? "candidate processes" : "pairs";
  double pair_s = 0;
  for (const auto& p : r.runs) pair_s += p.seconds;
  pair_s = r.runs.empty() ? 0 : (r.against ? 1 : 2) * pair_s / double(r.runs.size());
  if (r.look.pairs < o.rule.min_pairs) {
    const int need = o.rule.min_pairs + o.warmup_pairs;
    return "undecided: only " + std::to_string(r.look.pairs) + " of the " + std::to_string(o.rule.min_pairs) + " " +
           unit + " a verdict needs fit in --max-time " + std::to_string(int(o.max_time_s)) + " s (one takes about " +
           fmt("%.0f s", pair_s) + "): give it --max-time " + std::to_string(int(std::ceil(need * pair_s * 1.2))) +
           " or more";
  }
  std::string s = "undecided: too noisy to tell a change of " + tol + " (" + figure + ")";
  if (r.look.pairs_to_decide > 0) {
    const int more = std::max(1, r.look.pairs_to_decide - r.look.pairs);
    s += "; about " + std::to_string(more) + " more " + unit + " would likely decide (" +
         fmt("%.0f", std::ceil(more * pair_s / 60)) + " min more: --max-time " +
         std::to_string(int(std::ceil(o.max_time_s + more * pair_s))) + ")";
  } else if (r.look.pairs_to_decide < 0) {
    s += "; the change sits at the tolerance: more pairs would hardly decide";
  }
  return s;
}

std::string gate_text(const GateOptions& o, const GateResult& r) {
  std::string s;
  s += "gate: baseline  " + o.baseline.describe + "\n";
  s += "gate: candidate " + o.candidate.describe + "\n";
  if (r.ran && r.look.pairs > 0) {
    s += "gate: baseline " + fmt("%.1f ", r.baseline_throughput) + r.unit + ", candidate " +
         fmt("%.1f ", r.candidate_throughput) + r.unit + "\n";
    s += "gate: " + noise_text(r) + "; " + r.stopped + fmt(", %.0f s in all\n", r.seconds);
  }
  if (r.why.tried) {
    if (!r.why.error.empty()) s += "gate: why: no trace diff: " + r.why.error + "\n";
    for (const auto& l : r.why.lines) s += "gate: why: " + l + "\n";
    if (!r.why.candidate_trace.empty())
      s += "gate: why: traces " + r.why.baseline_trace + " " + r.why.candidate_trace + " (tunebench-cli diff, the GUI)\n";
  }
  for (const auto& w : r.warnings) s += "gate: warning: " + w + "\n";
  if (r.load.readable() && r.load.loadavg_1min > r.load.cores)
    s += "gate: warning: the machine was busy (load " + fmt("%.1f", r.load.loadavg_1min) + " on " +
         std::to_string(r.load.cores) + " cores): the noise floor above includes it\n";
  s += "gate: " + verdict_line(o, r) + "\n";
  return s;
}

std::string gate_markdown(const GateOptions& o, const GateResult& r) {
  const char* icon = !r.ran ? "⚠️" :
                     r.look.verdict == measure::GateVerdict::kRegression ? "❌" :
                     r.look.verdict == measure::GateVerdict::kUndecided ? "❔" : "✅";
  std::string s = std::string("### ") + icon + " TuneBench gate: " +
                  (r.ran ? measure::verdict_name(r.look.verdict) : "could not run") + "\n\n";
  s += verdict_line(o, r) + "\n\n";
  for (const auto& w : r.warnings) s += "> warning: " + w + "\n\n";
  s += "| | revision | throughput |\n|---|---|---|\n";
  s += "| baseline | " + o.baseline.describe + " | " + (r.ran ? fmt("%.1f ", r.baseline_throughput) + r.unit : "") + " |\n";
  s += "| candidate | " + o.candidate.describe + " | " + (r.ran ? fmt("%.1f ", r.candidate_throughput) + r.unit : "") +
       " |\n\n";
  if (r.ran)
    s += "Measured in " + noise_text(r) + " (" + std::to_string(o.steps) + " steps each, the warm-up left out); " +
         r.stopped + fmt(", %.0f s. ", r.seconds) + "Tolerance " + fmt("%.0f%%", 100 * o.rule.tolerance) +
         ", confidence " + fmt("%.0f%%", 100 * o.rule.confidence) + ".\n";
  if (r.why.tried && (!r.why.lines.empty() || !r.why.error.empty())) {
    s += "\n**What changed** (one more process of each side, every step traced, `tunebench-cli diff`):\n\n";
    if (!r.why.error.empty()) s += "- no trace diff: " + r.why.error + "\n";
    for (const auto& l : r.why.lines) s += "- " + l + "\n";
  }
  return s;
}

std::string gate_junit(const GateOptions& o, const GateResult& r) {
  const std::string name = "throughput of " + o.candidate.describe + " against " + o.baseline.describe;
  const bool failed = r.ran && r.look.verdict == measure::GateVerdict::kRegression;
  const bool skipped = r.ran && r.look.verdict == measure::GateVerdict::kUndecided;
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<testsuites>\n<testsuite name=\"tunebench.gate\" tests=\"1\" failures=\"" + std::string(failed ? "1" : "0") +
       "\" errors=\"" + (r.ran ? "0" : "1") + "\" skipped=\"" + (skipped ? "1" : "0") + "\" time=\"" +
       fmt("%.1f", r.seconds) + "\">\n";
  s += "<testcase classname=\"tunebench.gate\" name=\"" + xml_escape(name) + "\" time=\"" + fmt("%.1f", r.seconds) + "\">\n";
  const std::string line = xml_escape(verdict_line(o, r));
  if (!r.ran) s += "<error message=\"" + line + "\"/>\n";
  else if (failed) s += "<failure message=\"" + line + "\">" + xml_escape(gate_text(o, r)) + "</failure>\n";
  else if (skipped) s += "<skipped message=\"" + line + "\"/>\n";
  s += "<system-out>" + xml_escape(gate_text(o, r)) + "</system-out>\n</testcase>\n</testsuite>\n</testsuites>\n";
  return s;
}

nlohmann::json gate_json(const GateOptions& o, const GateResult& r) {
  nlohmann::json j;
  j["verdict"] = r.ran ? measure::verdict_name(r.look.verdict) : "could not run";
  j["exit_code"] = r.exit_code();
  j["line"] = verdict_line(o, r);
  j["baseline"] = {{"describe", o.baseline.describe}, {"script", o.baseline.script}, {"throughput", r.baseline_throughput}};
  j["candidate"] = {{"describe", o.candidate.describe}, {"script", o.candidate.script}, {"throughput", r.candidate_throughput}};
  j["unit"] = r.unit;
  if (!r.ran) j["failure"] = r.failure;
  const auto& i = r.look.interval;
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  j["ratio"] = num(i.ratio);
  j["interval"] = {num(i.lo), num(i.hi)};
  j["look_confidence"] = i.confidence;
  j["method"] = i.method;
  j["rule"] = {{"tolerance", o.rule.tolerance}, {"confidence", o.rule.confidence}, {"min_pairs", o.rule.min_pairs}};
  j["pairs"] = r.look.pairs;
  j["outliers"] = r.look.outliers;
  j["pairs_to_decide"] = r.look.pairs_to_decide;
  j["noise_floor"] = {{"sd_log", num(r.look.floor.sd_log)}, {"pairs", r.look.floor.pairs}};
  j["stopped"] = r.stopped;
  j["seconds"] = r.seconds;
  j["steps_per_process"] = o.steps;
  j["args"] = o.args;
  j["environment"] = {{"python", r.python}, {"torch", r.torch_version}, {"cores", r.load.cores},
                      {"loadavg_1min", num(r.load.loadavg_1min)}};
  j["against_stored_baseline"] = r.against;
  j["warnings"] = r.warnings;
  if (r.why.tried)
    j["why"] = {{"lines", r.why.lines}, {"error", r.why.error}, {"diff", r.why.diff},
                {"traces", {{"baseline", r.why.baseline_trace}, {"candidate", r.why.candidate_trace}}}};
  auto& runs = j["runs"] = nlohmann::json::array();
  for (const auto& p : r.runs)
    runs.push_back({{"side", p.side}, {"pair", p.pair}, {"throughput", p.window.throughput()}, {"steps", p.window.steps},
                    {"warmup_steps", p.window.warmup_steps}, {"seconds", p.seconds}});
  return j;
}

}  // namespace tb::gate
