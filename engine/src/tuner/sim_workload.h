// A deterministic simulation of one GPU training step (private to the engine; tests include it).
//
// The model is a queue of three resources with knob-dependent costs, chosen so that the search has to
// discover interactions the way seed 003 tells them:
//   gpu     = (20 + 1.5*B) ms * amp factor (off 1, fp16 0.5, bf16 0.35) * 1.5 with anomaly_detection on
//             * 0.8 with tf32 on
//   launch  = 45 ms of host launch work per step, 3 ms with cuda_graphs on;  device = max(gpu, launch)
//   h2d     = 0.1 ms per sample pageable, 0.03 with pin_memory on (on the training thread)
//   load    = 1.2 ms per sample on one core; workers W>0 load in parallel on min(W, cores=4) cores
//   step    = load + h2d + device               (workers = 0: loading on the training thread)
//           = max(load / W', h2d + device) + 0.5 (workers > 0)
//   batch_size >= 128 runs out of memory; tf32 makes the loss 25% worse (to exercise the drift guard).
// From the naive baseline (workers 0, batch 32, amp off, anomaly on) cuda_graphs alone does nothing and
// more than one worker does nothing; both pay once amp made the GPU fast. best_config() enumerates the
// space to give the known optimum the tests compare against.
//
// Time is virtual: every step, apply and probe advances now_s() by its simulated cost, so budgets are
// exercised without waiting. Noise is seeded: same seed, same samples.
#pragma once

#include <random>

#include "engine/tuner.h"

namespace tb::engine {

class SimulatedWorkload : public Workload {
 public:
  explicit SimulatedWorkload(uint64_t seed = 7, double noise = 0.03);

  std::vector<KnobState> knobs() override;
  Config baseline() override;
  void apply(const Config& config) override;
  std::vector<double> measure(int warmup, int steps) override;
  std::vector<double> loss_probe(const Config& config, int steps) override;
  std::optional<Snapshot> snapshot(int steps) override;
  double now_s() override { return now_s_; }
  int cpu_cores() override { return 4; }
  nlohmann::json describe() override;

  // Noise-free milliseconds per step and samples/s of a configuration (missing knobs = baseline).
  double step_ms(const Config& config) const;
  double throughput(const Config& config) const;
  // The fastest configuration whose loss passes a 10% drift guard, by exhaustive enumeration.
  Config best_config() const;

  int applies() const { return applies_; }
  int steps_run() const { return steps_; }

 private:
  Config full(const Config& config) const;
  double noisy(double ms);

  std::mt19937_64 rng_;
  double noise_;
  Config current_;
  double now_s_ = 0;
  int applies_ = 0;
  int steps_ = 0;
};

}  // namespace tb::engine
