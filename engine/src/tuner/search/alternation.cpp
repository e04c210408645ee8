// One alternation of arms for both finals (alternation.h).
#include "tuner/search/alternation.h"

namespace tb::engine::search {

int live_arms(const std::vector<Arm>& arms) {
  int n = 0;
  for (const auto& a : arms) n += !a.done();
  return n;
}

RoundEnd run_round(std::vector<Arm>& arms, int r, size_t essential,
                   const std::function<measure::Window(const Config&)>& window,
                   const std::function<void(const Arm&)>& after,
                   const std::function<bool(const std::string&)>& fatal_if) {
  RoundEnd end;
  for (size_t j = 0; j < arms.size(); ++j) {
    const size_t at = (j + size_t(r)) % arms.size();  // rotated: every arm takes every position
    Arm& arm = arms[at];
    if (arm.done()) continue;
    try {
      arm.windows.push_back(window(arm.config));
      if (after) after(arm);
    } catch (const TrialFailure& f) {
      const std::string why = f.what();
      if (fatal_if && fatal_if(why)) {
        end.fatal = why;
        end.stop_all = true;
        return end;
      }
      arm.failed = why;
      if (at < essential && end.fatal.empty()) end.fatal = arm.name + ": " + why;
    }
  }
  return end;
}

void paired(const Arm& x, const Arm& y, std::vector<measure::Window>& a, std::vector<measure::Window>& b) {
  const size_t n = std::min(x.windows.size(), y.windows.size());
  a.assign(x.windows.begin(), x.windows.begin() + long(n));
  b.assign(y.windows.begin(), y.windows.begin() + long(n));
}

void measure_pair(Trial& t, const Arm& x, const Arm& y, const measure::NoiseFloor* floor, double confidence) {
  paired(x, y, t.a, t.b);
  t.rounds = static_cast<int>(t.a.size());
  t.before = measure::pooled_throughput(t.a);
  t.after = measure::pooled_throughput(t.b);
  t.estimate = measure::paired_ratio(t.a, t.b, floor, confidence);
}

}  // namespace tb::engine::search
