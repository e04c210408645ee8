// The tuner's budget, its rules in one place (docs/tuning.md "The budget"):
//
//  * What things cost is measured, not assumed: an in-process window from its apply to its last step (warm-up
//    included), a fresh-process window from the process start to its last step, a loss probe, a snapshot.
//    Until one has run, the calibration's window and the workload's own start-up stand in.
//  * What is reserved is the end of the tune: the final alternation (the baseline, the final configuration and
//    one arm per kept knob, `rounds` rounds) and, when the headline is measured in fresh processes, its arms.
//    The reserve follows the kept knobs and the measured costs; nothing else is held back.
//  * A trial starts only when it and the reserve fit in what is left. One that does not fit is deferred, not
//    dropped: deferred knobs are tried again, cheapest first, whenever something was not spent as planned; a
//    knob is reported "skipped (budget)" only when it is still deferred as the final starts.
//  * The end: extra final rounds and extra fresh pairs only within the budget; the final's minimum may run past
//    it by `overrun` (5%) and no further: a tune that cannot afford its fresh-process headline within that
//    measures its headline in this process and says so.
//  * A tune that ends early says why: every applicable knob was tried.
// The tuner asks; this class answers and keeps the accounts (seconds by phase, for the report).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tb::engine::search {

// The budget's shares, in one place (they were literals spread over five files), each with why.
// The plan (calibrate) sizes the trials' windows for this share of the budget: estimates run over, and the end
// of the tune has a margin of its own.
inline constexpr double kPlanShare = 0.9;
// The A/A pairs of the noise floor take at most this share (never fewer than two pairs).
inline constexpr double kNoiseFloorShare = 0.15;
// On a GPU the model-level knobs (amp, channels_last, CUDA graphs...) are each measured within this share: the
// H100's tunes reached them at a fifth to a third of their budget, or never.
inline constexpr double kModelKnobDeadline = 1.0 / 3;
// A fresh process not measured here yet, whose cost is a guess (no start-up figure from the workload), is held
// back this much more.
inline constexpr double kUnmeasuredFreshGuess = 1.25;
// The end's reserve is its estimate times this: a dropped knob may need one more check, and an estimate is an
// estimate. Each window's switch is in the estimate itself (switch_cost.h); at 15% the H100 profile's tunes held
// ~20 s back for nothing at 300 s (a 6 s trial skipped with 171 s left, the tune ended at 282 s). At 10%, 8
// simulated seeds of that profile ended at 0.94-1.00 of 300 s (were 0.91-0.98) and every built-in profile's within
// 1.05 of 120 s and 300 s; TunerFinalsEstimate holds the end to 105% over 40 seeds.
inline constexpr double kReserveMargin = 1.10;
// ...and the fresh-process final's part of it this: its estimate is each process as measured (a process's start
// dominates its window; the gpu profile's planned 111 s took 110-117 s), where the in-process final's walks
// every switch. At 10% on it too, a `--budget auto` tune of the gpu-synthetic profile held back ~20 s of a
// ~240 s fresh final it did not take, and measured cudnn_benchmark's arm in 10 of 40 seeds (now 29 of 40).
inline constexpr double kFreshMargin = 1.03;

// A window this long is long enough whatever its step count: a step of seconds averages its own jitter, and
// `min_window` steps of 5 s (30 s a window) left a 60 s tune of an LBFGS script no trial at all.
inline constexpr double kLongWindowS = 4.0;
// The smallest tune: the A/A's two pairs, one trial's pairs and the final's (in windows, times `rounds`).
inline constexpr int kSmallestTuneAAWindows = 4;

