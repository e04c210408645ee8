// The search of engine/tuner.h: calibrate, noise floor, the search loop, the final alternation, the fresh-process
// final, the summary.
// This file runs the phases in order (Tuner::run) and holds the start phases; search.h lists the others.
#include "tuner/search/search.h"

#include "engine/report.h"

#include <cmath>
#include <sstream>

#include "client/inputs.h"

namespace tb::engine {

std::vector<std::string> changed_knobs(const Config& baseline, const Config& config) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto value_in = [](const Config& c, const std::string& k) {
    auto it = c.find(k);
    return it == c.end() ? std::string() : it->second;
  };
  for (const auto& [k, v] : config) {
    if (value_in(baseline, k) != v) {
      out.push_back(k);
      seen.insert(k);
    }
  }
  for (const auto& [k, v] : baseline)
    if (!seen.count(k) && !config.count(k)) out.push_back(k);
  return out;
}

std::vector<std::string> unconfirmed_knobs(const TuneResult& r) {
  return r.unconfirmed_config.empty() ? std::vector<std::string>{} : changed_knobs(r.baseline, r.unconfirmed_config);
}

namespace search {

std::string fmt(double v, int prec) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(prec);
  s << v;
  return s.str();
}

std::string pct(double v, int prec) { return fmt(100 * v, prec) + "%"; }

std::string config_key(const Config& c) {
  std::string k;
  for (const auto& [a, b] : c) k += a + "=" + b + ";";
  return k;
}

bool parse_int(const std::string& s, int64_t& out) {
  const auto v = client::inputs::parse_integer(s);
  if (v) out = *v;
  return v.has_value();
}

TuneResult Tuner::run() {
  t0_ = w_.now_s();
  res_.budget_s = o_.budget_s;
  res_.plan_only = o_.plan_only;
  res_.environment = w_.describe();
  cuda_ = res_.environment.value(nlohmann::json::json_pointer("/device_info/kind"), std::string()) == "cuda";
  res_.knobs = w_.knobs();
  const std::vector<std::string> first = w_.first_knobs();
  for (const auto& id : first)
    for (const auto& k : res_.knobs)
      if (k.info.id == id) order_.push_back(id);
  for (const auto& k : res_.knobs) {
    if (std::find(first.begin(), first.end(), k.info.id) == first.end()) order_.push_back(k.info.id);
    knobs_[k.info.id] = k;
  }
  baseline_ = w_.baseline();
  res_.baseline = baseline_;
  calibrate();
  if (pace_.cannot_fit.empty()) {
    noise_floor_phase();
    if (o_.plan_only) {  // the pass priced, nothing tried (TuneOptions::plan_only)
      enter("plan");
      say_ineligible();
      plan_pass();
    } else {
      search();
      const Reserve held = reserve_parts();
      res_.finals_reserved_s = held.total();
      finals_.fresh_arms_reserved = held.fresh_arms;
      final_phase();
      fresh_final();
      after_finals();
    }
  }
  summarize();
  enter("done");
  res_.elapsed_s = w_.now_s() - t0_;
  res_.budget_phases = budget_.by_phase();
  progress("done", "tuning finished: " + summary_line(), 1.0);
  return std::move(res_);
}

void Tuner::enter(const std::string& phase) {
  if (!phase_.empty()) budget_.charge(phase_, elapsed());
  phase_ = phase;
}

void Tuner::progress(const std::string& phase, const std::string& msg, double frac) {
  if (!o_.progress) return;
  if (frac < 0) {
    double by_time = o_.budget_s > 0 ? elapsed() / o_.budget_s : 0;
    double by_plan = pace_.planned_trials > 0 ? static_cast<double>(res_.trials.size()) / pace_.planned_trials : 0;
    frac = std::min(0.99, std::max(by_time, by_plan));
  }
  o_.progress(TuneProgress{phase, msg, frac});
}

std::string Tuner::summary_line() {
  std::string s;
  const Config f = final_config();
  auto ch = changed_knobs(baseline_, f);
  if (!pace_.cannot_fit.empty()) return "nothing tried: the budget holds no trial";
  if (o_.plan_only && res_.plan) return "priced one pass at ~" + fmt(res_.plan->pass_s, 0) + " s, nothing tried";
  if (ch.empty()) return headline_line(res_);  // the report's words: too noisy, undecided or nothing beat it
  for (const auto& k : ch) s += (s.empty() ? "" : ", ") + k + "=" + f.at(k);
  if (res_.speedup.valid())
    s += " -> " + fmt(res_.speedup.ratio, 2) + "x [" + fmt(res_.speedup.lo, 2) + ", " + fmt(res_.speedup.hi, 2) + "]";
  return s;
}

