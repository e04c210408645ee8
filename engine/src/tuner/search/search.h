// The tuner's search state (private to the engine): run_tune's Tuner class, declared once here so that its
// phases can live in separate files: search.cpp (the run, the start phases), search_trial.cpp (one A/B trial),
// search_plan.cpp (ladders, candidates, the order, what a trial costs and what is reserved), search_pass.cpp (one
// pass over the knobs, priced; --budget auto), search_screen.cpp
// (the search loop: the likeliest win next, on top of what is kept), search_final.cpp (the final alternation in this process),
// search_fresh.cpp (the fresh-process final: the headline and the process knobs), both finals running their arms through
// alternation.h (one round loop, one arm, one pairing), search_summary.cpp (the
// summary), search_sticky.cpp (a trial that leaves the process slower), search_memory.cpp (what the windows held: a trial's two sides, a batch that would not fit). The budget's rules are budget.h's; the knobs' priors priority.h's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/tuner.h"
#include "tuner/search/budget.h"
#include "tuner/search/switch_cost.h"
#include "tuner/search/priority.h"

namespace tb::engine::search {

std::string fmt(double v, int prec = 3);
std::string pct(double v, int prec = 1);
std::string config_key(const Config& c);
bool parse_int(const std::string& s, int64_t& out);

// How a process knob's skip begins when the fresh-process final did not run for a reason other than the budget
// (nothing to confirm, or fresh pairs too noisy to decide): said so, and counted apart from the budget's.
inline constexpr const char* kNoFreshFinal = "takes effect at process start, and the fresh-process final did not run (";

// One candidate change: the knobs it sets, and how the report names it.
struct Change {
  Config delta;
  std::string knob, value;  // the knob the trial is about, its value
  std::string also;         // other knobs set with it ("intra_op_threads=2"), "" when none
  bool paired = false;      // two changes tried together (try_pair): never paired again
};

// A change the search kept: the trial it was kept on, and its ratio against the configuration before it (a
// later rung that replaces it carries the replaced rung's ratio too).
struct Kept {
  Change change;
  size_t trial = 0;
  double ratio = 1;
};

class InProcessFinal;
class FreshFinal;

class Tuner {
 public:
  Tuner(Workload& w, const TuneOptions& o) : w_(w), o_(o), budget_(o.budget_s, o.overrun) {}

  TuneResult run();

 private:
  // The finals (finals.h) are objects of their own that read and settle this search's state.
  friend class InProcessFinal;
  friend class FreshFinal;

  // A knob the budget could not pay for when its turn came: tried again when budget is left, else skipped.
  struct Deferred {
    std::string knob, value;
    double need_s = 0, left_s = 0, reserve_s = 0;
    double fresh_s = 0;  // of reserve_s, the fresh-process final's
    std::string why() const;  // the skipped list's reason: what it needed, what was left, what the end held
  };

  // ----- helpers (search.cpp) ----------------------------------------------------------------------
  double elapsed() { return w_.now_s() - t0_; }
  double left() { return o_.budget_s - elapsed(); }
  // Starts a phase; the time since the last phase boundary is charged to the phase before.
  void enter(const std::string& phase);
  void progress(const std::string& phase, const std::string& msg, double frac = -1);

  Config final_config() const {
    Config c = current_;
    for (const auto& [k, v] : process_choice_) c[k] = v;
    return c;
  }

  std::string summary_line();

  static std::string label(const std::string& knob, const std::string& value) { return knob + "=" + value; }
  static std::string label(const Change& c) { return label(c.knob, c.value) + (c.also.empty() ? "" : " + " + c.also); }

