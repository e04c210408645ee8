// Before/after statistics for the compare panel, computed in the UI from the step samples the child sent
// (DESIGN.md "Measuring before/after honestly"): medians, the median ratio and a percentile bootstrap
// confidence interval. Pure functions; deterministic for a given seed so tests and exports are reproducible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb::ui {

double median(std::vector<double> v);  // NaN for an empty vector

struct RatioCI {
  double before_median = 0, after_median = 0;
  double ratio = 0;          // after / before (samples/s: > 1 is faster)
  double lo = 0, hi = 0;     // 95% bootstrap interval of the ratio of medians
  size_t n_before = 0, n_after = 0;
  bool valid = false;        // false when either side has fewer than kMinSamples samples
  // "faster", "slower" or "no effect" (the interval covers 1), "too few samples" when !valid.
  std::string verdict() const;
};

constexpr size_t kMinSamples = 3;

// Resamples both sides `iterations` times with replacement; the interval is the 2.5/97.5 percentiles.
RatioCI bootstrapRatio(const std::vector<double>& before, const std::vector<double>& after,
                       int iterations = 2000, uint64_t seed = 42);

}  // namespace tb::ui
