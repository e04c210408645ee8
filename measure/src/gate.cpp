#include "measure/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "measure/stats.h"

namespace tb::measure {

std::string GateRule::validate() const {
  if (!(tolerance > 0 && tolerance < 1)) return "the tolerance must be a share between 0 and 1 (0.03 = 3%)";
  if (!(confidence >= 0.5 && confidence < 1)) return "the confidence must be at least 0.5 and under 1 (0.95)";
  if (min_pairs < 2) return "a gate needs at least 2 pairs before it decides";
  return "";
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
  const double conf = rule_.look_confidence();
  g.interval = paired_ratio(ka, kb, &g.floor, conf);
  const auto& r = g.interval;
  const double tol = rule_.tolerance;
  if (g.pairs >= rule_.min_pairs && r.valid()) {
    if (r.hi < 1 && r.ratio < 1 - tol) g.verdict = GateVerdict::kRegression;
    else if (r.lo > 1 && r.ratio > 1 + tol) g.verdict = GateVerdict::kImprovement;
    else if (r.lo >= 1 - tol && r.hi <= 1 + tol) g.verdict = GateVerdict::kNoChange;
  }
  if (g.verdict == GateVerdict::kUndecided && r.valid()) {
    const double m = std::fabs(std::log(r.ratio));
    // Outside the band: what it takes to exclude 1; inside: what it takes to fit in the band.
    const double band = r.ratio < 1 ? -std::log(1 - tol) : std::log(1 + tol);
    const double margin = m > band ? m : band - m;
    g.pairs_to_decide = pairs_needed(r.sd_log, margin, r.df, int(ka.size()), conf);
    if (g.pairs_to_decide > 0) g.pairs_to_decide += g.outliers;
  }
  return g;
}

std::string GateLook::text() const {
  char buf[160];
  std::string s = verdict_name(verdict);
  s += ": " + interval.text(3);
  std::snprintf(buf, sizeof buf, " (%.0f%% per look; %d pair%s", 100 * interval.confidence, pairs, pairs == 1 ? "" : "s");
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
