// One A/B trial of the tuner's search (search.h): the windows in alternating order, their classification
// against the noise floor, the loss-drift guard, the record of the result.
#include <cmath>

#include "tuner/search.h"

namespace tb::engine::search {

namespace {

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

}  // namespace

void Tuner::take_snapshot(const std::string& lbl) {
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
double Tuner::loss_drift(const Config& cand) {
  double t = w_.now_s();
  if (!baseline_loss_) baseline_loss_ = mean_of(w_.loss_probe(baseline_, o_.probe_steps));
  double c = mean_of(w_.loss_probe(cand, o_.probe_steps));
  probe_s_ = (w_.now_s() - t);
  double b = *baseline_loss_;
  if (!std::isfinite(b) || !std::isfinite(c)) return std::nan("");
  return (c - b) / std::max(std::fabs(b), 1e-12);
}

void Tuner::note_baseline(const std::string& phase, const measure::Window& w) {
  if (!(w.throughput() > 0)) return;
  baseline_phase_[phase].push_back(w);
  res_.baseline_windows.push_back(w);
}

// One window of `config`: in this process (apply + measure) or in a fresh process.
measure::Window Tuner::window_of(const Config& config, bool fresh) {
  if (fresh) {
    const double t = w_.now_s();
    auto m = w_.measure_fresh(config, fresh_window());
    if (!m) throw TrialFailure("this workload cannot start fresh processes", false);
    const double spent = w_.now_s() - t;
    const double start_s = std::max(0.0, spent - m->wall_s);
    process_start_s_ = start_cost_seen_ ? 0.5 * process_start_s_ + 0.5 * start_s : start_s;
    start_cost_seen_ = true;
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
void Tuner::classify(Trial& t, bool use_floor) {
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

Trial Tuner::trial(const std::string& phase, const Config& ref, const std::string& ref_label, const Change& change,
                   const Config& cand, bool fresh) {
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
  if (fresh) t.window = fresh_window();
  std::string stopped;  // why the pairs stopped short of o_.rounds
  for (int r = 0; r < o_.rounds || (fresh && another_fresh_pair(t, r)); ++r) {
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
    t.rounds = r + 1;
    // A trial other than the headline that could not finish its pairs within max_trial_share of the budget
    // stops: fresh processes start slower than the tuner assumed before it saw one (ResNet-50 on an H200:
    // about 9 s each, so 3 pairs of them took 36% of a 150 s budget).
    if (fresh && phase != "final" && r + 1 < o_.rounds) {
      const double per_pair = (w_.now_s() - start) / (r + 1);
      if (o_.rounds * per_pair > o_.max_trial_share * o_.budget_s) {
        stopped = "budget: a pair of fresh processes takes ~" + fmt(per_pair, 0) + " s here, and " +
                  std::to_string(o_.rounds) + " pairs would take more than " + fmt(o_.max_trial_share * 100, 0) +
                  "% of the budget (give at least " + fmt(o_.rounds * per_pair / o_.max_trial_share, 0) + " s)";
        progress(phase, label(change) + ": stopped after " + std::to_string(r + 1) + " pair(s): " + stopped);
        break;
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
  if (!stopped.empty() && !t.accepted) {
    // Too few pairs to decide: not a failure of the knob, and not evidence against it either.
    t.outcome = "no effect";
    t.reason = "undecided, " + stopped;
  }
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

// Whether a fresh-process trial that has run `pairs` pairs measures another: while a gain is still possible
// but not shown (the interval covers both 1 and the minimum gain) and the interval is wider than +-5%, up to
// max_fresh_rounds pairs. A headline may run past the budget by a quarter of it (it is the tune's answer);
// any other trial stops at the budget the final alternation needs, and at max_trial_share of the whole budget. Adding pairs until decided looks at the interval more than once, which
// widens its true error a little; the minimum gain and the final alternation guard against a chance gain.
bool Tuner::another_fresh_pair(const Trial& t, int pairs) {
  if (pairs >= o_.max_fresh_rounds) return false;
  const auto e = measure::paired_ratio(t.a, t.b, nullptr, o_.confidence);
  // Decided: a gain is shown (the interval lies above 1), ruled out (it lies below the minimum gain), or
  // the interval is narrow enough to call no effect.
  if (e.valid() && (e.lo > 1 || e.hi < 1 + o_.min_gain || e.hi - e.lo < 0.10)) return false;
  const bool headline = t.phase == "final";
  const double spare = headline ? left() + 0.25 * o_.budget_s : left() - final_cost_s();
  if (spare < fresh_pair_cost_s()) return false;
  if (!headline && (pairs + 1) * fresh_pair_cost_s() > o_.max_trial_share * o_.budget_s) {
    progress(t.phase, "undecided after " + std::to_string(pairs) + " pairs of fresh processes: stops at " +
                          fmt(o_.max_trial_share * 100, 0) + "% of the budget, which the other knobs need");
    return false;
  }
  progress(t.phase, "undecided after " + std::to_string(pairs) + " pairs of fresh processes" +
                        (e.valid() ? " (" + fmt(e.ratio, 3) + "x [" + fmt(e.lo, 3) + ", " + fmt(e.hi, 3) + "])" : "") +
                        ": one more pair");
  return true;
}

Trial& Tuner::record(Trial t) {
  // Slower in its screening: not worth revisiting (a chance "slower" later on is not held against it).
  if (t.outcome == "slower" && t.phase == "screen" && !t.knob.empty()) slower_.insert(label(t.knob, t.value) + t.also);
  progress(phase_, (t.knob.empty() ? t.phase : label(t.knob, t.value)) + ": " + t.reason);
  res_.trials.push_back(std::move(t));
  return res_.trials.back();
}

}  // namespace tb::engine::search
