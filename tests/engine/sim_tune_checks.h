// The rules every simulated tune is held to, whatever the world (test_tuner_gpu_sim.cpp's calibrated profiles,
// test_tuner_worlds.cpp's random ones): within the budget's margin; the budget spent or every knob tried; a
// knob given up for budget only when the budget could not reach it; every knob that matters in the world's
// best configuration measured (at 300 s and more); what is kept decided by a trial and not hurting in the model;
// "every applicable knob was tried" true of the trials.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"

namespace tb::engine::test {

inline std::string value_of(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it == c.end() ? std::string() : it->second;
}

// `hurt_tolerance`: how much faster the final may be without one of its kept knobs before that knob counts as
// one that hurts (the calibrated profiles 2%; a random world its own noise floor).
// `best`: the configuration whose knobs must have been measured (default: the world's best, exhaustive).
inline std::vector<std::string> rule_problems(SimulatedWorkload& w, const TuneResult& r, double budget, double overrun,
                                              double hurt_tolerance = 0.02, const Config& best_given = {}) {
  std::vector<std::string> problems;
  const Config base = w.baseline();
  const bool every_knob = r.ended.find("every applicable knob was tried") != std::string::npos;
  const auto& cat = w.model().catalog();
  auto process_knob = [&](const std::string& k) {
    const auto info = std::find_if(cat.begin(), cat.end(), [&](const KnobInfo& i) { return i.id == k; });
    return info != cat.end() && info->process_scope;
  };
  if (r.elapsed_s > budget * (1 + overrun)) problems.push_back("past the budget's margin: " + std::to_string(r.elapsed_s));
  // ... unless what it left untried could not fit in what was left (each such skip needed more than that: a
  // world whose trials all ran in fresh processes, 101 s each, ended at 82% with 54 s left).
  bool rest_unaffordable = !r.skipped.empty();
  for (const auto& s : r.skipped)
    if (s.reason.rfind("budget", 0) == 0 && !(std::isfinite(s.need_s) && s.need_s > budget - r.elapsed_s))
      rest_unaffordable = false;
  if (r.elapsed_s < 0.85 * budget && !every_knob && !rest_unaffordable)
    problems.push_back("ended at " + std::to_string(r.elapsed_s) + " s without trying every knob: " + r.ended);
  for (const auto& s : r.skipped) {
    if (s.reason.rfind("budget", 0) != 0) continue;
    // Given up for budget only when the budget really could not reach it: the tune then used its budget, or
    // what it left unused could not have paid for the measurement the skip names (a fresh-process final).
    const double unused = budget - r.elapsed_s;
    if (unused > 0.1 * budget && !(std::isfinite(s.need_s) && unused < s.need_s))
      problems.push_back("skipped " + s.knob + " for budget with " + std::to_string(unused) + " s unused");
    if (s.reason.find(" s") == std::string::npos) problems.push_back("budget skip without figures: " + s.reason);
  }
  // Every knob that matters in the profile's best configuration (without it, that configuration loses 3% or
  // more) is measured, at 300 s and more: a search that never tried batch_size passed every test before this.
  // Process knobs are measured only where a fresh-process final fits; they are not asked for here. The script
  // profile is held to it too since a fresh final that can no longer fit reserves nothing (it had left prefetch
  // for budget in 3 seeds of 10 behind a 152 s reserve it could never spend).
  if (budget >= 300) {
    const Config best = best_given.empty() ? w.best_config() : best_given;
    const auto& cat = w.model().catalog();
    for (const auto& k : changed_knobs(base, best)) {
      const auto info = std::find_if(cat.begin(), cat.end(), [&](const KnobInfo& i) { return i.id == k; });
      if (info == cat.end() || info->process_scope) continue;
      Config without = best;
      without[k] = base.at(k);
      if (w.fresh_throughput(best) < 1.03 * w.fresh_throughput(without)) continue;
      // Measured: on its own trial, or set with another ("workers=2 + persistent_workers=on"); tried: a trial the
      // job refused (it failed), or a skip for budget, which the rule above holds to the budget.
      bool measured = false;
      for (const auto& t : r.trials)
        measured |= (t.knob == k && (!t.a.empty() || t.outcome == "failed")) ||
                    (!t.a.empty() && (" " + t.also).find(" " + k + "=") != std::string::npos);
      for (const auto& s : r.skipped) measured |= s.knob == k && s.reason.rfind("budget", 0) == 0;
      if (!measured) problems.push_back(k + " (worth 3% or more in the profile's best configuration) was never measured");
    }
  }
  // What is kept paid: each in-process knob of the final configuration was kept on a trial whose interval lies
  // above 1 (a search that keeps a knob whose interval covers 1 fails here), and none of them hurts in the
  // model: the final without it is not faster by more than 2%.
  const Config fin = r.final_config;
  for (const auto& k : changed_knobs(base, fin)) {
    if (process_knob(k)) continue;  // kept by the fresh final
    // The trial's own knob, or one it set with it ("workers=8 + intra_op_threads=0 (auto)", a pair's second).
    auto sets = [&](const Trial& t) {
      const std::string all = t.knob + "=" + t.value + " + " + t.also + " ", kv = k + "=" + value_of(fin, k);
      for (size_t p = all.find(kv); p != std::string::npos; p = all.find(kv, p + 1))
        if ((p == 0 || all[p - 1] == ' ') && all[p + kv.size()] == ' ') return true;
      return false;
    };
    bool kept = false;
    // ...or the final's extra arm that kept it: measured on top of the final, held beyond 1.
    for (const auto& t : r.trials)
      kept |= (t.accepted || (t.phase == "final" && t.reference == "final" && t.outcome == "held")) &&
              t.estimate.valid() && t.estimate.lo > 1 && sets(t);
    bool process = false;
    for (const auto& t : r.trials) process |= t.knob == k && t.phase == "process" && t.accepted;
    if (!kept && !process) problems.push_back("kept " + k + "=" + value_of(fin, k) + " without a trial that decided it");
    Config without = fin;
    without[k] = base.at(k);
    if (w.fresh_throughput(without) > (1 + hurt_tolerance) * w.fresh_throughput(fin))
      problems.push_back("kept " + k + "=" + value_of(fin, k) + ", which the model says costs " +
                             std::to_string(w.fresh_throughput(without) / w.fresh_throughput(fin)) + "x");
  }
  // "Every applicable knob was tried" is true of the trials: each knob with no skip entry had one.
  if (every_knob)
    for (const auto& k : w.knobs()) {
      if (!k.applicability.applicable) continue;
      bool tried = false, skipped = false;
      for (const auto& t : r.trials) tried |= t.knob == k.info.id;
      for (const auto& s : r.skipped) skipped |= s.knob == k.info.id;
      if (!tried && !skipped) problems.push_back("said every knob was tried, but " + k.info.id + " had no trial");
    }
  if (every_knob)
    for (const auto& s : r.skipped)
      if (s.reason.rfind("budget", 0) == 0 && !process_knob(s.knob))
        problems.push_back("said every knob was tried, but " + s.knob + "=" + s.value + " was skipped for budget");
  return problems;
}

}  // namespace tb::engine::test
