// The in-process search of the tuner (search.h): one loop that measures, each time, the knob with the highest
// expected gain over cost from the configuration kept so far, and keeps each winner at once.
//
// Why on top of the winners, not each against the baseline: a bottleneck masks every knob behind it. On a GPU
// with the loader inline, amp or CUDA graphs measured against the baseline show nothing (the step waits for
// JPEG decoding either way) and only pay once workers are on.
// Why one loop ordered by the bottleneck, not a screening pass in a fixed order and a revisit after it: on an
// H100 a 255 s tune spent its first fifth on the loader's rungs and stopped before amp or CUDA graphs had a
// turn; and where the step is loader-bound a whole pass finds "no effect" for every knob behind the loader,
// which then waits for a revisit the budget may not reach. Here each kept change takes a snapshot, the
// bottleneck it names ranks the knobs (priority.h), a knob that did not pay comes back at half its expected
// gain once the configuration has changed (two knobs may pay only together), and every knob not yet tried
// keeps its full prior, so a tune with time left tries them all.
#include "tuner/search/search.h"

namespace tb::engine::search {

namespace {
bool paid(const Trial& t) { return t.accepted || t.outcome == "gain"; }
// A knob that removes at least 40% of the kind of time it acts on, on a GPU (priority.cpp's table).
bool strong(const std::string& knob) {
  const KnobFacts* f = facts_of(knob);
  if (!f) return false;
  const Removes& r = f->cuda;
  return std::max({r.loader, r.h2d, r.launch, r.sync, r.compute, r.comm}) >= 0.4;
}
}  // namespace

std::vector<Change> Tuner::next_changes(const std::string& id) {
  const auto& k = knobs_[id];
  if (not_worth(k.info, current_)) return {};
  const std::string from = current_[id];
  const Ladder l = ladder_of(k.info);
  if (l != Ladder::None) {
    // The next rung not yet measured from here. Past a rung that did not pay the climb stops until the
    // configuration changes, except from 0 workers: one worker can lose to loading inline while two win.
    std::string at = from;
    while (auto next = ladder_next(k.info, at)) {
      if (auto why = memory_short(id, at, *next)) {
        // Predicted not to fit: said once, with the figures, and the climb ends here.
        const bool said = std::any_of(res_.skipped.begin(), res_.skipped.end(),
                                      [&](const SkippedTrial& s) { return s.knob == id && s.value == *next; });
        if (!said) {
          res_.skipped.push_back({id, *next, *why});
          progress(phase_, "skipped " + label(id, *next) + " (" + *why + ")");
        }
        return {};
      }
      std::vector<Change> out;
      bool all_tried = true;
      for (const Change& c : rung(current_, id, *next)) {
        if (failed_.count(label(c))) return {};
        if (tried_.count(config_key(current_) + "|" + config_key(with(current_, c.delta)))) continue;
        all_tried = false;
        out.push_back(c);
      }
      if (!all_tried) return out;
      if (!(l == Ladder::Workers && from == "0" && *next == "1")) return {};
      at = *next;
    }
    return {};
  }
  // A switch already changed stays; a value that failed (out of memory, the loss drifted) is not tried again.
  // One measured slower is, once the configuration has changed: at a tie between the loader and the device a
  // 1.5x knob measured 0.98x (priority() counts it as two misses).
  if (current_[id] != baseline_[id]) return {};
  // A knob that means nothing without another switch brings it along (needed_switch): non_blocking=on is tried
  // as "non_blocking=on + pin_memory=on" while pinned memory is off. Tried alone, the H100 profile's tunes
  // measured non_blocking "no effect" from pageable memory, often twice a tune, and seldom pinned and
  // non-blocking copies together, the hand configuration's pair (the profile's copy: 2.4 ms a batch pageable,
  // 0.05 ms with both, beside a tuned step of ~14 ms).
  const auto need = needed_switch(id, current_);
  for (const auto& v : plain_values(k, from)) {
    Change c;
    c.delta[id] = v;
    c.knob = id;
    c.value = v;
    if (need && v != baseline_[id]) {
      c.delta[need->first] = need->second;
      c.also = label(need->first, need->second);
    }
    const Config cand = with(current_, c.delta);
    if (failed_.count(label(id, v)) || (need && failed_.count(label(need->first, need->second))) ||
        tried_.count(config_key(current_) + "|" + config_key(cand)))
      continue;
    return {c};
  }
  return {};
}

// Why each knob the search will not try is out (not applicable here, pinned, not asked for, a value unavailable),
// said once, before the first trial or the plan.
void Tuner::say_ineligible() {
  for (const auto& id : order_) {
    const auto& k = knobs_[id];
    if (k.info.process_scope && !all_fresh()) continue;
    if (!eligible(k, true)) continue;
    for (const auto& v : k.applicability.unavailable_values)
      res_.skipped.push_back({id, v, k.applicability.reason.empty() ? "unavailable here" : k.applicability.reason});
  }
}

void Tuner::search() {
  enter("search");
  say_ineligible();
  // Here, not after the noise floor: its look at each knob's next trial is the loop's first, side effects and all.
  plan_pass();
  for (;;) {
    std::vector<std::string> ready;
    for (const auto& id : order_) {
      const auto& k = knobs_[id];
      if (k.info.process_scope && !all_fresh()) continue;  // arms of the fresh-process final (search_fresh.cpp)
      if (!eligible(k, false)) continue;
      if (!next_changes(id).empty() || extendable(id)) ready.push_back(id);
    }
    if (ready.empty()) {
      // Every knob was measured from the configuration kept last; two that pay only together are the last
      // chance here (a second worker and bf16's faster arithmetic, when the step waits on both).
      if (try_pair()) continue;
      return;
    }
    bool ran = false;
    const size_t before = res_.trials.size();
    for (const auto& id : by_priority(pass_due(due_first(ready)))) {
      if (!step_knob(id)) continue;  // deferred: it does not fit; a cheaper one may
      ran = true;
      break;  // what it kept re-ranks the rest
    }
    if (!ran) return;  // nothing fits beside the final's reserve
    // The loader tied with another kind of time shows as a worker rung and another single that each had no
    // effect from the same configuration: their pair is measured now, before what is kept next moves the
    // search away from where they tie. An H200's tune measured a second worker and CUDA graphs each at ~1.0x
    // from one worker, kept batch 64, and never came back to them together (the hand sequence has both, 2x).
    // Only with a knob that removes much of its kind of time (graphs, bf16, compile, pinned copies): paired
    // eagerly with channels_last too, the script's profile lost its hand configuration in more seeds. Other
    // pairs wait until no single is left: tried eagerly, they cost the random worlds' tenth percentile 0.80 ->
    // 0.71 of their best.
    if (cuda_ && res_.trials.size() == before + 1 && res_.trials.back().outcome == "no effect")
      try_pair(res_.trials.back().knob);
  }
}

// On a GPU the knobs that change the model's own work are each measured once within the first third of the
// budget: a deadline, not an order. They go next only when the time left before it just pays for the ones
// not yet measured; until then the likeliest win does (the H100's tunes reached them at a fifth to a third of
// their budget, or never).
std::vector<std::string> Tuner::due_first(const std::vector<std::string>& ready) {
  if (!cuda_) return ready;
  std::vector<std::string> due;
  double need = 0;
  for (const auto& id : ready) {
    const KnobFacts* f = facts_of(id);
    if (!f || !f->model_level) continue;
    bool tried = false;
    for (const auto& t : res_.trials) tried |= t.knob == id;
    if (tried) continue;
    due.push_back(id);
    need += trial_cost_s(id);
  }
  if (due.empty() || elapsed() >= o_.budget_s * kModelKnobDeadline) return ready;
  // The likeliest other win first, when it would still leave them their time.
  std::vector<std::string> others;
  for (const auto& id : ready)
    if (std::find(due.begin(), due.end(), id) == due.end()) others.push_back(id);
  if (others.empty()) return ready;
  const std::string next = by_priority(others).front();
  if (priority(next) < priority(by_priority(due).front())) return ready;  // a due one is the likeliest anyway
  return elapsed() + need + trial_cost_s(next) > o_.budget_s * kModelKnobDeadline ? due : ready;
}

// A budget that covers one pass over the knobs (plan_pass) counts a trial for each knob that waits for another
// (prefetch for workers): once it can run, a ladder's next rung or a revisit goes before it only while it leaves
// that trial its time. Without this a GPU profile's --budget auto climbed and revisited until prefetch=4, a knob
// of its hand configuration, was "skipped (budget)" in 16 seeds of 16 (4 with it). Protecting every knob not
// yet measured that way cost those tunes their revisits (8 seeds: 1.58 of the hand configuration's speed-up
// against 1.70; a script profile's 0.95 -> 0.87).
std::vector<std::string> Tuner::pass_due(const std::vector<std::string>& ready) {
  if (!res_.plan || res_.plan->fit < static_cast<int>(res_.plan->knobs.size())) return ready;
  std::vector<std::string> waited, others;
  double need = 0;
  for (const auto& id : ready) {
    const bool tried = std::any_of(res_.trials.begin(), res_.trials.end(), [&](const Trial& t) { return t.knob == id; });
    const bool in_pass = std::find(res_.plan->knobs.begin(), res_.plan->knobs.end(), id) != res_.plan->knobs.end();
    if (tried || depends_on(id).empty() || !in_pass) {
      others.push_back(id);
    } else {
      waited.push_back(id);
      need += trial_cost_s(id);
    }
  }
  if (waited.empty() || others.empty()) return ready;
  const std::string next = by_priority(others).front();
  if (priority(next) <= priority(by_priority(waited).front())) return ready;  // one of them goes next anyway
  // Each of them, kept, is one more arm of the in-process final, as `next` is.
  const double arms = kReserveMargin * budget_.alternation_s(static_cast<int>(waited.size()), o_.rounds, false);
  return budget_.fits_trial(elapsed(), trial_cost_s(next) + need, reserve_if_kept_s() + arms) ? ready : waited;
}

bool Tuner::step_knob(const std::string& id) {
  const std::vector<Change> changes = next_changes(id);
  if (changes.empty()) {
    const auto i = extendable(id);
    if (!i) return false;
    // More pairs cost what a trial's pairs cost.
    if (!budget_.fits_trial(elapsed(), trial_cost_s(id), reserve_if_kept_s())) return false;
    extend(*i);
    return true;
  }
  // Once a trial left this process slower, every trial is a pair of fresh processes (search_sticky.cpp).
  const bool fresh = left_slower_at_.has_value();
  if (!fits(id, changes.front().value, fresh)) return false;
  bool before = false;
  for (const auto& t : res_.trials) before |= t.knob == id && (t.phase == "screen" || t.phase == "revisit");
  const std::string phase = before ? "revisit" : "screen";
  std::optional<size_t> won;
  Change won_change;
  for (size_t ci = 0; ci < changes.size(); ++ci) {
    const Change& c = changes[ci];
    // A rung of several variants (workers with the intra-op threads at auto and at the cores) is several
    // trials: each one fits the budget or waits, deferred (the second once ran on the first's check alone).
    if (ci > 0 && !fits(id, c.value, fresh)) break;
    const Config cand = with(current_, c.delta);
    Trial& t = record(trial(phase, current_, current_label(), c, cand, fresh));
    const size_t i = res_.trials.size() - 1;
    plans_[i] = {current_, cand, c};
    if (left_slower(i)) return true;  // the trials from the suspect on are discarded, its winner too
    if (t.accepted && (!won || t.estimate.ratio > res_.trials[*won].estimate.ratio)) {
      if (won) {
        res_.trials[*won].accepted = false;
        res_.trials[*won].reason += "; " + label(c) + " was faster";
      }
      won = i;
      won_change = c;
    } else if (t.accepted) {
      t.accepted = false;
      t.reason += "; " + label(won_change) + " was faster";
    }
    if (t.outcome == "oom" || t.outcome == "failed") break;
  }
  if (won) accept(*won, won_change);
  return true;
}

std::optional<size_t> Tuner::extendable(const std::string& id) {
  if (left_slower_at_) return std::nullopt;  // more pairs would be in the slowed process
  for (size_t i = res_.trials.size(); i-- > 0;) {
    const Trial& t = res_.trials[i];
    if (t.knob != id || (t.phase != "screen" && t.phase != "revisit")) continue;
    auto p = plans_.find(i);
    if (p == plans_.end() || p->second.ref != current_) return std::nullopt;
    if (t.accepted || t.outcome != "no effect" || !t.estimate.valid() || t.rounds >= o_.max_trial_pairs ||
        t.estimate.ratio < 1 + std::max(o_.min_gain, 0.05))
      return std::nullopt;
    return i;
  }
  return std::nullopt;
}

void Tuner::extend(size_t i) {
  const Plan plan = plans_.at(i);
  Trial& t0 = res_.trials[i];
  const int more = std::min(o_.rounds, o_.max_trial_pairs - t0.rounds);
  progress(phase_, label(plan.change) + ": undecided at " + fmt(t0.estimate.ratio, 3) + "x, " + std::to_string(more) +
                       " more pairs");
  const double start = w_.now_s();
  std::vector<measure::Window> a = t0.a, b = t0.b;
  const int first = t0.rounds;
  for (int r = first; r < first + more; ++r)
    for (int side = 0; side < 2; ++side) {
      const bool is_ref = (side == 0) == (r % 2 == 0);
      try {
        (is_ref ? a : b).push_back(window_of(is_ref ? plan.ref : plan.cand, false));
      } catch (const TrialFailure& f) {
        Trial& t = res_.trials[i];
        t.reason += "; more pairs failed: " + std::string(f.what());
        t.rounds = o_.max_trial_pairs;  // not again
        try {
          w_.apply(current_);
        } catch (const TrialFailure&) {
        }
        return;
      }
    }
  const size_t n = std::min(a.size(), b.size());
  a.resize(n);
  b.resize(n);
  Trial& t = res_.trials[i];
  t.a = a;
  t.b = b;
  t.rounds = static_cast<int>(n);
  t.seconds += w_.now_s() - start;
  t.before = measure::pooled_throughput(t.a);
  t.after = measure::pooled_throughput(t.b);
  const measure::NoiseFloor nf = floor();
  t.estimate = measure::paired_ratio(t.a, t.b, &nf, o_.confidence);
  t.accepted = false;
  classify(t, true);
  t.reason += " (" + std::to_string(n) + " pairs: more were measured while it was undecided)";
  bool guard = false;
  for (const auto& k : changed_knobs(plan.ref, plan.cand)) guard = guard || numerics(k);
  if (t.accepted && guard && w_.has_loss_probe()) {
    try {
      const double d = loss_drift(plan.cand);
      t.loss_drift = d;
      if (!std::isfinite(d) || d > o_.drift_tolerance) {
        t.accepted = false;
        t.outcome = "drift";
        t.reason = "loss drift " + (std::isfinite(d) ? fmt(d * 100, 1) + "%" : std::string("non-finite")) +
                   " beyond the " + fmt(o_.drift_tolerance * 100, 0) + "% tolerance";
        failed_.insert(label(plan.change));
      }
    } catch (const TrialFailure& f) {
      t.accepted = false;
      t.outcome = f.oom ? "oom" : "failed";
      t.reason = std::string("loss probe failed: ") + f.what();
    }
  } else if (t.accepted && guard) {
    t.reason += "; the loss was not checked (no seeded replay of a script's batches): watch its convergence";
  }
  progress(phase_, label(plan.change) + ": " + t.reason);
  if (t.accepted) accept(i, plan.change);
}

bool Tuner::try_pair(const std::string& tied_with) {
  if (left_slower_at_) return false;  // its pairs would run in the slowed process
  std::vector<Change> singles;
  std::set<std::string> seen;
  for (size_t i = res_.trials.size(); i-- > 0;) {
    auto p = plans_.find(i);
    const Trial& t = res_.trials[i];
    // Only what had no effect alone: two kinds of time that tie each pay nothing alone and together remove
    // the tie. A change measured slower alone joined pairs too, and chains of them: a random world kept
    // "workers=2 + fused_optimizer + channels_last + amp=bf16" (1.42x) where amp alone measured 0.79x and the
    // final was 1.21x faster without it.
    if (p == plans_.end() || p->second.ref != current_ || t.accepted || t.outcome != "no effect") continue;
    // A pair that had no effect is not paired again: chains of them (compile + persistent_workers, + prefetch,
    // + tf32) spent a simulated script tune's last third on knobs that each did nothing, and the one kept at
    // the fourth try did not hold in the final.
    if (p->second.change.paired) continue;
    if (!seen.insert(p->second.change.knob).second) continue;
    singles.push_back(p->second.change);
  }
  struct Pair {
    Change a, b;
    double score;
  };
  std::vector<Pair> pairs;
  for (size_t i = 0; i < singles.size(); ++i)
    for (size_t j = i + 1; j < singles.size(); ++j) {
      const std::string ka = kind_of(singles[i].knob, cuda_), kb = kind_of(singles[j].knob, cuda_);
      if (ka.empty() || kb.empty() || ka == kb) continue;
      // Eagerly: a worker rung beside the knob measured last, the other of the two a strong knob.
      if (!tied_with.empty()) {
        const Change* w = singles[i].knob == "workers" ? &singles[i] : singles[j].knob == "workers" ? &singles[j] : nullptr;
        const Change& other = w == &singles[i] ? singles[j] : singles[i];
        if (!w || (w->knob != tied_with && other.knob != tied_with) || !strong(other.knob)) continue;
      }
      // Two changes that set the same knob are not a pair: the second would overwrite the first's value (a
      // workers rung with 2 intra-op threads and intra_op_threads=1 ran as "intra_op_threads=1 + ... +
      // intra_op_threads=2", which was neither).
      if (std::any_of(singles[i].delta.begin(), singles[i].delta.end(),
                      [&](const auto& kv) { return singles[j].delta.count(kv.first) > 0; }))
        continue;
      const Config cand = with(with(current_, singles[i].delta), singles[j].delta);
      if (tried_.count(config_key(current_) + "|" + config_key(cand))) continue;
      // Scored on an even split of the step, not the snapshot's: when two kinds of time tie, the snapshot
      // shows neither as a stall (the loader and the device finish together), which is why neither paid alone.
      const double g = expected_gain(singles[i].knob, StepShares{}, cuda_) * expected_gain(singles[j].knob, StepShares{}, cuda_);
      pairs.push_back({singles[i], singles[j], g});
    }
  if (pairs.empty()) return false;
  // At most three pairs from one configuration: past them, what is left is unlikely to pay.
  int from_here = 0;
  for (const auto& [i, plan] : plans_)
    from_here += plan.ref == current_ && !res_.trials[i].also.empty() && res_.trials[i].phase == "revisit" &&
                 plan.change.also.find('=') != std::string::npos && kind_of(plan.change.knob, cuda_) != "" &&
                 plan.change.delta.size() >= 2;
  if (from_here >= 3) return false;
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) { return x.score > y.score; });
  const Pair& p = pairs.front();
  if (p.score < 1.0 + o_.min_gain) return false;
  Change c = p.a;
  c.paired = true;
  for (const auto& [k, v] : p.b.delta) c.delta[k] = v;
  c.also = label(p.b) + (p.a.also.empty() ? "" : " + " + p.a.also);
  const double need = trial_cost_s(p.a.knob) + (numerics(p.b.knob) ? budget_.probe_s() : 0.0);
  if (!budget_.fits_trial(elapsed(), need, reserve_if_kept_s())) return false;
  const Config cand = with(current_, c.delta);
  progress(phase_, (tied_with.empty() ? "no single knob is left to measure from here: " : "neither paid alone here: ") +
                       label(p.a) + " and " + label(p.b) + " together (they remove different kinds of time)");
  Trial& t = record(trial("revisit", current_, current_label(), c, cand));
  const size_t i = res_.trials.size() - 1;
  plans_[i] = {current_, cand, c};
  if (t.accepted) accept(i, c);
  return true;
}

