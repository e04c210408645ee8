// The CI gate's error rates (measure/gate.h) on simulated processes (measure/gate_sim.h), not run in CI: per
// noise level (sd of one pair's log ratio), the share of 200 seeded gates that said each verdict, for true
// slowdowns of 0 (an A/A: "regression" is a false alarm) to 20%, and the pairs a gate ran. The power curve of
// docs/cpu-results.md "The CI gate's error rates".
// --stored N: against N stored baseline processes (gate --against; --max-pairs then counts candidate processes).
// The same rule on real processes of this machine: bench/bench_gate_cli.py.
// usage: bench_gate_power [--gates 200] [--max-pairs 60] [--tolerance 0.03] [--slow-share 0.03] [--drift 0]
//                         [--stored 0]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "measure/gate_sim.h"

using namespace tb::measure;

int main(int argc, char** argv) {
  GateRule rule;
  GateWorld world;
  int gates = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const double v = std::atof(argv[i + 1]);
    if (k == "--gates") gates = int(v);
    else if (k == "--max-pairs") world.max_pairs = int(v);
    else if (k == "--tolerance") rule.tolerance = v;
    else if (k == "--slow-share") world.slow_share = v;
    else if (k == "--drift") world.drift_per_process = v;
    else if (k == "--stored") world.stored = int(v);
    else {
      std::fprintf(stderr, "bench_gate_power: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::printf("%d gates each, at most %d %s, tolerance %.0f%%, %.0f%% of processes %.0f%% slow, drift %.2f%%/process"
              "%s\n",
              gates, world.max_pairs, world.stored > 0 ? "candidate processes" : "pairs", 100 * rule.tolerance,
              100 * world.slow_share, 100 * (1 - world.slow_factor), 100 * world.drift_per_process,
              world.stored > 0 ? (", against " + std::to_string(world.stored) + " stored processes").c_str() : "");
  std::printf("noise/pair  slowdown  regression  no change  undecided  improvement  mean pairs\n");
  for (double noise : {0.02, 0.05, 0.10, 0.15, 0.20}) {
    for (double slow : {0.0, 0.02, 0.05, 0.10, 0.15, 0.20}) {
      world.noise_per_pair = noise;
      world.slowdown = slow;
      int count[4] = {0, 0, 0, 0};
      double pairs = 0;
      for (int s = 0; s < gates; ++s) {
        const GateLook g = simulate_gate(rule, world, 1000003ULL * uint64_t(s) + 17);
        ++count[int(g.verdict)];
        pairs += g.pairs;
      }
      auto pct = [&](GateVerdict v) { return 100.0 * count[int(v)] / gates; };
      std::printf("%9.0f%%  %7.0f%%  %9.1f%%  %8.1f%%  %8.1f%%  %10.1f%%  %10.1f\n", 100 * noise, 100 * slow,
                  pct(GateVerdict::kRegression), pct(GateVerdict::kNoChange), pct(GateVerdict::kUndecided),
                  pct(GateVerdict::kImprovement), pairs / gates);
    }
  }
  return 0;
}
