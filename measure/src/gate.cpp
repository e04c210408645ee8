#include "measure/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "measure/stats.h"

namespace tb::measure {

Status GateRule::validate() const {
  if (!(tolerance > 0 && tolerance < 1)) return Error{"the tolerance must be a share between 0 and 1 (0.03 = 3%)"};
  if (!(confidence >= 0.5 && confidence < 1)) return Error{"the confidence must be at least 0.5 and under 1 (0.95)"};
  if (min_pairs < 2) return Error{"a gate needs at least 2 pairs before it decides"};
  return Status::Ok();
}

const char* verdict_name(GateVerdict v) {
  switch (v) {
    case GateVerdict::kRegression: return "regression";
    case GateVerdict::kImprovement: return "improvement";
    case GateVerdict::kNoChange: return "no change";
    case GateVerdict::kUndecided: break;
  }
  return "undecided";
}

int verdict_exit_code(GateVerdict v) {
  switch (v) {
    case GateVerdict::kRegression: return 1;
    case GateVerdict::kUndecided: return 2;
    default: return 0;
  }
}

std::vector<int> gate_looks(int min_pairs, int max_pairs) {
  std::vector<int> out;
  for (int k = std::max(2, min_pairs); k <= max_pairs; k = std::max(k + 1, k * 3 / 2)) out.push_back(k);
  return out;
}

bool GateSequence::look_due() const {
  const auto looks = gate_looks(rule_.min_pairs, pairs());
  return !looks.empty() && looks.back() == pairs();
}

void GateSequence::add(const Window& baseline, const Window& candidate) {
  a_.push_back(baseline);
  b_.push_back(candidate);
}

namespace {

// Pairs kept after leaving out the ones far off the others (at most a fifth of them; none below 5 pairs).
int trim_outliers(const std::vector<Window>& a, const std::vector<Window>& b, std::vector<Window>& ka,
                  std::vector<Window>& kb) {
  ka = a;
  kb = b;
  const size_t n = std::min(a.size(), b.size());
  if (n < 5) return 0;
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = std::log(b[i].throughput() / a[i].throughput());
  const double med = median(d);
  std::vector<double> dev;
  for (double x : d) dev.push_back(std::fabs(x - med));
  const double limit = std::max(4 * 1.4826 * median(dev), 0.05);
  std::vector<size_t> off;
  for (size_t i = 0; i < n; ++i)
    if (!(std::fabs(d[i] - med) <= limit)) off.push_back(i);
  if (off.empty() || off.size() > n / 5) return 0;  // more than a fifth: the machine is noisy, keep them all
  ka.clear();
  kb.clear();
  for (size_t i = 0; i < n; ++i)
    if (std::find(off.begin(), off.end(), i) == off.end()) ka.push_back(a[i]), kb.push_back(b[i]);
  return int(off.size());
}

// One side's processes, less those far off the others (as trim_outliers, by throughput): the count left out.
int trim_side(const std::vector<Window>& w, std::vector<Window>& kept) {
  kept = w;
  const size_t n = w.size();
  if (n < 5) return 0;
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::log(w[i].throughput());
  const double med = median(x);
  std::vector<double> dev;
  for (double v : x) dev.push_back(std::fabs(v - med));
  const double limit = std::max(4 * 1.4826 * median(dev), 0.05);
  kept.clear();
  for (size_t i = 0; i < n; ++i)
    if (std::fabs(x[i] - med) <= limit) kept.push_back(w[i]);
  if (n - kept.size() > n / 5) kept = w;  // more than a fifth: the machine is noisy, keep them all
  return int(w.size() - kept.size());
}

// Pairs in all that would likely put an interval of spread `sd` (per pair, log) at `t`'s level inside
// `margin` (log) of its ratio: (t sd / margin)^2, t refined once for the larger df.
int pairs_needed(double sd, double margin, double df_now, int pairs_now, double conf) {
  if (!(sd > 0) || !(margin > 0)) return -1;
  double n = pairs_now;
  for (int k = 0; k < 3; ++k) {
    const double t = student_t_quantile(0.5 + conf / 2, std::max(1.0, df_now + (n - pairs_now)));
    n = std::max(double(pairs_now + 1), std::pow(t * sd / margin, 2));
  }
  return n > 1000 ? -1 : int(std::ceil(n));
}

}  // namespace

GateVerdict verdict_of(const RatioInterval& r, const GateRule& rule) {
  const double tol = rule.tolerance;
  if (r.pairs < rule.min_pairs || !r.valid()) return GateVerdict::kUndecided;
  if (r.hi < 1 && r.ratio < 1 - tol) return GateVerdict::kRegression;
  if (r.lo > 1 && r.ratio > 1 + tol) return GateVerdict::kImprovement;
  if (r.lo >= 1 - tol && r.hi <= 1 + tol) return GateVerdict::kNoChange;
  return GateVerdict::kUndecided;
}

int pairs_to_decide(const RatioInterval& r, const GateRule& rule, int pairs_now) {
  if (!r.valid()) return 0;
  const double tol = rule.tolerance;
  const double m = std::fabs(std::log(r.ratio));
  // Outside the band: what it takes to exclude 1; inside: what it takes to fit in the band.
  const double band = r.ratio < 1 ? -std::log(1 - tol) : std::log(1 + tol);
  const double margin = m > band ? m : band - m;
  return pairs_needed(r.sd_log, margin, r.df, pairs_now, r.confidence);
}

GateLook GateSequence::look() const {
  GateLook g;
  g.pairs = pairs();
  // The seams: pair i and i + 1 meet on the side that ended i (AB then BA: B B; BA then AB: A A).
  std::vector<Window> first, second;
  for (size_t i = 0; i + 1 < a_.size(); ++i) {
    const bool ab = i % 2 == 0;
    first.push_back(ab ? b_[i] : a_[i]);
    second.push_back(ab ? b_[i + 1] : a_[i + 1]);
  }
  g.floor = noise_floor(first, second);
  std::vector<Window> ka, kb;
  g.outliers = trim_outliers(a_, b_, ka, kb);
  g.interval = paired_ratio(ka, kb, &g.floor, rule_.look_confidence());
  g.interval.pairs = g.pairs;  // the rule's minimum counts the pairs run, outliers included
  g.verdict = verdict_of(g.interval, rule_);
  if (g.verdict == GateVerdict::kUndecided) {
    g.pairs_to_decide = pairs_to_decide(g.interval, rule_, int(ka.size()));
    if (g.pairs_to_decide > 0) g.pairs_to_decide += g.outliers;
  }
  return g;
}

GateLook look_unpaired(const std::vector<Window>& baseline, const std::vector<Window>& candidate, const GateRule& rule) {
  GateLook g;
  g.paired = false;
  g.pairs = int(candidate.size());
  std::vector<Window> kb, kc;
  g.outliers = trim_side(baseline, kb) + trim_side(candidate, kc);
  // Welch's df on few stored processes is small and its looks more correlated with each other: each look at
  // twice the correction of the alternated gate's (99.5% for 95%) kept its A/A under 5% at 2-20% noise.
  g.interval = welch_ratio(kb, kc, 1 - (1 - rule.confidence) / 10);
  g.interval.pairs = g.pairs;
  g.verdict = verdict_of(g.interval, rule);
  if (g.verdict == GateVerdict::kUndecided) {
    // Welch's sd_log is the ratio's standard error: back to a per-process spread for the estimate.
    RatioInterval per = g.interval;
    per.sd_log = g.interval.sd_log * std::sqrt(double(std::max<size_t>(1, candidate.size())));
    g.pairs_to_decide = pairs_to_decide(per, rule, g.pairs);
  }
  return g;
}

std::string GateLook::text() const {
  char buf[160];
  std::string s = verdict_name(verdict);
  s += ": " + interval.text(3);
  const char* unit = paired ? (pairs == 1 ? "pair" : "pairs") : (pairs == 1 ? "candidate process" : "candidate processes");
  std::snprintf(buf, sizeof buf, " (%.0f%% per look; %d %s", 100 * interval.confidence, pairs, unit);
  s += buf;
  if (outliers > 0) s += ", " + std::to_string(outliers) + " left out as outliers";
  if (floor.valid()) {
    std::snprintf(buf, sizeof buf, ", A/A floor ±%.1f%% per pair over %d", 100 * std::expm1(floor.sd_log), floor.pairs);
    s += buf;
  }
  s += ")";
  return s;
}

}  // namespace tb::measure
