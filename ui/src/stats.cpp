#include "ui/stats.h"

#include <cmath>

namespace tb::ui {

std::string RatioCI::verdict() const {
  if (!valid) return "too few windows";
  std::string v = lo <= 1.0 && hi >= 1.0 ? "no effect" : ratio > 1.0 ? "faster" : "slower";
  if (noise_before.drifting || noise_after.drifting) v += " (drifting)";
  return v;
}

std::string RatioCI::noise_text() const {
  return "before: " + noise_before.text + "\nafter: " + noise_after.text + (method.empty() ? "" : "\n" + method);
}

RatioCI compareWindows(const std::vector<measure::Window>& before, const std::vector<measure::Window>& after) {
  RatioCI r;
  r.n_before = before.size();
  r.n_after = after.size();
  r.before = measure::pooled_throughput(before);
  r.after = measure::pooled_throughput(after);
  r.noise_before = measure::assess_noise(before);
  r.noise_after = measure::assess_noise(after);
  if (before.size() < kMinWindows || after.size() < kMinWindows || !(r.before > 0)) return r;
  const measure::RatioInterval w = measure::welch_ratio(before, after);
  if (!w.valid()) return r;
  r.ratio = w.ratio;
  r.lo = w.lo;
  r.hi = w.hi;
  r.method = w.method;
  r.valid = true;
  return r;
}

}  // namespace tb::ui
