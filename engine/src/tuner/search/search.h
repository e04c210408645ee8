// The tuner's search state (private to the engine): run_tune's Tuner class, declared once here so that its
// phases can live in separate files: search.cpp (the run, the start phases), search_trial.cpp (one A/B
// trial), search_plan.cpp (ladders, candidates, costs), search_process.cpp (process knobs),
// search_screen.cpp (screen, accumulate, revisit), search_final.cpp (the final alternation, the summary).
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

namespace tb::engine::search {

std::string fmt(double v, int prec = 3);
std::string pct(double v, int prec = 1);
std::string config_key(const Config& c);
bool parse_int(const std::string& s, int64_t& out);

enum class Ladder { None, Workers, Doubling };

// One candidate change: the knobs it sets, and how the report names it.
struct Change {
  Config delta;
  std::string knob, value;  // the knob the trial is about, its value
  std::string also;         // other knobs set with it ("intra_op_threads=2"), "" when none
};

class Tuner {
 public:
  Tuner(Workload& w, const TuneOptions& o) : w_(w), o_(o) {}

  TuneResult run();

 private:
  struct Winner {
    Change change;
    double gain = 1;
  };

  // ----- helpers (search.cpp) ----------------------------------------------------------------------
  double elapsed() { return w_.now_s() - t0_; }
  double left() { return o_.budget_s - elapsed(); }

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
  bool has_knob(const std::string& id) { return knobs_.count(id) && eligible(knobs_[id], false); }
  // The in-process windows ran under another allocator than the one the baseline starts with.
  bool measured_under_other_allocator() {
    const std::string m = w_.measurement_allocator();
    return !m.empty() && knobs_.count("cpu_allocator") && m != value_in(baseline_, "cpu_allocator");
  }
  // Whether the headline is measured in fresh processes: a process knob is kept, or the in-process windows
  // ran under another allocator than the user's start.
  bool fresh_headline() {
    if (!w_.fresh_windows().empty()) return false;  // the final alternation already ran in fresh processes
    return !process_choice_.empty() ||
           (!no_fresh_processes_ && measured_under_other_allocator() && final_config() != baseline_);
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

  // ----- ladders, candidates and costs (search_plan.cpp) --------------------------------------------
  Ladder ladder_of(const KnobInfo& info);
  std::optional<std::string> ladder_next(const KnobInfo& info, const std::string& from);
  std::vector<Change> rung(const Config& ref, const std::string& id, const std::string& next);
  std::vector<std::string> plain_values(const KnobState& k, const std::string& from);
  std::optional<std::string> not_worth(const KnobInfo& info, const Config& c);
  std::vector<std::string> revisit_order();

  double step_cost_s() { return sec_per_step_ > 0 ? sec_per_step_ : 0.05; }
  double window_cost_s() { return (warmup_est_ + window_) * step_cost_s() + apply_s_; }
  double trial_cost_s(const std::string& knob);
  // Measured steps of a fresh-process window: the trials' window, at least min_fresh_window_s long.
  int fresh_window() {
    const int by_time = static_cast<int>(std::ceil(o_.min_fresh_window_s / step_cost_s()));
    return std::clamp(by_time, window_, std::max(window_, 4 * o_.max_window));
  }
  // process_start_s_ holds what a fresh window costs beyond its measured steps (start-up and warm-up).
  double fresh_pair_cost_s() { return 2.0 * (fresh_window() * step_cost_s() + process_start_s_); }
  double fresh_trial_cost_s() { return o_.rounds * fresh_pair_cost_s(); }
  double final_cost_s(int extra_arms = 1);
  double fresh_headline_cost_s();
  bool fits_fresh(const std::string& knob, const std::string& value);
  bool fits(const std::string& knob, const std::string& value);

  // ----- one A/B trial (search_trial.cpp) -----------------------------------------------------------
  void take_snapshot(const std::string& lbl);
  double loss_drift(const Config& cand);
  void note_baseline(const std::string& phase, const measure::Window& w);
  measure::Window window_of(const Config& config, bool fresh);
  void classify(Trial& t, bool use_floor);
  Trial trial(const std::string& phase, const Config& ref, const std::string& ref_label, const Change& change,
              const Config& cand, bool fresh = false);
  bool another_fresh_pair(const Trial& t, int pairs);
  Trial& record(Trial t);

  // ----- phases ------------------------------------------------------------------------------------
  // search.cpp
  void calibrate();
  void noise_floor_phase();
  // search_process.cpp
  void process_phase(bool primary);
  // search_screen.cpp
  void screen();
  void accept(size_t trial_index, const Change& c);
  void accumulate();
  std::string current_label();
  void revisit();
  // search_final.cpp
  void final_phase();
  bool fresh_headline_phase();
  void summarize();

  Workload& w_;
  const TuneOptions& o_;
  TuneResult res_;
  measure::LoadProbe load_;
  double t0_ = 0;
  std::string phase_;
  std::map<std::string, KnobState> knobs_;
  std::vector<std::string> order_;
  Config baseline_, current_;
  std::map<std::string, std::string> process_choice_;  // process knobs kept (measured in fresh processes)
  bool no_fresh_processes_ = false;
  std::set<std::string> deferred_;  // process knobs left from the primary pass to the second one
  double sec_per_step_ = 0, apply_s_ = 0, probe_s_ = 0, warmup_est_ = 3, process_start_s_ = 1.0;
  bool start_cost_seen_ = false;  // process_start_s_ comes from a process measured here, not the default
  int window_ = 8;
  int planned_trials_ = 0;
  int screened_knobs_ = 0;
  std::optional<double> baseline_loss_;
  std::vector<Winner> winners_;
  std::vector<Change> kept_;         // in the order they were kept (process knobs first)
  std::vector<size_t> kept_trial_;   // the trial each was kept on
  std::vector<double> kept_ratio_;   // its ratio against the configuration before it was kept
  std::map<std::string, std::vector<measure::Window>> baseline_phase_;
  std::set<std::string> tried_;   // ref|cand pairs already measured
  std::set<std::string> failed_;  // knob=value that failed (OOM, drift): never retried
  std::set<std::string> slower_;  // knob=value measured slower: not revisited
  std::map<std::string, int64_t> oom_floor_;  // lowest value of an int knob that ran out of memory
  std::string last_bottleneck_;
};

}  // namespace tb::engine::search