void Tuner::accept(size_t trial_index, const Change& c, bool snapshot) {
  current_ = with(current_, c.delta);
  // A later rung of the same knob (workers 1 -> 2) replaces the earlier one: the final alternation checks
  // each kept knob once, at its final value.
  double replaced_ratio = 1;  // the replaced rung's ratio: the new one was measured against it
  for (size_t i = kept_.size(); i-- > 0;)
    if (kept_[i].change.knob == c.knob || c.delta.count(kept_[i].change.knob)) {  // a pair that sets a kept knob too
      replaced_ratio *= kept_[i].ratio;
      kept_.erase(kept_.begin() + long(i));
    }
  kept_.push_back({c, trial_index, replaced_ratio * res_.trials[trial_index].estimate.ratio});
  if (snapshot) take_snapshot("+ " + label(c));
}

std::string Tuner::current_label() {
  auto ch = changed_knobs(baseline_, current_);
  if (ch.empty()) return "baseline";
  std::string s;
  for (const auto& k : ch) s += (s.empty() ? "" : ", ") + label(k, current_[k]);
  return s;
}

// How many times `id` was measured without paying since it last paid: each halves its expected gain.
int Tuner::misses(const std::string& id) {
  int n = 0;
  for (const auto& t : res_.trials) {
    if (t.knob != id || (t.phase != "screen" && t.phase != "revisit")) continue;
    n = paid(t) ? 0 : n + (t.outcome == "slower" ? 2 : 1);
  }
  return n;
}