  bool numerics(const std::string& knob) {
    auto it = knobs_.find(knob);
    return it != knobs_.end() && it->second.info.changes_numerics;
  }
  bool process_knob(const std::string& knob) {
    auto it = knobs_.find(knob);
    return it != knobs_.end() && it->second.info.process_scope;
  }
  // Every window is a fresh process (a group): process knobs are screened like the others.
  bool all_fresh() { return !w_.fresh_windows().empty(); }
  bool cuda() const { return cuda_; }
  bool has_knob(const std::string& id) { return knobs_.count(id) && eligible(knobs_[id], false); }
  // The in-process windows ran under another allocator than the one the baseline starts with.
  bool measured_under_other_allocator() {
    const std::string m = w_.measurement_allocator();
    return !m.empty() && knobs_.count("cpu_allocator") && m != value_in(baseline_, "cpu_allocator");
  }
  // Whether the headline must be measured in fresh processes: the in-process windows ran under another
  // allocator than the user's start and something is kept (process knobs come as arms of that same final).
  bool fresh_headline_needed() {
    if (all_fresh() || no_fresh_processes_) return false;
    return (measured_under_other_allocator() || left_slower_at_) && current_ != baseline_;
  }
  bool eligible(const KnobState& k, bool record_skip);

  static std::string value_in(const Config& c, const std::string& k) {
    auto it = c.find(k);
    return it == c.end() ? std::string() : it->second;
  }
  static Config with(Config c, const Config& delta) {
    for (const auto& [k, v] : delta) c[k] = v;
    return c;
  }
  static Config changed_delta(const Config& base, const Config& c) {
    Config d;
    for (const auto& [k, v] : c)
      if (value_in(base, k) != v) d[k] = v;
    return d;
  }

  // ----- ladders, candidates, order and costs (search_plan.cpp) ---------------------------------------
  Ladder ladder_of(const KnobInfo& info);
  std::optional<std::string> ladder_next(const KnobInfo& info, const std::string& from);
  std::vector<Change> rung(const Config& ref, const std::string& id, const std::string& next);
  std::vector<std::string> plain_values(const KnobState& k, const std::string& from);
  std::optional<std::string> not_worth(const KnobInfo& info, const Config& c);
  // The on/off knob `id` means nothing without, with the value that makes it mean something, when `c` has it
  // off: non_blocking's copy from pageable memory is synchronous whatever the flag, so its trial sets pinned
  // memory too. Empty when `id` needs nothing, or a ladder (prefetch waits for workers: not_worth).
  std::optional<std::pair<std::string, std::string>> needed_switch(const std::string& id, const Config& c);
  // The speed-up `id` may give from here by the last snapshot's breakdown and the analyses' bounds, halved
  // toward 1 for each trial of it that did not pay.
  double expected(const std::string& id);
  // Expected gain over cost of screening `id` now (the last snapshot's bottleneck), for the order.
  double priority(const std::string& id);
  // A ladder knob whose last rung was just kept (its next rung goes before knobs with no evidence).
  bool climbing(const std::string& id);
  // `ids` by priority, the workload's first knobs first, then a climbing ladder, ties in catalog order.
  std::vector<std::string> by_priority(const std::vector<std::string>& ids);