bool Tuner::eligible(const KnobState& k, bool record_skip) {
  const auto& id = k.info.id;
  auto skip = [&](const std::string& why) {
    if (record_skip) res_.skipped.push_back({id, "", why});
    return false;
  };
  if (!o_.only_knobs.empty() &&
      std::find(o_.only_knobs.begin(), o_.only_knobs.end(), id) == o_.only_knobs.end())
    return skip("not in the knobs to tune");
  if (std::find(o_.skip_knobs.begin(), o_.skip_knobs.end(), id) != o_.skip_knobs.end())
    return skip("pinned by the user");
  if (!k.applicability.applicable)
    return skip("not applicable here: " + (k.applicability.reason.empty() ? std::string("unsupported")
                                                                           : k.applicability.reason));
  return true;
}

void Tuner::calibrate() {
  enter("calibrate");
  progress(phase_, "measuring the step time (for the plan only)", 0.0);
  current_ = baseline_;
  double t = w_.now_s();
  w_.apply(baseline_);  // a failure here is fatal: nothing to tune against
  pace_.apply_s = w_.now_s() - t;
  t = w_.now_s();
  const bool fresh_each = !w_.fresh_windows().empty();
  pace_.window = std::max(2, o_.min_window);
  measure::Window m = w_.measure(pace_.window);
  const double spent = w_.now_s() - t;
  pace_.sec_per_step = m.steps > 0 && m.wall_s > 0 ? m.wall_s / m.steps : spent / std::max(1, m.steps + m.warmup_steps);
  pace_.warmup_est = m.warmup_steps;
  if (const double s = w_.start_s(); s > 0) pace_.process_start_s = s;
  // Fresh windows: each also pays the start-up of its processes, which is not in its steps.
  if (fresh_each)
    pace_.apply_s = std::max(pace_.apply_s, spent - m.wall_s - m.warmup_steps * pace_.sec_per_step);

  // Plan: screening candidates + about as many again for accumulation and revisits, the A/A pairs, the
  // process knobs and the final alternation.
  int n = 0;
  for (const auto& id : order_) {
    const auto& k = knobs_[id];
    if (!eligible(k, false) || not_worth(k.info, baseline_)) continue;
    Ladder l = ladder_of(k.info);
    n += l == Ladder::None ? static_cast<int>(plain_values(k, baseline_[id]).size()) : 2;
  }
  pace_.planned_trials = 2 * n + 3;
  const double windows = 2.0 * o_.rounds * pace_.planned_trials + 2.0 * o_.aa_rounds;
  const double per_window = (o_.budget_s * kPlanShare - elapsed()) / windows - pace_.apply_s;
  const int win = static_cast<int>(std::floor(per_window / std::max(pace_.sec_per_step, 1e-9) - pace_.warmup_est));
  // At least min_window steps, or kLongWindowS of them when steps are long (never fewer than 2), and at least
  // min_window_s however many steps that takes (30 steps of a millisecond were the timer's jitter: a script's
  // A/A pairs varied by ±57%, by ±17% at a second); the budget's share capped by max_window.
  const double sps = std::max(pace_.sec_per_step, 1e-9);
  const int fewest = std::min(o_.min_window, std::max(2, static_cast<int>(std::ceil(kLongWindowS / sps))));
  const int shortest = std::max(fewest, static_cast<int>(std::ceil(o_.min_window_s / sps)));
  pace_.window = std::clamp(win, shortest, std::max(shortest, o_.max_window));
  res_.window = pace_.window;
  // The budget's priors until windows and processes have been measured here: this window, and a process's
  // start-up as the workload saw its own (2 s when it cannot tell).
  const double start = pace_.process_start_s > 0 ? pace_.process_start_s : 2.0;
  budget_.prime(pace_.apply_s + (pace_.warmup_est + pace_.window) * pace_.sec_per_step,
                start + (pace_.warmup_est + fresh_window()) * pace_.sec_per_step);
  res_.notes.push_back("plan: " + std::to_string(n) + " screening trials, ~" + std::to_string(pace_.planned_trials) +
                       " trials in all, each " + std::to_string(o_.rounds) + " pairs of windows (AB, BA, ...) of " +
                       std::to_string(pace_.window) + " measured steps after a warm-up until stable (" +
                       std::to_string(m.warmup_steps) + " steps at the start); " + fmt(pace_.sec_per_step * 1000, 1) +
                       " ms/step at the baseline");
  if (win < shortest)
    res_.notes.push_back("the budget is tight for this many knobs: trials use the shortest window (" +
                         std::to_string(shortest) + " steps, at least " + fmt(o_.min_window_s, 1) +
                         " s) and the lowest-priority ones may be skipped");
  // The smallest tune (the A/A's pairs, one trial, the final's rounds) must fit, its end included: else say so
  // now, with the budget that would, rather than measure a noise floor the budget cannot use.
  // The A/A's windows change nothing (no warm-up); a trial's and the final's switch configuration each time.
  const double window_s = pace_.apply_s + (pace_.warmup_est + pace_.window) * pace_.sec_per_step;
  const double smallest = kSmallestTuneAAWindows * pace_.window * pace_.sec_per_step + 4 * o_.rounds * window_s;
  if (elapsed() + smallest > budget_.hard_end()) {
    const double need = std::ceil((elapsed() + smallest) / (1.0 + o_.overrun) / 10) * 10;
    pace_.cannot_fit = "the budget (" + fmt(o_.budget_s, 0) + " s) holds no trial here: a step takes " +
                  fmt(pace_.sec_per_step, pace_.sec_per_step >= 1 ? 1 : 3) + " s, a window of " + std::to_string(pace_.window) +
                  " steps ~" + fmt(window_s, 0) + " s, and the smallest tune (2 A/A pairs, one trial and the final, " +
                  std::to_string(o_.rounds) + " pairs each) needs ~" + fmt(elapsed() + smallest, 0) +
                  " s with the calibration's " + fmt(elapsed(), 0) + " s: nothing was tried; rerun with --budget " +
                  fmt(need, 0) + " or more";
    res_.notes.push_back(pace_.cannot_fit);
  }
  progress(phase_, res_.notes.back());
}