void Tuner::defer(const std::string& knob, const std::string& value, double need, double reserve, double fresh) {
  for (auto& d : deferred_)
    if (d.knob == knob) {
      d = {knob, value, need, left(), reserve, fresh};
      return;
    }
  deferred_.push_back({knob, value, need, left(), reserve, fresh});
}

std::string Tuner::Deferred::why() const {
  std::string end = "the final needed ~" + fmt(reserve_s, 0) + " s";
  if (fresh_s > 0)
    end = "the end of the tune needed ~" + fmt(reserve_s, 0) + " s (the final alternation ~" +
          fmt(reserve_s - fresh_s, 0) + " s, the fresh-process final ~" + fmt(fresh_s, 0) + " s)";
  return "budget: a trial needs ~" + fmt(need_s, 0) + " s; when its turn came " + fmt(std::max(0.0, left_s), 0) +
         " s were left and " + end;
}

// Each with what it may give by the last analysis: the order measured the likelier wins first, and a user
// deciding whether a longer tune is worth it reads both (prefetch=4 ~1.00x once the workers keep up).
void Tuner::skip_deferred(const Deferred& d) {
  res_.skipped.push_back({d.knob, d.value, d.why() + "; by the last analysis it may give ~" + fmt(expected(d.knob), 2) + "x",
                          std::max(0.0, d.left_s), d.need_s});
  progress(phase_, "skipped " + label(d.knob, d.value) + " (budget)");
}

