// The search of engine/tuner.h: calibrate, noise floor, process knobs, screen, accumulate, revisit, final.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "engine/tuner.h"

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

namespace {

std::string fmt(double v, int prec = 3) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(prec);
  s << v;
  return s.str();
}

std::string pct(double v, int prec = 1) { return fmt(100 * v, prec) + "%"; }

std::string config_key(const Config& c) {
  std::string k;
  for (const auto& [a, b] : c) k += a + "=" + b + ";";
  return k;
}

bool parse_int(const std::string& s, int64_t& out) {
  try {
    size_t pos = 0;
    long long v = std::stoll(s, &pos);
    if (pos != s.size()) return false;
    out = v;
    return true;
  } catch (...) {
    return false;
  }
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  size_t n = 0;
  for (double x : v) {
    if (!std::isfinite(x)) return std::nan("");
    s += x;
    ++n;
  }
  return n ? s / static_cast<double>(n) : std::nan("");
}

// Knobs that address each kind of bottleneck, tried first in the revisit phase (DESIGN.md findings map).
const std::map<std::string, std::vector<std::string>>& remedies() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"loader", {"workers", "prefetch", "pin_memory", "non_blocking", "fp32_preprocess", "intra_op_threads"}},
      {"h2d", {"pin_memory", "non_blocking", "prefetch"}},
      {"launch", {"cuda_graphs", "batch_size", "fused_pointwise", "fused_optimizer", "zero_grad_none"}},
      {"sync", {"sync_free_logging", "cuda_graphs"}},
      {"compute", {"amp", "tf32", "channels_last", "cudnn_benchmark", "anomaly_detection", "fused_pointwise",
                   "conv_bias_before_bn", "batch_size", "intra_op_threads"}},
  };
  return m;
}

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

  TuneResult run() {
    t0_ = w_.now_s();
    res_.budget_s = o_.budget_s;
    res_.environment = w_.describe();
    res_.knobs = w_.knobs();
    for (const auto& k : res_.knobs) {
      order_.push_back(k.info.id);
      knobs_[k.info.id] = k;
    }
    baseline_ = w_.baseline();
    res_.baseline = baseline_;
    calibrate();
    noise_floor_phase();
    process_phase(/*primary=*/true);
    screen();
    accumulate();
    if (o_.revisit) revisit();
    process_phase(/*primary=*/false);
    final_phase();
    summarize();
    res_.elapsed_s = w_.now_s() - t0_;
    progress("done", "tuning finished: " + summary_line(), 1.0);
    return std::move(res_);
  }

 private:
  // ----- helpers -----------------------------------------------------------------------------------
  double elapsed() { return w_.now_s() - t0_; }
  double left() { return o_.budget_s - elapsed(); }

  void progress(const std::string& phase, const std::string& msg, double frac = -1) {
    if (!o_.progress) return;
    if (frac < 0) {
      double by_time = o_.budget_s > 0 ? elapsed() / o_.budget_s : 0;
      double by_plan = planned_trials_ > 0 ? static_cast<double>(res_.trials.size()) / planned_trials_ : 0;
      frac = std::min(0.99, std::max(by_time, by_plan));
    }
    o_.progress(TuneProgress{phase, msg, frac});
  }

  Config final_config() const {
    Config c = current_;
    for (const auto& [k, v] : process_choice_) c[k] = v;
    return c;
  }

  std::string summary_line() {
    std::string s;
    const Config f = final_config();
    auto ch = changed_knobs(baseline_, f);
    if (ch.empty()) return "no change beat the baseline";
    for (const auto& k : ch) s += (s.empty() ? "" : ", ") + k + "=" + f.at(k);
    if (res_.speedup.valid())
      s += " -> " + fmt(res_.speedup.ratio, 2) + "x [" + fmt(res_.speedup.lo, 2) + ", " + fmt(res_.speedup.hi, 2) + "]";
    return s;
  }

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

  Ladder ladder_of(const KnobInfo& info) {
    if (info.type != KnobType::Int) return Ladder::None;
    if (info.id == "workers") return Ladder::Workers;
    if (info.id == "batch_size" || info.id == "prefetch") return Ladder::Doubling;
    return Ladder::None;
  }

  // Next value above `from` on the knob's ladder, or nullopt at the end.
  std::optional<std::string> ladder_next(const KnobInfo& info, const std::string& from) {
    int64_t v = 0;
    if (!parse_int(from, v)) return std::nullopt;
    int64_t next = 0, cap = 0;
    if (info.id == "workers") {
      cap = std::max(1, w_.cpu_cores());
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
    if (oom_floor_.count(info.id) && next >= oom_floor_[info.id]) return std::nullopt;
    return std::to_string(next);
  }

  // The candidates of one ladder rung from `ref`. Loader workers and intra-op threads share the cores, so a
  // workers rung is tried with the threads it leaves (auto) and, where that differs, with every core.
  std::vector<Change> rung(const Config& ref, const std::string& id, const std::string& next) {
    std::vector<Change> out;
    Change c;
    c.delta[id] = next;
    c.knob = id;
    c.value = next;
    // The first workers also keep their processes between epochs: without it every epoch starts (forks) its
    // workers again, which on a short epoch costs more than the parallel decoding gains (measured on a script
    // with 8 steps per epoch: workers=1 alone 0.55x). It costs nothing else (the workers' memory stays).
    if (id == "workers" && value_in(ref, "workers") == "0" && has_knob("persistent_workers") &&
        value_in(ref, "persistent_workers") != "on") {
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
      if (std::max<int64_t>(1, cores - w) != cores) {
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
  std::vector<std::string> plain_values(const KnobState& k, const std::string& from) {
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
    if (info.type == KnobType::Int) {
      if (!info.recommended_value.empty() && info.recommended_value != from) out.push_back(info.recommended_value);
      return out;
    }
    std::vector<std::string> choices = info.choices;
    if (choices.empty() && info.type == KnobType::Bool) choices = {"off", "on"};
    for (const auto& c : choices)
      if (c != from && std::find(unavailable.begin(), unavailable.end(), c) == unavailable.end()) out.push_back(c);
    return out;
  }

  // Why a knob is not worth a trial in configuration `c` (nullopt: worth one). Saves budget for trials that
  // can pay: a switch already at its recommended value, a queue depth with no worker to fill it, and
  // activation checkpointing, which trades speed for memory and only pays by enabling a bigger batch.
  std::optional<std::string> not_worth(const KnobInfo& info, const Config& c) {
    if (info.type == KnobType::Bool && !info.recommended_value.empty() && value_in(c, info.id) == info.recommended_value)
      return "already at the recommended value (" + info.recommended_value + ")";
    if ((info.id == "prefetch" || info.id == "persistent_workers") && knobs_.count("workers") &&
        value_in(c, "workers") == "0")
      return info.id + " only matters with workers > 0" +
             (info.process_scope ? std::string() : std::string(" (tried again once workers are kept)"));
    if (info.id == "checkpointing") return "trades speed for memory; it pays only through a batch size that does not fit";
    return std::nullopt;
  }

  static std::string value_in(const Config& c, const std::string& k) {
    auto it = c.find(k);
    return it == c.end() ? std::string() : it->second;
  }

  double step_cost_s() { return sec_per_step_ > 0 ? sec_per_step_ : 0.05; }
  double window_cost_s() { return (warmup_est_ + window_) * step_cost_s() + apply_s_; }

  double trial_cost_s(const std::string& knob) {
    double c = 2.0 * o_.rounds * window_cost_s();
    if (numerics(knob)) c += probe_s_ > 0 ? probe_s_ : o_.probe_steps * step_cost_s() * 2;
    return c;
  }
  double fresh_trial_cost_s() { return 2.0 * o_.rounds * (window_cost_s() + process_start_s_); }
  // The final alternation: baseline, final and final-without-each-kept-knob arms, `rounds` times, and the
  // fresh-process headline when a process knob is kept.
  double final_cost_s(int extra_arms = 1) {
    const int arms = 2 + static_cast<int>(kept_.size()) + extra_arms;
    double c = arms * o_.rounds * window_cost_s();
    if (!process_choice_.empty()) c += fresh_trial_cost_s();
    return c;
  }

  // A process-knob trial and the fresh-process headline it would add to the final.
  bool fits_fresh(const std::string& knob, const std::string& value) {
    const double need = 2 * fresh_trial_cost_s() + final_cost_s();
    if (need <= left()) return true;
    res_.skipped.push_back({knob, value, "budget: fresh-process trials need ~" + fmt(2 * fresh_trial_cost_s(), 0) +
                                             " s with their final check, " +
                                             fmt(std::max(0.0, left() - final_cost_s()), 0) + " s left"});
    progress(phase_, "skipped " + label(knob, value) + " (budget)");
    return false;
  }

  bool fits(const std::string& knob, const std::string& value) {
    double need = trial_cost_s(knob) + final_cost_s();
    if (need <= left()) return true;
    res_.skipped.push_back({knob, value, "budget: needs ~" + fmt(trial_cost_s(knob), 0) + " s, " +
                                              fmt(std::max(0.0, left() - final_cost_s()), 0) +
                                              " s left before the final alternation"});
    progress(phase_, "skipped " + label(knob, value) + " (budget)");
    return false;
  }

  void take_snapshot(const std::string& lbl) {
    if (o_.snapshot_steps <= 0) return;
    try {
      w_.apply(current_);
      auto s = w_.snapshot(o_.snapshot_steps);
      if (!s) return;
      s->label = lbl;
      s->config = current_;
      last_bottleneck_ = s->bottleneck;
      res_.snapshots.push_back(std::move(*s));
    } catch (const TrialFailure& f) {
      res_.notes.push_back("snapshot '" + lbl + "' failed: " + std::string(f.what()));
    }
  }

  // Loss-drift guard: candidate vs baseline over the same seeded batches. Returns the relative drift
  // (positive = worse), NaN when a probe diverged. Throws TrialFailure when a probe cannot run.
  double loss_drift(const Config& cand) {
    double t = w_.now_s();
    if (!baseline_loss_) baseline_loss_ = mean_of(w_.loss_probe(baseline_, o_.probe_steps));
    double c = mean_of(w_.loss_probe(cand, o_.probe_steps));
    probe_s_ = (w_.now_s() - t);
    double b = *baseline_loss_;
    if (!std::isfinite(b) || !std::isfinite(c)) return std::nan("");
    return (c - b) / std::max(std::fabs(b), 1e-12);
  }

  void note_baseline(const std::string& phase, const measure::Window& w) {
    if (!(w.throughput() > 0)) return;
    baseline_phase_[phase].push_back(w);
    res_.baseline_windows.push_back(w);
  }

  // One window of `config`: in this process (apply + measure) or in a fresh process.
  measure::Window window_of(const Config& config, bool fresh) {
    if (fresh) {
      const double t = w_.now_s();
      auto m = w_.measure_fresh(config, window_);
      if (!m) throw TrialFailure("this workload cannot start fresh processes", false);
      const double spent = w_.now_s() - t;
      process_start_s_ = 0.5 * process_start_s_ + 0.5 * std::max(0.0, spent - m->wall_s);
      return *m;
    }
    const double ta = w_.now_s();
    w_.apply(config);
    apply_s_ = 0.7 * apply_s_ + 0.3 * (w_.now_s() - ta);
    measure::Window m = w_.measure(window_);
    if (m.steps > 0 && m.wall_s > 0) sec_per_step_ = 0.8 * sec_per_step_ + 0.2 * (m.wall_s / m.steps);
    warmup_est_ = 0.7 * warmup_est_ + 0.3 * m.warmup_steps;
    return m;
  }

  // Classifies a measured ratio: gain only beyond the interval, the minimum gain and (in process) the noise
  // floor's band.
  void classify(Trial& t, bool use_floor) {
    const auto& e = t.estimate;
    const std::string ci = fmt(e.ratio, 3) + "x [" + fmt(e.lo, 3) + ", " + fmt(e.hi, 3) + "]";
    const double band = use_floor && res_.noise_floor.valid() ? res_.noise_floor.band(e.pairs, o_.confidence) : 0.0;
    const double threshold = std::max(o_.min_gain, std::isfinite(band) ? band : 0.0);
    if (!e.valid()) {
      t.outcome = "failed";
      t.reason = "no valid measurement (" + std::to_string(e.pairs) + " usable pairs)";
    } else if (e.faster() && e.ratio - 1.0 >= threshold) {
      t.outcome = "gain";
      t.accepted = true;
      t.reason = "faster: " + ci;
    } else if (e.slower() && 1.0 - e.ratio >= threshold) {
      t.outcome = "slower";
      t.reason = "slower: " + ci;
    } else {
      t.outcome = "no effect";
      if (e.no_effect()) t.reason = "no effect: the interval " + ci + " covers 1";
      else if (band > o_.min_gain)
        t.reason = "no effect: " + ci + " is inside the noise floor (±" + pct(band) + " for one trial here)";
      else t.reason = "no effect: " + ci + " is below the " + fmt(o_.min_gain * 100, 0) + "% threshold";
    }
  }

  // ----- one A/B trial -----------------------------------------------------------------------------
  Trial trial(const std::string& phase, const Config& ref, const std::string& ref_label, const Change& change,
              const Config& cand, bool fresh = false) {
    Trial t;
    t.phase = phase;
    t.knob = change.knob;
    t.value = change.value;
    t.also = change.also;
    t.from = value_in(ref, change.knob);
    t.reference = ref_label;
    t.window = window_;
    t.rounds = o_.rounds;
    t.fresh_processes = fresh;
    const double start = w_.now_s();
    tried_.insert(config_key(ref) + "|" + config_key(cand));
    progress(phase, change.knob.empty() ? phase + ": baseline vs tuned configuration"
                                        : phase + ": " + label(change) + " vs " + ref_label);
    const bool ref_is_baseline = !fresh && config_key(ref) == config_key(baseline_);
    for (int r = 0; r < o_.rounds; ++r) {
      // AB, BA, AB...: a linear drift cancels within a pair.
      for (int side = 0; side < 2; ++side) {
        const bool is_ref = (side == 0) == (r % 2 == 0);
        try {
          measure::Window m = window_of(is_ref ? ref : cand, fresh);
          (is_ref ? t.a : t.b).push_back(m);
          if (is_ref && ref_is_baseline) note_baseline(phase, m);
        } catch (const TrialFailure& f) {
          if (is_ref) {
            // The reference ran before; failing now is a workload fault, not the knob's.
            t.outcome = "failed";
            t.reason = std::string("reference configuration failed: ") + f.what();
          } else {
            t.outcome = f.oom ? "oom" : "failed";
            t.reason = (f.oom ? std::string("out of memory: ") : std::string("could not run: ")) + f.what();
            if (f.oom && !change.knob.empty()) {
              int64_t v = 0;
              if (parse_int(change.value, v) && (!oom_floor_.count(change.knob) || v < oom_floor_[change.knob]))
                oom_floor_[change.knob] = v;
            }
            failed_.insert(label(change));
            if (!fresh) try {
                w_.apply(ref);
              } catch (const TrialFailure&) {
              }
          }
          const size_t n = std::min(t.a.size(), t.b.size());
          t.a.resize(n);
          t.b.resize(n);
          t.seconds = w_.now_s() - start;
          return t;
        }
      }
    }
    // Only complete pairs count (a window without its partner carries drift, not the knob).
    const size_t n = std::min(t.a.size(), t.b.size());
    t.a.resize(n);
    t.b.resize(n);
    t.before = measure::pooled_throughput(t.a);
    t.after = measure::pooled_throughput(t.b);
    t.estimate = measure::paired_ratio(t.a, t.b, fresh ? nullptr : &res_.noise_floor, o_.confidence);
    classify(t, !fresh);
    const std::string ci = fmt(t.estimate.ratio, 3) + "x [" + fmt(t.estimate.lo, 3) + ", " + fmt(t.estimate.hi, 3) + "]";
    // The loss-drift guard: only for a change that may alter numerics and would otherwise be kept.
    bool guard = false;
    for (const auto& k : changed_knobs(ref, cand)) guard = guard || numerics(k);
    guard = guard && t.accepted;
    if (guard && !w_.has_loss_probe()) {
      guard = false;
      t.reason += "; the loss was not checked (no seeded replay of a script's batches): watch its convergence";
    }
    if (guard) {
      try {
        double d = loss_drift(cand);
        t.loss_drift = d;
        if (!std::isfinite(d)) {
          t.accepted = false;
          t.outcome = "drift";
          t.reason = "loss diverged (non-finite) over the probe batches; speed " + ci;
        } else if (d > o_.drift_tolerance) {
          t.accepted = false;
          t.outcome = "drift";
          t.reason = "loss drift " + fmt(d * 100, 1) + "% exceeds the " + fmt(o_.drift_tolerance * 100, 0) +
                     "% tolerance; speed " + ci;
        } else {
          t.reason += "; loss drift " + fmt(d * 100, 1) + "% within " + fmt(o_.drift_tolerance * 100, 0) + "%";
        }
      } catch (const TrialFailure& f) {
        t.accepted = false;
        t.outcome = f.oom ? "oom" : "failed";
        t.reason = std::string("loss probe failed: ") + f.what();
      }
      if (!t.accepted) failed_.insert(label(change));
    }
    t.seconds = w_.now_s() - start;
    return t;
  }

  Trial& record(Trial t) {
    // Slower alone from the baseline: not worth revisiting (a chance "slower" later on is not held against it).
    if (t.outcome == "slower" && t.phase == "screen" && !t.knob.empty()) slower_.insert(label(t.knob, t.value) + t.also);
    progress(phase_, (t.knob.empty() ? t.phase : label(t.knob, t.value)) + ": " + t.reason);
    res_.trials.push_back(std::move(t));
    return res_.trials.back();
  }

  // ----- phases ------------------------------------------------------------------------------------
  void calibrate() {
    phase_ = "calibrate";
    progress(phase_, "measuring the step time (for the plan only)", 0.0);
    current_ = baseline_;
    double t = w_.now_s();
    w_.apply(baseline_);  // a failure here is fatal: nothing to tune against
    apply_s_ = w_.now_s() - t;
    t = w_.now_s();
    window_ = std::max(2, o_.min_window);
    measure::Window m = w_.measure(window_);
    const double spent = w_.now_s() - t;
    sec_per_step_ = m.steps > 0 && m.wall_s > 0 ? m.wall_s / m.steps : spent / std::max(1, m.steps + m.warmup_steps);
    warmup_est_ = m.warmup_steps;

    // Plan: screening candidates + about as many again for accumulation and revisits, the A/A pairs, the
    // process knobs and the final alternation.
    int n = 0;
    for (const auto& id : order_) {
      const auto& k = knobs_[id];
      if (!eligible(k, false) || not_worth(k.info, baseline_)) continue;
      Ladder l = ladder_of(k.info);
      n += l == Ladder::None ? static_cast<int>(plain_values(k, baseline_[id]).size()) : 2;
    }
    planned_trials_ = 2 * n + 3;
    const double windows = 2.0 * o_.rounds * planned_trials_ + 2.0 * o_.aa_rounds;
    const double per_window = (o_.budget_s * 0.9 - elapsed()) / windows - apply_s_;
    const int win = static_cast<int>(std::floor(per_window / std::max(sec_per_step_, 1e-9) - warmup_est_));
    const int shortest = std::min(o_.max_window, std::max(o_.min_window, static_cast<int>(std::ceil(
                                                                             o_.min_window_s / std::max(sec_per_step_, 1e-9)))));
    window_ = std::clamp(win, shortest, std::max(shortest, o_.max_window));
    res_.window = window_;
    res_.notes.push_back("plan: " + std::to_string(n) + " screening trials, ~" + std::to_string(planned_trials_) +
                         " trials in all, each " + std::to_string(o_.rounds) + " pairs of windows (AB, BA, ...) of " +
                         std::to_string(window_) + " measured steps after a warm-up until stable (" +
                         std::to_string(m.warmup_steps) + " steps at the start); " + fmt(sec_per_step_ * 1000, 1) +
                         " ms/step at the baseline");
    if (win < shortest)
      res_.notes.push_back("the budget is tight for this many knobs: trials use the shortest window (" +
                           std::to_string(shortest) + " steps, at least " + fmt(o_.min_window_s, 1) +
                           " s) and the lowest-priority ones may be skipped");
    progress(phase_, res_.notes.back());
  }

  // The baseline against itself, measured like a trial: the spread of a pair's log ratio on this machine.
  void noise_floor_phase() {
    phase_ = "noise floor";
    // At most ~15% of the budget, and never fewer than 2 pairs (one pair has no spread).
    const int aa = std::clamp(static_cast<int>(0.15 * o_.budget_s / (2 * window_cost_s())), 2, std::max(2, o_.aa_rounds));
    progress(phase_, "A/A: the baseline against itself (" + std::to_string(aa) + " pairs)");
    Trial t;
    t.phase = phase_;
    t.value = "baseline vs baseline (A/A)";
    t.reference = "baseline";
    t.window = window_;
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

  // Knobs that take effect at process start, each value in fresh processes against the baseline. Fresh
  // processes are expensive (start-up, model build): the primary pass tries each knob's recommended value
  // only; the other values come after the revisit, with what is left of the budget.
  void process_phase(bool primary) {
    phase_ = "process";
    for (const auto& id : order_) {
      const auto& k = knobs_[id];
      if (!k.info.process_scope || !eligible(k, primary)) continue;
      if (auto why = not_worth(k.info, final_config()); why) {
        if (primary) res_.skipped.push_back({id, "", *why});
        continue;
      }
      if (primary)
        for (const auto& v : k.applicability.unavailable_values)
          res_.skipped.push_back({id, v, k.applicability.reason.empty() ? "unavailable here" : k.applicability.reason});
      if (!primary && no_fresh_processes_) break;
      std::optional<size_t> best;
      for (size_t i = 0; i < res_.trials.size(); ++i)
        if (res_.trials[i].phase == "process" && res_.trials[i].knob == id && res_.trials[i].accepted) best = i;
      std::vector<std::string> values;
      for (const auto& v : plain_values(k, baseline_[id]))
        if ((v == k.info.recommended_value) == primary) values.push_back(v);
      if (primary && values.empty()) values = plain_values(k, baseline_[id]);  // no recommended: all now
      for (const auto& v : values) {
        if (!fits_fresh(id, v)) break;
        Config cand = baseline_;
        cand[id] = v;
        Change c;
        c.delta[id] = v;
        c.knob = id;
        c.value = v;
        Trial& t = record(trial(phase_, baseline_, "baseline", c, cand, /*fresh=*/true));
        if (t.outcome == "failed" && t.reason.find("cannot start fresh processes") != std::string::npos) {
          res_.trials.pop_back();
          res_.skipped.push_back({id, "", "takes effect at process start and this workload cannot start processes"});
          no_fresh_processes_ = true;
          break;
        }
        const size_t i = res_.trials.size() - 1;
        if (res_.trials[i].accepted && (!best || res_.trials[i].estimate.ratio > res_.trials[*best].estimate.ratio)) {
          if (best) res_.trials[*best].accepted = false;
          best = i;
        } else if (res_.trials[i].accepted) {
          res_.trials[i].accepted = false;
          res_.trials[i].reason += "; " + label(id, res_.trials[*best].value) + " was faster";
        }
      }
      auto chosen = process_choice_.find(id);
      if (best && (chosen == process_choice_.end() || chosen->second != res_.trials[*best].value)) {
        process_choice_[id] = res_.trials[*best].value;
        for (size_t i = kept_.size(); i-- > 0;)
          if (kept_[i].knob == id) {
            kept_.erase(kept_.begin() + long(i));
            kept_trial_.erase(kept_trial_.begin() + long(i));
            kept_ratio_.erase(kept_ratio_.begin() + long(i));
          }
        // Process knobs first in the waterfall: they apply before anything else runs.
        kept_.insert(kept_.begin(), {{{id, res_.trials[*best].value}}, id, res_.trials[*best].value, ""});
        kept_trial_.insert(kept_trial_.begin(), *best);
        kept_ratio_.insert(kept_ratio_.begin(), res_.trials[*best].estimate.ratio);
      }
    }
  }

  bool eligible(const KnobState& k, bool record_skip) {
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

  struct Winner {
    Change change;
    double gain = 1;
  };

  static Config with(Config c, const Config& delta) {
    for (const auto& [k, v] : delta) c[k] = v;
    return c;
  }

  void screen() {
    phase_ = "screen";
    for (const auto& id : order_) {
      const auto& k = knobs_[id];
      if (k.info.process_scope) continue;
      if (!eligible(k, true)) continue;
      if (auto why = not_worth(k.info, baseline_)) {
        res_.skipped.push_back({id, "", *why});
        continue;
      }
      const std::string base_v = baseline_[id];
      ++screened_knobs_;
      Ladder l = ladder_of(k.info);
      if (l != Ladder::None) {
        // Climb from the baseline value; each rung is measured against the previous winning rung.
        Config ref = baseline_;
        std::string ref_label = "baseline";
        double gain = 1;
        std::optional<Change> best;
        std::string from = base_v;
        while (auto next = ladder_next(k.info, from)) {
          std::optional<size_t> won;
          bool stop = false;
          for (const Change& c : rung(ref, id, *next)) {
            if (!fits(id, *next)) {
              stop = true;
              break;
            }
            Trial& t = record(trial(phase_, ref, ref_label, c, with(ref, c.delta)));
            const size_t i = res_.trials.size() - 1;
            if (t.outcome == "oom" || t.outcome == "failed") stop = true;
            if (t.accepted && (!won || t.estimate.ratio > res_.trials[*won].estimate.ratio)) {
              if (won) {
                res_.trials[*won].accepted = false;
                res_.trials[*won].reason += "; " + label(c) + " was faster";
              }
              won = i;
            } else if (t.accepted) {
              t.accepted = false;
              t.reason += "; " + label(res_.trials[*won].knob, res_.trials[*won].value) + " was faster";
            }
          }
          if (!won) {
            // workers: the whole scan up to the core count (one worker can lose to loading inline while two
            // win); the doubling knobs stop at the first rung that does not pay.
            if (l == Ladder::Workers && !stop) {
              from = *next;
              continue;
            }
            break;
          }
          const Trial& wt = res_.trials[*won];
          Change c;
          for (const auto& ch : rung(ref, id, *next))
            if (ch.also == wt.also) c = ch;
          gain *= wt.estimate.ratio;
          ref = with(ref, c.delta);
          best = Change{changed_delta(baseline_, ref), id, *next, c.also};
          ref_label = label(c);
          from = *next;
          if (stop) break;
        }
        if (best) winners_.push_back({*best, gain});
        continue;
      }
      for (const auto& v : k.applicability.unavailable_values)
        res_.skipped.push_back({id, v, k.applicability.reason.empty() ? "unavailable here" : k.applicability.reason});
      auto values = plain_values(k, base_v);
      if (values.empty()) {
        res_.skipped.push_back({id, "", "the recommended value is the baseline's"});
        continue;
      }
      std::optional<size_t> best;
      for (const auto& v : values) {
        if (!fits(id, v)) break;
        Change c;
        c.delta[id] = v;
        c.knob = id;
        c.value = v;
        record(trial(phase_, baseline_, "baseline", c, with(baseline_, c.delta)));
        const size_t i = res_.trials.size() - 1;
        if (res_.trials[i].accepted && (!best || res_.trials[i].estimate.ratio > res_.trials[*best].estimate.ratio))
          best = i;
      }
      if (best) {
        const size_t best_index = *best;
        // Only the best value of an enum stays a winner; the others are noted.
        for (size_t i = res_.trials.size(); i-- > 0;) {
          Trial& t = res_.trials[i];
          if (t.knob != id || t.phase != phase_) break;
          if (i != best_index && t.accepted) {
            t.accepted = false;
            t.reason += "; " + label(id, res_.trials[best_index].value) + " was faster";
          }
        }
        Change c;
        c.delta[id] = res_.trials[best_index].value;
        c.knob = id;
        c.value = res_.trials[best_index].value;
        winners_.push_back({c, res_.trials[best_index].estimate.ratio});
      }
    }
  }

  static Config changed_delta(const Config& base, const Config& c) {
    Config d;
    for (const auto& [k, v] : c)
      if (value_in(base, k) != v) d[k] = v;
    return d;
  }

  void accept(size_t trial_index, const Change& c) {
    current_ = with(current_, c.delta);
    // A later rung of the same knob (workers 1 -> 2) replaces the earlier one: the final alternation checks
    // each kept knob once, at its final value.
    double replaced_ratio = 1;  // the replaced rung's ratio: the new one was measured against it
    for (size_t i = kept_.size(); i-- > 0;)
      if (kept_[i].knob == c.knob) {
        replaced_ratio *= kept_ratio_[i];
        kept_.erase(kept_.begin() + long(i));
        kept_trial_.erase(kept_trial_.begin() + long(i));
        kept_ratio_.erase(kept_ratio_.begin() + long(i));
      }
    kept_.push_back(c);
    kept_trial_.push_back(trial_index);
    kept_ratio_.push_back(replaced_ratio * res_.trials[trial_index].estimate.ratio);
    take_snapshot("+ " + label(c));
  }

  void accumulate() {
    phase_ = "accumulate";
    std::stable_sort(winners_.begin(), winners_.end(), [](const Winner& a, const Winner& b) { return a.gain > b.gain; });
    if (!winners_.empty()) {
      std::string order;
      for (const auto& w : winners_) order += (order.empty() ? "" : ", ") + label(w.change) + " " + fmt(w.gain, 2) + "x";
      res_.notes.push_back("winners of the screening, by gain: " + order);
    }
    for (const auto& win : winners_) {
      if (with(current_, win.change.delta) == current_) continue;
      // The first winner's reference is still the baseline: its screening trial already measured exactly this
      // A/B (same window length), so it is kept on that evidence; the final alternation re-measures it.
      if (current_ == baseline_) {
        bool kept = false;
        for (size_t i = res_.trials.size(); i-- > 0;) {
          const Trial& st = res_.trials[i];
          if (st.phase == "screen" && st.accepted && st.reference == "baseline" && st.knob == win.change.knob &&
              st.value == win.change.value && st.also == win.change.also) {
            progress(phase_, label(win.change) + ": kept on its screening trial (same reference: baseline)");
            accept(i, win.change);
            kept = true;
            break;
          }
        }
        if (kept) continue;
      }
      if (!fits(win.change.knob, win.change.value)) continue;
      const Config cand = with(current_, win.change.delta);
      Trial& t = record(trial(phase_, current_, current_label(), win.change, cand));
      if (t.accepted) accept(res_.trials.size() - 1, win.change);
      else t.reason += " (on top of the accumulated configuration)";
    }
  }

  std::string current_label() {
    auto ch = changed_knobs(baseline_, current_);
    if (ch.empty()) return "baseline";
    std::string s;
    for (const auto& k : ch) s += (s.empty() ? "" : ", ") + label(k, current_[k]);
    return s;
  }

  // Knobs ordered by how well they address the last bottleneck, then catalog order.
  std::vector<std::string> revisit_order() {
    std::vector<std::string> out;
    auto it = remedies().find(last_bottleneck_);
    if (it != remedies().end())
      for (const auto& id : it->second)
        if (knobs_.count(id)) out.push_back(id);
    for (const auto& id : order_)
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    return out;
  }

  void revisit() {
    phase_ = "revisit";
    for (int pass = 0; pass < 3; ++pass) {
      bool changed = false;
      bool out_of_budget = false;
      for (const auto& id : revisit_order()) {
        const auto& k = knobs_[id];
        if (k.info.process_scope || !eligible(k, false)) continue;
        Ladder l = ladder_of(k.info);
        // A switch already changed stays; a value that was slower alone is not retried.
        if (l == Ladder::None && current_[id] != baseline_[id]) continue;
        if (not_worth(k.info, current_)) continue;
        if (l != Ladder::None) {
          const bool full_scan = l == Ladder::Workers;
          std::string from = current_[id];
          while (auto next = ladder_next(k.info, from)) {
            std::optional<size_t> won;
            Change won_change;
            bool stop = false;
            for (const Change& c : rung(current_, id, *next)) {
              const Config cand = with(current_, c.delta);
              if (failed_.count(label(c))) {
                stop = true;
                break;
              }
              if (tried_.count(config_key(current_) + "|" + config_key(cand))) continue;
              if (!fits(id, *next)) {
                out_of_budget = stop = true;
                break;
              }
              Trial& t = record(trial(phase_, current_, current_label(), c, cand));
              const size_t i = res_.trials.size() - 1;
              if (t.outcome == "oom" || t.outcome == "failed") stop = true;
              if (t.accepted && (!won || t.estimate.ratio > res_.trials[*won].estimate.ratio)) {
                if (won) res_.trials[*won].accepted = false;
                won = i;
                won_change = c;
              } else if (t.accepted) {
                t.accepted = false;
              }
            }
            if (!won) {
              if (!full_scan || stop) break;
              from = *next;
              continue;
            }
            accept(*won, won_change);
            changed = true;
            from = *next;
            if (stop) break;
          }
        } else {
          std::optional<size_t> best;
          Change best_change;
          for (const auto& v : plain_values(k, current_[id])) {
            Change c;
            c.delta[id] = v;
            c.knob = id;
            c.value = v;
            const Config cand = with(current_, c.delta);
            if (failed_.count(label(id, v)) || slower_.count(label(id, v)) ||
                tried_.count(config_key(current_) + "|" + config_key(cand)))
              continue;
            if (!fits(id, v)) {
              out_of_budget = true;
              break;
            }
            record(trial(phase_, current_, current_label(), c, cand));
            const size_t i = res_.trials.size() - 1;
            if (!res_.trials[i].accepted) continue;
            if (!best || res_.trials[i].estimate.ratio > res_.trials[*best].estimate.ratio) {
              if (best) {
                res_.trials[*best].accepted = false;
                res_.trials[*best].reason += "; " + label(id, v) + " was faster";
              }
              best = i;
              best_change = c;
            } else {
              res_.trials[i].accepted = false;
              res_.trials[i].reason += "; " + label(id, res_.trials[*best].value) + " was faster";
            }
          }
          if (best) {
            accept(*best, best_change);
            changed = true;
          }
        }
        if (out_of_budget) break;
      }
      if (!changed || out_of_budget) break;
    }
  }

  // The final alternation: round-robin over the baseline, the final configuration and the final
  // configuration without each kept in-process knob (dozens of trials ran; one lucky window must not decide
  // what the user keeps). Kept knobs that do not hold are dropped; then the headline is measured.
  void final_phase() {
    phase_ = "final";
    std::vector<size_t> inproc;  // indices into kept_ of in-process knobs
    for (size_t i = 0; i < kept_.size(); ++i)
      if (!process_knob(kept_[i].knob)) inproc.push_back(i);
    if (left() < final_cost_s(0) * 0.8)
      res_.notes.push_back("the final alternation ran past the budget (it is never skipped)");

    if (!inproc.empty()) {
      struct Arm {
        std::string name;
        Config config;
        std::vector<measure::Window> windows;
      };
      std::vector<Arm> arms;
      arms.push_back({"final", current_, {}});
      arms.push_back({"baseline", baseline_, {}});
      if (inproc.size() > 1)  // with one kept knob, "final without it" is the baseline arm
        for (size_t i : inproc) {
          Config c = current_;
          for (const auto& [k, v] : kept_[i].delta) c[k] = baseline_.at(k);
          arms.push_back({"without " + label(kept_[i]), c, {}});
        }
      progress(phase_, "final alternation: " + std::to_string(arms.size()) + " configurations, " +
                           std::to_string(o_.rounds) + " rounds");
      const double start = w_.now_s();
      bool failed = false;
      std::string failure;
      for (int r = 0; r < o_.rounds && !failed; ++r) {
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
        for (size_t i = kept_.size(); i-- > 0;)
          if (!process_knob(kept_[i].knob)) {
            kept_.erase(kept_.begin() + long(i));
            kept_trial_.erase(kept_trial_.begin() + long(i));
            kept_ratio_.erase(kept_ratio_.begin() + long(i));
          }
      } else {
        auto rounds_of = [&](const Arm& x, const Arm& y, std::vector<measure::Window>& a, std::vector<measure::Window>& b) {
          const size_t n = std::min(x.windows.size(), y.windows.size());
          a.assign(x.windows.begin(), x.windows.begin() + long(n));
          b.assign(y.windows.begin(), y.windows.begin() + long(n));
        };
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
          t.rounds = o_.rounds;
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
        head.rounds = o_.rounds;
        rounds_of(arms[1], arms[0], head.a, head.b);
        if (!dropped.empty()) {
          for (size_t i : dropped)
            for (const auto& [k, v] : kept_[i].delta) current_[k] = baseline_.at(k);
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
            if (a.config == current_) same = &a;
          if (same) {
            rounds_of(arms[1], *same, head.a, head.b);
          } else if (current_ != baseline_) {
            Change all;
            all.delta = changed_delta(baseline_, current_);
            Trial again = trial(phase_, baseline_, "baseline", all, current_);
            head.a = again.a;
            head.b = again.b;
          }
        }
        if (current_ != baseline_) {
          head.before = measure::pooled_throughput(head.a);
          head.after = measure::pooled_throughput(head.b);
          head.estimate = measure::paired_ratio(head.a, head.b, &res_.noise_floor, o_.confidence);
          classify(head, true);
          head.accepted = false;
          head.value = "all kept knobs (in this process)";
          head.reason = "final vs baseline (in this process): " + head.reason;
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

    // The headline in fresh processes when a process knob changed: what a user gets who starts the training
    // with these settings, against the naive start.
    if (!process_choice_.empty()) {
      Change all;
      all.delta = changed_delta(baseline_, final_config());
      all.value = "";
      Trial t = trial(phase_, baseline_, "baseline", all, final_config(), /*fresh=*/true);
      t.value = "all kept knobs (fresh processes)";
      if (t.estimate.valid()) {
        res_.speedup = t.estimate;
        res_.speedup_fresh_processes = true;
        res_.baseline_throughput = t.before;
        res_.final_throughput = t.after;
      }
      if (t.outcome == "failed" || t.outcome == "oom") {
        res_.notes.push_back("the final configuration failed in a fresh process (" + t.reason + "); the allocator is not kept");
        process_choice_.clear();
      }
      t.accepted = false;
      record(std::move(t));
    }

    if (final_config() == baseline_) {
      res_.notes.push_back("no change beat the baseline: the final configuration is the baseline");
      // The headline is the baseline as measured last (the final arm or the A/A), never the calibration.
      const auto& last = baseline_phase_.count("final") ? baseline_phase_["final"] : baseline_phase_["start"];
      res_.baseline_throughput = res_.final_throughput = measure::pooled_throughput(last);
      res_.speedup = measure::RatioInterval{};
    }
  }

  void summarize() {
    res_.final_config = final_config();
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
  double sec_per_step_ = 0, apply_s_ = 0, probe_s_ = 0, warmup_est_ = 3, process_start_s_ = 1.0;
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

}  // namespace

TuneResult run_tune(Workload& workload, const TuneOptions& options) {
  Tuner t(workload, options);
  return t.run();
}

}  // namespace tb::engine
