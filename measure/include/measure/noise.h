// Noise and drift verdicts (docs/protocol.md "Verdicts"): how far a user can trust a sequence of windows
// measured on this machine, and what else the machine was doing meanwhile.
//
// A verdict is computed from window throughputs in time order:
// - spread: the coefficient of variation (CV) of the windows;
// - trend: a least-squares line of log throughput over time; "drifting" when its slope is non-zero at the
//   99% level AND the fitted change over the span is at least 2% (smaller trends are reported in the
//   numbers but do not change the verdict);
// - verdict: "drifting: +y% over the run" > "noisy: ±x%" (CV >= 3%; x = 2 CV, where about 95% of the
//   windows fall) > "quiet: ±x%".
// The 3% / 2% / 99% levels are the protocol's, chosen before any test (not fitted to one), and printed
// with every verdict so a reader can re-judge.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "measure/window.h"

namespace tb::measure {

// What /proc says about competition for the CPU over an interval. Fields are NaN when unreadable.
struct SystemLoad {
  double loadavg_1min = std::numeric_limits<double>::quiet_NaN();  // at the end of the interval
  double steal_share = std::numeric_limits<double>::quiet_NaN();   // of all CPU time in the interval
  double busy_share = std::numeric_limits<double>::quiet_NaN();    // non-idle CPU time, all processes
  int cores = 0;
  bool readable() const { return loadavg_1min == loadavg_1min || steal_share == steal_share; }
};

// Reads /proc/stat at construction and at stop(); /proc/loadavg at stop(). Cheap (two file reads).
class LoadProbe {
 public:
  LoadProbe();
  SystemLoad stop() const;

 private:
  struct Ticks {
    unsigned long long total = 0, idle = 0, steal = 0;
    bool ok = false;
  };
  static Ticks read();
  Ticks start_;
};

struct NoiseReport {
  int windows = 0;
  double mean = 0;          // of the window throughputs
  double cv = 0;            // sd / mean of the window throughputs
  double drift = 0;         // fitted relative change from the first to the last window (+0.08 = 8% faster)
  double drift_lo = 0, drift_hi = 0;  // its 99% interval
  bool drifting = false;
  std::string verdict;      // "quiet", "noisy", "drifting", "too few windows"
  std::string text;         // "noisy: ±7.4% (CV 3.7% over 12 windows)", with load notes appended
  SystemLoad load;
};

// `windows` in time order (start_s ascending). `load` may be unreadable.
NoiseReport assess_noise(const std::vector<Window>& windows, const SystemLoad& load = {});

}  // namespace tb::measure
