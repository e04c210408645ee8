// One pass over the knobs, priced after the noise floor (search.h plan_pass): what trying each applicable knob
// once costs, finals and the process knobs' arms included, how much of it the budget pays for, and --budget auto.
#include <algorithm>
#include <cmath>

#include "client/inputs.h"
#include "tuner/search/priority.h"
#include "tuner/search/search.h"

namespace tb::engine::search {

// One pass: every knob the search has a trial for now, in the order it ranks them, each tried once, with the
// finals as if every one of them were kept (the most the end can need for them). A tune that knows this after
// its noise floor can say up front what its budget buys, and --budget auto can buy exactly that.
void Tuner::plan_pass() {
  PassPlan p;
  std::vector<std::string> ready;
  for (const auto& id : order_)
    if ((!knobs_[id].info.process_scope || all_fresh()) && eligible(knobs_[id], false) && !next_changes(id).empty())
      ready.push_back(id);
  p.knobs = by_priority(ready);
  // A knob that only means something once another is set (prefetch after workers) has its trial then: one pass
  // counts it after the others when the one it needs is in the pass. Priced without it, a GPU profile's
  // --budget auto never measured prefetch=4, a knob of its hand configuration (7 seeds of 8).
  for (const auto& id : order_) {
    const auto& kn = knobs_[id];
    const std::string needs = depends_on(id);
    if ((kn.info.process_scope && !all_fresh()) || needs.empty() || !eligible(kn, false) ||
        std::find(p.knobs.begin(), p.knobs.end(), id) != p.knobs.end() ||
        std::find(ready.begin(), ready.end(), needs) == ready.end())
      continue;
    if (ladder_of(kn.info) != Ladder::None ? ladder_next(kn.info, baseline_[id]).has_value()
                                           : !plain_values(kn, baseline_[id]).empty())
      p.knobs.push_back(id);
  }
  for (const auto& id : p.knobs)
    p.trial_s.push_back(trial_cost_s(id) * static_cast<double>(std::max<size_t>(1, next_changes(id).size())));
  p.spent_s = elapsed();
  // The finals' reserve with `kept` more knobs kept: one more arm each (with one kept, "final without it" is the
  // baseline arm), on top of what the end needs now; the first kept change brings the fresh-process headline
  // (its minimum, `rounds` pairs) when the windows run under another allocator than the user's: a GPU tune held
  // ~150 s back for it from its first kept knob, and a pass planned without it tried half its knobs.
  const double now = reserve_s();
  const bool fresh_needed =
      current_ == baseline_ && measured_under_other_allocator() && !all_fresh() && !no_fresh_processes_;
  int fresh_arms = fresh_needed ? planned_fresh_arms() : 0;
  double fresh = fresh_arms ? kFreshMargin * budget_.alternation_s(fresh_arms, o_.rounds, true) : 0.0;
  auto reserve = [&](int kept) {
    const int arms = kept == 0 ? 1 : kept == 1 ? 2 : 2 + kept;
    return now + (kept > 0 ? fresh : 0.0) +
           kReserveMargin * budget_.alternation_s(arms - final_arms(), o_.rounds, false);
  };
  double trials = 0;
  for (double s : p.trial_s) trials += s;
  const int k = static_cast<int>(p.knobs.size());
  // The process knobs come after the in-process ones: each is an arm of the fresh-process final, measured on
  // top of the winners (search_fresh.cpp). The measurement allocator's arm is the headline's already.
  // One that fresh pairs cannot resolve here is not priced: it is out of reach (out_of_reach), said.
  std::string far;
  if (!all_fresh() && !no_fresh_processes_)
    for (const auto& id : order_)
      if (knobs_[id].info.process_scope && eligible(knobs_[id], false) && !process_arm(id).value.empty()) {
        if (out_of_reach(id, o_.rounds)) far += (far.empty() ? "" : ", ") + id;
        else p.process_knobs.push_back(id);
      }
  p.process_knobs = by_priority(p.process_knobs);
  // The measurement allocator's arm, when the headline plans it, is the headline's.
  auto alloc_in_headline = [&] {
    return fresh > 0 && fresh_arms > 2 &&
           std::find(p.process_knobs.begin(), p.process_knobs.end(), "cpu_allocator") != p.process_knobs.end();
  };
  auto own_arms = [&] { return static_cast<int>(p.process_knobs.size()) - (alloc_in_headline() ? 1 : 0); };
  // They ride on the fresh-process headline: without one, an arm brings the baseline's and the final's fresh
  // processes along (a script's 25 s processes: 3 arms of 3 rounds, 251 s, for one knob's expected 2-8%), so a
  // pass prices them only beside a planned headline.
  auto process_s = [&] {
    return own_arms() == 0 || !(fresh > 0) ? 0.0 : kFreshMargin * budget_.alternation_s(own_arms(), o_.rounds, true);
  };
  auto price = [&] {
    p.process_s = process_s();
    p.reserve_s = reserve(k);
    p.pass_s = p.spent_s + trials + p.reserve_s + p.process_s;
  };
  price();
  // A headline that would take more than its share of the budget is measured in this process (fresh_final_planned):
  // at a given budget the measurement allocator's arm is left out first, as reserve_parts does. Under --budget
  // auto, whose budget is this pass, the headline comes with every arm it plans or not at all, its share of the
  // pass without the process knobs' arms (they ride on it, and counted they would make its room themselves):
  // with its two arms a script profile's pass grew from ~220 s to ~470 s and its tunes measured worse (16 seeds:
  // 0.88 of the hand configuration's speed-up against 0.93, the worst 0.69).
  while (fresh > 0 && fresh > o_.max_fresh_share * (o_.budget_auto ? p.pass_s - p.process_s : budget_.total())) {
    fresh = fresh_arms > 2 && !o_.budget_auto ? kFreshMargin * budget_.alternation_s(fresh_arms = 2, o_.rounds, true) : 0.0;
    price();
  }
  if (alloc_in_headline()) p.process_knobs.erase(std::find(p.process_knobs.begin(), p.process_knobs.end(), "cpu_allocator"));
  const int m = static_cast<int>(p.process_knobs.size());
  const bool headline = fresh > 0;
  const bool arms_priced = m > 0 && headline;  // else the line says no fresh-process final is planned for them
  if (o_.budget_auto) {
    const double want = std::ceil(p.pass_s);
    const double b = std::clamp(want, client::inputs::kBudgetMinS, client::inputs::kBudgetMaxS);
    p.auto_budget = true;
    p.clamped = b != want;
    o_.budget_s = b;
    budget_.set_total(b);
    res_.budget_s = b;
  }
  double cum = p.spent_s;
  while (p.fit < k && cum + p.trial_s[p.fit] + reserve(p.fit + 1) <= budget_.total()) cum += p.trial_s[p.fit++];
  // The search prices a trial with the finals of what it keeps so far (fits): while nothing is kept, more fit. A
  // 60 s tune of a script whose line said "none of them" tried four knobs.
  p.fit_none_kept = p.fit;
  for (double c = cum; p.fit_none_kept < k && c + p.trial_s[p.fit_none_kept] + reserve(0) <= budget_.total();)
    c += p.trial_s[p.fit_none_kept++];
  // A budget that covers the whole pass holds the process knobs' arms from the start (reserve_parts).
  p.process_fit = arms_priced && p.fit == k && cum + reserve(k) + p.process_s <= budget_.total();
  if (p.process_fit) process_planned_ = p.process_knobs;
  const int priced = p.priced = k + (headline ? m : 0);
  const std::string knobs = std::to_string(priced) + (priced == 1 ? " knob" : " knobs");
  std::string procs;
  for (const auto& id : p.process_knobs) procs += (procs.empty() ? "" : ", ") + id;
  if (p.auto_budget) {
    p.line = "budget auto: " + fmt(o_.budget_s, 0) + " s (one pass over " + knobs +
             ", finals included; ladder climbs and extra pairs come on top)";
    if (p.clamped)
      p.line += "; clamped to " + fmt(client::inputs::kBudgetMinS, 0) + ".." + fmt(client::inputs::kBudgetMaxS, 0) +
                " s from ~" + fmt(p.pass_s, 0) + " s";
  } else {
    p.line = "~" + fmt(p.pass_s, 0) + " s to try each of the " + knobs + " once, finals included";
  }
  p.line += " (calibration and noise floor " + fmt(p.spent_s, 0) + " s, trials " + fmt(trials, 0) + " s, finals " +
            fmt(p.reserve_s, 0) + " s" +
            (arms_priced ? ", the process knobs' arms in fresh processes " + fmt(p.process_s, 0) + " s: " + procs : "") +
            ")";
  if (m > 0 && !headline)
    p.line += "; the process knobs (" + procs + ") are measured in a fresh-process final, which this budget does not plan";
  if (!far.empty())
    p.line += "; out of reach in fresh processes here: " + far + " (a pair varies by ±" + pct(fresh_sd(), 0) +
              (std::isfinite(finals_.fresh_sd_measured) ? "" : ", this process's floor x1.8") + ": " +
              std::to_string(o_.rounds) + " pairs resolve less than the most it may give)";
  if (!p.auto_budget || p.fit < k || (arms_priced && !p.process_fit)) {
    std::string first;
    for (int i = 0; i < p.fit_none_kept; ++i) first += (i ? ", " : "") + p.knobs[i];
    // One trial each: a ladder's next rungs, revisits and extra pairs spend from the same budget (a GPU profile's
    // tune at 300 s, planned whole, still deferred 2 of 15), so a budget that covers the pass says only that.
    // The process knobs' arms are measured only if what is left at the end pays for them, unless covered.
    const std::string b = fmt(o_.budget_s, 0) + " s";
    if (p.fit == k && (!arms_priced || p.process_fit))
      p.line += "; " + b + " covers that pass (ladder climbs and extra pairs come on top)";
    else if (p.fit == k)
      p.line += "; " + b + " covers the " + std::to_string(k) + " in-process knobs, not the process knobs' arms (" +
                procs + "; --budget " + fmt(std::ceil(p.pass_s), 0) + " holds them)";
    else if (p.fit_none_kept > p.fit)
      p.line += "; with " + b + " " + std::to_string(p.fit) + " to " + std::to_string(p.fit_none_kept) +
                " of them, fewer the more of them it keeps, in order of expected gain (" + first + ")" +
                (arms_priced ? ", no process knob's arm" : "");
    else
      p.line += (p.fit == 0 ? "; with " + b + " none of them"
                            : "; with " + b + " the " + std::to_string(p.fit) + " with the highest expected gain (" +
                                  first + ")") +
                (arms_priced ? ", no process knob's arm" : "");
  }
  progress(phase_, p.line);
  res_.plan = std::move(p);
}

}  // namespace tb::engine::search
