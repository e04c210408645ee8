#include "ui/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace tb::ui {

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + mid);
  return 0.5 * (lo + hi);
}

std::string RatioCI::verdict() const {
  if (!valid) return "too few samples";
  if (lo <= 1.0 && hi >= 1.0) return "no effect";
  return ratio > 1.0 ? "faster" : "slower";
}

RatioCI bootstrapRatio(const std::vector<double>& before, const std::vector<double>& after, int iterations,
                       uint64_t seed) {
  RatioCI r;
  r.n_before = before.size();
  r.n_after = after.size();
  r.before_median = median(before);
  r.after_median = median(after);
  if (before.size() < kMinSamples || after.size() < kMinSamples || !(r.before_median > 0)) return r;
  r.ratio = r.after_median / r.before_median;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  ratios.reserve(size_t(iterations));
  std::vector<double> a(before.size()), b(after.size());
  std::uniform_int_distribution<size_t> pa(0, before.size() - 1), pb(0, after.size() - 1);
  for (int it = 0; it < iterations; ++it) {
    for (auto& x : a) x = before[pa(rng)];
    for (auto& x : b) x = after[pb(rng)];
    const double mb = median(a);
    if (mb > 0) ratios.push_back(median(b) / mb);
  }
  if (ratios.empty()) return r;
  std::sort(ratios.begin(), ratios.end());
  auto pct = [&](double p) { return ratios[std::min(ratios.size() - 1, size_t(p * double(ratios.size() - 1) + 0.5))]; };
  r.lo = pct(0.025);
  r.hi = pct(0.975);
  r.valid = true;
  return r;
}

}  // namespace tb::ui
