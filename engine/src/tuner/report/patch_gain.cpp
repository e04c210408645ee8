// The figure a tune's patch writes beside a kept knob's edit (patch_gain.h).
#include "tuner/report/patch_gain.h"

#include <algorithm>

#include <cmath>

#include "base/count_text.h"
#include "tuner/report/report_parts.h"

namespace tb::engine {
namespace {

// The measured gain of a kept knob: the confirmed figure. A headline measured in fresh processes is what a
// plain start of the patched script gets, so that is the figure (a script's tune once wrote its in-process
// 12.82x here while fresh processes measured 1.07x); else the final alternation's when the knob held there,
// else the trial that kept it.
std::string confirmed_gain(const TuneResult& r, const std::string& knob, const measure::RatioInterval& checked) {
  using report_detail::fmt;
  if (checked.valid()) {
    const bool others = changed_knobs(r.baseline, r.final_config).size() > 1;
    return std::string(others ? "with the other changes of this patch, " : "") + fmt(checked.ratio) + "x [" +
           fmt(checked.lo) + ", " + fmt(checked.hi) + "]: the patched script against the original, in fresh processes";
  }
  if (r.verdict == "faster" && r.speedup_fresh_processes && r.speedup.valid()) {
    const bool others = changed_knobs(r.baseline, r.final_config).size() > 1;
    return std::string(others ? "with the other kept changes, " : "") + fmt(r.speedup.ratio) + "x [" +
           fmt(r.speedup.lo) + ", " + fmt(r.speedup.hi) + "] in fresh processes";
  }
  std::string with;
  const Trial* kept = nullptr;
  for (const Trial& t : r.trials)
    if (t.knob == knob && t.accepted) kept = &t;
  // Re-measured in the final alternation against the final configuration without it: that figure.
  for (const Trial& t : r.trials)
    if (t.knob == knob && t.phase == "final" && t.outcome == "held") kept = &t;
  // The allocator kept by the fresh-process headline (the kept changes need it): that headline's figure.
  if (!kept)
    for (const Trial& t : r.trials)
      if (t.knob.empty() && t.accepted && t.fresh_processes && t.value.find(knob + "=") != std::string::npos) {
        kept = &t;
        with = "with the kept changes, in fresh processes, ";
      }
  // A knob set together with another (the thread count a workers rung leaves the main process) has no trial
  // of its own: it carries the gain of the change it came with.
  if (!kept)
    for (const Trial& t : r.trials)
      if ((t.accepted || t.outcome == "held") && !t.knob.empty() && t.also.find(knob + "=") != std::string::npos) {
        kept = &t;
        with = "with " + t.knob + "=" + t.value + ", ";
      }
  if (!kept) return "";
  const auto& e = kept->estimate;
  if (!e.valid()) return "";
  // Held in the tune's final alternation, or (when it was not re-measured there) the trial that kept it.
  return with + fmt(e.ratio) + "x [" + fmt(e.lo) + ", " + fmt(e.hi) + "]" +
         (kept->phase == "final" ? "" : " (" + kept->phase + ")");
}

}  // namespace

std::string patch_gain(const TuneResult& r, const std::string& knob, const measure::RatioInterval& checked) {
  std::string g = confirmed_gain(r, knob, checked);
  // A one-time cost the knob paid (a compile, its own start-up: graphs captured, workers spawned) with the steps
  // after which it pays back: what a user deciding to keep the line needs beside it, from the trial that paid it.
  for (auto t = r.trials.rbegin(); t != r.trials.rend(); ++t)
    if (t->knob == knob && t->accepted && std::isfinite(t->break_even_steps)) {
      const double once = std::max(0.0, t->one_time_after_s - t->one_time_before_s) + t->startup_s;
      const bool each_pass = t->startup_each_pass_steps > 0;
      g += (g.empty() ? "" : "; ") + report_detail::fmt(once, 1) +
           (each_pass ? " s at the start of every pass (its workers are not persistent), paid back after ~"
                      : " s once, paid back after ~") +
           about_count(t->break_even_steps) + " steps" +
           (each_pass ? " of each pass of " + about_count(double(t->startup_each_pass_steps)) : std::string());
      break;
    }
  return g;
}

}  // namespace tb::engine
