// Planning of the tuner's search (search.h): the ladders of the int knobs, the candidates of a rung, the
// values worth screening, the order (priority.h) and what a trial costs and the end reserves (budget.h).
#include <cmath>

#include "client/inputs.h"
#include "measure/stats.h"
#include "tuner/search/priority.h"
#include "tuner/search/search.h"

namespace tb::engine::search {

Ladder Tuner::ladder_of(const KnobInfo& info) {
  if (info.type != KnobType::Int) return Ladder::None;
  const KnobFacts* f = facts_of(info.id);
  return f ? f->ladder : Ladder::None;
}

// Next value above `from` on the knob's ladder, or nullopt at the end (workers past the core count: the count).
std::optional<std::string> Tuner::ladder_next(const KnobInfo& info, const std::string& from) {
  int64_t v = 0;
  if (!parse_int(from, v)) return std::nullopt;
  int64_t next = 0, cap = 0;
  if (info.id == "workers") {
    cap = std::max(1, w_.cpu_cores());
    // More workers than cores (4 on 2): the one rung is down to the core count, where they stop contending.
    if (v > cap) return info.min <= cap ? std::optional<std::string>(std::to_string(cap)) : std::nullopt;
    if (v < 1) next = 1;
    else {
      next = 1;
      while (next <= v) next *= 2;
      if (next > cap && v < cap) next = cap;  // the last rung is the core count itself
    }
  } else {
    cap = info.id == "batch_size" ? o_.max_batch_size : 64;
    next = v < 1 ? 1 : v * 2;
  }
  if (info.max > 0) cap = std::min(cap, info.max);
  if (next > cap || next < info.min) return std::nullopt;
  if (memory_.oom_floor.count(info.id) && next >= memory_.oom_floor[info.id]) return std::nullopt;
  return std::to_string(next);
}

// The candidates of one ladder rung from `ref`. Loader workers and intra-op threads share the cores, so a
// workers rung is tried with the threads it leaves (auto) and, where that differs, with every core.
std::vector<Change> Tuner::rung(const Config& ref, const std::string& id, const std::string& next) {
  std::vector<Change> out;
  Change c;
  c.delta[id] = next;
  c.knob = id;
  c.value = next;
  // The first workers also keep their processes between epochs: without it every epoch starts (forks) its
  // workers again, which on a short epoch costs more than the parallel decoding gains (measured on a script
  // with 8 steps per epoch: workers=1 alone 0.55x). It costs nothing else (the workers' memory stays). So does
  // every workers rung where the windows leave the passes' starts out (long passes): without it each pass would
  // give back, in a start no window holds, what the rung's rate shows (Tuner::respawn_pass_steps).
  if (id == "workers" && (value_in(ref, "workers") == "0" || w_.pass_steps_outside_windows() > 0) &&
      has_knob("persistent_workers") && value_in(ref, "persistent_workers") != "on") {
    c.delta["persistent_workers"] = "on";
    c.also = "persistent_workers=on";
  }
  const std::string first = c.also;
  auto also = [&](const std::string& more) { return first.empty() ? more : first + " + " + more; };
  if (id == "workers" && has_knob("intra_op_threads")) {
    c.delta["intra_op_threads"] = "0";
    if (value_in(ref, "intra_op_threads") != "0") c.also = also("intra_op_threads=0 (auto)");
    out.push_back(c);
    int64_t w = 0;
    parse_int(next, w);
    const int cores = std::max(1, w_.cpu_cores());
    // On a GPU the intra-op threads idle while the device computes: the variant would double the rungs'
    // cost for nothing (the H100's tune measured workers=1 1.80x and with 16 threads 1.86x, within noise).
    if (!cuda_ && std::max<int64_t>(1, cores - w) != cores) {
      Change all = c;
      all.delta["intra_op_threads"] = std::to_string(cores);
      all.also = also("intra_op_threads=" + std::to_string(cores));
      out.push_back(all);
    }
    return out;
  }
  out.push_back(c);
  return out;
}

// Values to screen alone for a non-ladder knob.
std::vector<std::string> Tuner::plain_values(const KnobState& k, const std::string& from) {
  const KnobInfo& info = k.info;
  const auto& unavailable = k.applicability.unavailable_values;
  std::vector<std::string> out;
  if (info.id == "intra_op_threads") {
    // Fewer threads than auto gives (the loader or another process needs the cores) and all of them.
    const int cores = std::max(1, w_.cpu_cores());
    int64_t workers = 0;
    parse_int(value_in(current_.empty() ? baseline_ : current_, "workers"), workers);
    const std::string auto_eq = std::to_string(std::max<int64_t>(1, cores - workers));
    for (int t : {1, cores / 2, cores}) {
      const std::string v = std::to_string(t);
      if (t >= 1 && v != from && v != auto_eq && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
  }
  if (info.id == "bucket_cap_mb") {
    // No size is right for every model and link: a fifth (communication starts earlier in backward) and four
    // times (fewer, bigger messages) of the current one.
    int64_t v = 0;
    if (!parse_int(from, v)) return out;
    for (int64_t t : {v / 5, v * 4}) {
      t = std::clamp<int64_t>(t, info.min, info.max);
      if (t != v && std::find(out.begin(), out.end(), std::to_string(t)) == out.end()) out.push_back(std::to_string(t));
    }
    return out;
  }
  if (info.type == KnobType::Int) {
    if (!info.recommended_value.empty() && info.recommended_value != from) out.push_back(info.recommended_value);
    return out;
  }
  std::vector<std::string> choices = info.choices;
  if (choices.empty() && info.type == KnobType::Bool) choices = {"off", "on"};
  // Mixed precision: bf16 first. Most CPUs have bf16 kernels but no fp16 arithmetic (fp16 measured 0.085x
  // here), and a tight budget spent on fp16 left bf16 (1.3-1.5x) untried; on an Ampere or newer GPU bf16 runs
  // as fast as fp16 without a loss scaler (the hand sequence's amp=bf16 on the H100).
  if (info.id == "amp") {
    auto bf16 = std::find(choices.begin(), choices.end(), "bf16"), fp16 = std::find(choices.begin(), choices.end(), "fp16");
    if (bf16 != choices.end() && fp16 != choices.end() && fp16 < bf16) std::iter_swap(bf16, fp16);
  }
  for (const auto& c : choices)
    if (c != from && std::find(unavailable.begin(), unavailable.end(), c) == unavailable.end()) out.push_back(c);
  return out;
}

// Why a knob is not worth a trial in configuration `c` (nullopt: worth one). Saves budget for trials that
// can pay: a switch already at its recommended value, a queue depth with no worker to fill it, and
// activation checkpointing, which trades speed for memory and only pays by enabling a bigger batch.
std::optional<std::string> Tuner::not_worth(const KnobInfo& info, const Config& c) {
  if (info.type == KnobType::Bool && !info.recommended_value.empty() && value_in(c, info.id) == info.recommended_value)
    return "already at the recommended value (" + info.recommended_value + ")";
  // The knobs that need loader workers (the knob table's `needs`: prefetch, persistent_workers, in_order); in_order,
  // left out of a list here, was tried from 0 workers on a script and refused by its launcher, a failed trial.
  if (depends_on(info.id) == "workers" && knobs_.count("workers") && value_in(c, "workers") == "0")
    return info.id + " only matters with workers > 0" +
           (info.process_scope ? std::string() : std::string(" (tried again once workers are kept)"));
  if (info.id == "checkpointing") return "trades speed for memory; it pays only through a batch size that does not fit";
  if (auto need = needed_switch(info.id, c); need && !eligible(knobs_[need->first], false))
    return info.id + " only matters with " + label(need->first, need->second) + ", which this tune does not change";
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> Tuner::needed_switch(const std::string& id, const Config& c) {
  const std::string need = depends_on(id);
  if (need.empty() || !knobs_.count(need)) return std::nullopt;
  const KnobInfo& n = knobs_[need].info;
  if (n.type != KnobType::Bool || n.recommended_value.empty() || value_in(c, need) == n.recommended_value)
    return std::nullopt;
  return std::make_pair(need, n.recommended_value);
}

double Tuner::expected(const std::string& id) {
  // A knob measured without paying comes back at half its expected gain each time (once the configuration
  // changed: two knobs may pay only together); one never tried keeps its full prior.
  double gain = 1.0 + (expected_gain(id, evidence_.shares, cuda_) - 1.0) * std::pow(0.5, misses(id));
  // The shares' prior never promises more than the analyses' own models allow: a 64% data wait is worth 2.8x
  // to workers by the shares, nothing by the loader verdict when the cores already bound the run.
  if (auto c = evidence_.caps.find(id); c != evidence_.caps.end()) gain = std::min(gain, std::max(1.0, c->second));
  return gain;
}

double Tuner::priority(const std::string& id) {
  double gain = expected(id);
  // Nothing new to try, but a trial from here measured faster without deciding: what it measured is its
  // prior (discounted: a chance high ratio is likelier among the undecided ones).
  if (next_changes(id).empty())
    if (auto i = extendable(id)) gain = 1.0 + 0.5 * (res_.trials[*i].estimate.ratio - 1.0);
  return (gain - 1.0) / std::max(1e-3, trial_cost_s(id, process_knob(id) && !all_fresh()));
}

std::vector<std::string> Tuner::by_priority(const std::vector<std::string>& ids) {
  const std::vector<std::string> first = w_.first_knobs();
  // The workload's first knobs, then the switches the latest analysis names (its findings, the loader verdict),
  // then the rest: the demo's analysis named fast_decode for a step 97% JPEG decode, and its tune measured amp,
  // threads and channels_last first and skipped fast_decode for budget.
  auto rank = [&](const std::string& id) {
    auto f = std::find(first.begin(), first.end(), id);
    if (f != first.end()) return size_t(f - first.begin());
    // A named knob that has since been measured without paying ranks with the rest again.
    auto n = std::find(evidence_.named.begin(), evidence_.named.end(), id);
    if (n == evidence_.named.end() || misses(id) > 0) return first.size() + evidence_.named.size();
    return first.size() + size_t(n - evidence_.named.begin());
  };
  std::vector<std::pair<std::string, double>> scored;
  for (const auto& id : ids) scored.push_back({id, priority(id)});
  std::stable_sort(scored.begin(), scored.end(), [&](const auto& a, const auto& b) {
    if (rank(a.first) != rank(b.first)) return rank(a.first) < rank(b.first);
    if (climbing(a.first) != climbing(b.first)) return climbing(a.first);
    return a.second > b.second;
  });
  std::vector<std::string> out;
  for (const auto& [id, p] : scored) out.push_back(id);
  return out;
}

// The rung after one that paid is likelier to pay than a knob with no evidence: a demo kept workers=1 at 1.15x,
// then spent its budget on threads, amp and channels_last (none paid) and skipped workers=2, the analysis's
// own switch for its loader stall.
bool Tuner::climbing(const std::string& id) {
  if (kept_.empty() || kept_.back().change.knob != id || ladder_of(knobs_[id].info) == Ladder::None) return false;
  // Only straight after the rung was kept: once another knob had its turn the priors rank it again.
  for (size_t i = kept_.back().trial + 1; i < res_.trials.size(); ++i)
    if (res_.trials[i].knob != id) return false;
  return !next_changes(id).empty();
}

double Tuner::trial_cost_s(const std::string& knob, bool fresh) {
  const bool compiled = value_in(current_, "compile") == "on";
  double extra = extra_cost_s(knob, cuda_, compiled) > 0 ? compile_s() : 0.0;
  // A script's compile=on trial in fresh processes (its process left slower by a failed amp) priced one compile
  // and ran two pairs of a compiling candidate: 67.9 s, and the 60 s tune ended at 81 s.
  if (fresh || all_fresh()) {
    const bool cand_compiled = knob == "compile" ? !compiled : compiled;
    extra = o_.rounds * ((compiled ? 1 : 0) + (cand_compiled ? 1 : 0)) * compile_s();
  }
  return budget_.trial_s(o_.rounds, fresh, numerics(knob) && w_.has_loss_probe(), extra);
}

double Tuner::compile_s() { return compile_seen_s_ > 0 ? compile_seen_s_ : extra_cost_s("compile", cuda_, false); }

int Tuner::final_arms() {
  int inproc = 0;
  for (const auto& k : kept_)
    if (all_fresh() || !process_knob(k.change.knob)) ++inproc;
  // With one kept knob, "final without it" is the baseline arm; with none the baseline alone is measured.
  return inproc == 0 ? 1 : inproc == 1 ? 2 : 2 + inproc;
}

int Tuner::planned_fresh_arms() {
  // The baseline and the final, and the allocator the windows ran under when the user's is another: the
  // headline's question is incomplete without it (search_fresh.cpp).
  const bool alloc = has_knob("cpu_allocator") && measured_under_other_allocator();
  return 2 + (alloc ? 1 : 0);
}

namespace {
// A fresh process's pair against an in-process pair, spread of the log ratio: the demo's JPEG workload on two
// cores measured 7.6% in process and 13.4-14.5% between fresh processes (2026-11-28); until this tune's own fresh
// pairs say otherwise, its in-process floor times this.
constexpr double kFreshNoise = 1.8;
// A confirmation is planned to end with its interval's half-width within this share of the gain (in logs): the
// search's ratio is the likeliest too high (the winner of several trials), so the plan leaves a margin.
constexpr double kDecideShare = 0.75;
}  // namespace

double Tuner::fresh_sd() {
  if (std::isfinite(finals_.fresh_sd_measured)) return finals_.fresh_sd_measured;
  const measure::NoiseFloor nf = floor();
  return std::max(0.02, kFreshNoise * (nf.valid() ? nf.sd_log : 0.05));
}

int Tuner::fresh_pairs_for(double gain, double sd) {
  if (!(gain > 1) || !(sd > 0)) return 0;
  const double target = kDecideShare * std::log(gain);
  for (int n = std::max(2, o_.rounds); n <= std::max(o_.rounds, o_.max_fresh_rounds); ++n)
    if (measure::student_t_quantile(0.5 + o_.confidence / 2, n - 1) * sd / std::sqrt(double(n)) <= target) return n;
  return 0;
}

// A process knob's arm is a pair of fresh processes a round, and a fresh pair's spread is the process-to-process
// one: on the H100 profile (±9.5% a pair) an arm of 3 rounds resolved only changes beyond ±19-24%, and cuDNN's
// autotuner, which the profile gives ~10% of the GPU's time, ended "no effect" with intervals like [0.72, 1.43] in
// 38 of 40 tunes under --budget auto, ~55 s each. An arm that cannot resolve the most the knob may give is not
// run: it is said to be out of reach, with the pairs that would resolve it, and its time goes to knobs the
// windows can decide. Only where that most is bounded: a knob of the GPU's compute (cuDNN's algorithms make
// convolutions faster, nothing else), at most its prior's share of a step that were all compute (the arm is
// measured on top of the winners, where compute is most of the step). The allocator reaches every part of the
// host's work, the loader's workers included, and was the largest single effect measured on a CPU run; ranks
// divide a CPU's work: neither has such a bound, so each is measured as the budget allows, as is the
// measurement allocator's arm, the headline's own.
std::optional<std::string> Tuner::out_of_reach(const std::string& id, int rounds) {
  if (!cuda_ || kind_of(id, cuda_) != "compute") return std::nullopt;
  const double most = expected_gain(id, StepShares{0, 0, 0, 0, 1, 0}, cuda_), sd = fresh_sd();
  auto half_width = [&](int n) {
    return measure::student_t_quantile(0.5 + o_.confidence / 2, n - 1) * sd / std::sqrt(double(n));
  };
  const int n = std::max(2, rounds);
  if (half_width(n) <= std::log(most)) return std::nullopt;
  int need = 0;
  for (int k = n + 1; k <= o_.max_fresh_rounds && !need; ++k)
    if (half_width(k) <= std::log(most)) need = k;
  return "out of reach: it takes effect at process start, and " + std::to_string(n) +
         " pairs of fresh processes resolve only changes beyond ±" + pct(std::exp(half_width(n)) - 1, 0) +
         " here (a pair varies by ±" + pct(sd, 1) + (std::isfinite(finals_.fresh_sd_measured) ? "" : ", this process's floor x1.8") +
         "), where it may give at most ~" + pct(most - 1, 0) +
         " (were the step all the GPU's compute); resolving that needs " +
         (need == 0 ? "more than " + std::to_string(o_.max_fresh_rounds) + " pairs" : std::to_string(need) + " pairs");
}

double Tuner::gain_to_confirm() {
  if (res_.speedup_in_process.valid()) return res_.speedup_in_process.ratio;
  double g = 1;
  for (const auto& k : kept_)
    if (!process_knob(k.change.knob) && std::isfinite(k.ratio) && k.ratio > 0) g *= k.ratio;
  return g;
}

int Tuner::fresh_rounds() {
  // Without an in-process gain to size it by (a process left slower measured no final here) the minimum.
  if (left_slower_at_ && !res_.speedup_in_process.valid()) return o_.rounds;
  return fresh_pairs_for(gain_to_confirm(), fresh_sd());
}

bool Tuner::fresh_final_planned() {
  if (!fresh_headline_needed()) return false;
  const int n = fresh_rounds();
  return n > 0 && budget_.affordable_share(budget_.alternation_s(2, n, true), o_.max_fresh_share);
}

double Tuner::headline_fresh_s(int* arms_out) {
  if (!fresh_final_planned()) return 0.0;
  // As many rounds as the fresh processes' noise needs to decide the kept gain (a small gain needs more).
  const int n = fresh_rounds();
  const int arms = budget_.affordable_share(budget_.alternation_s(planned_fresh_arms(), n, true), o_.max_fresh_share)
                       ? planned_fresh_arms()
                       : 2;
  if (arms_out) *arms_out = arms;
  // Under torch.compile every fresh process of the final arm compiles. An arm without a kept amp or
  // channels_last would compile once more in this process: that arm runs only when the budget's hard end pays
  // for it (build_arms), else its knob keeps the trial's evidence, so it is not held back here. A simulated
  // script tune that held those recompiles skipped compile "for budget" and ended at 53% of its budget.
  const double compiles = value_in(current_, "compile") == "on" ? n * compile_s() : 0.0;
  return budget_.alternation_s(arms, n, true) + compiles;
}

double Tuner::fresh_reserve_s() {
  const bool headline = fresh_final_planned();
  return headline_fresh_s() + process_arms_s(headline, headline ? fresh_rounds() : o_.rounds);
}

// The in-process final alternation, arm by arm. Its arms run at their own speeds: the baseline and an arm
// without a kept 7x amp are as slow as they ever were, while the budget's window cost follows the windows run
// lately (the fast configuration's). A simulated 120 s tune's final took 45 s where its 7 arms at the recent
// window cost made 21, and the tune ended at 143 s. Each window also pays for what changed since the arm before
// it (switch_cost.h): from the final to the baseline every kept knob switches, workers spawn again.
double Tuner::baseline_step_s() {
  double base_step = 0;
  int n = 0;
  for (const auto& w : baseline_phase_["start"])
    if (w.steps > 0 && w.wall_s > 0) base_step += w.wall_s / w.steps, ++n;
  return n ? base_step / n : pace_.sec_per_step;
}

double Tuner::final_s(int rounds) {
  const double by_average = budget_.alternation_s(final_arms(), rounds, false);
  if (!(pace_.sec_per_step > 0)) return by_average;
  // The arms in build_arms' order (search_final.cpp), each with its step time.
  std::vector<std::pair<Config, double>> arms;
  if (final_arms() > 1) arms.emplace_back(current_, pace_.sec_per_step);
  arms.emplace_back(baseline_, baseline_step_s());
  const bool compiled = value_in(current_, "compile") == "on";
  if (final_arms() > 2)
    for (const auto& k : kept_) {
      if (!all_fresh() && process_knob(k.change.knob)) continue;
      Config without = without_kept(k.change);
      // An arm that would compile again runs only if the hard end pays for it (build_arms): not planned.
      if (compiled && (k.change.knob == "amp" || k.change.knob == "channels_last") &&
          !compiled_variants_.count(compile_variant(without)))
        continue;
      arms.emplace_back(std::move(without),
                        pace_.sec_per_step * (std::isfinite(k.ratio) && k.ratio > 0 ? k.ratio : 1.0));
    }
  if (switches_.any_switch()) return alternation_estimate_s(arms, rounds);
  // No switch measured yet: every window pays what the recent ones paid beside their steps.
  const double steps = pace_.warmup_est + pace_.window;
  const double overhead = std::max(0.0, budget_.window_s() - steps * pace_.sec_per_step);  // apply, switching
  double per_round = 0;
  for (const auto& a : arms) per_round += overhead + steps * a.second;
  return std::max(by_average, rounds * per_round);
}

double Tuner::alternation_estimate_s(const std::vector<std::pair<Config, double>>& arms, int rounds) {
  // The rounds' order (alternation.h run_round): round r runs the arms from arm r mod n on, so each window
  // follows another arm, or the same one where a round ends with the arm the next begins with (two arms).
  const size_t n_arms = arms.size();
  double total = 0;
  const Config* prev = last_window_.empty() ? nullptr : &last_window_;
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < n_arms; ++i) {
      const auto& [config, step_s] = arms[(r + i) % n_arms];
      total += (prev ? switches_.estimate(*prev, config, step_s) : 0.0) + pace_.window * step_s;
      prev = &config;
    }
  return total;
}

Config Tuner::without_kept(const Change& kc, std::vector<std::string>* taken) {
  Config c = current_;
  for (const auto& [k, v] : kc.delta) c[k] = baseline_.at(k);
  for (const auto& dep : dependents(kc.knob))
    if (c.count(dep) && c[dep] != baseline_.at(dep)) {
      c[dep] = baseline_.at(dep);
      if (taken) taken->push_back(dep);
    }
  return c;
}

Tuner::Reserve Tuner::reserve_parts(bool with_fresh) {
  if (finals_.done) return {};
  const double r = final_s(o_.rounds);
  int fresh_arms = 0;
  const bool fresh = with_fresh && fresh_final_planned();
  double f = fresh ? headline_fresh_s(&fresh_arms) : 0.0;
  // The arms of the process knobs the plan's pass covered, held like the headline (the share cap is the
  // headline's: these arms are the search's trials of those knobs), and dropped first when they no longer fit.
  double p = with_fresh ? process_arms_s(fresh, fresh ? fresh_rounds() : o_.rounds) : 0.0;
  if (p > 0 && !budget_.may_finish(elapsed(), Reserve{r, f + p}.held())) p = 0;
  // A fresh final that no longer fits beside the in-process one even if nothing more ran will not run (the
  // headline is then this process's, and says so): it holds nothing back. A simulated script tune reserved a
  // 152 s fresh final it could never afford, skipped prefetch "for budget" and ended with 32 s unused.
  if (f > 0 && !budget_.may_finish(elapsed(), Reserve{r, f + p}.held())) f = 0;
  return {r, f + p, (f > 0 ? fresh_arms : 0) + (p > 0 ? static_cast<int>(process_planned_.size()) : 0)};
}

double Tuner::process_arms_s(bool headline, int rounds) {
  int n = 0;
  for (const auto& id : process_planned_)
    if (!process_arm(id).value.empty()) ++n;
  if (n == 0 || rounds <= 0) return 0.0;
  // Without a planned headline the final's alternation is these arms and the baseline's (the final's too once
  // a change is kept: a process knob is measured on top of the winners).
  const int arms = headline ? n : n + (current_ != baseline_ ? 2 : 1);
  const double compiles = value_in(current_, "compile") == "on" ? n * rounds * compile_s() : 0.0;
  return budget_.alternation_s(arms, rounds, true) + compiles;
}

// The final's windows switch configuration every time (a warm-up each), and a drop may need one more check.
double Tuner::reserve_s(bool with_fresh) { return reserve_parts(with_fresh).held(); }

// A window is a number of steps: a batch twice as large makes each of its steps, and so every window of a
// configuration that has it, about twice as long. A simulated 120 s tune kept batch 256 from 128 at 61% of its
// budget, its final's nine arms then needed 57 s where 29 had been held, and it ended at 128 s.
double Tuner::step_scale(const std::string& knob, const std::string& value) {
  if (knob != "batch_size") return 1.0;
  try {
    const double from = std::stod(value_in(current_, knob)), to = std::stod(value);
    return from > 0 && to > from ? to / from : 1.0;
  } catch (const std::exception&) {
    return 1.0;
  }
}

bool Tuner::fits(const std::string& knob, const std::string& value, bool fresh) {
  const double need = trial_cost_s(knob, fresh);
  // As if it were kept: one more arm in the final, and the first kept change brings the fresh final with it;
  // a larger batch's arms then run longer steps (its in-process final: a fresh final's windows are mostly the
  // process's start). Estimated once, and only for such a change: the finals' estimate walks every arm's switch.
  const double longer = step_scale(knob, value);
  const double longer_s = longer > 1 ? (longer - 1) * reserve_parts(false).in_process * kReserveMargin : 0.0;
  double reserve = reserve_if_kept_s() + longer_s;
  if (current_ == baseline_ && measured_under_other_allocator() && !all_fresh() && !no_fresh_processes_) {
    const double fresh_cost = budget_.alternation_s(2, o_.rounds, true);
    const double with_alloc = budget_.alternation_s(planned_fresh_arms(), o_.rounds, true);
    const double before = reserve;
    if (budget_.affordable_share(with_alloc, o_.max_fresh_share)) reserve += with_alloc;
    else if (budget_.affordable_share(fresh_cost, o_.max_fresh_share)) reserve += fresh_cost;
    // The planned process arms were held beside a baseline arm of their own: with the headline they share its.
    if (reserve > before)
      reserve -= kFreshMargin * (process_arms_s(false, o_.rounds) - process_arms_s(true, o_.rounds));
  }
  if (budget_.fits_trial(elapsed(), need, reserve)) return true;
  // While nothing is kept, a trial that fits beside the in-process final runs, even where the fresh-process
  // headline's reserve does not fit beside it: a script's fresh processes (python, torch, the script's set-up:
  // 5-20 s each) once held back every knob of a 120 s tune, which then ended at 57 s having tried none. Once a
  // change is kept, its confirmation is reserved again and later trials must fit beside it; a confirmation the
  // budget no longer pays for is this process's final, said.
  const double in_process = reserve_if_kept_s(false) + longer_s;
  if (current_ == baseline_ && budget_.fits_trial(elapsed(), need, in_process)) {
    if (!finals_.fresh_unreserved)
      res_.notes.push_back("from " + label(knob, value) + " on, trials use the time a fresh-process headline (~" +
                           fmt(reserve - in_process, 0) + " s) would need: a result is checked in fresh processes "
                           "only if the budget still pays for it at the end");
    finals_.fresh_unreserved = true;
    return true;
  }
  // The binding reserve is what the message says the end needed: with a change kept, the whole of it (the
  // fresh-process headline too). It had said the in-process final's alone, "161 s were left and the final
  // needed ~40 s", where the fresh processes held ~115 s more.
  const bool whole = current_ != baseline_;
  defer(knob, value, need, whole ? reserve : in_process, whole ? reserve - in_process : 0.0);
  return false;
}

}  // namespace tb::engine::search
