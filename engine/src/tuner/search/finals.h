// The tuner's two finals (search.h), each an object over the shared alternation (alternation.h): the one in this
// process (search_final.cpp) checks every kept knob against the final without it and measures the headline
// against the A/A floor; the fresh-process one (search_fresh.cpp) measures what a user who starts the training
// gets, and the process knobs on top. Each reads and settles the tuner's search state (its kept changes, its
// configuration, its result) and keeps only its own alternation's.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tuner/search/alternation.h"
#include "tuner/search/search.h"

namespace tb::engine::search {

class InProcessFinal {
 public:
  explicit InProcessFinal(Tuner& t) : t_(t) {}
  void run();

 private:
  // Nothing in-process to check: the baseline alone, measured at the end (for the drift check).
  void baseline_only();
  // The arms: the final, the baseline, and the final without each checked kept knob (with what needs it).
  void build_arms();
  const Arm& without(size_t j) const { return inproc_.size() > 1 ? arms_[2 + j] : arms_[1]; }
  // What one of `a`'s windows took, its switch and warm-up included (the mean over its windows; 0 with none).
  static double arm_window_s(const Arm& a);
  bool undecided() const;
  // The rounds; false when the final or the baseline arm could not run (the tune falls back to its baseline).
  bool alternate();
  // Each checked knob: held, dropped or unchecked (a row each); a dropped knob takes what needs it along.
  void check_each();
  // Knobs that did not hold alone: measured together, kept on the search's evidence, or dropped.
  void settle_dropped(Trial& head);
  std::string names_of_dropped() const;
  void mark_dropped_rows(const std::string& outcome, const std::string& why);
  void drop();
  void headline(Trial head);

  // The knobs the search deferred and never had time for, each one more arm "final + it" over the minimum
  // rounds while it fits the budget beside the end's reserve (search_final_extra.cpp): measured against the
  // final, where a trial of its own (two pairs, and an arm of its own in this final once kept) did not fit.
  struct Extra {
    Tuner::Deferred deferred;
    Change change;
    size_t arm = 0;  // into arms_, once it has one
  };
  // Arms for the deferred knobs an arm can measure, likeliest gain first, while they fit; each taken out of the
  // search's deferred list (which is then said as skipped).
  void add_extras();
  // Their rows against the final; the clearest gain kept (the final becomes it) when nothing was dropped.
  // Returns the arm the headline measures: the final's, or the final with the kept extra.
  size_t judge_extras();
  // Extras that measured nothing (the alternation failed): back to the skipped list with `why`.
  void skip_extras(const std::string& why);
  // What the extra arms' last windows took, where round `k` was their last (the next is priced without them).
  double extras_last_window_s(size_t k) const;

  Tuner& t_;
  bool af_ = false;            // every window a fresh process: process knobs are checked here too
  std::vector<size_t> inproc_;  // indices into kept_ of the knobs this alternation checks
  std::vector<Arm> arms_;
  std::vector<std::vector<std::string>> dependent_of_;  // per checked knob, the kept knobs its arm took away too
  std::set<size_t> unreserved_;  // indices into arms_: arms that recompile, run because the hard end paid for them
  double fresh_reserve_ = 0, spent_ = 0;
  measure::NoiseFloor nf_;  // the floor the checks and the headline are judged against
  std::set<size_t> dropped_;  // indices into kept_
  std::vector<std::string> unchecked_;
  std::vector<Extra> extras_;
  double recompiles_s_ = 0;  // the recompiling arms build_arms admitted (unreserved_)
};

class FreshFinal {
 public:
  explicit FreshFinal(Tuner& t) : t_(t) {}
  void run();

 private:
  // The process knobs' candidate values (each one not tried said in the skipped list).
  void collect_candidates();
  double compiles_s(int n_arms, int rounds) const { return compile_s_ * std::max(0, n_arms - 1) * rounds; }
  double cost(int n_arms, int rounds) const;
  bool affordable(double cost) const;
  // The headline is this process's, for `why`; the process knobs' arms are skipped with it (`budget`: the
  // fresh final did not fit, else it had nothing to confirm or could not decide it).
  void in_process_headline(const std::string& why, bool budget);
  // The headline's rounds; false when no fresh-process headline can run (said).
  bool plan();
  // Process-knob arms, most likely win first, while the alternation stays within the budget.
  void add_process_arms();
  bool open() const;
  bool gives_up(int r);
  // The rounds; false when the alternation could not say anything (said).
  bool alternate();
  // Each process knob's arm against the final's: the fastest that paid is chosen.
  void judge_process_knobs();
  Trial headline_of(size_t j, const std::string& what) const;
  void conclude();
  // Faster in this process and not in a fresh start under the user's allocator: said, and undone when slower.
  void lost_in_fresh_processes(bool slower, const std::string& plain_reason, const std::string& alloc_reason);

  Tuner& t_;
  std::vector<Change> candidates_;
  bool need_ = false, has_final_ = false;
  std::vector<Arm> arms_;
  size_t ref_ = 0;  // the arm a process knob is measured on top of
  double gain_ = 1, compile_s_ = 0, base_cost_ = 0, spent_ = 0, prior_sd_ = 0;
  int rounds_min_ = 0;
  std::string meas_, user_alloc_, gave_up_;
  std::optional<size_t> chosen_;  // the chosen process knob's trial
};

}  // namespace tb::engine::search