  double step_cost_s() { return pace_.sec_per_step > 0 ? pace_.sec_per_step : 0.05; }
  // Measured steps of a fresh-process window: the trials' window, at least min_fresh_window_s long.
  int fresh_window() {
    const int by_time = static_cast<int>(std::ceil(o_.min_fresh_window_s / step_cost_s()));
    return std::clamp(by_time, pace_.window, std::max(pace_.window, 4 * o_.max_window));
  }
  // A trial's pairs, probe and snapshot, and its compiles: one in this process, one per compiled process when
  // its windows are fresh processes (each compiles again: Inductor's cache is the process's).
  double trial_cost_s(const std::string& knob, bool fresh = false);
  // What one torch.compile costs a process: the largest one this tune measured, else the prior (priority.h).
  double compile_s();
  // The in-process final alternation's arms: final, baseline and one without each kept knob.
  int final_arms();
  // The fresh-process final with its two arms (baseline, final): planned when needed and affordable.
  bool fresh_final_planned();
  // Arms reserved for it: the baseline, the final, and the measurement allocator's when it is the user's other.
  int planned_fresh_arms();
  // The value a process knob's arm in the fresh-process final would measure, or empty with why it has none
  // here (search_fresh.cpp FreshFinal::collect_candidates says it in the skipped list).
  struct ProcessArm {
    std::string value, why_not;
  };
  ProcessArm process_arm(const std::string& id);
  // Why a process knob's arm of `rounds` fresh pairs cannot resolve the most the knob may give (search_plan.cpp;
  // only a knob of the GPU's compute, whose prior bounds it), or nullopt: then it is measured as the budget
  // allows.
  std::optional<std::string> out_of_reach(const std::string& id, int rounds);
  // The arms of the process knobs the plan's pass covered (plan_pass, process_planned_), over `rounds`: beside
  // a planned headline their own arms, else the baseline's and, with a change kept, the final's with them.
  double process_arms_s(bool headline, int rounds);
  // ----- the confirmation's size (search_plan.cpp) ---------------------------------------------------
  // A fresh-process pair's spread (sd of its log ratio): as this tune's fresh pairs measured it, else the
  // in-process floor's times kFreshNoise (a new process adds its own placement, page faults and start-up).
  double fresh_sd();
  // Fresh pairs that decide a gain of `gain` at spread `sd`: the interval's half-width within kDecideShare of
  // the gain (in logs), at least `rounds`; 0 when more than max_fresh_rounds would be needed.
  int fresh_pairs_for(double gain, double sd);
  // The gain the fresh final is to confirm: the in-process headline once measured, else the kept knobs'
  // ratios as the search measured them.
  double gain_to_confirm();
  // The fresh final's planned rounds for that gain; 0 when fresh processes cannot decide it here.
  int fresh_rounds();
  // Its headline's arms over those rounds (the baseline's, the final's, and the measurement allocator's when its
  // share allows; 0 when it is not planned), and with fresh_reserve_s the planned process knobs' arms.
  double headline_fresh_s(int* arms = nullptr);
  double fresh_reserve_s();
  // What the end of the tune needs (budget.h): the in-process final and the planned fresh final (its arms: 0
  // when it is not planned), without the margin; reserve_s() with it.
  struct Reserve {
    double in_process = 0, fresh = 0;
    int fresh_arms = 0;
    double total() const { return in_process + fresh; }
    // What is held back for it: each part with its own margin (budget.h).
    double held() const { return kReserveMargin * in_process + kFreshMargin * fresh; }
  };
  Reserve reserve_parts(bool with_fresh = true);
  double reserve_s(bool with_fresh = true);
  // The reserve once a trial's change is kept: one more arm in the in-process final.
  double reserve_if_kept_s(bool with_fresh = true) {
    return reserve_s(with_fresh) + budget_.alternation_s(1, o_.rounds, false);
  }
  // The in-process final alternation of `rounds` rounds, each arm at its own measured speed, each window with
  // what switching to it from the arm before costs (switch_cost.h).
  double final_s(int rounds);
  // An alternation of `arms` (each a configuration and its step time) over `rounds` rounds, each window with
  // what switching to it costs.
  double alternation_estimate_s(const std::vector<std::pair<Config, double>>& arms, int rounds);
  // The baseline's step time as the calibration measured it.
  double baseline_step_s();
  // The final without kept change `kc`: its knobs back at the baseline's, with every kept knob that only means
  // something while they are set (`dependents`, when given, says which were taken along).
  Config without_kept(const Change& kc, std::vector<std::string>* dependents = nullptr);
  // How much longer a step (and so a window) of the configuration with `knob`=`value` is than one of the
  // current configuration: a larger batch's new size over the current one, else 1.
  double step_scale(const std::string& knob, const std::string& value);
  // Whether a trial of `knob`=`value` may start now; if not, it is deferred (and said).
  bool fits(const std::string& knob, const std::string& value, bool fresh = false);

