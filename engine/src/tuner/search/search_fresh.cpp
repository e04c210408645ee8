// The fresh-process final of the tuner's search (search.h): what a user who starts the training gets.
//
// One alternation of fresh processes answers two questions at once. Its arms: the baseline as the user starts
// it, the final configuration, and the final configuration with each process knob (KnobInfo::process_scope:
// cpu_allocator, cudnn_benchmark, ranks; they cannot be switched back and forth in a running process, so they
// are measured here, on top of every in-process winner, where they can act). A process knob is kept when its
// arm beats the final arm; the headline is the baseline against the best arm. A separate trial per process
// knob, as before, measured it against the naive baseline (where a loader-bound step hides cuDNN's autotuner)
// and paid the start-ups twice: on an H100 a fresh ResNet-50 process takes ~15 s before its first step, and
// three pairs of them took a third of a 255 s budget before any other knob had a turn.
//
// The headline arms are reserved from the first kept change (budget.h); process-knob arms join only when the
// budget still pays for them. Where the kept knobs lose their gain under the user's allocator (a script's
// loader worker processes under glibc's defaults) the allocator the in-process windows ran under is the
// cpu_allocator arm, and it is kept with them when it is what makes them pay; where every arm is slower than
// the baseline, nothing is recommended.
#include <cmath>
#include <limits>

#include "tuner/search/alternation.h"
#include "tuner/search/search.h"

