// A script's epochs in its steps (measure/pass_rhythm.h).
#include "measure/pass_rhythm.h"

#include <algorithm>

namespace tb::measure {

bool PassRhythm::step(int64_t loader_pass, int64_t loader_len) {
  if (loader_len > 1 && loader_len < (int64_t(1) << 30)) said_steps_ = static_cast<int>(loader_len);
  if (pass_ < 0) {  // the first step seen: its pass may have begun before
    pass_ = loader_pass;
    steps_in_ = 1;
    whole_ = loader_pass == 0;  // a run's first pass is seen from its start
    return false;
  }
  if (loader_pass == pass_) {
    ++steps_in_;
    return false;
  }
  if (whole_ && loader_pass == pass_ + 1) pass_steps_ = steps_in_;
  whole_ = loader_pass == pass_ + 1;  // a pass skipped over (no step) leaves the next one's start unknown
  pass_ = loader_pass;
  steps_in_ = 1;
  return true;
}

void PassRhythm::reset() {
  restart();
  pass_steps_ = 0;
  said_steps_ = 0;
}

int PassRhythm::pass_steps() const {
  if (said_steps_ > 0 && (pass_steps_ <= 0 || pass_steps_ > said_steps_)) return said_steps_;
  return pass_steps_;
}

void PassRhythm::restart() {
  pass_ = -1;
  steps_in_ = 0;
  whole_ = false;
}

int PassRhythm::window_steps(int steps) const {
  const int pass = pass_steps();
  if (pass <= 1 || steps <= 0) return steps;
  const int passes = (steps + pass - 1) / pass;
  const int whole = passes * pass;
  return whole <= 2 * steps ? whole : steps;
}

bool PassRhythm::leaves_out_pass_starts(int steps) const {
  return pass_steps() > 1 && steps > 0 && window_steps(steps) == steps && steps % pass_steps() != 0;
}

std::string PassRhythm::said(int steps) const {
  if (pass_steps() <= 1 || steps <= 0) return {};
  const std::string pass = std::to_string(pass_steps()) + " steps a pass of the training loader";
  if (leaves_out_pass_starts(steps))
    return "the first step of each pass is left out of the windows (" + pass + ", longer than two windows)";
  const int passes = window_steps(steps) / pass_steps();
  return "windows of whole passes: " + std::to_string(window_steps(steps)) + " steps, " + std::to_string(passes) +
         (passes == 1 ? " pass" : " passes") + " (" + pass + "; each window holds as many pass starts)";
}

}  // namespace tb::measure