  // The compiled variant a configuration runs (its dtype and memory format), "" without compile.
  static std::string compile_variant(const Config& c) {
    return value_in(c, "compile") == "on" ? value_in(c, "amp") + "|" + value_in(c, "channels_last") : "";
  }

  // ----- one A/B trial (search_trial.cpp) -----------------------------------------------------------
  void take_snapshot(const std::string& lbl);
  double loss_drift(const Config& cand);
  void note_baseline(const std::string& phase, const measure::Window& w);
  // `cap_s` > 0: an in-process window's measured steps end past that many seconds (Workload::measure_capped).
  measure::Window window_of(const Config& config, bool fresh, double cap_s = 0);
  void classify(Trial& t, bool use_floor);
  // The candidate's one-time cost (its windows' one_time_s beyond the reference's) and its break-even, into `t`.
  void one_time_cost(Trial& t);
  // The candidate's own start-up (Trial::startup_after_s), said with its break-even; called by one_time_cost.
  void startup_cost(Trial& t, double saved_per_step);
  int respawn_pass_steps(const Config& ref, const Config& cand);
  Trial trial(const std::string& phase, const Config& ref, const std::string& ref_label, const Change& change,
              const Config& cand, bool fresh = false);
  // A row about `change` measured against `ref` (named `ref_label`) in `phase`, at the trials' window; nothing
  // measured yet.
  Trial row_for(const std::string& phase, const Change& change, const Config& ref, const std::string& ref_label) const;
  // A side of the trial that threw: the trial's outcome (an out-of-memory floor remembered, the reference put back).
  void side_failed(Trial& t, const TrialFailure& f, bool is_ref, const Change& change, const Config& ref, bool fresh);
  double compile_deadline_s(double reserve);
  // A candidate clearly slower after one pair: decided on it.
  void settle_slower(Trial& t, const Change& change);
  void guard_loss(Trial& t, const Config& ref, const Config& cand, const Change& change);
  bool decided_early(const Trial& t);
  bool clearly_slower(const Trial& t);
  // How many times slower a first window must be to end a trial at once (3x, or 3 noise bands).
  double slower_factor() const {
    const double band = std::isfinite(res_.noise_band) ? res_.noise_band : 0.0;
    return std::max(3.0, 1 + 3 * band);
  }
  Trial& record(Trial t);
  // The noise floor the intervals pool with: the A/A pairs and the spread of every in-process trial's pairs
  // around its own mean (four A/A pairs alone misjudge it by 2x often enough: an H100 tune's 5.6%, a
  // simulated one's 14% where the truth was 7%, which hid a 1.32x loader gain inside "the noise").
  measure::NoiseFloor floor() const { return measure::pool(res_.noise_floor, residuals_); }
  void learn_noise(const Trial& t);

  // ----- a change that leaves this process slower (search_sticky.cpp) -------------------------------
  // After in-process trial `i`: whether one of its configurations ran far slower than when it was measured
  // before (by more than sticky_tolerance()); then the trial before it is named and everything from it on is
  // discarded (discard_from). Else remembers what its two configurations ran at.
  bool left_slower(size_t i);
  double sticky_tolerance() const;
  void discard_from(size_t suspect);

  // ----- memory (search_memory.cpp) ------------------------------------------------------------------
  // Remembers what a window of `c` held (its peak, the part held between steps, the device's size).
  void note_memory(const Config& c, const measure::Window& m);
  // The peaks of a trial's two sides from its windows.
  static void fill_memory(Trial& t);
  // Why the batch-size rung `next` would not fit from the current configuration (its measured peak, the part
  // of it that does not grow with the batch, the device's size), or nullopt when it may or nothing is known.
  std::optional<std::string> memory_short(const std::string& id, const std::string& from, const std::string& next);
  // "; the largest batch that ran: 64 (peak 9.81 GiB of 79.10 GiB)" for an out-of-memory trial's reason.
  std::string largest_fit() const;

