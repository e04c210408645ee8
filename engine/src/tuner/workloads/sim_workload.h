// A deterministic simulation of one GPU training step (private to the engine; tests include it).
//
// The model is a queue of three resources with knob-dependent costs, chosen so that the search has to
// discover interactions the way real tuning meets them (docs/design.md: the loader only mattered once
// fp16 made the GPU fast):
//   gpu     = (20 + 1.5*B) ms * amp factor (off 1, fp16 0.5, bf16 0.35) * 1.5 with anomaly_detection on
//             * 0.8 with tf32 on
//   launch  = 45 ms of host launch work per step, 3 ms with cuda_graphs on;  device = max(gpu, launch)
//   h2d     = 0.1 ms per sample pageable, 0.03 with pin_memory on (on the training thread)
//   load    = 1.2 ms per sample on one core; workers W>0 load in parallel on min(W, cores=4) cores
//   step    = load + h2d + device               (workers = 0: loading on the training thread)
//           = max(load / W', h2d + device) + 0.5 (workers > 0)
//   batch_size >= 128 runs out of memory; tf32 makes the loss 25% worse (to exercise the drift guard).
//   cpu_allocator (a process knob): a fresh process under glibc runs every step 2x slower than under
//   glibc_tuned (SimOptions::glibc_fresh), its workers optionally slower (glibc_worker_load); windows in this
//   (simulated) process always run steady, as the real workload's do.
// Step noise is AR(1) (lag-1 correlation 0.5, marginal CV `noise`) on a slow sinusoidal drift; the first
// steps after a change are slow (3x, 1.2x) and the warm-up ends by measure/warmup.h's rule, as for real.
// SimOptions add a one-way jump (the whole process gets faster at a given moment, like glibc's allocator
// switching regime) and a linear drift, to test that the protocol neither credits nor hides them.
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

struct SimOptions {
  double noise = 0.03;
  double phi = 0.5;             // lag-1 autocorrelation of the step noise
  double jump_at_s = 1e300;     // from this virtual time on every step is `jump` times faster
  double jump = 1.0;
  double drift_per_s = 0.0;     // relative speed-up per second of virtual time (linear)
  bool fresh_processes = true;  // measure_fresh() supported
  // A fresh process under glibc runs at this share of the steady speed.
  double glibc_fresh = 0.5;
  // ...and its loader workers load this many times slower (a script's worker processes re-fault their
  // memory under glibc's defaults). 1 = no such effect.
  double glibc_worker_load = 1.0;
  // What measurement_allocator() says ("" = the configuration's own).
  std::string measurement_allocator;
  // Every window is a fresh process (a data-parallel group's tune): measure() is measure_fresh() of the
  // configuration applied last, process knobs included, and fresh_windows() says so.
  bool every_window_fresh = false;
  // Each fresh process runs at its own speed: the steady one times exp(N(0, process_noise)) (a script's
  // process under glibc's defaults settles wherever its mmap threshold happens to end up).
  double process_noise = 0.0;
  // What a fresh process costs before its first measured step (start-up, model build, CUDA and cuDNN set-up).
  double process_start_s = 1.0;
};

class SimulatedWorkload : public Workload {
 public:
  explicit SimulatedWorkload(uint64_t seed = 7, double noise = 0.03);
  SimulatedWorkload(uint64_t seed, const SimOptions& options);

  std::vector<KnobState> knobs() override;
  Config baseline() override;
  void apply(const Config& config) override;
  measure::Window measure(int steps) override;
  std::optional<measure::Window> measure_fresh(const Config& config, int steps) override;
  std::vector<double> loss_probe(const Config& config, int steps) override;
  std::optional<Snapshot> snapshot(int steps) override;
  double now_s() override { return now_s_; }
  int cpu_cores() override { return 4; }
  nlohmann::json describe() override;
  std::string measurement_allocator() const override { return opt_.measurement_allocator; }
  std::string fresh_windows() const override { return opt_.every_window_fresh ? "a fresh simulated process" : ""; }

  // Noise-free milliseconds per step and samples/s of a configuration (missing knobs = baseline).
  double step_ms(const Config& config) const;
  double throughput(const Config& config) const;
  // What a fresh process with `config` runs at (the allocator included).
  double fresh_throughput(const Config& config) const;
  // The fastest configuration whose loss passes a 10% drift guard, by exhaustive enumeration.
  Config best_config() const;

  int applies() const { return applies_; }
  int steps_run() const { return steps_; }

 private:
  Config full(const Config& config) const;
  double noisy(double ms);
  // Runs steps of `ms` (noise-free) until the warm-up rule says stable, then `steps` measured ones.
  measure::Window run_window(double ms, int64_t batch, int steps, bool warm);

  std::mt19937_64 rng_;
  SimOptions opt_;
  double e_ = 0;  // AR(1) state
  bool changed_ = true;
  Config current_;
  double now_s_ = 0;
  int applies_ = 0;
  int steps_ = 0;
};

}  // namespace tb::engine
