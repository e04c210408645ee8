// The final alternation of the tuner's search (search.h): round-robin over the baseline, the final
// configuration and the final configuration without each kept knob (dozens of trials ran; one lucky window
// must not decide what the user keeps). A kept knob that does not hold is dropped, with what depends on it.
// A workload whose every window is a fresh process (a group) runs the process knobs in every window: there
// the final arm has them and each is checked like the others. Elsewhere the fresh-process final follows
// (search_fresh.cpp).
#include <cmath>
#include <limits>

#include "tuner/search/alternation.h"
#include "tuner/search/priority.h"
#include "tuner/search/search.h"

namespace tb::engine::search {


void Tuner::final_phase() {
  enter("final");
  record_untried();

  // A process left slower measures nothing more: what was kept before the suspect is confirmed in fresh
  // processes (search_fresh.cpp), or not at all.
  if (left_slower_at_) return;
  const bool af = all_fresh();
  std::vector<size_t> inproc;  // indices into kept_ of the knobs this alternation checks
  for (size_t i = 0; i < kept_.size(); ++i)
    if (af || !process_knob(kept_[i].knob)) inproc.push_back(i);
  const double minimum = budget_.alternation_s(final_arms(), o_.rounds, false);
  if (!budget_.may_finish(elapsed(), minimum))
    res_.notes.push_back("the final alternation ran past the budget (its first " + std::to_string(o_.rounds) +
                         " rounds are never skipped)");

  if (inproc.empty()) {
    // Nothing in-process to check: still measure the baseline at the end, for the drift check and so that
    // the baseline printed is a measurement of the same kind as the rest.
    progress(phase_, "the baseline at the end (" + std::to_string(o_.rounds) + " windows)");
    for (int r = 0; r < o_.rounds; ++r) {
      try {
        note_baseline("final", window_of(baseline_, false));
      } catch (const TrialFailure& f) {
        res_.notes.push_back(std::string("the baseline failed at the end: ") + f.what());
        break;
      }
    }
    return;
  }

  std::vector<Arm> arms;
  arms.push_back({"final", current_, {}, {}, ""});
  arms.push_back({"baseline", baseline_, {}, {}, ""});
  // "final without K": K back at the baseline's value, and with it every kept knob that only means something
  // while K is set (prefetch and persistent_workers without workers, non_blocking without pinned memory): an
  // arm the workload would refuse is not a configuration.
  std::vector<std::vector<std::string>> dependent_of(inproc.size());
  // Under torch.compile an arm without a kept amp or channels_last is a variant this process may not have
  // compiled: a recompile (~55 s on a GPU) on top of its windows. One the budget's hard end cannot pay for is
  // not run; that knob keeps its trial's evidence and says so (a simulated script tune kept compile at 72% of
  // its budget and its final, recompiling two arms, ended at 350 s of 300).
  const double compile_s = value_in(current_, "compile") == "on" ? extra_cost_s("compile", cuda_, false) : 0.0;
  double recompiles = 0;
  const double final_cost = final_s(o_.rounds) + fresh_reserve_s();
  if (inproc.size() > 1)  // with one kept knob, "final without it" is the baseline arm
    for (size_t j = 0; j < inproc.size(); ++j) {
      const Change& kc = kept_[inproc[j]];
      Config c = current_;
      for (const auto& [k, v] : kc.delta) c[k] = baseline_.at(k);
      std::string with_them;
      for (const auto& dep : dependents(kc.knob))
        if (c.count(dep) && c[dep] != baseline_.at(dep)) {
          c[dep] = baseline_.at(dep);
          dependent_of[j].push_back(dep);
          with_them += (with_them.empty() ? "" : ", ") + dep;
        }
      std::string skip;
      if (compile_s > 0 && (kc.knob == "amp" || kc.knob == "channels_last") &&
          !compiled_variants_.count(compile_variant(c))) {
        if (budget_.may_finish(elapsed(), final_cost + recompiles + compile_s)) recompiles += compile_s;
        else skip = "a recompile under torch.compile (~" + fmt(compile_s, 0) + " s) the budget left could not pay for";
      }
      arms.push_back({"without " + label(kc) + (with_them.empty() ? "" : " (and " + with_them + ")"), c, kc, {}, skip});
    }
  auto arm_of = [&](size_t j) -> const Arm& { return inproc.size() > 1 ? arms[2 + j] : arms[1]; };
  progress(phase_, "final alternation: " + std::to_string(arms.size()) + " configurations, " +
                       std::to_string(o_.rounds) + " rounds");
  const double start = w_.now_s();
  // More rounds while a kept knob is still undecided against its arm without it (its interval covers 1
  // although it measured faster) and the budget pays for a round with the fresh final still to come: a
  // loader-workers change on two cores swings short windows by 10-20%, and three rounds dropped a change that
  // screening measured at 1.28x [1.17, 1.40].
  auto undecided = [&] {
    const measure::NoiseFloor nf = floor();
    std::vector<measure::Window> a, b;
    for (size_t j = 0; j < inproc.size(); ++j) {
      if (!arm_of(j).failed.empty()) continue;
      paired(arm_of(j), arms[0], a, b);
      const auto e = measure::paired_ratio(a, b, &nf, o_.confidence);
      if (e.valid() && e.no_effect() && e.ratio > 1 + o_.min_gain) return true;
    }
    return false;
  };
  const double fresh_reserve = fresh_reserve_s();
  // A round costs at least what the last one took: its arms run at their own speeds, and an arm without a kept
  // change can be slower than the search measured that change (amp held 7.0x in a final where its trial had
  // measured 5.0x), where the budget's window cost is the recent, fast windows'.
  double last_round_s = 0, round_started = w_.now_s();
  auto round_s = [&] { return std::max(budget_.alternation_s(live_arms(arms), 1, false), last_round_s); };
  auto another_round = [&](int r) {
    if (r > 0) {
      last_round_s = w_.now_s() - round_started;
      round_started = w_.now_s();
    }
    // The first rounds are the final's minimum: they may run into the budget's margin (budget.h), and past
    // two rounds (an interval pooled with the noise floor) they stop at its hard end.
    if (r < o_.rounds) {
      if (r < 2 || budget_.may_finish(elapsed(), round_s() + fresh_reserve)) return true;
      res_.notes.push_back("the final alternation stopped after " + std::to_string(r) + " rounds at the budget's hard end");
      return false;
    }
    if (r >= o_.max_final_rounds || !undecided()) return false;
    if (!budget_.may_extend(elapsed(), round_s(), fresh_reserve)) return false;
    progress(phase_, "a kept change is still undecided after " + std::to_string(r) + " rounds: one more round");
    return true;
  };
  int rounds = 0;
  std::string whole_failed;  // the final or the baseline arm could not run: nothing can be checked
  const auto in_process = [&](const Config& c) { return window_of(c, false); };
  for (int r = 0; another_round(r) && whole_failed.empty(); ++r, rounds = r)
    whole_failed = run_round(arms, r, 2, in_process, [&](const Arm& arm) {
                     if (arm.name == "baseline") note_baseline("final", arm.windows.back());
                   }).fatal;
  const double spent = w_.now_s() - start;
  if (!whole_failed.empty()) {
    res_.notes.push_back("the final alternation failed (" + whole_failed + "); falling back to the baseline");
    current_ = baseline_;
    if (af) process_choice_.clear();
    for (size_t i = kept_.size(); i-- > 0;)
      if (af || !process_knob(kept_[i].knob)) {
        kept_.erase(kept_.begin() + long(i));
        kept_trial_.erase(kept_trial_.begin() + long(i));
        kept_ratio_.erase(kept_ratio_.begin() + long(i));
      }
    return;
  }

  // Each kept knob: final vs final without it, paired by round.
  const measure::NoiseFloor nf = floor();
  std::set<size_t> dropped;
  std::vector<std::string> unchecked;
  for (size_t j = 0; j < inproc.size(); ++j) {
    const Change& c = kept_[inproc[j]];
    const Arm& without = arm_of(j);
    Trial t;
    t.phase = phase_;
    t.knob = c.knob;
    t.value = c.value;
    t.also = c.also;
    t.from = value_in(baseline_, c.knob);
    t.reference = "final without it";
    if (!dependent_of[j].empty()) {
      std::string deps;
      for (const auto& d : dependent_of[j]) deps += (deps.empty() ? "" : ", ") + d;
      t.reference += " (and " + deps + ", which need it)";
    }
    t.window = window_;
    t.seconds = spent / double(inproc.size());
    if (!without.failed.empty()) {
      // Its evidence stays the trial that kept it.
      t.outcome = "unchecked";
      t.reason = "kept on trial " + std::to_string(kept_trial_[inproc[j]] + 1) + ": its arm without it could not run (" +
                 without.failed + ")";
      unchecked.push_back(label(c));
      record(std::move(t));
      continue;
    }
    measure_pair(t, without, arms[0], &nf, o_.confidence);
    classify(t, true);
    if (t.accepted) {
      t.outcome = "held";
      t.reason = "held in the final alternation: " + t.reason;
    } else {
      t.outcome = "dropped";
      t.reason = "kept earlier (trial " + std::to_string(kept_trial_[inproc[j]] + 1) +
                 "), did not hold in the final alternation: " + t.reason;
      dropped.insert(inproc[j]);
    }
    t.accepted = false;  // the screening trial holds the acceptance
    record(std::move(t));
  }
  // A dropped knob takes the kept knobs that need it along (prefetch without workers means nothing).
  for (size_t i = 0; i < kept_.size(); ++i) {
    const std::string need = depends_on(kept_[i].knob);
    if (need.empty() || dropped.count(i)) continue;
    for (size_t d : std::set<size_t>(dropped))
      if (kept_[d].knob == need) {
        dropped.insert(i);
        res_.notes.push_back(label(kept_[i]) + " is dropped with " + label(kept_[d]) + ", which it needs");
      }
  }
  if (!unchecked.empty()) {
    std::string u;
    for (const auto& x : unchecked) u += (u.empty() ? "" : ", ") + x;
    res_.notes.push_back("the final alternation could not check " + u + " (an arm without it could not run, or would have recompiled past the budget): kept on "
                         "the screening's evidence");
  }
  Trial head;
  head.phase = phase_;
  head.reference = "baseline";
  head.window = window_;
  paired(arms[1], arms[0], head.a, head.b);
  if (!dropped.empty()) {
    Config reduced = current_;
    for (size_t i : dropped)
      for (const auto& [k, v] : kept_[i].delta) reduced[k] = baseline_.at(k);
    const Arm* same = nullptr;
    for (const auto& a : arms)
      if (a.failed.empty() && a.config == reduced) same = &a;
    bool keep_them = false;
    if (same) {
      paired(arms[1], *same, head.a, head.b);
    } else if (dropped.size() > 1 &&
               !budget_.may_finish(elapsed(), budget_.alternation_s(3, o_.rounds, false) + fresh_reserve)) {
      // No budget to measure them together: kept on the search's evidence rather than dropped unmeasured.
      keep_them = true;
      std::string names;
      for (size_t i : dropped) names += (names.empty() ? "" : ", ") + label(kept_[i]);
      res_.notes.push_back(names + " did not hold alone in the final alternation; the budget's end left no time to "
                           "measure them together (they may stand in for each other): kept on the search's evidence");
      for (auto& t : res_.trials)
        if (t.phase == "final" && t.outcome == "dropped" && t.reference.rfind("final without it", 0) == 0) {
          t.outcome = "unchecked";
          t.reason += "; kept: not measured together with the others that did not hold alone (budget)";
        }
      dropped.clear();
    } else if (reduced != baseline_ || dropped.size() > 1) {
      // Two or more knobs that each did not hold alone may be substitutes (CUDA graphs and a multi-tensor
      // optimizer both remove the same launch cost: without either the step is no slower, without both it
      // is): the final without all of them is measured against the final before they go.
      std::vector<Arm> check = {{"baseline", baseline_, {}, {}, ""}, {"final", current_, {}, {}, ""}, {"reduced", reduced, {}, {}, ""}};
      if (reduced == baseline_) check.pop_back();
      progress(phase_, "the final without every knob that did not hold (" + std::to_string(dropped.size()) + "), " +
                           std::to_string(o_.rounds) + " rounds");
      for (int r = 0; r < o_.rounds; ++r) (void)run_round(check, r, 0, in_process);
      const Arm& without_all = check.size() > 2 ? check[2] : check[0];
      if (check[1].failed.empty() && without_all.failed.empty() && dropped.size() > 1) {
        Trial together;
        together.phase = phase_;
        together.reference = "final without all of them";
        together.window = window_;
        std::string names;
        for (size_t i : dropped) names += (names.empty() ? "" : ", ") + label(kept_[i]);
        together.value = names + " together";
        measure_pair(together, without_all, check[1], &nf, o_.confidence);
        classify(together, true);
        keep_them = together.accepted;
        together.accepted = false;
        together.outcome = keep_them ? "held" : "dropped";
        together.reason = (keep_them ? "each alone was redundant with the others, together they hold: "
                                     : "together they do not hold either: ") +
                          together.reason;
        record(std::move(together));
      }
      if (keep_them) {
        for (auto& t : res_.trials)
          if (t.phase == "final" && t.outcome == "dropped" && t.reference.rfind("final without it", 0) == 0) {
            t.outcome = "held";
            t.reason += "; held together with the others that did not hold alone (see the next row)";
          }
        dropped.clear();
      } else if (check[0].failed.empty() && without_all.failed.empty() && reduced != baseline_) {
        paired(check[0], without_all, head.a, head.b);
      } else {
        head.a.clear();
        head.b.clear();
      }
    }
    if (!keep_them) {
      current_ = reduced;
      for (size_t i : dropped)
        for (const auto& [k, v] : kept_[i].delta) process_choice_.erase(k);
      std::vector<Change> still;
      std::vector<size_t> still_trial;
      std::vector<double> still_ratio;
      for (size_t i = 0; i < kept_.size(); ++i)
        if (!dropped.count(i)) {
          still.push_back(kept_[i]);
          still_trial.push_back(kept_trial_[i]);
          still_ratio.push_back(kept_ratio_[i]);
        }
      kept_ = still;
      kept_trial_ = still_trial;
      kept_ratio_ = still_ratio;
    }
  }
  head.rounds = static_cast<int>(head.a.size());
  if (current_ == baseline_) {
    res_.notes.push_back("every kept knob was dropped in the final alternation: the final configuration is the baseline");
    return;
  }
  head.before = measure::pooled_throughput(head.a);
  head.after = measure::pooled_throughput(head.b);
  head.estimate = measure::paired_ratio(head.a, head.b, &nf, o_.confidence);
  classify(head, true);
  head.accepted = false;
  const std::string where = af ? "each window " + w_.fresh_windows() : "in this process";
  head.value = "all kept knobs (" + where + ")";
  head.reason = "final vs baseline (" + where + "): " + head.reason;
  head.fresh_processes = af;
  res_.speedup_fresh_processes = head.fresh_processes;
  res_.speedup_in_process = head.estimate;
  res_.baseline_throughput = head.before;
  res_.final_throughput = head.after;
  res_.speedup = head.estimate;
  in_process_gain_ = head.outcome == "gain";
  res_.confirmation = af ? "each window " + w_.fresh_windows() + " (the final alternation)"
                         : "in this process: the final alternation, against the A/A floor";
  record(std::move(head));
}

}  // namespace tb::engine::search