  // ----- one pass's cost (search_pass.cpp) -----------------------------------------------------------
  // What trying each applicable knob once costs from here, finals included, and how many fit the budget; with
  // --budget auto it sets the budget to that. Said on a progress line and kept in the result.
  void plan_pass();
  void say_ineligible();

  // ----- phases ------------------------------------------------------------------------------------
  // search.cpp
  void calibrate();
  void noise_floor_phase();
  // search_screen.cpp
  void search();
  // What to measure next for `id` from the current configuration: the next rung of its ladder (a workers
  // rung with the intra-op threads it leaves, and on a CPU with every core), or its next value not yet
  // measured from here; empty when there is none.
  std::vector<Change> next_changes(const std::string& id);
  // `ready` restricted to the model-level GPU knobs not yet measured when the first third's deadline for
  // them is near (search_screen.cpp); else `ready`.
  std::vector<std::string> due_first(const std::vector<std::string>& ready);
  // Of `ready`, the pass's knobs that waited for another (prefetch for workers) and are not yet measured, once
  // the time left only pays for them (a budget that covers the pass).
  std::vector<std::string> pass_due(const std::vector<std::string>& ready);
  // Measures next_changes(id) and keeps a winner. False when it did not fit (deferred).
  bool step_knob(const std::string& id);
  // A trial of `id` from the current configuration that measured faster but could not decide (its interval
  // covers 1): more pairs may decide it. nullopt when there is none (or it has all the pairs it may have).
  std::optional<size_t> extendable(const std::string& id);
  // Adds `rounds` pairs to trial `i` and decides again; keeps it when it now shows a gain.
  void extend(size_t i);
  // Two singles that each did not pay alone from here, of different kinds (the loader and the device's
  // arithmetic), together: when no single knob is left, and on a GPU as soon as a worker rung and a strong
  // knob tie, one of them `tied_with` (the knob measured last). False when there is no such pair or it does
  // not fit.
  bool try_pair(const std::string& tied_with = "");
  // `snapshot`: profile the new configuration (the priors read it); the final's extras take none.
  void accept(size_t trial_index, const Change& c, bool snapshot = true);
  std::string current_label();
  int misses(const std::string& id);
  void defer(const std::string& knob, const std::string& value, double need, double reserve, double fresh = 0);
  void undefer(const std::string& knob);
  // Every eligible knob that never had a trial, in the skipped list with the reason (budget, a knob it
  // needs, nothing to try).
  void record_untried();
  // A deferred knob in the skipped list: what it needed, what was left, what it may give by the last analysis.
  void skip_deferred(const Deferred& d);
  // search_final.cpp
  void final_phase();
  // search_fresh.cpp
  void fresh_final();
  // search_final_extra.cpp: the change an extra arm of the final (or a row after the finals) would measure for a
  // deferred `knob`=`value` on top of the current configuration, or nullopt when an arm cannot say it (a process
  // knob, a numerics knob, a recipe change, a compile or recompile, another value of a kept knob).
  std::optional<Change> arm_change(const std::string& knob, const std::string& value);
  // What the finals left of the budget measures the knobs still skipped for it on top of the final, said and
  // not kept (the headline is measured): two pairs each where an arm can say it, else a trial of its own (a
  // compile, a numerics knob, a bigger batch). Their reserve holds what a guess may need (a fresh process not
  // measured yet): a README demo ended at 103 s of 120 with four knobs skipped, a script's tune at 86 s of 120
  // with compile skipped "for budget".
  void after_finals();
  // search_summary.cpp: the verdict, the recipe changes said, the waterfall/baselines/noise/drift, and why it ended
  void summarize();
  void verdict();
  void say_recipe_changes();
  void account();
  void why_ended();

