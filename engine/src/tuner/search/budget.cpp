// The tuner's budget rules (budget.h).
#include "tuner/search/budget.h"

#include <algorithm>

namespace tb::engine::search {

void Budget::average(double& into, bool& seen, double x, double weight) {
  if (!(x >= 0)) return;
  into = seen ? (1 - weight) * into + weight * x : x;
  seen = true;
}

void Budget::prime(double window_s, double fresh_window_s) {
  if (!window_seen_ && window_s > 0) window_s_ = window_s;
  if (!fresh_seen_ && fresh_window_s > 0) fresh_window_s_ = fresh_window_s;
}

// Windows change cost as knobs change the step (a faster step makes a window of fixed length cheaper, a warm-up
// after a change makes it dearer): a short memory follows that.
void Budget::observe_window(double seconds) {
  // A window that took many times the usual (a compile, a hiccup) is charged where it happened, not carried
  // into every later estimate: a 55 s compile once made every trial look like 36 s and deferred the rest.
  if (window_seen_) seconds = std::min(seconds, 3 * window_s_);
  average(window_s_, window_seen_, seconds, 0.3);
}
// Process start-up is stable for one program on one machine; its first measurement replaces the prior.
void Budget::observe_fresh_window(double seconds) {
  if (fresh_seen_) seconds = std::min(seconds, 3 * fresh_window_s_);
  average(fresh_window_s_, fresh_seen_, seconds, 0.5);
}
void Budget::observe_probe(double seconds) { average(probe_s_, probe_seen_, seconds, 0.5); }
void Budget::observe_snapshot(double seconds) { average(snapshot_s_, snapshot_seen_, seconds, 0.5); }

double Budget::trial_s(int pairs, bool fresh, bool probe, double extra_s) const {
  double c = 2.0 * pairs * (fresh ? fresh_window_s_ : window_s_) + extra_s;
  // Probes run once per numerics trial (two loss curves of a few steps: about two windows until measured).
  if (probe) c += probe_seen_ ? probe_s_ : 2 * window_s_;
  return c + snapshot_s_;
}

double Budget::alternation_s(int arms, int rounds, bool fresh) const {
  return std::max(0, arms) * std::max(0, rounds) * (fresh ? fresh_window_s_ : window_s_);
}

Round Budget::another_round(const RoundAsk& a, const std::function<bool()>& undecided,
                           const std::function<bool()>& give_up) const {
  if (a.round < a.minimum && a.round >= 2 && !may_finish(a.elapsed, a.round_s + a.reserve_s)) return Round::hard_end;
  if (a.round >= a.decide_from) {
    if (!undecided()) return Round::decided;
    if (give_up && give_up()) return Round::given_up;
  }
  if (a.round < a.minimum) return Round::run;
  if (a.round >= a.maximum) return Round::at_most;
  if (!may_extend(a.elapsed, a.round_s, a.reserve_s)) return Round::no_budget;
  return Round::extra;
}

void Budget::charge(const std::string& phase, double now) {
  const double spent = std::max(0.0, now - last_charge_);
  last_charge_ = std::max(last_charge_, now);
  for (auto& [p, s] : phases_)
    if (p == phase) {
      s += spent;
      return;
    }
  phases_.emplace_back(phase, spent);
}

}  // namespace tb::engine::search