// The baseline against itself, measured like a trial: the spread of a pair's log ratio on this machine.
void Tuner::noise_floor_phase() {
  enter("noise floor");
  // At most ~15% of the budget, and never fewer than 2 pairs (one pair has no spread).
  const int aa = std::clamp(static_cast<int>(kNoiseFloorShare * o_.budget_s / (2 * budget_.window_s())), 2, std::max(2, o_.aa_rounds));
  progress(phase_, "A/A: the baseline against itself (" + std::to_string(aa) + " pairs)");
  Trial t;
  t.phase = phase_;
  t.value = "baseline vs baseline (A/A)";
  t.reference = "baseline";
  t.window = pace_.window;
  t.rounds = aa;
  const double start = w_.now_s();
  for (int r = 0; r < aa; ++r) {
    measure::Window a = window_of(baseline_, false);  // a failure here is fatal, as in calibrate
    measure::Window b = window_of(baseline_, false);
    t.a.push_back(a);
    t.b.push_back(b);
    note_baseline("start", a);
    note_baseline("start", b);
  }
  res_.noise_floor = measure::noise_floor(t.a, t.b);
  t.before = measure::pooled_throughput(t.a);
  t.after = measure::pooled_throughput(t.b);
  t.estimate = measure::paired_ratio(t.a, t.b, nullptr, o_.confidence);
  res_.noise_band = res_.noise_floor.band(o_.rounds, o_.confidence);
  t.outcome = "noise floor";
  t.reason = res_.noise_floor.valid()
                 ? "a pair's log ratio varies by " + pct(res_.noise_floor.sd_log, 2) + " (sd); one trial of " +
                       std::to_string(o_.rounds) + " pairs resolves changes beyond ±" + pct(res_.noise_band)
                 : "too few pairs to estimate the noise floor";
  if (std::isfinite(res_.noise_floor.outlier))
    t.reason += "; one pair was left out as a hiccup (its ratio " + pct(res_.noise_floor.outlier, 0) +
                " off the others)";
  if (t.estimate.valid() && !t.estimate.no_effect())
    t.reason += "; the second window of each pair differed systematically (" + fmt(t.estimate.ratio, 3) +
                "x): drift or an order effect, which the alternating order of the trials cancels";
  t.seconds = w_.now_s() - start;
  res_.notes.push_back("noise floor (A/A): " + t.reason);
  record(std::move(t));
  take_snapshot("baseline");
}

}  // namespace search

TuneResult run_tune(Workload& workload, const TuneOptions& options) {
  search::Tuner t(workload, options);
  return t.run();
}

}  // namespace tb::engine
