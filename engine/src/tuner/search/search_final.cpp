// The final alternation of the tuner's search (finals.h): round-robin over the baseline, the final
// configuration and the final configuration without each kept knob (dozens of trials ran; one lucky window
// must not decide what the user keeps). A kept knob that does not hold is dropped, with what depends on it.
// A workload whose every window is a fresh process (a group) runs the process knobs in every window: there
// the final arm has them and each is checked like the others. Elsewhere the fresh-process final follows
// (search_fresh.cpp).
#include <cmath>
#include <limits>

#include "tuner/search/finals.h"
#include "tuner/search/priority.h"

namespace tb::engine::search {

void Tuner::final_phase() { InProcessFinal(*this).run(); }

void InProcessFinal::run() {
  Tuner& t = t_;
  t.enter("final");
  // A process left slower measures nothing more: what was kept before the suspect is confirmed in fresh
  // processes (search_fresh.cpp), or not at all.
  if (!t.left_slower_at_) {
    af_ = t.all_fresh();
    for (size_t i = 0; i < t.kept_.size(); ++i)
      if (af_ || !t.process_knob(t.kept_[i].change.knob)) inproc_.push_back(i);
  }
  if (!t.left_slower_at_ && !inproc_.empty()) {
    build_arms();
    // A group's windows are fresh processes each: its extras would be trials of their own. Before the deferred
    // knobs are said skipped: an extra is not.
    if (!af_) add_extras();
  }
  t.record_untried();
  if (t.left_slower_at_) return;
  const double minimum = t.budget_.alternation_s(t.final_arms(), t.o_.rounds, false);
  if (!t.budget_.may_finish(t.elapsed(), minimum))
    t.res_.notes.push_back("the final alternation ran past the budget (its first " + std::to_string(t.o_.rounds) +
                           " rounds are never skipped)");
  if (inproc_.empty()) return baseline_only();
  if (!alternate()) return skip_extras("the final alternation failed");
  check_each();
  const size_t final_arm = judge_extras();
  Trial head;
  head.phase = t.phase_;
  head.reference = "baseline";
  head.window = t.pace_.window;
  paired(arms_[1], arms_[final_arm], head.a, head.b);
  if (!dropped_.empty()) settle_dropped(head);
  headline(std::move(head));
}

void InProcessFinal::baseline_only() {
  Tuner& t = t_;
  t.progress(t.phase_, "the baseline at the end (" + std::to_string(t.o_.rounds) + " windows)");
  for (int r = 0; r < t.o_.rounds; ++r) {
    try {
      t.note_baseline("final", t.window_of(t.baseline_, false));
    } catch (const TrialFailure& f) {
      t.res_.notes.push_back(std::string("the baseline failed at the end: ") + f.what());
      break;
    }
  }
}

void InProcessFinal::build_arms() {
  Tuner& t = t_;
  arms_.push_back({"final", t.current_, {}, {}, ""});
  arms_.push_back({"baseline", t.baseline_, {}, {}, ""});
  // "final without K": K back at the baseline's value, and with it every kept knob that only means something
  // while K is set (prefetch and persistent_workers without workers, non_blocking without pinned memory): an
  // arm the workload would refuse is not a configuration.
  dependent_of_.assign(inproc_.size(), {});
  // Under torch.compile an arm without a kept amp or channels_last is a variant this process may not have
  // compiled: a recompile (~55 s on a GPU) on top of its windows. One the budget's hard end cannot pay for is
  // not run; that knob keeps its trial's evidence and says so (a simulated script tune kept compile at 72% of
  // its budget and its final, recompiling two arms, ended at 350 s of 300).
  const double compile_s = Tuner::value_in(t.current_, "compile") == "on" ? t.compile_s() : 0.0;
  double recompiles = 0;
  const double final_cost = t.final_s(t.o_.rounds) + t.fresh_reserve_s();
  if (inproc_.size() > 1)  // with one kept knob, "final without it" is the baseline arm
    for (size_t j = 0; j < inproc_.size(); ++j) {
      const Change& kc = t.kept_[inproc_[j]].change;
      const Config c = t.without_kept(kc, &dependent_of_[j]);
      std::string with_them;
      for (const auto& dep : dependent_of_[j]) with_them += (with_them.empty() ? "" : ", ") + dep;
      std::string skip;
      if (compile_s > 0 && (kc.knob == "amp" || kc.knob == "channels_last") &&
          !t.compiled_variants_.count(Tuner::compile_variant(c))) {
        // Its windows too: final_s plans no such arm (a simulated script tune's final took 37 s where 24 were held).
        const double arm_s = compile_s + t.budget_.alternation_s(1, t.o_.rounds, false);
        if (t.budget_.may_finish(t.elapsed(), final_cost + recompiles + arm_s)) {
          recompiles += arm_s;
          recompiles_s_ = recompiles;
          unreserved_.insert(arms_.size());
        } else {
          skip = "a recompile under torch.compile (~" + fmt(compile_s, 0) + " s; ~" + fmt(arm_s, 0) +
                 " s with its windows) the budget left could not pay for";
        }
      }
      arms_.push_back(
          {"without " + Tuner::label(kc) + (with_them.empty() ? "" : " (and " + with_them + ")"), c, kc, {}, skip});
    }
  t.progress(t.phase_, "final alternation: " + std::to_string(arms_.size()) + " configurations, " +
                           std::to_string(t.o_.rounds) + " rounds");
}

double InProcessFinal::arm_window_s(const Arm& a) {
  if (a.windows.empty()) return 0.0;
  double sum = 0;
  for (const auto& w : a.windows) sum += std::max(0.0, w.startup_s) + w.wall_s + std::max(0.0, w.one_time_s);
  return sum / double(a.windows.size());
}

// A kept knob still undecided against its arm without it: its interval covers 1 although it measured faster.
bool InProcessFinal::undecided() const {
  const measure::NoiseFloor nf = t_.floor();
  std::vector<measure::Window> a, b;
  for (size_t j = 0; j < inproc_.size(); ++j) {
    if (!without(j).failed.empty()) continue;
    paired(without(j), arms_[0], a, b);
    const auto e = measure::paired_ratio(a, b, &nf, t_.o_.confidence);
    if (e.valid() && e.no_effect() && e.ratio > 1 + t_.o_.min_gain) return true;
  }
  return false;
}

bool InProcessFinal::alternate() {
  Tuner& t = t_;
  const double start = t.w_.now_s();
  // More rounds while a kept knob is still undecided and the budget pays for a round with the fresh final
  // still to come: a loader-workers change on two cores swings short windows by 10-20%, and three rounds
  // dropped a change that screening measured at 1.28x [1.17, 1.40].
  fresh_reserve_ = t.fresh_reserve_s();
  // A round costs at least what the last one took: its arms run at their own speeds, and an arm without a kept
  // change can be slower than the search measured that change (amp held 7.0x in a final where its trial had
  // measured 5.0x), where the budget's window cost is the recent, fast windows'.
  double last_round_s = 0, round_started = t.w_.now_s();
  // An extra round leaves room for what may still come: the fresh final with its margin, and the knobs that do
  // not hold alone measured together (settle_dropped: three arms).
  const double after_extra =
      kFreshMargin * fresh_reserve_ + (inproc_.size() > 1 ? t.budget_.alternation_s(3, t.o_.rounds, false) : 0.0);
  std::optional<double> extra_from;
  auto another_round = [&](int r) {
    if (r > 0) {
      // The extras ride only in the first rounds: a round after their last is priced without them.
      last_round_s = t.w_.now_s() - round_started - extras_last_window_s(size_t(r - 1));
      round_started = t.w_.now_s();
    }
    if (r == t.o_.rounds) extra_from = t.w_.now_s();
    // With the end's margin: the rounds' order rotates, and with it what the switches cost (a script tune's
    // rounds took 11.4, 12.0 and 14.4 s; its third, priced at the second's, ran to 127.8 s of 120).
    const double round_s =
        kReserveMargin * std::max(t.budget_.alternation_s(live_arms(arms_), 1, false), last_round_s);
    const double after = r < t.o_.rounds ? fresh_reserve_ : after_extra;
    const RoundAsk ask{r, t.o_.rounds, t.o_.rounds, t.o_.max_final_rounds, t.elapsed(), round_s, after};
    const Round next = t.budget_.another_round(ask, [&] { return undecided(); });
    if (next == Round::hard_end)
      t.res_.notes.push_back("the final alternation stopped after " + std::to_string(r) +
                             " rounds at the budget's hard end");
    if (next == Round::extra)
      t.progress(t.phase_, "a kept change is still undecided after " + std::to_string(r) + " rounds: one more round");
    return runs(next);
  };
  std::string whole_failed;  // the final or the baseline arm could not run: nothing can be checked
  for (int r = 0; another_round(r) && whole_failed.empty(); ++r)
    whole_failed = run_round(arms_, r, 2, [&](const Config& c) { return t.window_of(c, false); },
                             [&](const Arm& arm) {
                               if (arm.name == "baseline") t.note_baseline("final", arm.windows.back());
                             }).fatal;
  spent_ = t.w_.now_s() - start;
  if (extra_from) t.res_.finals_extra_s += t.w_.now_s() - *extra_from;
  // Optional: paid only because the hard end could, not reserved (the extra rounds' windows are counted above).
  for (size_t i : unreserved_)
    for (size_t k = 0; k < arms_[i].windows.size() && k < size_t(t.o_.rounds); ++k) {
      const measure::Window& w = arms_[i].windows[k];
      t.res_.finals_extra_s += std::max(0.0, w.startup_s) + w.wall_s + std::max(0.0, w.one_time_s);
    }
  if (whole_failed.empty()) return true;
  t.res_.notes.push_back("the final alternation failed (" + whole_failed + "); falling back to the baseline");
  t.current_ = t.baseline_;
  if (af_) t.process_choice_.clear();
  std::erase_if(t.kept_, [&](const Kept& k) { return af_ || !t.process_knob(k.change.knob); });
  return false;
}

void InProcessFinal::check_each() {
  Tuner& t = t_;
  nf_ = t.floor();  // as the alternation left it: the rows recorded below pool into the tuner's own
  for (size_t j = 0; j < inproc_.size(); ++j) {
    const Kept& kept = t.kept_[inproc_[j]];
    const Change& c = kept.change;
    Trial row;
    row.phase = t.phase_;
    row.knob = c.knob;
    row.value = c.value;
    row.also = c.also;
    row.from = Tuner::value_in(t.baseline_, c.knob);
    row.reference = "final without it";
    if (!dependent_of_[j].empty()) {
      std::string deps;
      for (const auto& d : dependent_of_[j]) deps += (deps.empty() ? "" : ", ") + d;
      row.reference += " (and " + deps + ", which need it)";
    }
    row.window = t.pace_.window;
    row.seconds = spent_ / double(inproc_.size());
    if (!without(j).failed.empty()) {
      // Its evidence stays the trial that kept it.
      row.outcome = "unchecked";
      row.reason = "kept on trial " + std::to_string(kept.trial + 1) + ": its arm without it could not run (" +
                   without(j).failed + ")";
      unchecked_.push_back(Tuner::label(c));
      t.record(std::move(row));
      continue;
    }
    measure_pair(row, without(j), arms_[0], &nf_, t.o_.confidence);
    t.classify(row, true);
    if (row.accepted) {
      row.outcome = "held";
      row.reason = "held in the final alternation: " + row.reason;
    } else {
      row.outcome = "dropped";
      row.reason = "kept earlier (trial " + std::to_string(kept.trial + 1) +
                   "), did not hold in the final alternation: " + row.reason;
      dropped_.insert(inproc_[j]);
    }
    row.accepted = false;  // the screening trial holds the acceptance
    t.record(std::move(row));
  }
  // A dropped knob takes the kept knobs that need it along (prefetch without workers means nothing).
  for (size_t i = 0; i < t.kept_.size(); ++i) {
    const std::string need = depends_on(t.kept_[i].change.knob);
    if (need.empty() || dropped_.count(i)) continue;
    for (size_t d : std::set<size_t>(dropped_))
      if (t.kept_[d].change.knob == need) {
        dropped_.insert(i);
        t.res_.notes.push_back(Tuner::label(t.kept_[i].change) + " is dropped with " +
                               Tuner::label(t.kept_[d].change) + ", which it needs");
      }
  }
  if (!unchecked_.empty()) {
    std::string u;
    for (const auto& x : unchecked_) u += (u.empty() ? "" : ", ") + x;
    t.res_.notes.push_back("the final alternation could not check " + u +
                           " (an arm without it could not run, or would have recompiled past the budget): kept on "
                           "the screening's evidence");
  }
}

std::string InProcessFinal::names_of_dropped() const {
  std::string names;
  for (size_t i : dropped_) names += (names.empty() ? "" : ", ") + Tuner::label(t_.kept_[i].change);
  return names;
}

void InProcessFinal::mark_dropped_rows(const std::string& outcome, const std::string& why) {
  for (auto& row : t_.res_.trials)
    if (row.phase == "final" && row.outcome == "dropped" && row.reference.rfind("final without it", 0) == 0) {
      row.outcome = outcome;
      row.reason += why;
    }
}

void InProcessFinal::settle_dropped(Trial& head) {
  Tuner& t = t_;
  Config reduced = t.current_;
  for (size_t i : dropped_)
    for (const auto& [k, v] : t.kept_[i].change.delta) reduced[k] = t.baseline_.at(k);
  const Arm* same = nullptr;
  for (const auto& a : arms_)
    if (a.failed.empty() && a.config == reduced) same = &a;
  if (same) {
    paired(arms_[1], *same, head.a, head.b);
    t.current_ = reduced;
    return drop();
  }
  // What its arms' windows took in the alternation just run, where that is more: the baseline's and the
  // final's, and for the final without all of them (somewhere between the two) the baseline's or the slowest
  // arm without one of them. From the step times alone, a 120 s tune's check (a baseline 1.5x slower than
  // the final a window) took 14.4 s where 12.5 were held and ended at 126.3 s.
  double reduced_s = std::max(arm_window_s(arms_[0]), arm_window_s(arms_[1]));
  for (size_t j = 0; j < inproc_.size(); ++j)
    if (dropped_.count(inproc_[j])) reduced_s = std::max(reduced_s, arm_window_s(without(j)));
  const double measured_s = t.o_.rounds * (arm_window_s(arms_[1]) + arm_window_s(arms_[0]) + reduced_s);
  const double check_s = std::max(
      {t.budget_.alternation_s(3, t.o_.rounds, false), measured_s,
       t.alternation_estimate_s({{t.baseline_, t.baseline_step_s()}, {t.current_, t.pace_.sec_per_step},
                                 {reduced, t.pace_.sec_per_step}},
                                t.o_.rounds)});
  // With the end's margin, as the reserve has it: an estimate at the hard end's edge ran a 120 s tune to 126.4 s.
  if (dropped_.size() > 1 && !t.budget_.may_finish(t.elapsed(), kReserveMargin * check_s + fresh_reserve_)) {
    // No budget to measure them together: kept on the search's evidence rather than dropped unmeasured.
    t.res_.notes.push_back(names_of_dropped() +
                           " did not hold alone in the final alternation; the budget's end left no time to "
                           "measure them together (they may stand in for each other): kept on the search's evidence");
    mark_dropped_rows("unchecked", "; kept: not measured together with the others that did not hold alone (budget)");
    dropped_.clear();
    return;
  }
  if (reduced == t.baseline_ && dropped_.size() <= 1) {
    t.current_ = reduced;
    return drop();
  }
  // Two or more knobs that each did not hold alone may be substitutes (CUDA graphs and a multi-tensor
  // optimizer both remove the same launch cost: without either the step is no slower, without both it
  // is): the final without all of them is measured against the final before they go.
  std::vector<Arm> check = {{"baseline", t.baseline_, {}, {}, ""},
                            {"final", t.current_, {}, {}, ""},
                            {"reduced", reduced, {}, {}, ""}};
  if (reduced == t.baseline_) check.pop_back();
  t.progress(t.phase_, "the final without every knob that did not hold (" + std::to_string(dropped_.size()) + "), " +
                           std::to_string(t.o_.rounds) + " rounds");
  const double settle_from = t.w_.now_s();
  for (int r = 0; r < t.o_.rounds; ++r)
    (void)run_round(check, r, 0, [&](const Config& c) { return t.window_of(c, false); });
  // Conditional, not reserved: only a final in which two knobs fail alone asks for it (TuneResult).
  t.res_.finals_extra_s += t.w_.now_s() - settle_from;
  const Arm& without_all = check.size() > 2 ? check[2] : check[0];
  bool keep_them = false;
  if (check[1].failed.empty() && without_all.failed.empty() && dropped_.size() > 1) {
    Trial together;
    together.phase = t.phase_;
    together.reference = "final without all of them";
    together.window = t.pace_.window;
    together.value = names_of_dropped() + " together";
    measure_pair(together, without_all, check[1], &nf_, t.o_.confidence);
    t.classify(together, true);
    keep_them = together.accepted;
    together.accepted = false;
    together.outcome = keep_them ? "held" : "dropped";
    together.reason = (keep_them ? "each alone was redundant with the others, together they hold: "
                                 : "together they do not hold either: ") +
                      together.reason;
    t.record(std::move(together));
  }
  if (keep_them) {
    mark_dropped_rows("held", "; held together with the others that did not hold alone (see the next row)");
    dropped_.clear();
    return;
  }
  if (check[0].failed.empty() && without_all.failed.empty() && reduced != t.baseline_) {
    paired(check[0], without_all, head.a, head.b);
  } else {
    head.a.clear();
    head.b.clear();
  }
  t.current_ = reduced;
  drop();
}

// The dropped knobs leave the kept list (and the process choices, where a group measured them).
void InProcessFinal::drop() {
  Tuner& t = t_;
  for (size_t i : dropped_)
    for (const auto& [k, v] : t.kept_[i].change.delta) t.process_choice_.erase(k);
  std::vector<Kept> still;
  for (size_t i = 0; i < t.kept_.size(); ++i)
    if (!dropped_.count(i)) still.push_back(t.kept_[i]);
  t.kept_ = std::move(still);
}

void InProcessFinal::headline(Trial head) {
  Tuner& t = t_;
  head.rounds = static_cast<int>(head.a.size());
  if (t.current_ == t.baseline_) {
    t.res_.notes.push_back(
        "every kept knob was dropped in the final alternation: the final configuration is the baseline");
    return;
  }
  head.before = measure::pooled_throughput(head.a);
  head.after = measure::pooled_throughput(head.b);
  head.estimate = measure::paired_ratio(head.a, head.b, &nf_, t.o_.confidence);
  t.classify(head, true);
  head.accepted = false;
  const std::string where = af_ ? "each window " + t.w_.fresh_windows() : "in this process";
  head.value = "all kept knobs (" + where + ")";
  head.reason = "final vs baseline (" + where + "): " + head.reason;
  head.fresh_processes = af_;
  t.res_.speedup_fresh_processes = head.fresh_processes;
  t.res_.speedup_in_process = head.estimate;
  t.res_.baseline_throughput = head.before;
  t.res_.final_throughput = head.after;
  t.res_.speedup = head.estimate;
  t.finals_.in_process_gain = head.outcome == "gain";
  t.res_.confirmation = af_ ? "each window " + t.w_.fresh_windows() + " (the final alternation)"
                            : "in this process: the final alternation, against the A/A floor";
  t.record(std::move(head));
}

}  // namespace tb::engine::search
