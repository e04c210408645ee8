// A change that leaves this process slower (search.h): the same configuration measured again runs far slower
// than it did before a trial. A script's tune tried a loader knob on a script without a DataLoader; after that
// trial its process ran ~10x slower whatever the configuration (45 316 -> 4 200 samples/s at the baseline),
// every later in-process trial compared two slowed windows, and one of them (a 12.82x) reached the patch. The
// machine did not drift: the trial did. So each in-process trial's two configurations remember the
// throughput they ran at; when one runs again past the tolerance below it, the trial measured last before is
// named, the trials from it on are discarded, and the search goes on in fresh processes (each trial's windows
// a process of its own): the in-process final is skipped and the headline is measured in fresh processes too.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tuner/search/search.h"

namespace tb::engine::search {

// Far beyond the noise: a trial resolves ±band, and a drop of a third or three bands is no window's luck.
double Tuner::sticky_tolerance() const {
  const double band = std::isfinite(res_.noise_band) ? res_.noise_band : 0.0;
  return std::max(0.3, 3 * band);
}

bool Tuner::left_slower(size_t i) {
  const Trial& t = res_.trials[i];
  if (t.fresh_processes || t.a.empty() || t.b.empty()) return false;
  const auto p = plans_.find(i);
  if (p == plans_.end()) return false;
  const std::pair<const Config*, double> sides[] = {{&p->second.ref, t.before}, {&p->second.cand, t.after}};
  for (const auto& [config, now] : sides) {
    if (!(now > 0)) continue;
    const std::string key = config_key(*config);
    const auto it = level_.find(key);
    if (it != level_.end() && now * (1 + sticky_tolerance()) < it->second.throughput) {
      // The trial measured last before this one changed the process (its windows ran between the two).
      const size_t suspect = i > 0 ? i - 1 : i;
      const Trial& s = res_.trials[suspect];
      const std::string what = s.knob.empty() ? s.value : label(s.knob, s.value);
      res_.notes.push_back("this process was left slower: " + (key == config_key(baseline_) ? std::string("the baseline")
                                                                                              : "the same configuration") +
                           " ran at " + fmt(now / it->second.throughput, 3) + "x of its speed in trial " +
                           std::to_string(it->second.trial + 1) + " (" + fmt(it->second.throughput, 1) + " -> " +
                           fmt(now, 1) + " samples/s) after trial " + std::to_string(suspect + 1) + " (" + what +
                           "), which is the suspect, not the machine; the in-process results from it on are discarded " +
                           "and the search goes on in fresh processes");
      discard_from(suspect);
      return true;
    }
  }
  for (const auto& [config, now] : sides)
    if (now > 0) level_[config_key(*config)] = {now, i};
  return false;
}

void Tuner::discard_from(size_t suspect) {
  left_slower_at_ = suspect;
  const Trial& s = res_.trials[suspect];
  if (!s.knob.empty()) failed_.insert(label(s.knob, s.value));  // never again in a process of this tune
  for (size_t j = suspect; j < res_.trials.size(); ++j) {
    Trial& t = res_.trials[j];
    if (t.fresh_processes) continue;
    t.accepted = false;
    t.outcome = "discarded";
    t.reason = "discarded: this process ran slower from trial " + std::to_string(suspect + 1) + " on (" + t.reason + ")";
  }
  // What was kept on a discarded trial goes; the configuration is the one before it.
  std::erase_if(kept_, [&](const Kept& k) { return k.trial >= suspect; });
  current_ = baseline_;
  for (const Kept& k : kept_) current_ = with(current_, k.change.delta);
  // The baseline's windows from the suspect on measured the slowed process: they are not the machine's noise
  // or drift either.
  double since = std::numeric_limits<double>::infinity();
  for (const auto* side : {&res_.trials[suspect].a, &res_.trials[suspect].b})
    for (const auto& w : *side) since = std::min(since, w.start_s);
  auto late = [&](const measure::Window& w) { return w.start_s >= since; };
  for (auto& [phase, ws] : baseline_phase_) ws.erase(std::remove_if(ws.begin(), ws.end(), late), ws.end());
  res_.baseline_windows.erase(std::remove_if(res_.baseline_windows.begin(), res_.baseline_windows.end(), late),
                              res_.baseline_windows.end());
}

}  // namespace tb::engine::search
