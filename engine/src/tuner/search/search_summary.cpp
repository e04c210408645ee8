// The summary of the tuner's search (search.h): the verdict, the waterfall, the baselines by phase and the
// drift between them, the noise, and why the search ended.
#include <cmath>
#include <limits>

#include "tuner/search/search.h"

namespace tb::engine::search {

void Tuner::summarize() {
  res_.final_config = final_config();
  // The sources a script reported while it ran (its DataLoader and forward lines, for the patch) arrive after
  // the description taken at the start.
  res_.environment = w_.describe();
  if (!pace_.cannot_fit.empty()) {  // nothing was measured but the calibration, which is for the plan only
    res_.verdict = "none";
    res_.ended = pace_.cannot_fit;
    return;
  }
  if (o_.plan_only) {  // the calibration and the noise floor were measured to price the pass, nothing more
    res_.verdict = "none";
    res_.baseline_throughput = res_.final_throughput = measure::pooled_throughput(baseline_phase_["start"]);
    account();
    res_.ended = "priced one pass and stopped (plan only): the calibration and the noise floor were measured, "
                 "nothing was tried";
    return;
  }
  verdict();
  say_recipe_changes();
  // Waterfall, baselines by phase, noise and drift.
  account();
  why_ended();
}

// The verdict is only what the headline confirms: faster, none, or undecided (then nothing is kept).
void Tuner::verdict() {
  if (final_config() == baseline_) {
    // The headline is the baseline as measured last (the final arm or the A/A), never the calibration.
    if (std::none_of(res_.notes.begin(), res_.notes.end(),
                     [](const std::string& n) { return n.find("They are not kept") != std::string::npos ||
                                                       n.find("every kept knob was dropped") != std::string::npos; }))
      res_.notes.push_back("no change beat the baseline: the final configuration is the baseline");
    // A final that measured no baseline (a process left slower: nothing more is measured in it) leaves the A/A's,
    // taken before the suspect trial; an empty one printed "baseline nan samples/s".
    const bool final_measured = baseline_phase_.count("final") && !baseline_phase_["final"].empty();
    const auto& last = final_measured ? baseline_phase_["final"] : baseline_phase_["start"];
    res_.baseline_throughput = res_.final_throughput = measure::pooled_throughput(last);
    res_.speedup = measure::RatioInterval{};
    res_.speedup_fresh_processes = false;
  }
  if (changed_knobs(baseline_, res_.final_config).empty()) res_.verdict = "none";
  else if (res_.speedup.valid() && !res_.speedup.no_effect() && res_.speedup.ratio > 1) res_.verdict = "faster";
  else {
    // A result is only what the headline confirms: an undecided headline keeps nothing. A script's tune kept
    // intra_op_threads=1 and wrote 12.82x into the patch beside a fresh-process headline of 1.07x [0.79, 1.46];
    // applied, the plain script was not faster.
    res_.verdict = "undecided";
    res_.unconfirmed_config = res_.final_config;
    res_.final_config = baseline_;
    std::string changes;
    for (const auto& k : changed_knobs(baseline_, res_.unconfirmed_config))
      changes += (changes.empty() ? "" : ", ") + k + "=" + res_.unconfirmed_config.at(k);
    std::string in_process;
    if (res_.speedup_fresh_processes && res_.speedup_in_process.valid())
      in_process = "; in the tune's own process they measured " + fmt(res_.speedup_in_process.ratio, 2) + "x [" +
                   fmt(res_.speedup_in_process.lo, 2) + ", " + fmt(res_.speedup_in_process.hi, 2) + "] under " +
                   w_.measurement_allocator() + ", which a fresh start does not promise";
    const std::string measured =
        res_.speedup.valid() ? " measured " + fmt(res_.speedup.ratio, 2) + "x [" + fmt(res_.speedup.lo, 2) + ", " +
                                   fmt(res_.speedup.hi, 2) + "] against the baseline" +
                                   (res_.speedup_fresh_processes ? " in fresh processes" : "") +
                                   ", an interval that covers 1"
                             : " measured no pair against the baseline at the end";
    res_.notes.push_back("could not decide: " + changes + measured + in_process +
                         "; nothing is kept (not confirmed): measure again with a larger --budget");
  }
  // A headline that measured no pair (the budget's end, or a process left slower whose fresh confirmation ran
  // out of time) leaves the baseline as it was measured last: a busy machine's tune printed "baseline nan".
  if (!(res_.baseline_throughput > 0)) {
    for (const char* ph : {"final", "deferred", "revisit", "screen", "start"}) {
      const auto it = baseline_phase_.find(ph);
      if (it == baseline_phase_.end() || it->second.empty()) continue;
      res_.baseline_throughput = measure::pooled_throughput(it->second);
      break;
    }
    if (res_.final_config == baseline_) res_.final_throughput = res_.baseline_throughput;
  }
}

void Tuner::say_recipe_changes() {
  // A bigger batch (or accumulation) is faster per sample and a different recipe: said where it is kept.
  // The speed-up is then said with and without it: the final alternation measured the final against the final
  // without each kept change, in the same windows as the headline.
  for (const auto& facts : knob_facts()) {
    if (!facts.recipe) continue;
    const std::string& k = facts.id;
    if (value_in(res_.final_config, k) == value_in(baseline_, k) || value_in(res_.final_config, k).empty()) continue;
    std::string line = k + "=" + value_in(res_.final_config, k) + " changes the training recipe (from " +
                       value_in(baseline_, k) + "): fewer updates per epoch at the same learning rate; the speed-up is " +
                       "in samples/s, not in time to the same accuracy: scale the learning rate (e.g. linearly with " +
                       "the batch, or by its square root) and check the loss curve";
    const Trial* own = nullptr;
    // Kept inside a pair (a bigger batch that paid only with another worker), its arm is without both: the
    // figure is then theirs together, and says so.
    std::string with_other;
    for (const auto& t : res_.trials) {
      if (t.phase != "final" || !t.estimate.valid()) continue;
      if (t.knob == k) {
        own = &t;
        with_other.clear();
      } else if ((" + " + t.also + " + ").find(" + " + k + "=") != std::string::npos) {
        own = &t;
        with_other = t.knob + "=" + t.value;
        std::string rest = t.also;
        for (size_t at = 0; at < rest.size();) {
          const size_t end = rest.find(" + ", at);
          const std::string part = rest.substr(at, end == std::string::npos ? std::string::npos : end - at);
          if (part.rfind(k + "=", 0) != 0) with_other += " + " + part;
          at = end == std::string::npos ? rest.size() : end + 3;
        }
      }
    }
    const bool alone = changed_knobs(baseline_, res_.final_config).size() == 1;
    // The arm without it ran with every knob kept at the time: one the final then dropped (no effect beside
    // the bigger batch: CUDA graphs once the launches no longer bound the step) was in it, and the figure
    // without the recipe change is with that knob, said (without it the step may be bound where it was).
    std::string dropped;
    for (const auto& t : res_.trials)
      if (t.phase == "final" && !t.knob.empty() && t.outcome == "dropped")
        dropped += (dropped.empty() ? "" : ", ") + t.knob + "=" + t.value;
    if (res_.speedup.valid() && (own || alone)) {
      const double with_it = own ? own->estimate.ratio : res_.speedup.ratio;
      const std::string them = with_other.empty() ? "it" : "them";
      line += "; of the " + fmt(res_.speedup.ratio, 2) + "x it is " + fmt(with_it, 2) + "x" +
              (own ? " [" + fmt(own->estimate.lo, 2) + ", " + fmt(own->estimate.hi, 2) + "]" +
                         (with_other.empty() ? " (the final with and without it)"
                                             : " together with " + with_other +
                                                   " (kept as a pair: the final with and without both)")
                   : " (the only change kept)") +
              ": without " + them + " ~" + fmt(res_.speedup.ratio / with_it, 2) + "x at the baseline's recipe" +
              (own && !dropped.empty() ? " with " + dropped + " (in the final alternation's arms; dropped beside it)" : "");
    } else {
      line += "; the speed-up without it was not measured";
    }
    res_.recipe_changes.push_back(line);
    res_.notes.push_back(line);
  }
}

void Tuner::account() {
  // Waterfall: the headline's baseline times the accepted ratios of the knobs still kept, in the order they
  // were kept (process knobs last: they were measured on top of the others).
  // (None when nothing is kept: an unconfirmed change draws no step of it.)
  double cum = 1;
  for (size_t i = 0; res_.verdict != "undecided" && i < kept_.size(); ++i) {
    if (std::isfinite(kept_[i].ratio)) cum *= kept_[i].ratio;
    res_.waterfall.push_back({label(kept_[i].change), res_.baseline_throughput * cum});
  }
  // Baselines by phase, and drift between the start and the end.
  for (const char* ph : {"start", "screen", "revisit", "deferred", "final"}) {
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
  // A simulated machine has no load of its own: the host's (its load average, its cores) is not its.
  res_.noise = measure::assess_noise(res_.baseline_windows,
                                     res_.environment.contains("simulation") ? measure::SystemLoad{} : load_.stop());
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

// Why the tune ended, in what really happened.
void Tuner::why_ended() {
  // Skips that a later turn made good are not skips: a knob deferred or waiting for workers that was tried.
  std::set<std::string> tried_knobs;
  for (const auto& t : res_.trials)
    if (!t.knob.empty()) tried_knobs.insert(t.knob);
  res_.skipped.erase(std::remove_if(res_.skipped.begin(), res_.skipped.end(),
                                    [&](const SkippedTrial& s) {
                                      return tried_knobs.count(s.knob) && s.value.empty() &&
                                             s.reason.find("only matters with") != std::string::npos;
                                    }),
                     res_.skipped.end());
  // Why it ended, in what really happened.
  size_t budget_skips = 0, process_skips = 0;
  for (const auto& s : res_.skipped)
    if (s.reason.rfind("budget", 0) == 0) (process_knob(s.knob) && !all_fresh() ? process_skips : budget_skips)++;
  const auto no_fresh = std::count_if(res_.skipped.begin(), res_.skipped.end(),
                                      [](const SkippedTrial& s) { return s.reason.rfind(kNoFreshFinal, 0) == 0; });
  // The budget's own figures: the cheapest knob not tried, what it needed, and what was left when it came up.
  const SkippedTrial* cheapest = nullptr;
  for (const auto& s : res_.skipped)
    if (s.reason.rfind("budget", 0) == 0 && std::isfinite(s.need_s) && (!cheapest || s.need_s < cheapest->need_s))
      cheapest = &s;
  std::string end = budget_skips == 0
                        ? "every applicable knob was tried" + std::string(process_skips || no_fresh ? " in this process" : "") + " (" + std::to_string(res_.trials.size()) + " trials)"
                        : "the budget ran out with " + std::to_string(budget_skips) + " knob value(s) not tried" +
                              (cheapest ? " (the cheapest, " + label(cheapest->knob, cheapest->value) + ", needed ~" +
                                              fmt(cheapest->need_s, 0) + " s when " + fmt(cheapest->left_s, 0) +
                                              " s were left and the end of the tune still had to run)"
                                        : std::string()) +
                              "; listed as skipped, with what they needed";
  const auto leftover = std::count_if(res_.trials.begin(), res_.trials.end(),
                                      [](const Trial& t) { return t.phase == "leftover"; });
  if (leftover > 0)
    end += "; " + std::to_string(leftover) + " more measured on top of the final in the time the finals left " +
           "(listed after them, not kept: the headline was measured without them)";
  if (process_skips > 0)
    end += "; " + std::to_string(process_skips) + " process knob(s) not measured: they need fresh processes, which "
           "the budget left could not pay for (listed as skipped)";
  if (no_fresh > 0)
    end += "; " + std::to_string(no_fresh) + " process knob(s) not measured: the fresh-process final they ride on did "
           "not run (listed as skipped, with why)";
  const auto far = std::count_if(res_.skipped.begin(), res_.skipped.end(),
                                 [](const SkippedTrial& s) { return s.reason.rfind("out of reach", 0) == 0; });
  if (far > 0)
    end += "; " + std::to_string(far) + " process knob(s) out of reach: fresh pairs here cannot resolve what they may "
           "give (listed as skipped, with the pairs that would)";
  // A compile given up at its deadline (search_trial.cpp) was tried and measured nothing: said, not hidden in a row.
  for (const auto& t : res_.trials)
    if (t.reason.rfind("given up: still compiling after ", 0) == 0)
      end += "; " + label(t.knob, t.value) + " measured nothing: given up " +
             t.reason.substr(std::string("given up: ").size(), t.reason.find(" (~") - std::string("given up: ").size()) +
             ", when the rest of the tune had to start (listed with the trials)";
  bool final_failed = false, dropped_all = false, not_kept = false;
  for (const auto& n : res_.notes) {
    final_failed |= n.find("the final alternation failed") != std::string::npos;
    dropped_all |= n.find("every kept knob was dropped") != std::string::npos;
    not_kept |= n.find("They are not kept") != std::string::npos;
  }
  // On a machine this noisy the honest answer is the noise, said first, not the budget or a verdict.
  if (std::isfinite(res_.noise_band) && res_.noise_band > kTooNoisyBand)
    end = "too noisy to tune here: one trial resolves only changes beyond ±" + pct(res_.noise_band, 0) +
          " (the A/A pairs of the baseline); " + end;
  if (final_failed) end += "; the final alternation failed, so nothing is recommended";
  else if (dropped_all) end += "; the final alternation dropped every kept knob";
  else if (not_kept) end += "; the kept knobs ran slower in a fresh start, so nothing is recommended";
  else if (res_.verdict == "faster") end += "; the final alternation confirmed the result";
  else if (res_.verdict == "undecided") end += "; the headline could not be decided, so nothing is kept";
  else end += "; nothing beat the baseline";
  res_.ended = end;
}

}  // namespace tb::engine::search