void Tuner::record_untried() {
  std::set<std::string> tried;
  for (const auto& t : res_.trials) tried.insert(t.knob);
  // A deferred rung of a knob that was tried (workers=2 after workers=1 was kept) is a value not tried, too: it
  // was left out of the skipped list, so a demo's "workers=2" never appeared anywhere.
  std::set<std::string> tried_values;  // knob=value measured from some configuration (a revisit is not a new value)
  for (const auto& t : res_.trials)
    if (!t.knob.empty()) tried_values.insert(label(t.knob, t.value));
  for (const auto& d : deferred_)
    if (tried.count(d.knob) && !tried_values.count(label(d.knob, d.value))) {
      skip_deferred(d);
    }
  for (const auto& id : order_) {
    const auto& k = knobs_[id];
    if ((k.info.process_scope && !all_fresh()) || tried.count(id) || !eligible(k, false)) continue;
    if (std::any_of(res_.skipped.begin(), res_.skipped.end(), [&](const SkippedTrial& s) { return s.knob == id; }))
      continue;  // already said why (memory)
    auto d = std::find_if(deferred_.begin(), deferred_.end(), [&](const Deferred& x) { return x.knob == id; });
    if (d != deferred_.end()) {
      skip_deferred(*d);
    } else if (auto no = not_worth(k.info, current_)) {
      res_.skipped.push_back({id, "", *no});
    } else if (ladder_of(k.info) == Ladder::Workers && value_in(current_, id) == std::to_string(std::max(1, w_.cpu_cores()))) {
      res_.skipped.push_back({id, "", "nothing to try: " + value_in(current_, id) + " workers already use the " +
                                          value_in(current_, id) + " cores"});
    } else {
      res_.skipped.push_back({id, "", "nothing to try: the recommended value is the baseline's"});
    }
  }
  deferred_.clear();
}

void Tuner::undefer(const std::string& knob) {
  deferred_.erase(std::remove_if(deferred_.begin(), deferred_.end(), [&](const Deferred& d) { return d.knob == knob; }),
                  deferred_.end());
}

}  // namespace tb::engine::search
