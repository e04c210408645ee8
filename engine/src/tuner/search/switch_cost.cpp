// A window's overhead by what it changed (switch_cost.h).
#include "tuner/search/switch_cost.h"

#include <algorithm>

namespace tb::engine::search {

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

SwitchCosts::Keys SwitchCosts::changed(const Config& from, const Config& to) {
  Keys out;
  for (const auto& [k, v] : to) {
    auto it = from.find(k);
    if (it == from.end() || it->second != v) out.insert(k);
  }
  for (const auto& [k, v] : from)
    if (!to.count(k)) out.insert(k);
  return out;
}

double SwitchCosts::Seen::at(double step_s) const {
  return fixed_s.empty() ? 0.0 : median(fixed_s) + median(warmup_steps) * step_s;
}

void SwitchCosts::observe(const Config& from, const Config& to, double overhead_s, int warmup_steps, double step_s) {
  if (!(overhead_s >= 0) || !(step_s >= 0)) return;
  if (from.empty()) return;  // the first window: a process's own start, not a switch
  const double fixed = std::max(0.0, overhead_s - warmup_steps * step_s);
  const Keys keys = changed(from, to);
  for (Seen* s : keys.empty() ? std::vector<Seen*>{&same_} : std::vector<Seen*>{&changed_, &by_[keys]}) {
    s->fixed_s.push_back(fixed);
    s->warmup_steps.push_back(warmup_steps);
  }
}

const SwitchCosts::Seen* SwitchCosts::seen(const Keys& keys) const {
  auto it = by_.find(keys);
  return it == by_.end() ? nullptr : &it->second;
}

double SwitchCosts::common_s(double step_s) const {
  double lowest = -1;
  for (const auto& [keys, v] : by_)
    if (keys.size() == 1 && (lowest < 0 || v.at(step_s) < lowest)) lowest = v.at(step_s);
  return lowest >= 0 ? lowest : changed_.at(step_s);
}

double SwitchCosts::extra_s(const std::string& knob, double step_s) const {
  const Seen* v = seen({knob});
  return v ? std::max(0.0, v->at(step_s) - common_s(step_s)) : 0.0;
}

double SwitchCosts::estimate(const Config& from, const Config& to, double step_s) const {
  const Keys keys = changed(from, to);
  if (keys.empty()) return same_.at(step_s);
  if (const Seen* v = seen(keys)) return v->at(step_s);
  double s = common_s(step_s);
  for (const auto& k : keys) s += extra_s(k, step_s);
  return s;
}

}  // namespace tb::engine::search
