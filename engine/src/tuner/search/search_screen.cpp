// The in-process phases of the tuner's search (search.h): screen each knob on top of the winners so far,
// accumulate what the screening left, revisit the knobs that address the last bottleneck.
//
// Why on top of the winners, not each against the baseline: a bottleneck masks every knob behind it. On a
// GPU with the loader inline, amp or CUDA graphs measured against the baseline show nothing (the step waits
// for JPEG decoding either way) and only pay once workers are on; screened against the baseline they were
// called "no effect" and never tried again. The knobs come in the table's order (the loader's first; a
// workload may put its own first), so each screen measures a knob behind the bottlenecks already removed.
// Not reordered by the bottleneck each kept change leaves: that greedy path stalls where two knobs pay only
// together (batch 64 and a second worker, once CUDA graphs removed the launch cost batch 64 amortised).
#include "tuner/search.h"

namespace tb::engine::search {

void Tuner::screen() {
  phase_ = "screen";
  for (const auto& id : order_) {
    const auto& k = knobs_[id];
    if (k.info.process_scope) continue;
    if (!eligible(k, true)) continue;
    if (auto why = not_worth(k.info, current_)) {
      res_.skipped.push_back({id, "", *why});
      continue;
    }
    const std::string base_v = current_[id];
    ++screened_knobs_;
    Ladder l = ladder_of(k.info);
    if (l != Ladder::None) {
      // Climb from the current value; each rung is measured against the previous winning rung, which is kept.
      const Config start = current_;
      Config ref = current_;
      std::string ref_label = current_label();
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
        accept(*won, c);
        ref = current_;
        best = Change{changed_delta(start, ref), id, *next, c.also};
        ref_label = current_label();
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
      record(trial(phase_, current_, current_label(), c, with(current_, c.delta)));
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
      accept(best_index, c);
    }
  }
}

void Tuner::accept(size_t trial_index, const Change& c) {
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

void Tuner::accumulate() {
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

std::string Tuner::current_label() {
  auto ch = changed_knobs(baseline_, current_);
  if (ch.empty()) return "baseline";
  std::string s;
  for (const auto& k : ch) s += (s.empty() ? "" : ", ") + label(k, current_[k]);
  return s;
}

void Tuner::revisit() {
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

}  // namespace tb::engine::search
