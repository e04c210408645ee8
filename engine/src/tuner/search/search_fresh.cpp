// The process-knob phase of the tuner's search (search.h): knobs that take effect at process start,
// measured in fresh processes against the baseline.
#include "tuner/search.h"

namespace tb::engine::search {

// Knobs that take effect at process start, each value in fresh processes against the baseline. Fresh
// processes are expensive (start-up, model build): the primary pass tries each knob's recommended value
// only; the other values come after the revisit, with what is left of the budget.
void Tuner::process_phase(bool primary) {
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
    // The allocator, when the in-process windows ran under another one (a script's live child): the
    // fresh-process headline measures the kept knobs under the user's allocator and then under the
    // measurement one, so trying it alone first would spend a third of a small budget on a question the
    // headline answers. Alone it comes in the second pass, when budget is left.
    if (primary && id == "cpu_allocator" && measured_under_other_allocator()) {
      deferred_.insert(id);
      continue;
    }
    std::optional<size_t> best;
    for (size_t i = 0; i < res_.trials.size(); ++i)
      if (res_.trials[i].phase == "process" && res_.trials[i].knob == id && res_.trials[i].accepted) best = i;
    std::vector<std::string> values;
    for (const auto& v : plain_values(k, baseline_[id]))
      if ((v == k.info.recommended_value) == primary) values.push_back(v);
    if (primary && values.empty()) values = plain_values(k, baseline_[id]);  // no recommended: all now
    if (!primary && deferred_.count(id)) values = plain_values(k, baseline_[id]);
    // On top of the other process knobs already chosen: two of them can address one cause. Measured here,
    // a 2-rank group ran 3.5x the baseline process only because the baseline page-faulted under glibc's
    // malloc and the ranks did not (c10d's start-up raised glibc's mmap threshold); against the process with
    // cpu_allocator=glibc_tuned the ranks gave about 1.05x (one run each).
    Config ref = baseline_;
    std::string ref_label = "baseline";
    for (const auto& [k, chosen] : process_choice_)
      if (k != id) {
        ref[k] = chosen;
        ref_label += " + " + label(k, chosen);
      }
    for (const auto& v : values) {
      if (!fits_fresh(id, v)) break;
      Config cand = ref;
      cand[id] = v;
      Change c;
      c.delta[id] = v;
      c.knob = id;
      c.value = v;
      Trial& t = record(trial(phase_, ref, ref_label, c, cand, /*fresh=*/true));
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

}  // namespace tb::engine::search
