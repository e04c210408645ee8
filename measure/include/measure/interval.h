// Intervals for a throughput ratio (docs/protocol.md "Intervals").
//
// The unit that carries the variance is the window, not the step: steps within a window are autocorrelated
// (lag-1 correlations of 0.4-0.6 were measured here), so resampling steps as if independent gives intervals
// several times too narrow. A trial runs its reference A and candidate B in R pairs of windows, the order
// alternating (AB, BA, AB...) so that a linear drift cancels within a pair. Each pair gives one log ratio;
// the interval is Student's t on their mean. With few pairs (3 or 4) the own spread is a poor estimate, so it
// is pooled with the spread of the tune's A/A pairs (the same configuration on both sides: the noise floor
// of this machine, measured the same way): s^2 = (df_own s_own^2 + df_aa s_aa^2) / (df_own + df_aa).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "measure/window.h"

namespace tb::measure {

struct RatioInterval {
  double ratio = std::numeric_limits<double>::quiet_NaN();  // geometric mean of the paired ratios (B / A)
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = std::numeric_limits<double>::quiet_NaN();
  double confidence = 0.95;
  int pairs = 0;
  double df = 0;                // degrees of freedom of the t quantile (pooled)
  double sd_log = std::numeric_limits<double>::quiet_NaN();  // spread of one pair's log ratio used
  std::string method;           // "paired t (3 pairs + A/A floor, df 5)", "Welch t on windows"...
  bool valid() const { return ratio == ratio && lo == lo && hi == hi; }
  bool no_effect() const { return !valid() || (lo <= 1.0 && hi >= 1.0); }
  bool faster() const { return valid() && lo > 1.0; }
  bool slower() const { return valid() && hi < 1.0; }
  double half_width() const;    // (hi - lo) / 2 / ratio, relative; NaN when invalid
  // "1.070x [0.790, 1.460]"; where the interval says nothing (not computed, or spanning more than a factor of
  // 100: two pairs of a noisy machine gave [0.000, 61650.918]) "0.846x [interval unknown: ...]".
  std::string text(int prec = 3) const;
};

// The spread of the log ratio of two windows of one configuration, from A/A pairs.
struct NoiseFloor {
  double sd_log = std::numeric_limits<double>::quiet_NaN();
  double df = 0;
  int pairs = 0;
  double bias = std::numeric_limits<double>::quiet_NaN();  // mean log ratio (should be ~0: an order effect if not)
  // A pair left out as an outlier (noise_floor): how far its ratio was off the others (-0.4 = 40% slower);
  // NaN when none was.
  double outlier = std::numeric_limits<double>::quiet_NaN();
  bool valid() const { return sd_log == sd_log && df > 0; }
  // Half-width (relative) of a 95% interval of a trial with `pairs` pairs whose own spread equals this
  // floor (df pooled as paired_ratio does): a change smaller than this is inside the noise.
  double band(int pairs, double confidence = 0.95) const;
};

// a[i] and b[i] are the i-th pair (reference, candidate). Pairs where either throughput is not positive are
// dropped. Without a valid floor and with fewer than two pairs the interval is invalid (ratio still set).
RatioInterval paired_ratio(const std::vector<Window>& a, const std::vector<Window>& b, const NoiseFloor* floor = nullptr,
                           double confidence = 0.95);

// With 4 or more pairs, one pair far outside the others' spread is left out (NoiseFloor::outlier).
NoiseFloor noise_floor(const std::vector<Window>& a, const std::vector<Window>& b);
// Pools several floors (e.g. the A/A pairs of the start and the end of a tune).
NoiseFloor pool(const NoiseFloor& x, const NoiseFloor& y);

// Two independent sequences of windows (before and after a live change, not alternated): Welch's t on the
// log window throughputs. Drift between the two segments is NOT cancelled; callers show a noise verdict.
RatioInterval welch_ratio(const std::vector<Window>& before, const std::vector<Window>& after, double confidence = 0.95);

}  // namespace tb::measure
