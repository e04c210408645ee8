// Before/after statistics for the compare panel (docs/protocol.md "Live before/after"), computed in the UI from
// the steps the child sent, with the protocol's own code (measure/): each side's measured steps are cut
// into windows of kWindowSteps; a side's throughput is its samples over its wall time; the interval is
// Welch's t on the log window throughputs; each side also gets a noise verdict. A live toggle is a
// sequential before/after, not an alternation: drift between the two segments is not cancelled, so the
// verdict says when a side was drifting or noisy. Pure functions, deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "measure/interval.h"
#include "measure/noise.h"
#include "measure/stats.h"
#include "measure/window.h"

namespace tb::ui {

using measure::median;  // NaN for an empty vector

constexpr int kWindowSteps = 5;    // steps per window in a live segment
constexpr size_t kMinWindows = 3;  // per side, for an interval

struct RatioCI {
  double before = 0, after = 0;  // samples/s: samples over wall time of each side's measured steps
  double ratio = 0;              // after / before (samples/s: > 1 is faster)
  double lo = 0, hi = 0;         // 95% interval of the ratio (Welch t on log window throughputs)
  size_t n_before = 0, n_after = 0;  // windows
  bool valid = false;            // false when either side has fewer than kMinWindows windows
  measure::NoiseReport noise_before, noise_after;
  std::string method;
  // "faster", "slower", "no effect" (the interval covers 1), "too few windows" when !valid; with
  // " (drifting)" appended when either side drifted, because a sequential comparison cannot cancel that.
  std::string verdict() const;
  // One line for a tooltip: both sides' noise verdicts and the method.
  std::string noise_text() const;
};

RatioCI compareWindows(const std::vector<measure::Window>& before, const std::vector<measure::Window>& after);

}  // namespace tb::ui