// One more round of an alternation (both finals)? Rounds below `minimum` are the alternation's minimum: the first
// two always run, later ones while they fit the hard end; from round `decide_from` on an alternation whose
// questions are decided stops (a plan is not a quota); past the minimum a round is an extra one: it runs while
// something is undecided, below `maximum` rounds, within the budget.
struct RoundAsk {
  int round = 0;  // the round about to start, from 0
  int minimum = 0, decide_from = 0, maximum = 0;
  double elapsed = 0, round_s = 0, reserve_s = 0;  // `reserve_s`: what must still run after the alternation
};
enum class Round {
  run,        // within the minimum
  extra,      // past the minimum: still undecided, and the budget pays for it
  hard_end,   // within the minimum, but the hard end is reached
  decided,    // every question is decided
  given_up,   // undecided, and the rounds that would decide it cannot run (the caller's `give_up` said why)
  at_most,    // undecided after `maximum` rounds
  no_budget,  // undecided, and another round does not fit the budget
};
inline bool runs(Round r) { return r == Round::run || r == Round::extra; }

class Budget {
 public:
  explicit Budget(double budget_s, double overrun = 0.05) : total_(budget_s), overrun_(overrun) {}

  double total() const { return total_; }
  // --budget auto: the budget becomes one pass's cost once calibration and the noise floor have measured it.
  void set_total(double budget_s) { total_ = budget_s; }
  double overrun() const { return overrun_; }
  // No work starts past this, the final's minimum included.
  double hard_end() const { return total_ * (1.0 + overrun_); }

  // ----- measured costs (exponential averages; the first measurement replaces the prior) -------------------
  // Priors before anything was measured: an in-process window, a fresh-process window (start-up included).
  void prime(double window_s, double fresh_window_s);
  void observe_window(double seconds);
  void observe_fresh_window(double seconds);
  void observe_probe(double seconds);
  void observe_snapshot(double seconds);
  double window_s() const { return window_s_; }
  double fresh_window_s() const { return fresh_window_s_; }
  bool fresh_measured() const { return fresh_seen_; }
  double probe_s() const { return probe_s_; }
  double snapshot_s() const { return snapshot_s_; }

  // ----- what things will cost -----------------------------------------------------------------------------
  // A trial of `pairs` pairs of windows; a numerics knob adds its loss probes; `extra_s` a known warm-up (a
  // compile); a winner's snapshot is counted (it follows every kept change).
  double trial_s(int pairs, bool fresh, bool probe, double extra_s = 0) const;
  // An alternation of `arms` configurations over `rounds` rounds.
  double alternation_s(int arms, int rounds, bool fresh) const;

  // ----- the rules -------------------------------------------------------------------------------------------
  // A trial of `cost` may start at `elapsed` with `reserve` still to come.
  bool fits_trial(double elapsed, double cost, double reserve) const { return elapsed + cost + reserve <= total_; }
  // Optional work (another final round, another fresh pair) may run: within the budget.
  bool may_extend(double elapsed, double cost, double reserve = 0) const { return elapsed + cost + reserve <= total_; }
  // The final's minimum may run: within the hard end.
  bool may_finish(double elapsed, double cost) const { return elapsed + cost <= hard_end(); }
  // A fresh-process headline of `cost` is worth planning at all: it fits within `share` of the budget.
  bool affordable_share(double cost, double share) const { return cost <= share * total_; }
  // The rule above for an alternation's rounds. `undecided` is asked only from `decide_from` on; `give_up`
  // (optional) only when undecided, before the extra rounds' limits.
  Round another_round(const RoundAsk& a, const std::function<bool()>& undecided,
                      const std::function<bool()>& give_up = nullptr) const;

  // ----- accounts ---------------------------------------------------------------------------------------------
  // Everything from the last boundary up to `now` belongs to `phase` (in the order phases first appear).
  void charge(const std::string& phase, double now);
  const std::vector<std::pair<std::string, double>>& by_phase() const { return phases_; }

 private:
  static void average(double& into, bool& seen, double x, double weight);

  double total_, overrun_;
  double window_s_ = 1, fresh_window_s_ = 2, probe_s_ = 0, snapshot_s_ = 0;
  bool window_seen_ = false, fresh_seen_ = false, probe_seen_ = false, snapshot_seen_ = false;
  double last_charge_ = 0;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace tb::engine::search
