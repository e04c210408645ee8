// The in-process final's extra arms (finals.h): a knob the search deferred and never had time for is measured as
// one more arm, the final with it, over the alternation's minimum rounds. A trial of its own costs two pairs and,
// once kept, an arm in this final besides; an arm costs its rounds' windows, which the budget often still has
// when the last trial no longer fits beside the end's reserve (the H100 profile's tunes skipped prefetch=4 "for
// budget" in every seed, by a second or two). Against the final it says what the knob gives on top of what was
// kept; the clearest gain is kept with the final's own check: the final without it is the final arm itself.
#include <algorithm>
#include <cmath>

#include "tuner/search/finals.h"
#include "tuner/search/priority.h"

namespace tb::engine::search {
namespace {
// An extra arm's rounds: its pairs with the final are judged against the noise floor at their number, and at two
// a tune's last seconds pay for half again as many knobs as at three.
constexpr int kExtraRounds = 2;
}  // namespace

std::optional<Change> Tuner::arm_change(const std::string& knob, const std::string& value) {
  const KnobFacts* f = facts_of(knob);
  const bool compiled = value_in(current_, "compile") == "on";
  if (process_knob(knob) || numerics(knob) || (f && f->recipe) || (f && f->cost == TrialCost::Compiles) ||
      (compiled && f && f->cost == TrialCost::RecompilesUnderCompile) || step_scale(knob, value) != 1.0)
    return std::nullopt;
  for (const auto& k : kept_)
    if (k.change.knob == knob || k.change.delta.count(knob)) return std::nullopt;
  for (const Change& c : next_changes(knob))
    if (c.value == value) return c;
  return std::nullopt;
}

void InProcessFinal::add_extras() {
  Tuner& t = t_;
  std::vector<Extra> candidates;
  for (const auto& d : t.deferred_)
    if (auto c = t.arm_change(d.knob, d.value)) candidates.push_back({d, *c, 0});
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Extra& a, const Extra& b) {
    return t.expected(a.deferred.knob) > t.expected(b.deferred.knob);
  });
  const double step_s = t.step_cost_s();
  // Each arm's windows and the switches into and out of it, with the end's margin, beside everything the end
  // holds (both finals, as reserved) and the recompiles build_arms admitted: within the budget, not its margin.
  // Where a fresh-process final is held for, beside the check of knobs that do not hold alone too
  // (settle_dropped: three arms, conditional, not reserved): the extras and that check together took what the
  // fresh final's allocator arm, which the plan line had said the budget holds, then lacked. Without a fresh
  // final that check gives way to them (and says so).
  const int rounds = std::min(t.o_.rounds, kExtraRounds);
  const double alone = t.alternation_estimate_s({{t.current_, step_s}}, rounds);
  const double settle = inproc_.size() > 1 && t.reserve_parts().fresh > 0
                            ? kReserveMargin * t.budget_.alternation_s(3, t.o_.rounds, false)
                            : 0.0;
  double spent = t.reserve_s() + recompiles_s_ + settle;
  std::string names;
  for (Extra& e : candidates) {
    const Config c = Tuner::with(t.current_, e.change.delta);
    const double arm_s =
        kReserveMargin * std::max(t.budget_.alternation_s(1, rounds, false),
                                  t.alternation_estimate_s({{t.current_, step_s}, {c, step_s}}, rounds) - alone);
    if (!t.budget_.may_extend(t.elapsed(), spent + arm_s)) continue;  // stays deferred: said skipped
    spent += arm_s;
    e.arm = arms_.size();
    Arm arm{"with " + Tuner::label(e.change), c, e.change, {}, ""};
    arm.max_windows = size_t(rounds);
    arms_.push_back(std::move(arm));
    unreserved_.insert(e.arm);  // optional: paid from what the reserve left, not held for
    names += (names.empty() ? "" : ", ") + Tuner::label(e.change);
    std::erase_if(t.deferred_, [&](const Tuner::Deferred& d) { return d.knob == e.deferred.knob; });
    extras_.push_back(std::move(e));
  }
  if (!extras_.empty())
    t.progress(t.phase_, "the final alternation also measures " + names +
                             " on top of the final: no trial of " + (extras_.size() > 1 ? "them" : "it") +
                             " fitted beside the end's reserve, an arm over its first " + std::to_string(rounds) +
                             " rounds does");
}

double InProcessFinal::extras_last_window_s(size_t k) const {
  double s = 0;
  for (const Extra& e : extras_)
    if (k + 1 == arms_[e.arm].max_windows && k < arms_[e.arm].windows.size()) {
      const measure::Window& w = arms_[e.arm].windows[k];
      s += std::max(0.0, w.startup_s) + w.wall_s + std::max(0.0, w.one_time_s);
    }
  return s;
}

void InProcessFinal::skip_extras(const std::string& why) {
  for (Extra& e : extras_) {
    Tuner::Deferred d = e.deferred;
    t_.skip_deferred(d);
    t_.res_.skipped.back().reason = why + "; " + t_.res_.skipped.back().reason;
  }
  extras_.clear();
}

