// One A/B trial of the tuner's search (search.h): the windows in alternating order, their classification
// against the noise floor, the loss-drift guard, the record of the result.
#include <cmath>
#include <limits>

#include "base/count_text.h"
#include "knobs/table.h"
#include "tuner/search/search.h"

namespace tb::engine::search {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// The workload's warm-up deadline for one window (Workload::give_up_warmup_at), lifted after it.
struct WarmupDeadline {
  WarmupDeadline(Workload& w, double at_s) : w_(w), set_(at_s < kNever) {
    if (set_) w_.give_up_warmup_at(at_s);
  }
  ~WarmupDeadline() {
    if (set_) w_.give_up_warmup_at(kNever);
  }
  Workload& w_;
  bool set_;
};

// A trial's second pair at most this share of the budget runs even past the end's reserve: without it the
// first pair, and a compile in it, measured nothing (the tests hold a tune to 105% of its budget).
constexpr double kCheapPair = 0.05;

// The one-time costs (compiles) its windows paid, in no window's rate.
double one_time_sum(const std::vector<measure::Window>& ws) {
  double sum = 0;
  for (const auto& w : ws) sum += std::max(0.0, w.one_time_s);
  return sum;
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

}  // namespace

void Tuner::take_snapshot(const std::string& lbl) {
  if (o_.snapshot_steps <= 0) return;
  const double start = w_.now_s();
  try {
    w_.apply(current_);
    auto s = w_.snapshot(o_.snapshot_steps);
    budget_.observe_snapshot(w_.now_s() - start);
    if (!s) return;
    s->label = lbl;
    s->config = current_;
    evidence_.bottleneck = s->bottleneck;
    evidence_.shares = shares_of(s->breakdown_ms, s->step_ms);
    evidence_.named.clear();  // what the latest analysis names, likeliest first
    for (const auto& sw : s->switches)
      if (sw.at_most > 1 + o_.min_gain && std::find(evidence_.named.begin(), evidence_.named.end(), sw.knob) == evidence_.named.end())
        evidence_.named.push_back(sw.knob);
    evidence_.caps = caps_of(*s);
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
  budget_.observe_probe(w_.now_s() - t);
  double b = *baseline_loss_;
  if (!std::isfinite(b) || !std::isfinite(c)) return std::nan("");
  return (c - b) / std::max(std::fabs(b), 1e-12);
}

void Tuner::note_baseline(const std::string& phase, const measure::Window& w) {
  if (!(w.throughput() > 0)) return;
  baseline_phase_[phase].push_back(w);
  res_.baseline_windows.push_back(w);
}

// One window of `config`: in this process (apply + measure) or in a fresh process. Its whole cost (the apply,
// the warm-up, a process's start-up) is what the budget learns a window costs.
measure::Window Tuner::window_of(const Config& config, bool fresh, double cap_s) {
  const double t = w_.now_s();
  if (fresh) {
    auto m = w_.measure_fresh(config, fresh_window());
    if (!m) throw TrialFailure("this workload cannot start fresh processes", false);
    const double spent = w_.now_s() - t;
    pace_.process_start_s = std::max(0.0, spent - m->wall_s);
    budget_.observe_fresh_window(spent);
    last_window_.clear();  // this process's next window starts after a pause: not a switch from the last one
    note_memory(config, *m);
    return *m;
  }
  w_.apply(config);
  if (const std::string v = compile_variant(config); !v.empty()) compiled_variants_.insert(v);
  pace_.apply_s = 0.7 * pace_.apply_s + 0.3 * (w_.now_s() - t);
  measure::Window m = cap_s > 0 ? w_.measure_capped(pace_.window, cap_s) : w_.measure(pace_.window);
  if (m.steps > 0 && m.wall_s > 0 && m.steps == pace_.window) pace_.sec_per_step = 0.8 * pace_.sec_per_step + 0.2 * (m.wall_s / m.steps);
  pace_.warmup_est = 0.7 * pace_.warmup_est + 0.3 * m.warmup_steps;
  budget_.observe_window(w_.now_s() - t);
  // A compile paid once is not what switching to this configuration costs the next time.
  m.startup_s = std::max(0.0, w_.now_s() - t - m.wall_s - std::max(0.0, m.one_time_s));
  if (m.steps > 0) switches_.observe(last_window_, config, m.startup_s, m.warmup_steps, m.wall_s / m.steps);
  last_window_ = config;
  note_memory(config, m);
  return m;
}

// Classifies a measured ratio: gain only beyond the interval, the minimum gain and (in process) the noise
// floor's band.
void Tuner::classify(Trial& t, bool use_floor) {
  const auto& e = t.estimate;
  const std::string ci = fmt(e.ratio, 3) + "x [" + fmt(e.lo, 3) + ", " + fmt(e.hi, 3) + "]";
  const measure::NoiseFloor nf = floor();
  const double band = use_floor && nf.valid() ? nf.band(e.pairs, o_.confidence) : 0.0;
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
  one_time_cost(t);
}

// A candidate that paid a one-time cost (torch.compile's compiles) says it beside its rate, with the steps after
// which it pays for itself at the step times its windows measured: a compile that gains 1.12x after 38 s is
// worth it for a long run and not for a short one, which the rate alone does not say.
void Tuner::one_time_cost(Trial& t) {
  // In fresh processes every window pays it again: once is one process's.
  auto once = [&](const std::vector<measure::Window>& ws) {
    for (const auto& w : ws) compile_seen_s_ = std::max(compile_seen_s_, w.one_time_s);  // a window's is its compile
    const double sum = one_time_sum(ws);
    return t.fresh_processes && !ws.empty() ? sum / double(ws.size()) : sum;
  };
  // The in-process final's rows pair arms whose order decides which pays a compile (a language model's
  // intra_op_threads row said "14.2 s of compiling"): the trial that switched it on said its cost.
  const bool arms_in_process = t.phase == "final" && !t.fresh_processes;
  t.one_time_before_s = arms_in_process ? 0.0 : once(t.a);
  t.one_time_after_s = arms_in_process ? 0.0 : once(t.b);
  auto step_s = [](const std::vector<measure::Window>& ws) {
    double wall = 0;
    int steps = 0;
    for (const auto& w : ws) wall += w.wall_s, steps += w.steps;
    return steps > 0 ? wall / steps : std::nan("");
  };
  const double saved = step_s(t.a) - step_s(t.b);
  const double extra = t.one_time_after_s - t.one_time_before_s;
  if (extra >= 0.05) {
    std::string s = "; its one-time cost: " + fmt(extra, 1) + " s of compiling";
    if (t.outcome == "gain" && saved > 0) {
      t.break_even_steps = extra / saved;
      s += ", paid back after ~" + about_count(t.break_even_steps) + " steps (" + fmt(saved * 1e3, 2) + " ms saved a step)";
      if (o_.run_steps > 0 && t.break_even_steps > double(o_.run_steps)) {
        // Faster per step, but the run the user named ends before the compile has paid for itself.
        t.accepted = false;
        t.outcome = "not paid back";
        s += ": more than the run's " + about_count(double(o_.run_steps)) + " (--run-steps), not kept";
      }
    } else if (t.estimate.valid() && t.estimate.pairs >= 2) {  // one pair says nothing of the step
      // "No faster" only where the interval rules a gain out: a language model's fresh final, 1.27x [0.58,
      // 2.80], had said "never paid back by a step no faster".
      s += t.outcome == "slower" || t.estimate.hi <= 1.0 + o_.min_gain
               ? ", never paid back by a step no faster"
               : ", no break-even said: its pairs could not decide whether the step is faster";
    }
    t.reason += s;
  }
  startup_cost(t, saved);
}

// Measured from the trial's own windows: the longest wait before a candidate's first measured step (a window
// after the reference's) against the reference's (its first window left out: it follows whatever ran before
// the trial). A change whose turning on costs what turning it off does (an apply) shows nothing; CUDA graphs'
// capture or a worker pool's spawn shows as seconds the rate leaves out, said with when they pay back.
void Tuner::startup_cost(Trial& t, double saved) {
  // In: the steps of a pass when the candidate's workers start again at each (trial()); out: that, where a
  // start-up is said.
  const int pass = t.startup_each_pass_steps;
  t.startup_each_pass_steps = 0;
  // Only a trial's pairs switch between its two sides alone; a final's arms follow other arms.
  if (t.phase.find("final") != std::string::npos || t.a.size() < 2 || t.b.empty()) return;
  double before = -1, after = -1, wall = 0;
  for (size_t i = 1; i < t.a.size(); ++i) before = std::max(before, t.a[i].startup_s);
  for (const auto& w : t.b) after = std::max(after, w.startup_s), wall += w.wall_s;
  if (before < 0 || after < 0) return;
  t.startup_before_s = before;
  t.startup_after_s = after;
  const double extra = after - before;
  // Under half a second, or under a quarter of a window: an apply's jitter, not a start-up of its own.
  if (!(extra >= 0.5 && extra >= 0.25 * wall / double(t.b.size()))) return;
  t.startup_s = extra;
  t.startup_each_pass_steps = pass;
  std::string s = "; its start-up: ~" + fmt(extra, 1) + " s each time it is switched on" +
                  (pass > 0 ? " and again at every pass of the training loader (" + about_count(double(pass)) +
                                  " steps; its workers are not persistent)"
                            : std::string()) +
                  ", left out of the rate";
  if (t.outcome == "gain" && saved > 0) {
    const double once = extra + std::max(0.0, t.one_time_after_s - t.one_time_before_s);
    t.break_even_steps = once / saved;
    s += ", paid back after ~" + about_count(t.break_even_steps) + " steps";
    // A start-up paid at every pass must pay back within the pass (or within the run, when it is shorter): the
    // gain the windows measured between pass starts is then lost at each of them.
    const bool run_first = o_.run_steps > 0 && (pass <= 0 || o_.run_steps < pass);
    const int64_t limit = run_first ? o_.run_steps : pass;
    if (limit > 0 && t.break_even_steps > double(limit)) {
      t.accepted = false;
      t.outcome = "not paid back";
      s += run_first ? ": more than the run's " + about_count(double(o_.run_steps)) + " (--run-steps), not kept"
                     : ": more than a pass's " + about_count(double(pass)) + ", so each pass loses what it gains: not kept";
    } else if (pass > 0) {
      s += " of each pass";
    }
  }
  t.reason += s;
}

// The steps of a pass when `cand`'s loader starts its workers again at every pass and the windows leave those
// starts out (long passes): a change of the DataLoader's arguments re-creates the iterator, which spawns
// workers that are not persistent, and so does every new epoch. 0 otherwise (whole-pass windows pay it in
// their rate; persistent workers or none start once).
int Tuner::respawn_pass_steps(const Config& ref, const Config& cand) {
  const int pass = w_.pass_steps_outside_windows();
  const std::string workers = value_in(cand, "workers");
  if (pass <= 0 || !knobs_.count("persistent_workers") || workers.empty() || workers == "0" ||
      value_in(cand, "persistent_workers") == "on")
    return 0;
  for (const auto& k : changed_knobs(ref, cand))
    if (const knobs::Row* row = knobs::find(k); row && !row->dataloader_arg.empty()) return pass;
  return 0;
}

Trial Tuner::row_for(const std::string& phase, const Change& change, const Config& ref,
                     const std::string& ref_label) const {
  Trial t;
  t.phase = phase;
  t.knob = change.knob;
  t.value = change.value;
  t.also = change.also;
  t.from = value_in(ref, change.knob);
  t.reference = ref_label;
  t.window = pace_.window;
  return t;
}

Trial Tuner::trial(const std::string& phase, const Config& ref, const std::string& ref_label, const Change& change,
                   const Config& cand, bool fresh) {
  Trial t = row_for(phase, change, ref, ref_label);
  if (fresh) t.window = fresh_window();
  t.rounds = o_.rounds;
  t.fresh_processes = fresh;
  const double start = w_.now_s();
  tried_.insert(config_key(ref) + "|" + config_key(cand));
  if (!change.knob.empty()) undefer(change.knob);
  progress(phase, change.knob.empty() ? phase + ": baseline vs tuned configuration"
                                      : phase + ": " + label(change) + " vs " + ref_label);
  const bool ref_is_baseline = !fresh && config_key(ref) == config_key(baseline_);
  double ref_window_s = 0;  // the reference's first window, apply and warm-up included
  bool early = false;
  // Past its pairs, a trial that measured faster but could not decide takes more pairs while the budget
  // pays for them (a GPU's windows vary by 5-10%: three pairs resolve ~8%, six ~6%): a 1.09x amp on a
  // loader-bound script step measured 1.03-1.07x "no effect" four times in three pairs each.
  auto promising = [&] {
    if (fresh || t.a.size() < size_t(o_.rounds) || int(t.a.size()) >= o_.max_trial_pairs) return false;
    const measure::NoiseFloor nf = floor();
    const auto e = measure::paired_ratio(t.a, t.b, &nf, o_.confidence);
    if (!e.valid() || e.lo > 1.0 || e.ratio < 1.0 + std::max(o_.min_gain, 0.05)) return false;
    return budget_.fits_trial(elapsed(), 2 * budget_.window_s(), reserve_s());
  };
  // A pair costs what this trial's pairs took, not the recent windows' average: a candidate twice as slow
  // makes every pair 1.5 times the plan (a 40 s tune of an LSTM script on a busy 2-core machine ran its
  // workers=2 trials at 0.49x and ended at 48 s). Past the two pairs an interval needs, a pair the budget no
  // longer pays for beside the end's reserve is not run; the trial is decided on the pairs it has, said.
  bool cut = false;
  const double reserve = finals_.fresh_unreserved ? reserve_s(false) : reserve_s();
  // What a further pair costs: the pairs' time so far, less the one-time costs this process will not pay
  // again (a compile in process; a fresh process compiles again). An LBFGS script's in-process compile trial
  // took 26 s for its first pair, 14.6 s of it compiling, and was cut as if the next would take 26 s too.
  auto pair_s = [&](int r) {
    const double once = fresh ? 0.0 : one_time_sum(t.a) + one_time_sum(t.b);
    return std::max(0.0, w_.now_s() - start - once) / r;
  };
  for (int r = 0; r < o_.rounds || promising(); ++r) {
    const double next_s = r > 0 ? pair_s(r) : 0.0;
    if (r >= 2 && !budget_.fits_trial(elapsed(), next_s, reserve)) {
      cut = true;
      break;
    }
    // The second pair runs unless it would end past the budget's hard end with the end's reserve: a fresh
    // process's compile can take twice what was planned (its first pair then says so). A pair of a few
    // seconds still runs: it turns the first pair, a compile perhaps, into an interval.
    if (r == 1 && next_s > kCheapPair * o_.budget_s && !budget_.may_finish(elapsed(), next_s + reserve)) {
      cut = true;
      break;
    }
    // AB, BA, AB...: a linear drift cancels within a pair.
    for (int side = 0; side < 2; ++side) {
      const bool is_ref = (side == 0) == (r % 2 == 0);
      try {
        // The candidate's first window ends once it has taken as long as a clearly slower one would (its first
        // measured step then says so), unless a known warm-up (a compile) makes its first steps slow anyway.
        double cap = 0;
        if (!fresh && r == 0 && !is_ref && !t.a.empty() && extra_cost_s(change.knob, cuda_, value_in(ref, "compile") == "on") == 0)
          cap = slower_factor() * ref_window_s;
        // Switching torch.compile on: its first steps compile for as long as they take (a minute planned on a
        // GPU, three on a big model). Past the point where the rest of the tune could no longer end by the hard
        // end, the compile is given up (the script starts again without it), said, and not tried again.
        const bool compiles_now = !fresh && r == 0 && !is_ref && value_in(ref, "compile") != "on" && value_in(cand, "compile") == "on";
        const WarmupDeadline deadline(w_, compiles_now ? w_.now_s() + compile_deadline_s(reserve) : kNever);
        const double w0 = w_.now_s();
        measure::Window m = window_of(is_ref ? ref : cand, fresh, cap);
        if (is_ref && r == 0) ref_window_s = w_.now_s() - w0;
        (is_ref ? t.a : t.b).push_back(m);
        if (is_ref && ref_is_baseline) note_baseline(phase, m);
      } catch (const TrialFailure& f) {
        side_failed(t, f, is_ref, change, ref, fresh);
        const size_t n = std::min(t.a.size(), t.b.size());
        t.a.resize(n);
        t.b.resize(n);
        t.rounds = static_cast<int>(n);
        t.seconds = w_.now_s() - start;
        return t;
      }
    }
    t.rounds = r + 1;
    if (!fresh && r + 1 == 2 && r + 1 < o_.rounds && decided_early(t)) {
      early = true;
      break;
    }
    // A candidate several times slower says so in its first window; each further window of it costs that
    // many times a window (amp=bf16 on a CPU ran 7x slower, and its three pairs took 13% of a demo's budget).
    if (r == 0 && clearly_slower(t)) {
      settle_slower(t, change);
      t.seconds = w_.now_s() - start;
      return t;
    }
  }
  t.before = measure::pooled_throughput(t.a);
  t.after = measure::pooled_throughput(t.b);
  const measure::NoiseFloor nf = floor();
  t.estimate = measure::paired_ratio(t.a, t.b, fresh ? nullptr : &nf, o_.confidence);
  if (!fresh) t.startup_each_pass_steps = respawn_pass_steps(ref, cand);
  classify(t, !fresh);
  if (early) t.reason += " (clear after 2 pairs)";
  if (cut && t.a.size() < 2) {
    // One pair gives no interval: said as such, with what made it dear (the one-time costs after the ';').
    const size_t costs = std::min(t.reason.find(';'), t.reason.size());
    t.reason = "not decided: its one pair took " + fmt(w_.now_s() - start, 0) +
               " s and a second did not fit before the budget's hard end" + t.reason.substr(costs);
  } else if (cut) {
    t.reason += " (" + std::to_string(t.a.size()) + " pairs: another did not fit the budget)";
  }
  guard_loss(t, ref, cand, change);
  t.seconds = w_.now_s() - start;
  return t;
}

// Seconds from now until a compile must be given up: the hard end, less what must still run after it (the end's
// `reserve`, one more pair of this trial, the script's start again without it), and never before the compile
// the trial was priced with: a script slow to start would otherwise lose every compile to its restart.
double Tuner::compile_deadline_s(double reserve) {
  const double left = budget_.hard_end() - elapsed() - reserve - 2 * budget_.window_s() - std::max(0.0, w_.start_s());
  return std::max(left, compile_s());
}

void Tuner::side_failed(Trial& t, const TrialFailure& f, bool is_ref, const Change& change, const Config& ref,
                        bool fresh) {
  if (is_ref) {
    // The reference ran before; failing now is a workload fault, not the knob's.
    t.outcome = "failed";
    t.reason = std::string("reference configuration failed: ") + f.what();
    return;
  }
  t.outcome = f.oom ? "oom" : "failed";
  t.reason = (f.oom ? std::string("out of memory: ") : std::string("could not run: ")) + f.what();
  if (f.gave_up_after_s >= 0) {
    t.reason = "given up: still compiling after " + fmt(f.gave_up_after_s, 0) + " s (~" + fmt(compile_s(), 0) +
               " s were planned), when the rest of the tune had to start to end by the budget's hard end; the "
               "script started again without it. Its compile takes longer than that, more than this budget had "
               "left for it: a longer budget measures it";
    // What this compile takes is at least that: the finals' estimates of a recompile count on it.
    compile_seen_s_ = std::max(compile_seen_s_, f.gave_up_after_s);
  }
  if (f.oom && change.knob == "batch_size") t.reason += largest_fit();
  if (f.oom && !change.knob.empty()) {
    int64_t v = 0;
    if (parse_int(change.value, v) && (!memory_.oom_floor.count(change.knob) || v < memory_.oom_floor[change.knob]))
      memory_.oom_floor[change.knob] = v;
  }
  failed_.insert(label(change));
  if (!fresh) try {
      w_.apply(ref);
    } catch (const TrialFailure&) {
    }
}

void Tuner::settle_slower(Trial& t, const Change& change) {
  const double ratio = t.b[0].throughput() / t.a[0].throughput();
  t.before = measure::pooled_throughput(t.a);
  t.after = measure::pooled_throughput(t.b);
  t.estimate = measure::RatioInterval{};
  t.estimate.ratio = ratio;
  t.estimate.pairs = 1;
  t.estimate.method = "one pair: clearly slower";
  t.outcome = "slower";
  t.reason = "slower: " + fmt(ratio, 3) + "x after one pair (clear: a window of it took " + fmt(1 / ratio, 1) +
             "x the reference's time; not measured further" +
             (t.b[0].steps < t.a[0].steps ? ", its window cut after " + std::to_string(t.b[0].steps) + " of " +
                                                std::to_string(t.a[0].steps) + " steps"
                                          : std::string()) +
             ")";
  failed_.insert(label(change));
}

// The loss-drift guard: only for a change that may alter numerics and would otherwise be kept.
void Tuner::guard_loss(Trial& t, const Config& ref, const Config& cand, const Change& change) {
  const std::string ci = fmt(t.estimate.ratio, 3) + "x [" + fmt(t.estimate.lo, 3) + ", " + fmt(t.estimate.hi, 3) + "]";
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
}

// After the first pair: the candidate ran below a third of the reference's speed, or past three noise bands
// below it, whichever is further: no noise this machine showed makes that.
bool Tuner::clearly_slower(const Trial& t) {
  if (t.a.size() != 1 || t.b.size() != 1 || !(t.a[0].throughput() > 0) || !(t.b[0].throughput() > 0)) return false;
  return t.b[0].throughput() * slower_factor() < t.a[0].throughput();
}

// After two pairs, whether the third can change the answer: a gain twice beyond the threshold that the
// interval (pooled with the A/A floor) already shows, or a loss it already shows. Anything closer runs all
// its pairs. Kept changes are measured again in the final alternation, so an early gain is checked twice.
bool Tuner::decided_early(const Trial& t) {
  const measure::NoiseFloor nf = floor();
  if (!o_.early_decision || !nf.valid()) return false;
  const auto e = measure::paired_ratio(t.a, t.b, &nf, o_.confidence);
  if (!e.valid()) return false;
  const double band = nf.band(e.pairs, o_.confidence);
  const double threshold = std::max(o_.min_gain, std::isfinite(band) ? band : 0.0);
  return e.lo > 1.0 + 2 * threshold || e.hi < 1.0 - threshold;
}

void Tuner::learn_noise(const Trial& t) {
  if (t.fresh_processes || t.phase == "noise floor" || t.a.size() < 2 || t.a.size() != t.b.size()) return;
  std::vector<double> r;
  for (size_t i = 0; i < t.a.size(); ++i)
    if (t.a[i].throughput() > 0 && t.b[i].throughput() > 0) r.push_back(std::log(t.b[i].throughput() / t.a[i].throughput()));
  if (r.size() < 2) return;
  double mean = 0, ss = 0;
  for (double x : r) mean += x;
  mean /= double(r.size());
  for (double x : r) ss += (x - mean) * (x - mean);
  measure::NoiseFloor f;
  f.df = double(r.size() - 1);
  f.sd_log = std::sqrt(ss / f.df);
  f.pairs = static_cast<int>(r.size());
  f.bias = 0;
  residuals_ = measure::pool(residuals_, f);
}

Trial& Tuner::record(Trial t) {
  learn_noise(t);
  fill_memory(t);
  progress(phase_, (t.knob.empty() ? t.phase : label(t.knob, t.value)) + ": " + t.reason);
  res_.trials.push_back(std::move(t));
  return res_.trials.back();
}

}  // namespace tb::engine::search
