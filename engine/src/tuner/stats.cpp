// Median and the bootstrap interval of a ratio of medians (engine/tuner.h).
#include <algorithm>
#include <cmath>
#include <random>

#include "engine/tuner.h"

namespace tb::engine {
namespace {
// Median in place (reorders `v`); v must be non-empty.
double median_inplace(std::vector<double>& v) {
  const size_t n = v.size();
  const size_t mid = n / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (n % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return 0.5 * (lo + hi);
}

std::vector<double> finite_only(const std::vector<double>& in) {
  std::vector<double> out;
  out.reserve(in.size());
  for (double x : in)
    if (std::isfinite(x)) out.push_back(x);
  return out;
}

// Quantile of sorted values by linear interpolation (type 7).
double quantile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return std::nan("");
  const double pos = q * static_cast<double>(s.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, s.size() - 1);
  const double f = pos - static_cast<double>(i);
  return s[i] + (s[j] - s[i]) * f;
}
}  // namespace

double median(std::vector<double> values) {
  values = finite_only(values);
  if (values.empty()) return std::nan("");
  return median_inplace(values);
}

RatioEstimate bootstrap_median_ratio(const std::vector<double>& before_in, const std::vector<double>& after_in,
                                     int resamples, double confidence, uint64_t seed) {
  RatioEstimate r;
  r.confidence = confidence;
  const std::vector<double> before = finite_only(before_in);
  const std::vector<double> after = finite_only(after_in);
  if (before.empty() || after.empty()) return r;
  const double mb = median(before);
  const double ma = median(after);
  if (!(mb > 0) || !(ma >= 0)) return r;
  r.ratio = ma / mb;
  resamples = std::max(resamples, 100);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick_b(0, before.size() - 1);
  std::uniform_int_distribution<size_t> pick_a(0, after.size() - 1);
  std::vector<double> rb(before.size()), ra(after.size()), ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int k = 0; k < resamples; ++k) {
    for (auto& x : rb) x = before[pick_b(rng)];
    for (auto& x : ra) x = after[pick_a(rng)];
    const double den = median_inplace(rb);
    if (den > 0) ratios.push_back(median_inplace(ra) / den);
  }
  if (ratios.empty()) return r;
  std::sort(ratios.begin(), ratios.end());
  const double alpha = (1.0 - std::clamp(confidence, 0.5, 0.999)) / 2.0;
  r.ci_low = quantile_sorted(ratios, alpha);
  r.ci_high = quantile_sorted(ratios, 1.0 - alpha);
  // Identical samples give a degenerate distribution exactly at the point estimate; keep it inclusive.
  r.ci_low = std::min(r.ci_low, r.ratio);
  r.ci_high = std::max(r.ci_high, r.ratio);
  return r;
}

}  // namespace tb::engine
