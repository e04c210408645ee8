// What a window pays before its first measured step, by what changed since the window before it: the apply,
// the warm-up, and a knob's own start-up (loader workers spawned again, CUDA graphs captured, cuDNN's search).
//
// Why by knob: the final alternation switches several knobs at every window (the final to the baseline changes
// all of them), where the search's last trials switched one cheap knob each. A simulated 120 s GPU tune planned
// its final from the recent windows (0.8 s each) and its windows took 1.8 s: the arms without workers and the
// baseline spawn workers every time. A switch already seen (the same knobs changed: a trial's two sides, which
// are the final's arm without that change and the final) costs what it cost; another costs the cheapest
// switch plus what each of its knobs added when it changed alone.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/knobs.h"

namespace tb::engine::search {

class SwitchCosts {
 public:
  // A window of `to` measured right after one of `from` (or of nothing yet: `from` empty) took `overhead_s` before
  // its first measured step, `warmup_steps` of them warm-up steps of a configuration whose step takes `step_s`.
  // The warm-up is counted in steps (the same switch warms up as long in steps at any speed), the rest in seconds
  // (the apply, the workers' spawn, the warm-up's excess over a steady step).
  void observe(const Config& from, const Config& to, double overhead_s, int warmup_steps, double step_s);
  // What a window of `to` after one of `from`, at `step_s` a step, will pay before its first measured step.
  double estimate(const Config& from, const Config& to, double step_s) const;
  // What changing `knob` alone adds to the cheapest switch, at `step_s` a step (0 until a window that changed it
  // alone was seen).
  double extra_s(const std::string& knob, double step_s) const;
  // The cheapest switch at `step_s` a step: the lowest of the knobs seen changing alone (every change's median
  // when none was; 0 when nothing changed yet).
  double common_s(double step_s) const;
  bool any_switch() const { return !changed_.fixed_s.empty(); }

 private:
  using Keys = std::set<std::string>;
  struct Seen {
    std::vector<double> fixed_s, warmup_steps;
    double at(double step_s) const;
  };

  static Keys changed(const Config& from, const Config& to);
  const Seen* seen(const Keys& keys) const;

  Seen same_;                   // windows that changed nothing (the A/A's)
  Seen changed_;                // windows that changed something
  std::map<Keys, Seen> by_;     // windows by the knobs they changed
};

}  // namespace tb::engine::search