namespace tb::engine::search {


void Tuner::fresh_final() {
  if (all_fresh()) return;  // every window was a fresh process: the final alternation was already this
  enter("fresh final");
  // The process knobs' candidate values.
  std::vector<Change> candidates;
  for (const auto& id : order_) {
    const auto& k = knobs_[id];
    if (!k.info.process_scope || !eligible(k, true)) continue;
    for (const auto& v : k.applicability.unavailable_values)
      res_.skipped.push_back({id, v, k.applicability.reason.empty() ? "unavailable here" : k.applicability.reason});
    if (no_fresh_processes_) {
      res_.skipped.push_back({id, "", "takes effect at process start and this workload cannot start processes"});
      continue;
    }
    if (auto why = not_worth(k.info, current_)) {
      res_.skipped.push_back({id, "", *why});
      continue;
    }
    // The allocator the in-process windows ran under is the one the kept knobs were measured with.
    std::string v = k.info.recommended_value;
    if (id == "cpu_allocator" && measured_under_other_allocator()) v = w_.measurement_allocator();
    const auto& bad = k.applicability.unavailable_values;
    if (v.empty() || v == value_in(baseline_, id) || std::find(bad.begin(), bad.end(), v) != bad.end()) {
      res_.skipped.push_back({id, "", "the recommended value is the baseline's"});
      continue;
    }
    candidates.push_back({{{id, v}}, id, v, ""});
  }
  const bool need = fresh_headline_needed();
  if (!need && candidates.empty()) return;

  std::vector<Arm> arms;
  arms.push_back({"baseline", baseline_, {}, {}, ""});
  const bool has_final = current_ != baseline_;
  if (has_final) arms.push_back({"final", current_, {}, {}, ""});
  const size_t ref = has_final ? 1 : 0;  // what a process knob is measured on top of
  // The headline's rounds: as many as a fresh pair's noise needs to decide the gain this process measured (a
  // demo's 1.33x took 3 rounds of 4 arms, 58% of its budget, and ended 1.18x [0.84, 1.64], undecided).
  const double gain = gain_to_confirm();
  const int planned = need && has_final ? fresh_rounds() : o_.rounds;
  int rounds_min = std::max(o_.rounds, planned);
  // Under torch.compile every fresh process of a compiled arm compiles again (Inductor's cache is the
  // process's): a random world's fresh final of 2 rounds took 165 s where its windows made ~50, and the tune
  // ended at 340 s of 300. Every arm but the baseline carries the final configuration's compile.
  const double compile_s = has_final && value_in(current_, "compile") == "on" ? extra_cost_s("compile", cuda_, false) : 0.0;
  auto compiles_s = [&](int n_arms, int rounds) { return compile_s * std::max(0, n_arms - 1) * rounds; };
  auto fresh_cost = [&](int n_arms, int rounds) { return budget_.alternation_s(n_arms, rounds, true) + compiles_s(n_arms, rounds); };
  double base_cost = fresh_cost(int(arms.size()), rounds_min);
  const std::string meas = w_.measurement_allocator();
  const std::string user_alloc = value_in(baseline_, "cpu_allocator");
  auto in_process_headline = [&](const std::string& why) {
    res_.notes.push_back(why + ": the headline is this process's final alternation (against the A/A floor, under " +
                         meas + "); a fresh start under " + user_alloc + " was not measured");
    res_.confirmation = "in this process: the final alternation, against the A/A floor (" + why + ")";
    for (const auto& c : candidates)
      res_.skipped.push_back({c.knob, c.value,
                              "budget: takes effect at process start, and the fresh-process final did not run (" + why + ")",
                              std::max(0.0, left()), base_cost});
  };
  if (need && has_final && planned == 0 && !(gain > 1 + o_.min_gain)) {
    in_process_headline("the final alternation measured " + fmt(gain, 2) + "x: no gain for fresh processes to confirm");
    return;
  }
  if (need && has_final && planned == 0) {
    in_process_headline("fresh processes cannot decide " + fmt(gain, 2) + "x here: a fresh pair varies by ±" +
                        pct(fresh_sd(), 0) + (std::isfinite(fresh_sd_measured_) ? "" : " (this process's floor x1.8)") +
                        ", more than " + std::to_string(o_.max_fresh_rounds) + " pairs would be needed");
    return;
  }
  // Planned (reserved from the first kept change) it may use the budget's margin; unplanned it runs when what
  // is left pays for it (the search ended early).
  auto affordable = [&](double cost) {
    return fresh_final_planned() ? budget_.may_finish(elapsed(), cost) : budget_.may_extend(elapsed(), cost);
  };
  // Fewer rounds than planned, when no fewer than the minimum, rather than none: nothing else is left to spend
  // the time on (a simulated tune at 17% per pair planned 5 rounds, had room for 4 and left 156 s unused).
  if (need && has_final && !affordable(base_cost)) {
    int fit = rounds_min;
    while (fit > o_.rounds && !affordable(fresh_cost(int(arms.size()), fit))) --fit;
    if (fit < rounds_min && affordable(fresh_cost(int(arms.size()), fit))) {
      res_.notes.push_back("the fresh-process final was planned at " + std::to_string(rounds_min) + " rounds for " +
                           fmt(gain, 2) + "x and " + std::to_string(fit) + " fit in what was left: it may end undecided");
      rounds_min = fit;
      base_cost = fresh_cost(int(arms.size()), fit);
    }
  }
  if (need && !affordable(base_cost)) {
    in_process_headline("a fresh-process check of " + fmt(gain, 2) + "x needs ~" + fmt(base_cost, 0) + " s here (" +
                        std::to_string(rounds_min) + " rounds of a baseline and a final process, ~" +
                        fmt(budget_.fresh_window_s(), 0) + " s each" +
                        (compile_s > 0 ? ", the final's with a ~" + fmt(compile_s, 0) + " s compile" : std::string()) +
                        ") and " + fmt(std::max(0.0, left()), 0) +
                        " s were left; give at least " +
                        fmt(std::max(base_cost / o_.max_fresh_share, elapsed() + base_cost), 0) + " s for one");
    return;
  }
  // Process-knob arms, most likely win first, while the alternation stays within the budget. The allocator the
  // in-process windows ran under comes first when it differs from the user's: without it a headline that
  // loses in a fresh start cannot say whether the allocator is what the kept knobs need. Until a fresh
  // process has been measured here its cost is the workload's own figure, or a guess when it has none: then a
  // quarter as much again is held back.
  std::vector<std::string> ids;
  for (const auto& c : candidates) ids.push_back(c.knob);
  ids = by_priority(ids);
  if (measured_under_other_allocator())
    std::stable_partition(ids.begin(), ids.end(), [](const std::string& id) { return id == "cpu_allocator"; });
  const double guess = budget_.fresh_measured() || w_.start_s() > 0 ? 1.0 : kUnmeasuredFreshGuess;
  for (const auto& id : ids) {
    const Change& c = *std::find_if(candidates.begin(), candidates.end(), [&](const Change& x) { return x.knob == id; });
    const double cost = (guess * budget_.alternation_s(int(arms.size()) + 1, rounds_min, true) + compiles_s(int(arms.size()) + 1, rounds_min));
    // Without a headline to measure, the two arms a process knob needs are its own cost.
    if (budget_.may_extend(elapsed(), cost) || (arms.size() == 1 && budget_.may_finish(elapsed(), cost))) {
      arms.push_back({"+ " + label(c), with(arms[ref].config, c.delta), c, {}, ""});
    } else {
      res_.skipped.push_back({c.knob, c.value,
                              "budget: takes effect at process start; its arm in the fresh-process final needs ~" +
                                  fmt((guess * budget_.alternation_s(1, rounds_min, true) + compile_s * rounds_min), 0) + " s (" +
                                  std::to_string(rounds_min) + " processes of ~" + fmt(guess * budget_.fresh_window_s(), 0) +
                                  " s) and " +
                                  fmt(std::max(0.0, left() - (guess * budget_.alternation_s(int(arms.size()), rounds_min, true) + compiles_s(int(arms.size()), rounds_min))), 0) +
                                  " s are left beside the arms before it",
                              std::max(0.0, left()), cost});
      progress(phase_, "skipped " + label(c) + " (budget)");
    }
  }
  // Nothing to measure: no headline needed and no process knob affordable.
  if (arms.size() < 2 || (!need && arms.size() == (has_final ? 2u : 1u))) return;

  std::string names;
  for (const auto& a : arms) names += (names.empty() ? "" : ", ") + a.name;
  progress(phase_, "fresh processes: " + names + ", " + std::to_string(rounds_min) + " rounds" +
                       (rounds_min > o_.rounds ? " (what a fresh pair's ±" + pct(fresh_sd(), 0) + " needs to decide " +
                                                     fmt(gain, 2) + "x)"
                                               : std::string()));
  const double start = w_.now_s();
  // More rounds while a question is still open (its interval covers 1 and a gain, and is wider than +-5%) and
  // the budget pays for a round: process-to-process noise of +-10% needs 6-8 pairs to decide.
  auto open = [&] {
    std::vector<measure::Window> a, b;
    auto undecided = [&](const Arm& x, const Arm& y) {
      paired(x, y, a, b);
      const auto e = measure::paired_ratio(a, b, nullptr, o_.confidence);
      return !e.valid() || !(e.lo > 1 || e.hi < 1 + o_.min_gain || e.hi - e.lo < 0.10);
    };
    for (size_t j = 1; j < arms.size(); ++j) {
      if (!arms[j].failed.empty()) continue;
      // Each arm against the baseline (a headline it may become), each process knob against the final.
      if (undecided(arms[0], arms[j])) return true;
      if (j != ref && ref != 0 && undecided(arms[ref], arms[j])) return true;
    }
    return false;
  };
  // The spread these processes show, pooled with the prior (worth two pairs): three pairs alone misjudge it.
  const double prior_sd = fresh_sd();
  auto learn_sd = [&] {
    const auto nf = measure::noise_floor(arms[0].windows, arms[ref].windows);
    if (nf.valid()) fresh_sd_measured_ = std::sqrt((2 * prior_sd * prior_sd + nf.df * nf.sd_log * nf.sd_log) / (2 + nf.df));
  };
  int rounds = 0;
  std::string fatal, gave_up;
  for (int r = 0; fatal.empty(); ++r) {
    if (r >= 2 && r < rounds_min && !budget_.may_finish(elapsed(), fresh_cost(live_arms(arms), 1))) {
      res_.notes.push_back("the fresh-process final stopped after " + std::to_string(r) +
                           " rounds at the budget's hard end (a fresh process took ~" + fmt(budget_.fresh_window_s(), 0) +
                           " s here)");
      break;
    }
    if (r >= o_.rounds) {
      if (!open()) break;  // decided: the planned rounds were a plan, not a quota
      if (need && has_final) {
        // Still open: can the rounds the measured spread needs still run? If not, stop now rather than spend
        // the rest of the budget on an undecided answer.
        learn_sd();
        const int n = fresh_pairs_for(gain, fresh_sd());
        if (n == 0 || (n > r && !budget_.may_finish(elapsed(), fresh_cost(live_arms(arms), n - r)))) {
          gave_up = "after " + std::to_string(r) + " rounds a fresh pair varied by ±" + pct(fresh_sd(), 0) + ": " +
                    (n == 0 ? "more than " + std::to_string(o_.max_fresh_rounds) + " pairs"
                            : std::to_string(n) + " pairs (~" + fmt(fresh_cost(live_arms(arms), n - r), 0) +
                                  " s more)") +
                    " would be needed to decide " + fmt(gain, 2) + "x";
          break;
        }
      }
      if (r >= rounds_min) {
        if (r >= o_.max_fresh_rounds) break;
        if (!budget_.may_extend(elapsed(), fresh_cost(live_arms(arms), 1))) break;
        progress(phase_, "undecided after " + std::to_string(r) + " rounds of fresh processes: one more round");
      }
    }
    const RoundEnd end = run_round(arms, r, has_final ? 2 : 1, [&](const Config& c) { return window_of(c, true); },
                                   nullptr, [](const std::string& why) {
                                     return why.find("cannot start fresh processes") != std::string::npos;
                                   });
    if (end.stop_all) no_fresh_processes_ = true;
    fatal = end.fatal;
    rounds = r + 1;
  }
  if (no_fresh_processes_) {
    for (size_t j = 1; j < arms.size(); ++j)
      if (!arms[j].change.knob.empty())
        res_.skipped.push_back({arms[j].change.knob, "", "takes effect at process start and this workload cannot start processes"});
    return;
  }
  const double spent = w_.now_s() - start;
  if (!fatal.empty()) {
    res_.notes.push_back("the final configuration failed in a fresh process (" + fatal + "); the headline is this process's");
    return;
  }

  // Each process knob: its arm against the final's.
  std::optional<size_t> chosen;
  std::vector<std::string> also_paid;
  for (size_t j = 0; j < arms.size(); ++j) {
    if (arms[j].change.knob.empty()) continue;
    const Change& c = arms[j].change;
    Trial t;
    t.phase = "process";
    t.knob = c.knob;
    t.value = c.value;
    t.from = value_in(baseline_, c.knob);
    t.reference = has_final ? "final (fresh processes)" : "baseline (fresh processes)";
    t.fresh_processes = true;
    t.window = fresh_window();
    t.seconds = spent / double(arms.size());
    if (!arms[j].failed.empty()) {
      t.outcome = "failed";
      t.reason = "could not run: " + arms[j].failed;
      record(std::move(t));
      continue;
    }
    measure_pair(t, arms[ref], arms[j], nullptr, o_.confidence);
    classify(t, false);
    if (t.accepted) {
      if (!chosen || t.estimate.ratio > res_.trials[*chosen].estimate.ratio) {
        if (chosen) also_paid.push_back(label(res_.trials[*chosen].knob, res_.trials[*chosen].value));
        chosen = res_.trials.size();
      } else {
        also_paid.push_back(label(c));
      }
    }
    record(std::move(t));
  }
  if (!also_paid.empty()) {
    std::string s;
    for (const auto& x : also_paid) s += (s.empty() ? "" : ", ") + x;
    res_.notes.push_back(s + " also paid alone in fresh processes; only the fastest process knob is kept (the pair was "
                             "not measured together): tune again with it set to measure the rest on top");
  }
  for (auto& t : res_.trials)
    if (chosen && &t != &res_.trials[*chosen] && t.phase == "process" && t.accepted) {
      t.accepted = false;
      t.reason += "; " + label(res_.trials[*chosen].knob, res_.trials[*chosen].value) + " was faster";
    }

  // The headline: the baseline against the best arm.
  auto headline = [&](size_t j, const std::string& what) {
    Trial t;
    t.phase = "final";
    t.value = what;
    t.reference = "baseline";
    t.fresh_processes = true;
    t.window = fresh_window();
    t.seconds = spent / double(arms.size());
    measure_pair(t, arms[0], arms[j], nullptr, o_.confidence);
    classify(t, false);
    t.accepted = false;
    return t;
  };
  std::optional<size_t> chosen_arm;
  if (chosen)
    for (size_t j = 0; j < arms.size(); ++j)
      if (arms[j].change.knob == res_.trials[*chosen].knob) chosen_arm = j;
  if (!has_final && !chosen_arm) return;  // a process knob alone that did not pay: nothing kept, no headline
  const std::string& user = user_alloc;
  const std::string in_process =
      res_.speedup_in_process.valid() ? fmt(res_.speedup_in_process.ratio, 2) + "x" : std::string("a gain");
  std::string alloc_reason;  // the allocator arm's verdict, for the notes
  for (const auto& t : res_.trials)
    if (t.phase == "process" && t.knob == "cpu_allocator") alloc_reason = t.reason;
  // The final as it is, under the user's start (recorded beside the headline when a process knob joins it).
  Trial plain;
  if (has_final) plain = headline(ref, "all kept knobs (fresh processes)");
  const std::string plain_reason = plain.reason;
  Trial h;
  if (chosen_arm) {
    const Change& c = arms[*chosen_arm].change;
    h = headline(*chosen_arm, has_final ? "all kept knobs + " + label(c) + " (fresh processes)" : label(c) + " (fresh processes)");
    if (has_final && c.knob == "cpu_allocator" && plain.outcome != "gain" && measured_under_other_allocator()) {
      res_.notes.push_back("the kept knobs measured " + in_process + " in this process (under " + meas + ") but " +
                           plain_reason + " in fresh processes under " + user + "; with " + label(c) + ": " + h.reason +
                           (h.outcome == "gain" ? ": they hold with it, kept with them" : ""));
      alloc_reason.clear();  // said
    }
    if (has_final) record(std::move(plain));
  } else {
    h = std::move(plain);
  }
  if (!gave_up.empty()) res_.notes.push_back("the fresh-process final stopped undecided: " + gave_up);
  // Fresh processes that measured faster too but could not decide, with an interval that holds the gain the
  // in-process final decided against the A/A floor, do not overturn it: the headline stays this process's, and
  // says so. One that measured slower, or rules the in-process gain out (a script's 12.82x in process, 1.07x
  // [0.79, 1.46] fresh), leaves it undecided: a wide interval holds almost anything.
  const auto& ip = res_.speedup_in_process;
  if (!chosen_arm && has_final && in_process_gain_ && ip.valid() && h.estimate.valid() && h.estimate.no_effect() &&
      h.estimate.ratio > 1 + o_.min_gain && h.estimate.lo <= ip.ratio && ip.ratio <= h.estimate.hi) {
    const std::string fresh = fmt(h.estimate.ratio, 2) + "x [" + fmt(h.estimate.lo, 2) + ", " + fmt(h.estimate.hi, 2) +
                              "] in " + std::to_string(h.rounds) + " pairs";
    res_.notes.push_back("fresh processes measured it faster but could not decide (" + fresh + ", a fresh pair varying by ±" + pct(fresh_sd(), 0) +
                         "); their interval holds the " + fmt(ip.ratio, 2) + "x this process measured: the headline is " +
                         "this process's final alternation (against the A/A floor, under " + meas +
                         "); a fresh start under " + user + " is not confirmed beyond that");
    res_.confirmation = "in this process: the final alternation, against the A/A floor (fresh processes measured it faster "
                        "but could not decide: " + fresh + ")";
    record(std::move(h));
    return;
  }
  res_.confirmation = "fresh processes: " + std::to_string(h.rounds) + " pairs" +
                      (rounds_min > o_.rounds ? " (as many as their noise needed)" : "");
  res_.speedup = h.estimate;
  res_.speedup_fresh_processes = true;
  res_.baseline_throughput = h.before;
  res_.final_throughput = h.after;
  const bool slower = h.outcome == "slower", lost = h.outcome != "gain";
  const std::string h_reason = h.reason;
  record(std::move(h));
  if (chosen_arm && !slower) {
    const Change& c = arms[*chosen_arm].change;
    process_choice_[c.knob] = c.value;
    kept_.push_back(c);
    kept_trial_.push_back(*chosen);
    kept_ratio_.push_back(res_.trials[*chosen].estimate.ratio);
  }
  if (!lost || !measured_under_other_allocator() || !has_final) return;
  if (chosen_arm && arms[*chosen_arm].change.knob == "cpu_allocator" && !slower) return;  // said above
  // Faster in this process, not in a fresh one under the user's allocator.
  const std::string why = "the kept knobs measured " + in_process + " in this process (under " + meas + ") but " +
                          plain_reason + " in fresh processes under " + user;
  std::string alloc;
  if (!has_knob("cpu_allocator")) alloc = "cpu_allocator is not tuned here";
  else if (!alloc_reason.empty()) alloc = "with cpu_allocator=" + meas + " too: " + alloc_reason;
  else alloc = "cpu_allocator was not measured with them (budget)";
  if (!slower) {
    res_.notes.push_back(why + "; " + alloc);
    return;
  }
  // Never recommend what a fresh start measured slower: back to the baseline, and say how to keep them.
  res_.notes.push_back(why + "; " + alloc + ". They are not kept: a training started with them runs slower " +
                       "(tune with cpu_allocator, or set it, to keep them)");
  current_ = baseline_;
  kept_.clear();
  kept_trial_.clear();
  kept_ratio_.clear();
  process_choice_.clear();
}

}  // namespace tb::engine::search
