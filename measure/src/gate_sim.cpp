#include "measure/gate_sim.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace tb::measure {

GateLook simulate_gate(const GateRule& rule, const GateWorld& world, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, world.noise_per_pair / std::sqrt(2.0));
  std::uniform_real_distribution<double> uniform(0, 1);
  int processes = 0;
  auto run = [&](double truth) {
    Window w;
    w.steps = 50;
    w.samples = 50 * 32;
    double speed = truth * std::exp(noise(rng)) * (1 + world.drift_per_process * processes);
    if (uniform(rng) < world.slow_share) speed *= world.slow_factor;
    w.wall_s = double(w.samples) / speed;
    w.start_s = processes++;
    return w;
  };
  GateLook last;
  const double base = 100, cand = 100 * (1 - world.slowdown);
  if (world.stored > 0) {
    std::vector<Window> stored, now;
    for (int i = 0; i < world.stored; ++i) stored.push_back(run(base));
    const auto looks = gate_looks(rule.min_pairs, world.max_pairs);
    for (int i = 0; i < world.max_pairs; ++i) {
      now.push_back(run(cand));
      if (int(now.size()) == world.max_pairs || std::find(looks.begin(), looks.end(), int(now.size())) != looks.end()) {
        last = look_unpaired(stored, now, rule);
        if (last.verdict != GateVerdict::kUndecided) break;
      }
    }
    return last;
  }
  return run_alternated(rule, [&](bool candidate) { return run(candidate ? cand : base); },
                        [&](int pairs) { return pairs < world.max_pairs; });
}

GateLook run_alternated(const GateRule& rule, const std::function<Window(bool candidate)>& process,
                        const std::function<bool(int pairs)>& another_pair) {
  GateLook last;
  GateSequence gate(rule);
  while (another_pair(gate.pairs())) {
    Window a, b;
    if (gate.baseline_first_next()) {
      a = process(false);
      b = process(true);
    } else {
      b = process(true);
      a = process(false);
    }
    gate.add(a, b);
    if (gate.look_due() || !another_pair(gate.pairs())) {
      last = gate.look();
      if (last.verdict != GateVerdict::kUndecided) break;
    }
  }
  return last;
}

}  // namespace tb::measure
