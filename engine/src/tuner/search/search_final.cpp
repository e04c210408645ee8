// The end of the tuner's search (search.h): the final alternation that confirms the kept knobs, the
// fresh-process headline, and the summary (waterfall, baselines by phase, drift, noise).
#include <cmath>
#include <limits>

#include "tuner/search.h"

namespace tb::engine::search {

// The final alternation: round-robin over the baseline, the final configuration and the final
// configuration without each kept in-process knob (dozens of trials ran; one lucky window must not decide
// what the user keeps). Kept knobs that do not hold are dropped; then the headline is measured.
// A workload whose every window is a fresh process (a group) runs the process knobs in every window: there
// the final arm has them, and each is checked like the others. Elsewhere current_ has no process knobs
// (the in-process windows cannot change them) and the fresh-process headline measures them.
void Tuner::final_phase() {
  phase_ = "final";
  const bool all_fresh = !w_.fresh_windows().empty();
  auto final_arm = [&] { return all_fresh ? final_config() : current_; };
  std::vector<size_t> inproc;  // indices into kept_ of the knobs this alternation checks
  for (size_t i = 0; i < kept_.size(); ++i)
    if (all_fresh || !process_knob(kept_[i].knob)) inproc.push_back(i);
  if (left() < final_cost_s(0) * 0.8)
    res_.notes.push_back("the final alternation ran past the budget (it is never skipped)");

  if (!inproc.empty()) {
    struct Arm {
      std::string name;
      Config config;
      std::vector<measure::Window> windows;
    };
    std::vector<Arm> arms;
    arms.push_back({"final", final_arm(), {}});
    arms.push_back({"baseline", baseline_, {}});
    if (inproc.size() > 1)  // with one kept knob, "final without it" is the baseline arm
      for (size_t i : inproc) {
        Config c = final_arm();
        for (const auto& [k, v] : kept_[i].delta) c[k] = baseline_.at(k);
        arms.push_back({"without " + label(kept_[i]), c, {}});
      }
    progress(phase_, "final alternation: " + std::to_string(arms.size()) + " configurations, " +
                         std::to_string(o_.rounds) + " rounds");
    const double start = w_.now_s();
    bool failed = false;
    std::string failure;
    // More rounds while a kept knob is still undecided against its arm without it (its interval covers 1
    // although it measured faster) and the budget pays for a round: a loader-workers change on two cores
    // swings short windows by 10-20%, and three rounds dropped a change that screening measured at 1.28x
    // [1.17, 1.40]. A fresh-process headline's reserve stays, less the quarter of the budget a headline may
    // overrun by, which these rounds may take: when the change is then dropped the reserve goes unused, and
    // two tunes of one script disagreed on exactly that (one dropped workers=2 after 4 rounds, 1.074x
    // [0.969, 1.190], with 45% of its budget unspent; the other held it at 1.33x [1.05, 1.69]).
    // Two arms' windows paired by round (only rounds both completed).
    auto rounds_of = [&](const Arm& x, const Arm& y, std::vector<measure::Window>& a, std::vector<measure::Window>& b) {
      const size_t n = std::min(x.windows.size(), y.windows.size());
      a.assign(x.windows.begin(), x.windows.begin() + long(n));
      b.assign(y.windows.begin(), y.windows.begin() + long(n));
    };
    auto undecided = [&] {
      std::vector<measure::Window> a, b;
      for (size_t j = 0; j < inproc.size(); ++j) {
        rounds_of(inproc.size() > 1 ? arms[2 + j] : arms[1], arms[0], a, b);
        const auto e = measure::paired_ratio(a, b, &res_.noise_floor, o_.confidence);
        if (e.valid() && e.no_effect() && e.ratio > 1 + o_.min_gain) return true;
      }
      return false;
    };
    auto another_round = [&](int r) {
      if (r < o_.rounds) return true;
      if (r >= o_.max_final_rounds || !undecided()) return false;
      const double reserve = std::max(0.0, fresh_headline_cost_s() - 0.25 * o_.budget_s);
      if (left() - reserve < double(arms.size()) * window_cost_s()) return false;
      progress(phase_, "a kept change is still undecided after " + std::to_string(r) + " rounds: one more round");
      return true;
    };
    int rounds = 0;
    for (int r = 0; another_round(r) && !failed; ++r, rounds = r) {
      for (size_t j = 0; j < arms.size(); ++j) {
        Arm& arm = arms[(j + size_t(r)) % arms.size()];  // rotated: every arm takes every position
        try {
          arm.windows.push_back(window_of(arm.config, false));
          if (arm.name == "baseline") note_baseline("final", arm.windows.back());
        } catch (const TrialFailure& f) {
          failed = true;
          failure = arm.name + ": " + f.what();
          break;
        }
      }
    }
    const double spent = w_.now_s() - start;
    if (failed) {
      res_.notes.push_back("the final alternation failed (" + failure + "); falling back to the baseline");
      current_ = baseline_;
      if (all_fresh) process_choice_.clear();
      for (size_t i = kept_.size(); i-- > 0;)
        if (all_fresh || !process_knob(kept_[i].knob)) {
          kept_.erase(kept_.begin() + long(i));
          kept_trial_.erase(kept_trial_.begin() + long(i));
          kept_ratio_.erase(kept_ratio_.begin() + long(i));
        }
    } else {
      // Each kept knob: final vs final without it, paired by round.
      std::vector<size_t> dropped;
      for (size_t j = 0; j < inproc.size(); ++j) {
        const Change& c = kept_[inproc[j]];
        const Arm& without = inproc.size() > 1 ? arms[2 + j] : arms[1];
        Trial t;
        t.phase = phase_;
        t.knob = c.knob;
        t.value = c.value;
        t.also = c.also;
        t.from = value_in(baseline_, c.knob);
        t.reference = "final without it";
        t.window = window_;
        t.rounds = rounds;
        rounds_of(without, arms[0], t.a, t.b);
        t.before = measure::pooled_throughput(t.a);
        t.after = measure::pooled_throughput(t.b);
        t.estimate = measure::paired_ratio(t.a, t.b, &res_.noise_floor, o_.confidence);
        classify(t, true);
        t.seconds = spent / double(inproc.size());
        if (t.accepted) {
          t.outcome = "held";
          t.reason = "held in the final alternation: " + t.reason;
        } else {
          t.outcome = "dropped";
          t.reason = "kept earlier (trial " + std::to_string(kept_trial_[inproc[j]] + 1) +
                     "), did not hold in the final alternation: " + t.reason;
          dropped.push_back(inproc[j]);
        }
        t.accepted = false;  // the screening/accumulation trial holds the acceptance
        record(std::move(t));
      }
      Trial head;
      head.phase = phase_;
      head.value = current_label();
      head.reference = "baseline";
      head.window = window_;
      head.rounds = rounds;
      rounds_of(arms[1], arms[0], head.a, head.b);
      if (!dropped.empty()) {
        for (size_t i : dropped)
          for (const auto& [k, v] : kept_[i].delta) {
            current_[k] = baseline_.at(k);
            process_choice_.erase(k);
          }
        std::vector<Change> still;
        std::vector<size_t> still_trial;
        std::vector<double> still_ratio;
        for (size_t i = 0; i < kept_.size(); ++i)
          if (std::find(dropped.begin(), dropped.end(), i) == dropped.end()) {
            still.push_back(kept_[i]);
            still_trial.push_back(kept_trial_[i]);
            still_ratio.push_back(kept_ratio_[i]);
          }
        kept_ = still;
        kept_trial_ = still_trial;
        kept_ratio_ = still_ratio;
        head.value = current_label();
        // The arm that already measured the new final, if there is one; else measure it now.
        const Arm* same = nullptr;
        for (const auto& a : arms)
          if (a.config == final_arm()) same = &a;
        if (same) {
          rounds_of(arms[1], *same, head.a, head.b);
        } else if (final_arm() != baseline_) {
          Change all;
          all.delta = changed_delta(baseline_, final_arm());
          Trial again = trial(phase_, baseline_, "baseline", all, final_arm());
          head.a = again.a;
          head.b = again.b;
        }
      }
      if (final_arm() != baseline_) {
        head.before = measure::pooled_throughput(head.a);
        head.after = measure::pooled_throughput(head.b);
        head.estimate = measure::paired_ratio(head.a, head.b, &res_.noise_floor, o_.confidence);
        classify(head, true);
        head.accepted = false;
        const std::string where = w_.fresh_windows().empty() ? "in this process" : "each window " + w_.fresh_windows();
        head.value = "all kept knobs (" + where + ")";
        head.reason = "final vs baseline (" + where + "): " + head.reason;
        head.fresh_processes = !w_.fresh_windows().empty();
        res_.speedup_fresh_processes = head.fresh_processes;
        res_.speedup_in_process = head.estimate;
        res_.baseline_throughput = head.before;
        res_.final_throughput = head.after;
        res_.speedup = head.estimate;
        record(std::move(head));
      } else {
        res_.notes.push_back("every kept knob was dropped in the final alternation: the final configuration is the baseline");
      }
    }
  }

  if (inproc.empty()) {
    // Nothing in-process to check: still measure the baseline at the end, for the drift check and so
    // that the baseline printed is a measurement of the same kind as the rest.
    progress(phase_, "the baseline at the end (" + std::to_string(o_.rounds) + " windows)");
    for (int r = 0; r < o_.rounds; ++r) {
      try {
        note_baseline("final", window_of(baseline_, false));
      } catch (const TrialFailure& f) {
        res_.notes.push_back(std::string("the baseline failed at the end: ") + f.what());
        break;
      }
    }
  }

  const bool dropped = fresh_headline_phase();

  if (final_config() == baseline_) {
    if (!dropped) res_.notes.push_back("no change beat the baseline: the final configuration is the baseline");
    // The headline is the baseline as measured last (the final arm or the A/A), never the calibration.
    const auto& last = baseline_phase_.count("final") ? baseline_phase_["final"] : baseline_phase_["start"];
    res_.baseline_throughput = res_.final_throughput = measure::pooled_throughput(last);
    res_.speedup = measure::RatioInterval{};
    res_.speedup_fresh_processes = false;
  }
}

// The headline in fresh processes, when a process knob changed or the in-process windows ran under another
// allocator than the user's: what a user gets who starts the training with these settings, against the
// naive start. Where the kept knobs lose their gain under the user's allocator (a script's loader worker
// processes under glibc's defaults), the allocator the windows ran under is tried with them; where they are
// slower even so, they are dropped (returns true).
bool Tuner::fresh_headline_phase() {
  if (!fresh_headline()) {
    if (!no_fresh_processes_ && measured_under_other_allocator() && final_config() != baseline_)
      res_.notes.push_back("the headline was measured in this process, under " + w_.measurement_allocator());
    return false;
  }
  auto headline = [&](const Config& cand, const std::string& what) {
    Change all;
    all.delta = changed_delta(baseline_, cand);
    Trial t = trial(phase_, baseline_, "baseline", all, cand, /*fresh=*/true);
    t.value = what;
    t.accepted = false;
    return t;
  };
  auto take = [&](const Trial& t) {
    res_.speedup = t.estimate;
    res_.speedup_fresh_processes = true;
    res_.baseline_throughput = t.before;
    res_.final_throughput = t.after;
  };
  const bool had_process_knob = !process_choice_.empty();
  Trial t = headline(final_config(), "all kept knobs (fresh processes)");
  if (t.estimate.valid()) take(t);
  const bool lost = t.outcome != "gain";
  if (t.outcome == "failed" || t.outcome == "oom") {
    res_.notes.push_back("the final configuration failed in a fresh process (" + t.reason + ")" +
                         (had_process_knob ? "; the allocator is not kept" : ""));
    process_choice_.clear();
  }
  const std::string meas = w_.measurement_allocator();
  const std::string user = value_in(baseline_, "cpu_allocator");
  const std::string in_process = res_.speedup_in_process.valid() ? fmt(res_.speedup_in_process.ratio, 2) + "x" : "a gain";
  const bool slower = t.outcome == "slower";
  record(std::move(t));
  if (!lost || had_process_knob || !measured_under_other_allocator()) return false;
  // Faster in this process, not in a fresh one under the user's allocator: the allocator is part of the fix.
  const std::string why = "the kept knobs measured " + in_process + " in this process (under " + meas + ") but " +
                          res_.trials.back().reason + " in fresh processes under " + user;
  // Never recommend what a fresh start measured slower: back to the baseline, and say how to keep them.
  auto give_up = [&](const std::string& what) {
    if (!slower) {
      res_.notes.push_back(why + "; " + what);
      return false;
    }
    res_.notes.push_back(why + "; " + what + ". They are not kept: a training started with them runs slower " +
                         "(tune with cpu_allocator, or set it, to keep them)");
    current_ = baseline_;
    kept_.clear();
    kept_trial_.clear();
    kept_ratio_.clear();
    process_choice_.clear();
    return true;
  };
  if (!has_knob("cpu_allocator")) return give_up("cpu_allocator is not tuned here");
  // Part of the headline, so never skipped for the budget (as the final alternation): a live group's tune
  // found amp=bf16 1.34x under the pinned allocator and 0.54x under glibc's defaults, and without this trial
  // it could only say "not kept".
  if (left() < fresh_trial_cost_s())
    res_.notes.push_back("trying them with cpu_allocator=" + meas + " ran past the budget (a headline is never left half-measured)");
  Config with_alloc = final_config();
  with_alloc["cpu_allocator"] = meas;
  Trial u = headline(with_alloc, "all kept knobs + cpu_allocator=" + meas + " (fresh processes)");
  const bool held = u.outcome == "gain";
  const std::string u_reason = u.reason;
  if (held) {
    take(u);
    process_choice_["cpu_allocator"] = meas;
    kept_.insert(kept_.begin(), {{{"cpu_allocator", meas}}, "cpu_allocator", meas, ""});
    kept_trial_.insert(kept_trial_.begin(), res_.trials.size());
    kept_ratio_.insert(kept_ratio_.begin(), std::numeric_limits<double>::quiet_NaN());
    u.accepted = true;
    res_.notes.push_back(why + "; with cpu_allocator=" + meas + " they hold (" + u_reason + "): kept with them");
  }
  record(std::move(u));
  if (held) return false;
  return give_up("with cpu_allocator=" + meas + " too: " + u_reason);
}

void Tuner::summarize() {
  res_.final_config = final_config();
  // The sources a script reported while it ran (its DataLoader and forward lines, for the patch) arrive after
  // the description taken at the start.
  res_.environment = w_.describe();
  if (changed_knobs(baseline_, res_.final_config).empty()) res_.verdict = "none";
  else if (res_.speedup.valid() && !res_.speedup.no_effect() && res_.speedup.ratio > 1) res_.verdict = "faster";
  else {
    res_.verdict = "undecided";
    std::string in_process;
    if (res_.speedup_fresh_processes && res_.speedup_in_process.valid())
      in_process = "; in the tune's own process it measured " + fmt(res_.speedup_in_process.ratio, 2) + "x [" +
                   fmt(res_.speedup_in_process.lo, 2) + ", " + fmt(res_.speedup_in_process.hi, 2) + "] under " +
                   w_.measurement_allocator() + ", which a fresh start does not promise";
    res_.notes.push_back("could not decide: the headline's interval " + fmt(res_.speedup.lo, 2) + "-" +
                         fmt(res_.speedup.hi, 2) + " covers 1 (the machine was too noisy for this budget)" +
                         in_process + "; measure again with a larger --budget before relying on it");
  }
  // Waterfall: the headline's baseline times the accepted ratios of the knobs still kept, in order.
  double cum = 1;
  for (size_t i = 0; i < kept_.size(); ++i) {
    if (std::isfinite(kept_ratio_[i])) cum *= kept_ratio_[i];
    res_.waterfall.push_back({label(kept_[i]), res_.baseline_throughput * cum});
  }
  // Baselines by phase, and drift between the start and the end.
  for (const char* ph : {"start", "screen", "accumulate", "revisit", "final"}) {
    auto it = baseline_phase_.find(ph);
    if (it == baseline_phase_.end() || it->second.empty()) continue;
    TuneResult::PhaseBaseline b;
    b.phase = ph;
    b.throughput = measure::pooled_throughput(it->second);
    b.windows = static_cast<int>(it->second.size());
    double mid = 0;
    for (const auto& w : it->second) mid += w.mid_s();
    b.at_s = mid / b.windows;
    res_.baselines.push_back(b);
  }
  std::sort(res_.baseline_windows.begin(), res_.baseline_windows.end(),
            [](const measure::Window& a, const measure::Window& b) { return a.start_s < b.start_s; });
  res_.noise = measure::assess_noise(res_.baseline_windows, load_.stop());
  if (baseline_phase_.count("start") && baseline_phase_.count("final")) {
    // Beyond the noise = the interval excludes 1 and the move is larger than a trial could resolve.
    const auto d = measure::welch_ratio(baseline_phase_["start"], baseline_phase_["final"], o_.confidence);
    const double band = std::max(o_.min_gain, std::isfinite(res_.noise_band) ? res_.noise_band : 0.0);
    const std::string moved = "the baseline measured " + fmt(d.ratio, 3) + "x at the end of the tune against the start (" +
                              "95% interval " + fmt(d.lo, 3) + "-" + fmt(d.hi, 3) + ")";
    if (d.valid() && !d.no_effect() && std::fabs(d.ratio - 1) >= band)
      res_.drift_note = "the machine drifted: " + moved + "; ratios measured in alternation cancel a slow drift, but " +
                        "the absolute samples/s of different phases are not comparable";
    else if (d.valid())
      res_.notes.push_back("baseline agreement: " + moved + ", within the noise (±" + pct(band) + ")");
  }
  if (!res_.drift_note.empty()) res_.notes.push_back(res_.drift_note);
  res_.notes.push_back("noise: " + res_.noise.text);
}

}  // namespace tb::engine::search
