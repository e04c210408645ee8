// The search of engine/tuner.h: calibrate, screen, accumulate, revisit, final.
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
      {"loader", {"workers", "prefetch", "pin_memory", "non_blocking", "fp32_preprocess"}},
      {"h2d", {"pin_memory", "non_blocking", "prefetch"}},
      {"launch", {"cuda_graphs", "batch_size", "fused_pointwise", "fused_optimizer", "zero_grad_none"}},
      {"sync", {"sync_free_logging", "cuda_graphs"}},
      {"compute", {"amp", "tf32", "channels_last", "cudnn_benchmark", "anomaly_detection", "fused_pointwise",
                   "conv_bias_before_bn", "batch_size"}},
  };
  return m;
}

enum class Ladder { None, Workers, Doubling };

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
    screen();
    accumulate();
    if (o_.revisit) revisit();
    final_trial();
    res_.final_config = current_;
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

  std::string summary_line() {
    std::string s;
    auto ch = changed_knobs(baseline_, current_);
    if (ch.empty()) return "no change beat the baseline";
    for (const auto& k : ch) s += (s.empty() ? "" : ", ") + k + "=" + current_[k];
    if (res_.speedup.valid())
      s += " -> " + fmt(res_.speedup.ratio, 2) + "x [" + fmt(res_.speedup.ci_low, 2) + ", " +
           fmt(res_.speedup.ci_high, 2) + "]";
    return s;
  }

  std::string label(const std::string& knob, const std::string& value) { return knob + "=" + value; }

  bool numerics(const std::string& knob) {
    auto it = knobs_.find(knob);
    return it != knobs_.end() && it->second.info.changes_numerics;
  }

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

  // Values to screen alone for a non-ladder knob.
  std::vector<std::string> plain_values(const KnobState& k, const std::string& from) {
    const KnobInfo& info = k.info;
    const auto& unavailable = k.applicability.unavailable_values;
    std::vector<std::string> out;
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
    if (info.id == "prefetch" && knobs_.count("workers") && value_in(c, "workers") == "0")
      return "the queue depth only matters with workers > 0 (tried again once workers are kept)";
    if (info.id == "checkpointing") return "trades speed for memory; it pays only through a batch size that does not fit";
    return std::nullopt;
  }

  static std::string value_in(const Config& c, const std::string& k) {
    auto it = c.find(k);
    return it == c.end() ? std::string() : it->second;
  }

  double step_cost_s() { return sec_per_step_ > 0 ? sec_per_step_ : 0.05; }

  double trial_cost_s(const std::string& knob) {
    double steps = 2.0 * o_.rounds * (o_.warmup_steps + window_);
    double c = steps * step_cost_s() + 2.0 * o_.rounds * apply_s_;
    if (numerics(knob)) c += probe_s_ > 0 ? probe_s_ : o_.probe_steps * step_cost_s() * 2;
    return c;
  }

  bool fits(const std::string& knob, const std::string& value, bool reserve_final = true) {
    double need = trial_cost_s(knob) + (reserve_final ? trial_cost_s("") : 0);
    if (need <= left()) return true;
    res_.skipped.push_back({knob, value, "budget: needs ~" + fmt(trial_cost_s(knob), 0) + " s, " +
                                              fmt(std::max(0.0, left()), 0) + " s left"});
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

  // ----- one A/B trial -----------------------------------------------------------------------------
  Trial trial(const std::string& phase, const Config& ref, const std::string& ref_label, const std::string& knob,
              const Config& cand, const std::string& value) {
    Trial t;
    t.phase = phase;
    t.knob = knob;
    t.value = value;
    auto it = ref.find(knob);
    t.from = it == ref.end() ? "" : it->second;
    t.reference = ref_label;
    t.window = window_;
    t.rounds = o_.rounds;
    const double start = w_.now_s();
    tried_.insert(config_key(ref) + "|" + config_key(cand));
    progress(phase, knob.empty() ? "final: baseline vs tuned configuration"
                                 : phase + ": " + label(knob, value) + " vs " + ref_label);
    std::vector<double> a, b;
    int steps = 0;
    for (int r = 0; r < o_.rounds; ++r) {
      double ta = w_.now_s();
      try {
        w_.apply(ref);
      } catch (const TrialFailure& f) {
        // The reference ran before; failing now is a workload fault, not the knob's.
        t.outcome = "failed";
        t.reason = std::string("reference configuration failed: ") + f.what();
        t.seconds = w_.now_s() - start;
        return t;
      }
      apply_s_ = 0.7 * apply_s_ + 0.3 * (w_.now_s() - ta);
      try {
        auto s = w_.measure(o_.warmup_steps, window_);
        a.insert(a.end(), s.begin(), s.end());
        steps += o_.warmup_steps + window_;
      } catch (const TrialFailure& f) {
        t.outcome = "failed";
        t.reason = std::string("reference configuration failed: ") + f.what();
        t.seconds = w_.now_s() - start;
        return t;
      }
      try {
        w_.apply(cand);
        auto s = w_.measure(o_.warmup_steps, window_);
        b.insert(b.end(), s.begin(), s.end());
        steps += o_.warmup_steps + window_;
      } catch (const TrialFailure& f) {
        t.outcome = f.oom ? "oom" : "failed";
        t.reason = (f.oom ? std::string("out of memory: ") : std::string("could not run: ")) + f.what();
        if (f.oom && !knob.empty()) {
          int64_t v = 0;
          if (parse_int(value, v) && (!oom_floor_.count(knob) || v < oom_floor_[knob])) oom_floor_[knob] = v;
        }
        failed_.insert(label(knob, value));
        try {
          w_.apply(ref);
        } catch (const TrialFailure&) {
        }
        t.seconds = w_.now_s() - start;
        return t;
      }
    }
    const double dur = w_.now_s() - start;
    if (steps > 0) {
      double per = (dur - 2.0 * o_.rounds * apply_s_) / steps;
      if (per > 0) sec_per_step_ = sec_per_step_ > 0 ? 0.5 * sec_per_step_ + 0.5 * per : per;
    }
    t.before = median(a);
    t.after = median(b);
    t.estimate = bootstrap_median_ratio(a, b, o_.resamples, o_.confidence, o_.seed + 7919 * res_.trials.size());
    const auto& e = t.estimate;
    const std::string ci = fmt(e.ratio, 3) + "x [" + fmt(e.ci_low, 3) + ", " + fmt(e.ci_high, 3) + "]";
    if (!e.valid()) {
      t.outcome = "failed";
      t.reason = "no valid samples";
    } else if (e.faster() && e.ratio - 1.0 >= o_.min_gain) {
      t.outcome = "gain";
      t.accepted = true;
      t.reason = "faster: " + ci;
    } else if (e.slower()) {
      t.outcome = "slower";
      t.reason = "slower: " + ci;
    } else {
      t.outcome = "no effect";
      t.reason = e.no_effect() ? "no effect: the interval " + ci + " covers 1"
                               : "no effect: " + ci + " is below the " + fmt(o_.min_gain * 100, 0) + "% threshold";
    }
    // The loss-drift guard: only for a change that may alter numerics and would otherwise be kept.
    bool guard = t.accepted && (knob.empty() ? false : numerics(knob));
    if (knob.empty()) {
      for (const auto& k : changed_knobs(baseline_, cand)) guard = guard || numerics(k);
      guard = guard && t.accepted;
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
      if (!t.accepted) failed_.insert(label(knob, value));
    }
    t.seconds = w_.now_s() - start;
    return t;
  }

  Trial& record(Trial t) {
    // Slower alone from the baseline: not worth revisiting (a chance "slower" later on is not held against it).
    if (t.outcome == "slower" && t.phase == "screen" && !t.knob.empty()) slower_.insert(label(t.knob, t.value));
    progress(phase_, (t.knob.empty() ? std::string("final") : label(t.knob, t.value)) + ": " + t.reason);
    res_.trials.push_back(std::move(t));
    return res_.trials.back();
  }

  // A revisit gain that is small gets a second, independent A/B trial before it is kept: among the dozens of
  // trials of a tune a few null effects look "significant" at 95% by chance, and replication is the cheap
  // defence. Returns the index of the trial to take the estimate from, nullopt when the gain does not stand.
  std::optional<size_t> confirmed(size_t index, const Config& ref, const Config& cand) {
    const Trial first = res_.trials[index];
    if (first.estimate.ratio >= 1.0 + 3.0 * o_.min_gain) return index;
    if (!fits(first.knob, first.value)) {
      res_.trials[index].accepted = false;
      res_.trials[index].reason += "; not kept: no budget left to confirm a small gain";
      return std::nullopt;
    }
    tried_.erase(config_key(ref) + "|" + config_key(cand));
    Trial& again = record(trial(phase_, ref, first.reference + " (confirmation)", first.knob, cand, first.value));
    if (again.accepted) {
      again.reason += "; confirms trial " + std::to_string(index + 1);
      return res_.trials.size() - 1;
    }
    again.reason += "; does not confirm trial " + std::to_string(index + 1);
    res_.trials[index].accepted = false;
    res_.trials[index].reason += "; not confirmed by a second measurement";
    return std::nullopt;
  }

  // ----- phases ------------------------------------------------------------------------------------
  void calibrate() {
    phase_ = "calibrate";
    progress(phase_, "measuring the baseline", 0.0);
    current_ = baseline_;
    double t = w_.now_s();
    w_.apply(baseline_);  // a failure here is fatal: nothing to tune against
    apply_s_ = w_.now_s() - t;
    t = w_.now_s();
    int steps = std::max(2, o_.min_window);
    auto s = w_.measure(o_.warmup_steps, steps);
    sec_per_step_ = (w_.now_s() - t) / (o_.warmup_steps + steps);
    baseline_median_ = median(s);
    res_.baseline_throughput = baseline_median_;

    // Plan: screening candidates + about as many again for accumulation and revisits + the final trial.
    int n = 0;
    for (const auto& id : order_) {
      const auto& k = knobs_[id];
      if (!eligible(k, false) || not_worth(k.info, baseline_)) continue;
      Ladder l = ladder_of(k.info);
      n += l == Ladder::None ? static_cast<int>(plain_values(k, baseline_[id]).size()) : 2;
    }
    planned_trials_ = 2 * n + 1;
    double per_trial = o_.budget_s * 0.9 - (elapsed());
    per_trial = per_trial / std::max(1, planned_trials_);
    double per_window = per_trial / (2.0 * o_.rounds) - apply_s_;
    int win = static_cast<int>(std::floor(per_window / std::max(sec_per_step_, 1e-9))) - o_.warmup_steps;
    window_ = std::clamp(win, o_.min_window, o_.max_window);
    res_.window = window_;
    res_.notes.push_back("plan: " + std::to_string(n) + " screening trials, ~" + std::to_string(planned_trials_) +
                         " trials in all, " + std::to_string(o_.rounds) + " A/B rounds of " +
                         std::to_string(o_.warmup_steps) + " warm-up + " + std::to_string(window_) +
                         " measured steps; baseline " + fmt(baseline_median_, 1) + " samples/s, " +
                         fmt(sec_per_step_ * 1000, 1) + " ms/step");
    if (win < o_.min_window)
      res_.notes.push_back("the budget is tight for this many knobs: trials use the minimum window and the "
                           "lowest-priority ones may be skipped");
    progress(phase_, res_.notes.back());
    take_snapshot("baseline");
  }

  // Re-plans the window for the trials still to come from the time left and the step time seen so far
  // (the baseline is often much slower than what follows, so the first plan is pessimistic).
  void replan(int expected_trials) {
    if (expected_trials <= 0 || sec_per_step_ <= 0) return;
    const double per_trial = std::max(0.0, left() * 0.9) / expected_trials;
    const double per_window = per_trial / (2.0 * o_.rounds) - apply_s_;
    const int win = static_cast<int>(std::floor(per_window / sec_per_step_)) - o_.warmup_steps;
    const int next = std::clamp(win, o_.min_window, o_.max_window);
    if (next != window_) {
      res_.notes.push_back(phase_ + ": window re-planned from " + std::to_string(window_) + " to " +
                           std::to_string(next) + " measured steps (" + fmt(sec_per_step_ * 1000, 1) +
                           " ms/step now, " + fmt(std::max(0.0, left()), 0) + " s left, ~" +
                           std::to_string(expected_trials) + " trials to go)");
      window_ = next;
      res_.window = std::max(res_.window, next);
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
    std::string knob, value;
    double gain = 1;
  };

  void screen() {
    phase_ = "screen";
    for (const auto& id : order_) {
      const auto& k = knobs_[id];
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
        std::string best;
        std::string from = base_v;
        while (auto next = ladder_next(k.info, from)) {
          if (!fits(id, *next)) break;
          Config cand = ref;
          cand[id] = *next;
          Trial& t = record(trial(phase_, ref, ref_label, id, cand, *next));
          if (!t.accepted) {
            // workers: the whole scan up to the core count (one worker can lose to loading inline while two
            // win); the doubling knobs stop at the first rung that does not pay.
            if (l == Ladder::Workers && t.outcome != "oom" && t.outcome != "failed") {
              from = *next;
              continue;
            }
            break;
          }
          gain *= t.estimate.ratio;
          best = *next;
          ref = cand;
          ref_label = label(id, *next);
          from = *next;
        }
        if (!best.empty()) winners_.push_back({id, best, gain});
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
        Config cand = baseline_;
        cand[id] = v;
        record(trial(phase_, baseline_, "baseline", id, cand, v));
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
        winners_.push_back({id, res_.trials[best_index].value, res_.trials[best_index].estimate.ratio});
      }
    }
  }

  void accept(Trial& t, const Config& cand) {
    current_ = cand;
    cumulative_ *= t.estimate.ratio;
    res_.waterfall.push_back({label(t.knob, t.value), baseline_median_ * cumulative_});
    take_snapshot("+ " + label(t.knob, t.value));
  }

  void accumulate() {
    phase_ = "accumulate";
    replan(static_cast<int>(winners_.size()) + (o_.revisit ? screened_knobs_ : 0) + 1);
    std::stable_sort(winners_.begin(), winners_.end(), [](const Winner& a, const Winner& b) { return a.gain > b.gain; });
    if (!winners_.empty()) {
      std::string order;
      for (const auto& w : winners_) order += (order.empty() ? "" : ", ") + label(w.knob, w.value) + " " + fmt(w.gain, 2) + "x";
      res_.notes.push_back("winners of the screening, by gain: " + order);
    }
    for (const auto& win : winners_) {
      if (current_[win.knob] == win.value) continue;
      // The first winner's reference is still the baseline: its screening trial already measured exactly this
      // A/B, so it is kept on that evidence instead of spending the budget on the same comparison again (with
      // a tight budget that repeat used to crowd out every accumulation). The final trial re-measures all.
      if (current_ == baseline_) {
        for (size_t i = res_.trials.size(); i-- > 0;) {
          Trial& st = res_.trials[i];
          if (st.phase == "screen" && st.knob == win.knob && st.value == win.value && st.accepted) {
            Config cand = current_;
            cand[win.knob] = win.value;
            progress(phase_, label(win.knob, win.value) + ": kept on its screening trial (same reference: baseline)");
            accept(st, cand);
            break;
          }
        }
        if (current_ != baseline_) continue;
      }
      if (!fits(win.knob, win.value)) continue;
      Config cand = current_;
      cand[win.knob] = win.value;
      Trial& t = record(trial(phase_, current_, current_label(), win.knob, cand, win.value));
      if (t.accepted) accept(t, cand);
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
    replan(screened_knobs_ + 1);
    for (int pass = 0; pass < 3; ++pass) {
      bool changed = false;
      bool out_of_budget = false;
      for (const auto& id : revisit_order()) {
        const auto& k = knobs_[id];
        if (!eligible(k, false)) continue;
        Ladder l = ladder_of(k.info);
        // A switch already changed stays; a value that was slower alone is not retried.
        if (l == Ladder::None && current_[id] != baseline_[id]) continue;
        if (not_worth(k.info, current_)) continue;
        if (l != Ladder::None) {
          const bool full_scan = l == Ladder::Workers;
          std::string from = current_[id];
          while (auto next = ladder_next(k.info, from)) {
            Config cand = current_;
            cand[id] = *next;
            if (failed_.count(label(id, *next))) break;
            if (tried_.count(config_key(current_) + "|" + config_key(cand))) {
              if (!full_scan) break;
              from = *next;
              continue;
            }
            if (!fits(id, *next)) { out_of_budget = true; break; }
            record(trial(phase_, current_, current_label(), id, cand, *next));
            const size_t i = res_.trials.size() - 1;
            std::optional<size_t> use;
            if (res_.trials[i].accepted) use = confirmed(i, current_, cand);
            if (!use) {
              const std::string& out = res_.trials[i].outcome;
              if (!full_scan || out == "oom" || out == "failed") break;
              from = *next;
              continue;
            }
            accept(res_.trials[*use], cand);
            changed = true;
            from = *next;
          }
        } else {
          std::optional<size_t> best;
          Config best_cand;
          for (const auto& v : plain_values(k, current_[id])) {
            Config cand = current_;
            cand[id] = v;
            if (failed_.count(label(id, v)) || slower_.count(label(id, v)) ||
                tried_.count(config_key(current_) + "|" + config_key(cand)))
              continue;
            if (!fits(id, v)) { out_of_budget = true; break; }
            record(trial(phase_, current_, current_label(), id, cand, v));
            const size_t i = res_.trials.size() - 1;
            if (!res_.trials[i].accepted) continue;
            if (!best || res_.trials[i].estimate.ratio > res_.trials[*best].estimate.ratio) {
              if (best) {
                res_.trials[*best].accepted = false;
                res_.trials[*best].reason += "; " + label(id, v) + " was faster";
              }
              best = i;
              best_cand = cand;
            } else {
              res_.trials[i].accepted = false;
              res_.trials[i].reason += "; " + label(id, res_.trials[*best].value) + " was faster";
            }
          }
          if (best) {
            if (auto use = confirmed(*best, current_, best_cand)) {
              accept(res_.trials[*use], best_cand);
              changed = true;
            }
          }
        }
        if (out_of_budget) break;
      }
      if (!changed || out_of_budget) break;
    }
  }

  void final_trial() {
    phase_ = "final";
    if (config_key(current_) == config_key(baseline_)) {
      res_.final_throughput = res_.baseline_throughput;
      res_.speedup.ratio = res_.speedup.ci_low = res_.speedup.ci_high = 1.0;
      res_.notes.push_back("no change beat the baseline: the final configuration is the baseline");
      return;
    }
    if (left() < trial_cost_s("") * 0.8)
      res_.notes.push_back("the final comparison ran past the budget (it is never skipped)");
    Trial& t = record(trial(phase_, baseline_, "baseline", "", current_, current_label()));
    res_.baseline_throughput = t.before;
    res_.final_throughput = t.after;
    res_.speedup = t.estimate;
    if (t.outcome == "failed" || t.outcome == "oom") {
      res_.notes.push_back("the final configuration failed when re-measured; falling back to the baseline");
      current_ = baseline_;
    }
  }

  Workload& w_;
  const TuneOptions& o_;
  TuneResult res_;
  double t0_ = 0;
  std::string phase_;
  std::map<std::string, KnobState> knobs_;
  std::vector<std::string> order_;
  Config baseline_, current_;
  double sec_per_step_ = 0, apply_s_ = 0, probe_s_ = 0;
  double baseline_median_ = 0, cumulative_ = 1;
  int window_ = 8;
  int planned_trials_ = 0;
  int screened_knobs_ = 0;
  std::optional<double> baseline_loss_;
  std::vector<Winner> winners_;
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