  Workload& w_;
  TuneOptions o_;  // a copy: --budget auto sets its budget once the pass is known (plan_pass)
  Budget budget_;
  TuneResult res_;
  measure::LoadProbe load_;
  double t0_ = 0;
  bool cuda_ = false;
  std::string phase_;
  std::map<std::string, KnobState> knobs_;
  std::vector<std::string> order_;  // catalog order, the workload's first knobs first
  Config baseline_, current_;
  std::map<std::string, std::string> process_choice_;  // process knobs kept (measured in fresh processes)
  // Process knobs whose arm in the fresh-process final the plan's pass covered: the search holds their time
  // from the start, as it holds the headline's once a change is kept (reserve_parts).
  std::vector<std::string> process_planned_;
  bool no_fresh_processes_ = false;
  // What the calibration planned from the step time (search_plan.cpp calibrate): a window's steps and costs.
  struct Pace {
    double sec_per_step = 0, apply_s = 0, warmup_est = 3;
    double process_start_s = -1;  // a fresh process's cost before its first measured step, when known
    int window = 8;
    int planned_trials = 0;
    // Set when the budget cannot hold the smallest tune at this step time: why, and what would.
    std::string cannot_fit;
  };
  Pace pace_;
  // What each in-process window paid before its first measured step, by what it changed (the finals' estimate),
  // and the configuration the last one ran.
  SwitchCosts switches_;
  Config last_window_;
  std::optional<double> baseline_loss_;
  std::vector<Kept> kept_;  // in the order they were kept
  std::map<std::string, std::vector<measure::Window>> baseline_phase_;
  std::set<std::string> tried_;   // ref|cand pairs already measured
  std::set<std::string> failed_;  // knob=value that failed (OOM, drift): never retried
  // What the windows said of memory (search_memory.cpp): a trial's two sides, a batch that would not fit.
  struct Held {
    int64_t peak = -1, held = -1;
  };
  struct MemoryLedger {
    std::map<std::string, int64_t> oom_floor;  // lowest value of an int knob that ran out of memory
    std::map<std::string, Held> seen;          // config_key -> its last window's memory
    int64_t total = -1;                        // the device's size, once a window said it
    int64_t largest_batch = -1, largest_batch_peak = -1;  // the largest batch size a window ran, its peak
  };
  MemoryLedger memory_;
  std::vector<Deferred> deferred_;
  // What the last snapshot said (search_trial.cpp take_snapshot), which the priors read (priority.h).
  struct Evidence {
    std::string bottleneck;
    StepShares shares;               // where the step's time went
    std::vector<std::string> named;  // the knobs its analyses name, likeliest first
    std::map<std::string, double> caps;  // the most each knob can give by its analyses (Snapshot::caps)
  };
  Evidence evidence_;
  measure::NoiseFloor residuals_;  // pooled spread of the trials' pairs around their means
  // What each search trial compared, for extend().
  struct Plan {
    Config ref, cand;
    Change change;
  };
  std::map<size_t, Plan> plans_;
  // Each configuration's throughput as an in-process trial last measured it, and that trial (search_sticky.cpp).
  struct Level {
    double throughput = 0;
    size_t trial = 0;
  };
  std::map<std::string, Level> level_;
  std::set<std::string> compiled_variants_;  // compile_variant()s this process has run
  // What the finals leave for each other and for the plan (search_final.cpp, search_fresh.cpp, search_plan.cpp).
  struct FinalsState {
    bool in_process_gain = false;  // the in-process final's headline was a gain beyond the floor
    double fresh_sd_measured = std::nan("");  // the fresh final's pairs' spread, once it has run 3 rounds
    bool fresh_unreserved = false;  // trials ran in the fresh-process headline's reserve (fits)
    int fresh_arms_reserved = 0;    // the fresh final's arms the search held time for as it ended (0: none)
    bool done = false;              // both finals ran: nothing is reserved any more (after_finals)
  };
  FinalsState finals_;
  double compile_seen_s_ = 0;  // the largest compile a window of this tune measured (one_time_cost)
  std::optional<size_t> left_slower_at_;  // the trial after which this process ran slower: no more in-process trials
};

}  // namespace tb::engine::search
