// One alternation of arms, for both finals (search_final.cpp in this process, search_fresh.cpp in fresh
// processes): each round runs every live arm once, rotated so that every arm takes every position (a drift
// over the round then favours none); an arm that cannot run costs that arm only, unless it is one the whole
// alternation needs; two arms are compared on the rounds both completed, as a paired ratio.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tuner/search/search.h"

namespace tb::engine::search {

struct Arm {
  std::string name;
  Config config;
  Change change;  // the knob the arm adds or takes away (empty for the baseline and the final)
  std::vector<measure::Window> windows;
  std::string failed;  // why this arm could not run ("" while it runs)
  // At most this many windows (0: as many as the rounds): an arm asked only over the minimum rounds (a knob
  // the search had no time for, measured on top of the final) does not ride along in the extra ones.
  size_t max_windows = 0;
  bool done() const { return !failed.empty() || (max_windows > 0 && windows.size() >= max_windows); }
};

// Arms still running.
int live_arms(const std::vector<Arm>& arms);

// What a round ended with: "" when it ran, else why the alternation cannot go on ("<arm>: <why>" for an arm
// in `essential`, or the failure `fatal_if` names).
struct RoundEnd {
  std::string fatal;
  bool stop_all = false;  // fatal_if said so: the arms after it in this round did not run either
};

// Round `r`: each live arm once, from arm r mod n on. `window` measures one arm's configuration (a
// TrialFailure costs that arm); `after` sees each new window; an arm in the first `essential` ones that fails
// ends the alternation; `fatal_if` names a failure that ends it at once (no arm can run: "cannot start fresh
// processes").
RoundEnd run_round(std::vector<Arm>& arms, int r, size_t essential,
                   const std::function<measure::Window(const Config&)>& window,
                   const std::function<void(const Arm&)>& after = nullptr,
                   const std::function<bool(const std::string&)>& fatal_if = nullptr);

// Two arms' windows paired by round (only rounds both completed).
void paired(const Arm& x, const Arm& y, std::vector<measure::Window>& a, std::vector<measure::Window>& b);

// `t` measured as `y` against `x` on their paired rounds: its windows, rounds, throughputs and interval
// (against `floor` when given, else the pairs' own spread).
void measure_pair(Trial& t, const Arm& x, const Arm& y, const measure::NoiseFloor* floor, double confidence);

}  // namespace tb::engine::search
