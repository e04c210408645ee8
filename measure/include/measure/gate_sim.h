// The gate's rule (measure/gate.h) on simulated processes, to measure its error rates: how often an A/A says
// "regression", how often a real slowdown is found (tests/measure/test_gate.cpp, bench/bench_gate_power.cpp).
//
// Each process's throughput is the side's true one times a log-normal noise (sd noise_per_pair / sqrt 2, so a
// pair's log ratio has sd noise_per_pair), times a machine drift that moves linearly with the process count, and
// a share of processes catches another job's burst and runs slow_factor as fast (a CI machine's neighbours).
// Sources: the noise levels swept (2-20% per pair) span what was measured: ±2.3-5.6% per pair between fresh
// processes of a CPU script on this 2-core VM (docs/ci.md), 16.7% per pair on the H200 (docs/gpu-runs, the
// tune's A/A). The burst share and size (3% of processes, 25% slower) are assumed, not measured: a stand-in for
// the outliers a busy CI machine gives.
// The gate runs as the runner runs it: pairs alternated AB BA, a look at each look count and the last pair.
#pragma once

#include <cstdint>
#include <functional>

#include "measure/gate.h"

namespace tb::measure {

struct GateWorld {
  double slowdown = 0;          // the candidate's true throughput is (1 - slowdown) of the baseline's
  double noise_per_pair = 0.05; // sd of one pair's log ratio
  double slow_share = 0.03;     // processes that run slow_factor as fast
  double slow_factor = 0.75;
  double drift_per_process = 0; // the machine's speed changes by this share per process (alternation cancels it)
  int max_pairs = 60;           // what --max-time allows (against a stored baseline: candidate processes)
  int stored = 0;               // > 0: against this many stored baseline processes (run first), not alternated
};

// The gate's last look: its verdict and when it stopped (pairs).
GateLook simulate_gate(const GateRule& rule, const GateWorld& world, uint64_t seed);

// The alternated gate over any source of processes, as the runner runs it: pairs AB BA AB ..., a look at each
// look count and at the last pair, stopping at the first decided look. `process(candidate)` runs one process of
// that side; `another_pair(pairs)` says whether one more pair fits (--max-time). simulate_gate runs it on the
// processes above; tests/engine/test_gate_worlds.cpp on the tuner's workload model.
GateLook run_alternated(const GateRule& rule, const std::function<Window(bool candidate)>& process,
                        const std::function<bool(int pairs)>& another_pair);

}  // namespace tb::measure
