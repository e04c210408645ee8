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

#include "tuner/search/finals.h"

namespace tb::engine::search {

void Tuner::fresh_final() { FreshFinal(*this).run(); }

void FreshFinal::run() {
  Tuner& t = t_;
  if (t.all_fresh()) return;  // every window was a fresh process: the final alternation was already this
  t.enter("fresh final");
  collect_candidates();
  need_ = t.fresh_headline_needed();
  if (!need_ && candidates_.empty()) return;
  arms_.push_back({"baseline", t.baseline_, {}, {}, ""});
  has_final_ = t.current_ != t.baseline_;
  if (has_final_) arms_.push_back({"final", t.current_, {}, {}, ""});
  ref_ = has_final_ ? 1 : 0;
  if (!plan()) return;
  add_process_arms();
  // Nothing to measure: no headline needed and no process knob affordable.
  if (arms_.size() < 2 || (!need_ && arms_.size() == (has_final_ ? 2u : 1u))) return;
  if (!alternate()) return;
  judge_process_knobs();
  conclude();
}

Tuner::ProcessArm Tuner::process_arm(const std::string& id) {
  const auto& k = knobs_[id];
  if (no_fresh_processes_) return {"", "takes effect at process start and this workload cannot start processes"};
  if (auto why = not_worth(k.info, current_)) return {"", *why};
  // The allocator the in-process windows ran under is the one the kept knobs were measured with.
  std::string v = k.info.recommended_value;
  if (id == "cpu_allocator" && measured_under_other_allocator()) v = w_.measurement_allocator();
  const auto& bad = k.applicability.unavailable_values;
  if (v.empty() || v == value_in(baseline_, id) || std::find(bad.begin(), bad.end(), v) != bad.end())
    return {"", "the recommended value is the baseline's"};
  return {v, ""};
}

void FreshFinal::collect_candidates() {
  Tuner& t = t_;
  for (const auto& id : t.order_) {
    const auto& k = t.knobs_[id];
    if (!k.info.process_scope || !t.eligible(k, true)) continue;
    for (const auto& v : k.applicability.unavailable_values)
      t.res_.skipped.push_back({id, v, k.applicability.reason.empty() ? "unavailable here" : k.applicability.reason});
    const Tuner::ProcessArm arm = t.process_arm(id);
    if (arm.value.empty()) {
      t.res_.skipped.push_back({id, "", arm.why_not});
      continue;
    }
    candidates_.push_back({{{id, arm.value}}, id, arm.value, ""});
  }
}

double FreshFinal::cost(int n_arms, int rounds) const {
  return t_.budget_.alternation_s(n_arms, rounds, true) + compiles_s(n_arms, rounds);
}

// Planned (reserved from the first kept change) it may use the budget's margin; unplanned it runs when what is
// left pays for it (the search ended early).
bool FreshFinal::affordable(double c) const {
  return t_.fresh_final_planned() ? t_.budget_.may_finish(t_.elapsed(), c) : t_.budget_.may_extend(t_.elapsed(), c);
}

void FreshFinal::in_process_headline(const std::string& why, bool budget) {
  Tuner& t = t_;
  t.res_.notes.push_back(why + ": the headline is this process's final alternation (against the A/A floor, under " +
                         meas_ + "); a fresh start under " + user_alloc_ + " was not measured");
  t.res_.confirmation = "in this process: the final alternation, against the A/A floor (" + why + ")";
  for (const auto& c : candidates_) {
    if (auto far = t.out_of_reach(c.knob, rounds_min_)) {
      t.res_.skipped.push_back({c.knob, c.value, *far});
      continue;
    }
    // Said as what stopped it: the budget, or a headline fresh processes had nothing to confirm or could not
    // decide (an image-classification script's tune said "budget" for its allocator with 71 s of 120 left).
    if (budget)
      t.res_.skipped.push_back({c.knob, c.value,
                                "budget: takes effect at process start, and the fresh-process final did not run (" +
                                    why + ")",
                                std::max(0.0, t.left()), base_cost_});
    else
      t.res_.skipped.push_back({c.knob, c.value, kNoFreshFinal + why + ")"});
  }
}

bool FreshFinal::plan() {
  Tuner& t = t_;
  // The headline's rounds: as many as a fresh pair's noise needs to decide the gain this process measured (a
  // demo's 1.33x took 3 rounds of 4 arms, 58% of its budget, and ended 1.18x [0.84, 1.64], undecided).
  gain_ = t.gain_to_confirm();
  const int planned = need_ && has_final_ ? t.fresh_rounds() : t.o_.rounds;
  rounds_min_ = std::max(t.o_.rounds, planned);
  // Under torch.compile every fresh process of a compiled arm compiles again (Inductor's cache is the
  // process's): a random world's fresh final of 2 rounds took 165 s where its windows made ~50, and the tune
  // ended at 340 s of 300. Every arm but the baseline carries the final configuration's compile.
  compile_s_ = has_final_ && Tuner::value_in(t.current_, "compile") == "on" ? t.compile_s() : 0.0;
  base_cost_ = cost(int(arms_.size()), rounds_min_);
  meas_ = t.w_.measurement_allocator();
  user_alloc_ = Tuner::value_in(t.baseline_, "cpu_allocator");
  const bool headline = need_ && has_final_;
  if (headline && planned == 0 && !(gain_ > 1 + t.o_.min_gain)) {
    in_process_headline("the final alternation measured " + fmt(gain_, 2) + "x: no gain for fresh processes to confirm",
                        false);
    return false;
  }
  if (headline && planned == 0) {
    in_process_headline("fresh processes cannot decide " + fmt(gain_, 2) + "x here: a fresh pair varies by ±" +
                        pct(t.fresh_sd(), 0) +
                        (std::isfinite(t.finals_.fresh_sd_measured) ? "" : " (this process's floor x1.8)") +
                        ", more than " + std::to_string(t.o_.max_fresh_rounds) + " pairs would be needed",
                        false);
    return false;
  }
  // Fewer rounds than planned, when no fewer than the minimum, rather than none: nothing else is left to spend
  // the time on (a simulated tune at 17% per pair planned 5 rounds, had room for 4 and left 156 s unused).
  if (headline && !affordable(base_cost_)) {
    int fit = rounds_min_;
    while (fit > t.o_.rounds && !affordable(cost(int(arms_.size()), fit))) --fit;
    if (fit < rounds_min_ && affordable(cost(int(arms_.size()), fit))) {
      t.res_.notes.push_back("the fresh-process final was planned at " + std::to_string(rounds_min_) + " rounds for " +
                             fmt(gain_, 2) + "x and " + std::to_string(fit) +
                             " fit in what was left: it may end undecided");
      rounds_min_ = fit;
      base_cost_ = cost(int(arms_.size()), fit);
    }
  }
  if (need_ && !affordable(base_cost_)) {
    in_process_headline("a fresh-process check of " + fmt(gain_, 2) + "x needs ~" + fmt(base_cost_, 0) + " s here (" +
                        std::to_string(rounds_min_) + " rounds of a baseline and a final process, ~" +
                        fmt(t.budget_.fresh_window_s(), 0) + " s each" +
                        (compile_s_ > 0 ? ", the final's with a ~" + fmt(compile_s_, 0) + " s compile" : std::string()) +
                        ") and " + fmt(std::max(0.0, t.left()), 0) + " s were left; give at least " +
                        fmt(std::max(base_cost_ / t.o_.max_fresh_share, t.elapsed() + base_cost_), 0) + " s for one",
                        true);
    return false;
  }
  return true;
}

// The allocator the in-process windows ran under comes first when it differs from the user's: without it a
// headline that loses in a fresh start cannot say whether the allocator is what the kept knobs need. Until a
// fresh process has been measured here its cost is the workload's own figure, or a guess when it has none: then
// a quarter as much again is held back.
void FreshFinal::add_process_arms() {
  Tuner& t = t_;
  std::vector<std::string> ids;
  for (const auto& c : candidates_) ids.push_back(c.knob);
  ids = t.by_priority(ids);
  if (t.measured_under_other_allocator())
    std::stable_partition(ids.begin(), ids.end(), [](const std::string& id) { return id == "cpu_allocator"; });
  const double guess = t.budget_.fresh_measured() || t.w_.start_s() > 0 ? 1.0 : kUnmeasuredFreshGuess;
  auto guessed = [&](int n_arms, int rounds) {
    return guess * t.budget_.alternation_s(n_arms, rounds, true) + compiles_s(n_arms, rounds);
  };
  for (const auto& id : ids) {
    const Change& c =
        *std::find_if(candidates_.begin(), candidates_.end(), [&](const Change& x) { return x.knob == id; });
    if (auto far = t.out_of_reach(id, rounds_min_)) {
      t.res_.skipped.push_back({c.knob, c.value, *far});
      t.progress(t.phase_, "skipped " + Tuner::label(c) + " (out of reach in fresh processes)");
      continue;
    }
    const double need = guessed(int(arms_.size()) + 1, rounds_min_);
    // Without a headline to measure, the two arms a process knob needs are its own cost; an arm the plan's pass
    // covered was held back by the search like the headline, and may use the budget's margin as it does.
    const bool planned = std::find(t.process_planned_.begin(), t.process_planned_.end(), id) != t.process_planned_.end();
    if (t.budget_.may_extend(t.elapsed(), need) ||
        ((arms_.size() == 1 || planned) && t.budget_.may_finish(t.elapsed(), need))) {
      arms_.push_back({"+ " + Tuner::label(c), Tuner::with(arms_[ref_].config, c.delta), c, {}, ""});
      continue;
    }
    t.res_.skipped.push_back(
        {c.knob, c.value,
         "budget: takes effect at process start; its arm in the fresh-process final needs ~" +
             fmt((guess * t.budget_.alternation_s(1, rounds_min_, true) + compile_s_ * rounds_min_), 0) + " s (" +
             std::to_string(rounds_min_) + " processes of ~" + fmt(guess * t.budget_.fresh_window_s(), 0) +
             " s) and " + fmt(std::max(0.0, t.left() - guessed(int(arms_.size()), rounds_min_)), 0) +
             " s are left beside the arms before it",
         std::max(0.0, t.left()), need});
    t.progress(t.phase_, "skipped " + Tuner::label(c) + " (budget)");
  }
}

// A question still open: its interval covers 1 and a gain, and is wider than +-5% (process-to-process noise of
// +-10% needs 6-8 pairs to decide). Each arm against the baseline (a headline it may become), each process
// knob against the final.
bool FreshFinal::open() const {
  std::vector<measure::Window> a, b;
  auto undecided = [&](const Arm& x, const Arm& y) {
    paired(x, y, a, b);
    const auto e = measure::paired_ratio(a, b, nullptr, t_.o_.confidence);
    return !e.valid() || !(e.lo > 1 || e.hi < 1 + t_.o_.min_gain || e.hi - e.lo < 0.10);
  };
  for (size_t j = 1; j < arms_.size(); ++j) {
    if (!arms_[j].failed.empty()) continue;
    if (undecided(arms_[0], arms_[j])) return true;
    if (j != ref_ && ref_ != 0 && undecided(arms_[ref_], arms_[j])) return true;
  }
  return false;
}

// Still open after round `r`: can the rounds the measured spread needs still run? If not, stop now rather than
// spend the rest of the budget on an undecided answer.
bool FreshFinal::gives_up(int r) {
  Tuner& t = t_;
  if (!(need_ && has_final_)) return false;
  // The spread these processes show, pooled with the prior (worth two pairs): three pairs alone misjudge it.
  const auto nf = measure::noise_floor(arms_[0].windows, arms_[ref_].windows);
  if (nf.valid())
    t.finals_.fresh_sd_measured = std::sqrt((2 * prior_sd_ * prior_sd_ + nf.df * nf.sd_log * nf.sd_log) / (2 + nf.df));
  const int n = t.fresh_pairs_for(gain_, t.fresh_sd());
  if (n != 0 && !(n > r && !t.budget_.may_finish(t.elapsed(), cost(live_arms(arms_), n - r)))) return false;
  gave_up_ = "after " + std::to_string(r) + " rounds a fresh pair varied by ±" + pct(t.fresh_sd(), 0) + ": " +
             (n == 0 ? "more than " + std::to_string(t.o_.max_fresh_rounds) + " pairs"
                     : std::to_string(n) + " pairs (~" + fmt(cost(live_arms(arms_), n - r), 0) + " s more)") +
             " would be needed to decide " + fmt(gain_, 2) + "x";
  return true;
}

bool FreshFinal::alternate() {
  Tuner& t = t_;
  std::string names;
  for (const auto& a : arms_) names += (names.empty() ? "" : ", ") + a.name;
  t.progress(t.phase_, "fresh processes: " + names + ", " + std::to_string(rounds_min_) + " rounds" +
                           (rounds_min_ > t.o_.rounds ? " (what a fresh pair's ±" + pct(t.fresh_sd(), 0) +
                                                            " needs to decide " + fmt(gain_, 2) + "x)"
                                                      : std::string()));
  const double start = t.w_.now_s();
  prior_sd_ = t.fresh_sd();
  std::string fatal;
  // What the search held time for: this final's first rounds of the arms it reserved; the rest is extra.
  const int reserved = t.finals_.fresh_arms_reserved;
  std::optional<double> extra_from;
  for (int r = 0; fatal.empty(); ++r) {
    if (r == rounds_min_) extra_from = t.w_.now_s();
    // The planned rounds are a plan, not a quota: from the tune's minimum on, a decided final stops.
    const RoundAsk ask{r, rounds_min_, t.o_.rounds, t.o_.max_fresh_rounds, t.elapsed(), cost(live_arms(arms_), 1), 0};
    const Round next = t.budget_.another_round(ask, [&] { return open(); }, [&] { return gives_up(r); });
    if (next == Round::hard_end)
      t.res_.notes.push_back("the fresh-process final stopped after " + std::to_string(r) +
                             " rounds at the budget's hard end (a fresh process took ~" +
                             fmt(t.budget_.fresh_window_s(), 0) + " s here)");
    if (next == Round::extra)
      t.progress(t.phase_, "undecided after " + std::to_string(r) + " rounds of fresh processes: one more round");
    if (!runs(next)) break;
    const RoundEnd end = run_round(
        arms_, r, has_final_ ? 2 : 1, [&](const Config& c) { return t.window_of(c, true); }, nullptr,
        [](const std::string& why) { return why.find("cannot start fresh processes") != std::string::npos; });
    if (end.stop_all) t.no_fresh_processes_ = true;
    fatal = end.fatal;
  }
  if (t.no_fresh_processes_) {
    for (size_t j = 1; j < arms_.size(); ++j)
      if (!arms_[j].change.knob.empty())
        t.res_.skipped.push_back(
            {arms_[j].change.knob, "", "takes effect at process start and this workload cannot start processes"});
    return false;
  }
  spent_ = t.w_.now_s() - start;
  const double minimum_s = (extra_from ? *extra_from : t.w_.now_s()) - start;
  const int n = int(arms_.size());
  t.res_.finals_extra_s += (spent_ - minimum_s) + minimum_s * double(std::max(0, n - reserved)) / std::max(1, n);
  if (fatal.empty()) return true;
  t.res_.notes.push_back("the final configuration failed in a fresh process (" + fatal + "); the headline is this process's");
  return false;
}

void FreshFinal::judge_process_knobs() {
  Tuner& t = t_;
  std::vector<std::string> also_paid;
  for (size_t j = 0; j < arms_.size(); ++j) {
    if (arms_[j].change.knob.empty()) continue;
    const Change& c = arms_[j].change;
    Trial row;
    row.phase = "process";
    row.knob = c.knob;
    row.value = c.value;
    row.from = Tuner::value_in(t.baseline_, c.knob);
    row.reference = has_final_ ? "final (fresh processes)" : "baseline (fresh processes)";
    row.fresh_processes = true;
    row.window = t.fresh_window();
    row.seconds = spent_ / double(arms_.size());
    if (!arms_[j].failed.empty()) {
      row.outcome = "failed";
      row.reason = "could not run: " + arms_[j].failed;
      t.record(std::move(row));
      continue;
    }
    measure_pair(row, arms_[ref_], arms_[j], nullptr, t.o_.confidence);
    t.classify(row, false);
    if (row.accepted) {
      if (!chosen_ || row.estimate.ratio > t.res_.trials[*chosen_].estimate.ratio) {
        if (chosen_) also_paid.push_back(Tuner::label(t.res_.trials[*chosen_].knob, t.res_.trials[*chosen_].value));
        chosen_ = t.res_.trials.size();
      } else {
        also_paid.push_back(Tuner::label(c));
      }
    }
    t.record(std::move(row));
  }
  if (!also_paid.empty()) {
    std::string s;
    for (const auto& x : also_paid) s += (s.empty() ? "" : ", ") + x;
    t.res_.notes.push_back(s + " also paid alone in fresh processes; only the fastest process knob is kept (the pair "
                               "was not measured together): tune again with it set to measure the rest on top");
  }
  if (!chosen_) return;
  const Trial& best = t.res_.trials[*chosen_];
  for (auto& row : t.res_.trials)
    if (&row != &best && row.phase == "process" && row.accepted) {
      row.accepted = false;
      row.reason += "; " + Tuner::label(best.knob, best.value) + " was faster";
    }
}

// The baseline against arm `j`.
Trial FreshFinal::headline_of(size_t j, const std::string& what) const {
  Trial row;
  row.phase = "final";
  row.value = what;
  row.reference = "baseline";
  row.fresh_processes = true;
  row.window = t_.fresh_window();
  row.seconds = spent_ / double(arms_.size());
  measure_pair(row, arms_[0], arms_[j], nullptr, t_.o_.confidence);
  t_.classify(row, false);
  row.accepted = false;
  return row;
}

static std::string in_process_figure(const TuneResult& res) {
  return res.speedup_in_process.valid() ? fmt(res.speedup_in_process.ratio, 2) + "x" : std::string("a gain");
}

// The headline: the baseline against the best arm.
void FreshFinal::conclude() {
  Tuner& t = t_;
  std::optional<size_t> chosen_arm;
  if (chosen_)
    for (size_t j = 0; j < arms_.size(); ++j)
      if (arms_[j].change.knob == t.res_.trials[*chosen_].knob) chosen_arm = j;
  if (!has_final_ && !chosen_arm) return;  // a process knob alone that did not pay: nothing kept, no headline
  std::string alloc_reason;  // the allocator arm's verdict, for the notes
  for (const auto& row : t.res_.trials)
    if (row.phase == "process" && row.knob == "cpu_allocator") alloc_reason = row.reason;
  // The final as it is, under the user's start (recorded beside the headline when a process knob joins it).
  Trial plain;
  if (has_final_) plain = headline_of(ref_, "all kept knobs (fresh processes)");
  const std::string plain_reason = plain.reason;
  Trial h;
  if (chosen_arm) {
    const Change& c = arms_[*chosen_arm].change;
    h = headline_of(*chosen_arm, has_final_ ? "all kept knobs + " + Tuner::label(c) + " (fresh processes)"
                                            : Tuner::label(c) + " (fresh processes)");
    if (has_final_ && c.knob == "cpu_allocator" && plain.outcome != "gain" && t.measured_under_other_allocator()) {
      t.res_.notes.push_back("the kept knobs measured " + in_process_figure(t.res_) + " in this process (under " +
                             meas_ + ") but " + plain_reason + " in fresh processes under " + user_alloc_ +
                             "; with " + Tuner::label(c) + ": " + h.reason +
                             (h.outcome == "gain" ? ": they hold with it, kept with them" : ""));
      alloc_reason.clear();  // said
    }
    if (has_final_) t.record(std::move(plain));
  } else {
    h = std::move(plain);
  }
  if (!gave_up_.empty()) t.res_.notes.push_back("the fresh-process final stopped undecided: " + gave_up_);
  // Fresh processes that measured faster too but could not decide, with an interval that holds the gain the
  // in-process final decided against the A/A floor, do not overturn it: the headline stays this process's, and
  // says so. One that measured slower, or rules the in-process gain out (a script's 12.82x in process, 1.07x
  // [0.79, 1.46] fresh), leaves it undecided: a wide interval holds almost anything.
  const auto& ip = t.res_.speedup_in_process;
  if (!chosen_arm && has_final_ && t.finals_.in_process_gain && ip.valid() && h.estimate.valid() && h.estimate.no_effect() &&
      h.estimate.ratio > 1 + t.o_.min_gain && h.estimate.lo <= ip.ratio && ip.ratio <= h.estimate.hi) {
    const std::string fresh = fmt(h.estimate.ratio, 2) + "x [" + fmt(h.estimate.lo, 2) + ", " +
                              fmt(h.estimate.hi, 2) + "] in " + std::to_string(h.rounds) + " pairs";
    t.res_.notes.push_back("fresh processes measured it faster but could not decide (" + fresh +
                           ", a fresh pair varying by ±" + pct(t.fresh_sd(), 0) + "); their interval holds the " +
                           fmt(ip.ratio, 2) + "x this process measured: the headline is " +
                           "this process's final alternation (against the A/A floor, under " + meas_ +
                           "); a fresh start under " + user_alloc_ + " is not confirmed beyond that");
    t.res_.confirmation = "in this process: the final alternation, against the A/A floor (fresh processes measured "
                          "it faster but could not decide: " + fresh + ")";
    t.record(std::move(h));
    return;
  }
  t.res_.confirmation = "fresh processes: " + std::to_string(h.rounds) + " pairs" +
                        (rounds_min_ > t.o_.rounds ? " (as many as their noise needed)" : "");
  t.res_.speedup = h.estimate;
  t.res_.speedup_fresh_processes = true;
  t.res_.baseline_throughput = h.before;
  t.res_.final_throughput = h.after;
  const bool slower = h.outcome == "slower", lost = h.outcome != "gain";
  t.record(std::move(h));
  if (chosen_arm && !slower) {
    const Change& c = arms_[*chosen_arm].change;
    t.process_choice_[c.knob] = c.value;
    t.kept_.push_back({c, *chosen_, t.res_.trials[*chosen_].estimate.ratio});
  }
  if (!lost || !t.measured_under_other_allocator() || !has_final_) return;
  if (chosen_arm && arms_[*chosen_arm].change.knob == "cpu_allocator" && !slower) return;  // said above
  lost_in_fresh_processes(slower, plain_reason, alloc_reason);
}

void FreshFinal::lost_in_fresh_processes(bool slower, const std::string& plain_reason, const std::string& alloc_reason) {
  Tuner& t = t_;
  const std::string why = "the kept knobs measured " + in_process_figure(t.res_) + " in this process (under " +
                          meas_ + ") but " + plain_reason + " in fresh processes under " + user_alloc_;
  std::string alloc;
  if (!t.has_knob("cpu_allocator")) alloc = "cpu_allocator is not tuned here";
  else if (!alloc_reason.empty()) alloc = "with cpu_allocator=" + meas_ + " too: " + alloc_reason;
  else alloc = "cpu_allocator was not measured with them (budget)";
  if (!slower) {
    t.res_.notes.push_back(why + "; " + alloc);
    return;
  }
  // Never recommend what a fresh start measured slower: back to the baseline, and say how to keep them.
  t.res_.notes.push_back(why + "; " + alloc + ". They are not kept: a training started with them runs slower " +
                         "(tune with cpu_allocator, or set it, to keep them)");
  t.current_ = t.baseline_;
  t.kept_.clear();
  t.process_choice_.clear();
}

}  // namespace tb::engine::search