size_t InProcessFinal::judge_extras() {
  Tuner& t = t_;
  std::optional<size_t> best;  // index into extras_ of the clearest gain
  std::vector<size_t> rows(extras_.size());
  for (size_t i = 0; i < extras_.size(); ++i) {
    const Extra& e = extras_[i];
    const Arm& arm = arms_[e.arm];
    Trial row = t.row_for(t.phase_, e.change, t.current_, "final");
    for (const auto& w : arm.windows) row.seconds += std::max(0.0, w.startup_s) + w.wall_s + std::max(0.0, w.one_time_s);
    const std::string where = "measured in the final alternation on top of the final (no trial of it fitted the budget): ";
    if (!arm.failed.empty()) {
      row.outcome = "failed";
      row.reason = where + "its arm could not run (" + arm.failed + ")";
    } else {
      measure_pair(row, arms_[0], arm, &nf_, t.o_.confidence);
      t.classify(row, true);
      row.reason = where + row.reason;
      if (row.accepted && (!best || row.estimate.ratio > t.res_.trials[rows[*best]].estimate.ratio)) best = i;
    }
    row.accepted = false;  // kept below, on the clearest gain
    rows[i] = t.res_.trials.size();
    t.record(std::move(row));
  }
  // One at most: two extras were each measured on top of the final, never together. None when a kept knob did
  // not hold: the final they were measured on is not the one the tune ends with.
  for (size_t i = 0; i < extras_.size(); ++i) {
    Trial& row = t.res_.trials[rows[i]];
    if (row.outcome != "gain") continue;
    if (best == i && dropped_.empty()) {
      row.outcome = "held";
      row.reason += "; kept: the final without it is the final arm";
    } else {
      row.reason += best == i ? "; not kept: a kept knob did not hold, and the final it was measured on changed"
                              : "; not kept: " + Tuner::label(extras_[*best].change) +
                                    " gained more, and the two were not measured together";
    }
  }
  if (!best || !dropped_.empty()) return 0;
  const Change& c = extras_[*best].change;
  t.accept(rows[*best], c, false);
  // A ladder's rung kept here leaves its next one untried: listed, as a deferred rung is.
  if (auto next = t.ladder_next(t.knobs_[c.knob].info, c.value))
    t.res_.skipped.push_back({c.knob, *next, "budget: " + Tuner::label(c) +
                                                 " was measured only in the final alternation, with no time left for "
                                                 "the next rung"});
  return extras_[*best].arm;
}

void Tuner::after_finals() {
  finals_.done = true;
  if (left_slower_at_ || all_fresh() || current_ == baseline_) return;
  struct Todo {
    size_t skipped;  // index into res_.skipped
    Change change;
    bool arm;  // two pairs of arms, else a trial of its own
  };
  std::vector<Todo> todo;
  for (size_t i = 0; i < res_.skipped.size(); ++i) {
    const SkippedTrial& s = res_.skipped[i];
    if (s.value.empty() || !std::isfinite(s.need_s) || s.reason.rfind("budget", 0) != 0 || process_knob(s.knob)) continue;
    if (auto c = arm_change(s.knob, s.value)) {
      todo.push_back({i, *c, true});
      continue;
    }
    for (const Change& c : next_changes(s.knob))
      if (c.value == s.value) {
        todo.push_back({i, c, false});
        break;
      }
  }
  if (todo.empty()) return;
  std::stable_sort(todo.begin(), todo.end(),
                   [&](const Todo& a, const Todo& b) { return expected(a.change.knob) > expected(b.change.knob); });
  const int rounds = std::min(o_.rounds, kExtraRounds);
  const double step_s = step_cost_s();
  std::set<size_t> measured;
  for (const Todo& d : todo) {
    const Change& c = d.change;
    const Config with_it = with(current_, c.delta);
    const double cost =
        d.arm ? kReserveMargin * std::max(budget_.alternation_s(2, rounds, false),
                                          alternation_estimate_s({{current_, step_s}, {with_it, step_s}}, rounds))
              : kReserveMargin * trial_cost_s(c.knob) * step_scale(c.knob, c.value);
    if (!budget_.may_extend(elapsed(), cost)) continue;
    // Its own phase: the budget's accounts and the rows say where these came from.
    if (phase_ != "leftover") {
      enter("leftover");
      progress(phase_, "the finals left time: the knobs skipped for budget, each on top of the final (not kept: the "
                       "headline is measured)");
    }
    const std::string where = "measured after the finals, in the time they left, on top of the final: ";
    const std::string unkept = "; not kept: the headline was measured without it (a longer tune, or --set " +
                               label(c.knob, c.value) + ", measures it with the rest)";
    bool fatal = false;
    Trial row;
    if (!d.arm) {
      row = trial(phase_, current_, "final", c, with_it);
      row.reason = where + row.reason + (row.outcome == "gain" ? unkept : "");
    } else {
      std::vector<Arm> arms = {{"final", current_, {}, {}, ""}, {"with " + label(c), with_it, c, {}, ""}};
      std::string why;
      for (int r = 0; r < rounds && why.empty(); ++r)
        why = run_round(arms, r, 1, [&](const Config& cfg) { return window_of(cfg, false); }).fatal;
      fatal = !why.empty();
      row = row_for(phase_, c, current_, "final");
      for (const auto& a : arms)
        for (const auto& w : a.windows) row.seconds += std::max(0.0, w.startup_s) + w.wall_s + std::max(0.0, w.one_time_s);
      if (fatal || !arms[1].failed.empty()) {
        row.outcome = "failed";
        row.reason = where + "it could not run (" + (fatal ? why : arms[1].failed) + ")";
      } else {
        const measure::NoiseFloor nf = floor();
        measure_pair(row, arms[0], arms[1], &nf, o_.confidence);
        classify(row, true);
        row.reason = where + row.reason + (row.outcome == "gain" ? unkept : "");
      }
    }
    row.accepted = false;
    record(std::move(row));
    measured.insert(d.skipped);
    if (fatal) break;  // the final itself could not run: nothing more here
  }
  std::vector<SkippedTrial> still;
  for (size_t i = 0; i < res_.skipped.size(); ++i)
    if (!measured.count(i)) still.push_back(res_.skipped[i]);
  res_.skipped = std::move(still);
}

}  // namespace tb::engine::search
