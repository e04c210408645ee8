// A deterministic simulated workload (private to the engine; tests include it): one of the simulated jobs of
// sim_model.h ("toy", "gpu", "script-gpu"), run on a virtual clock with the things real measurements meet.
//   - Step noise is AR(1) (lag-1 correlation `phi`, marginal CV `noise`); each window also gets its own speed
//     (`window_noise`: a GPU's clocks and neighbours move whole windows, 4-17% a pair on the H100 and H200);
//   - a slow drift (a sinusoid of `drift_amplitude` and `drift_period_s`: +-10% is the +-20% a tune saw on a
//     GPU), an optional one-way jump (the whole process gets faster at a moment, like glibc's allocator
//     switching regime) and a linear drift, to test that the protocol neither credits nor hides them;
//   - the first steps after a change are slow (x3, x1.2; torch.compile's first step costs its compile time)
//     and the warm-up ends by measure/warmup.h's rule, as for real;
//   - process knobs (KnobInfo::process_scope) do not change this process: they take effect in a fresh one,
//     which costs `process_start_s` before its first step and runs at its own speed (`process_noise`); a fresh
//     process under cpu_allocator=glibc runs at `glibc_fresh` of the steady speed, its loader workers
//     `glibc_worker_load` times slower (the toy's allocator effect; 1 on the GPU models).
// Time is virtual: every step, apply and probe advances now_s() by its simulated cost, so budgets are exercised
// without waiting. Noise is seeded: same seed, same samples.
#pragma once

#include <limits>
#include <memory>
#include <random>
#include <set>

#include "engine/tuner.h"
#include "tuner/workloads/sim_model.h"

namespace tb::engine {

struct SimOptions {
  double noise = 0.03;
  double phi = 0.5;             // lag-1 autocorrelation of the step noise
  double window_noise = 0.0;    // each window's own speed: exp(N(0, window_noise))
  double drift_amplitude = 0.02;  // slow sinusoidal drift of the whole machine
  double drift_period_s = 188.5;  // (2 pi 30 s)
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
  // The simulated job: "toy" (the default), "gpu" or "script-gpu" (sim_model.h).
  std::string profile = "toy";
  // The snapshot's breakdown is what an analysis of a trace would say, not the model's exact parts: each part
  // times exp(N(0, breakdown_error)), drawn from its own seeded stream (0: exact; a world's default 0.15).
  double breakdown_error = 0.0;
  // Windows carry the step's memory (peak, held, the device's size) as a real CUDA run's do.
  bool memory_readings = true;
  // A change that leaves this process slower for good once applied ("workers=1": a script without a
  // DataLoader whose tune's loader trial left it ~10x slower): every later in-process step takes
  // `sticky_slowdown` times as long, whatever the configuration; fresh processes are untouched.
  std::string sticky_change;
  double sticky_slowdown = 1.0;
  // A change whose steps take `slow_factor` times as long while it is set (a CPU run under amp=bf16 that ran
  // 7x slower), in this process and in a fresh one.
  std::string slow_change;
  double slow_factor = 1.0;
};

// The options a profile is calibrated with: for "gpu" and "script-gpu" the noise, drift and process start-up
// measured on the H100 and H200 (per-pair noise 4-17%, drift up to 20% over a tune, 15 and 22 s a process),
// the pinned measurement allocator the real workloads use and no allocator effect on the GPU; for "toy" the
// defaults above. Throws std::invalid_argument for an unknown profile.
SimOptions sim_options_for(const std::string& profile);

class SimulatedWorkload : public Workload {
 public:
  explicit SimulatedWorkload(uint64_t seed = 7, double noise = 0.03);
  SimulatedWorkload(uint64_t seed, const SimOptions& options);
  // With a model of the caller's (tests: a job shaped like a case a user met).
  SimulatedWorkload(uint64_t seed, const SimOptions& options, std::unique_ptr<SimModel> model);

  std::vector<KnobState> knobs() override;
  Config baseline() override;
  // The knobs the user pinned (--set): the baseline's values. Says why not for a knob or value the job lacks.
  Status pin(const Config& set);
  void apply(const Config& config) override;
  measure::Window measure(int steps) override;
  measure::Window measure_capped(int steps, double max_s) override;
  void give_up_warmup_at(double at_s) override { warmup_deadline_s_ = at_s; }
  std::optional<measure::Window> measure_fresh(const Config& config, int steps) override;
  std::vector<double> loss_probe(const Config& config, int steps) override;
  std::optional<Snapshot> snapshot(int steps) override;
  double now_s() override { return now_s_; }
  int cpu_cores() override { return model_->cores(); }
  nlohmann::json describe() override;
  std::string measurement_allocator() const override { return opt_.measurement_allocator; }
  std::string fresh_windows() const override { return opt_.every_window_fresh ? "a fresh simulated process" : ""; }
  // What a fresh process costs before its first step, as the real workloads know it from their own start.
  double start_s() const override { return opt_.process_start_s; }
  int pass_steps_outside_windows() const override { return model_->costs().pass_steps; }

  // Noise-free milliseconds per step and samples/s of a configuration (missing knobs = baseline).
  double step_ms(const Config& config) const;
  double throughput(const Config& config) const;
  // What a fresh process with `config` runs at (the allocator included).
  double fresh_throughput(const Config& config) const;
  // The fastest configuration whose loss passes a 10% drift guard and that fits in memory, by exhaustive
  // enumeration of the model's search space (fresh-process speed).
  Config best_config() const;  // computed once
  // ... among the configurations that keep `fixed` (the baseline's batch: {"batch_size", "32"}).
  Config best_config_where(const Config& fixed) const;
  // The configuration a person found by hand (the profile's measured sequence), complete; {} for the toy.
  Config hand_config() const { return model_->hand_config(); }
  const SimModel& model() const { return *model_; }

  int applies() const { return applies_; }
  bool left_slower() const { return sticky_hit_; }
  int steps_run() const { return steps_; }

 private:
  bool sticky_hit_ = false;  // the sticky change was applied in this process
  Config full(const Config& config) const;
  double fresh_throughput_of_full(const Config& complete) const;
  // Whether `c` sets the knob=value named in `change` ("workers=1").
  static bool has_change(const Config& c, const std::string& change);
  double noisy(double ms);
  int64_t batch_of(const Config& c) const;
  // Runs steps of `ms` (noise-free) until the warm-up rule says stable, then `steps` measured ones;
  // `first_extra_s` is added to the first step (a compile).
  // `noise_scale`: the configuration's window noise relative to the workload's (SimModel::window_noise_scale).
  measure::Window run_window(double ms, int64_t batch, int steps, bool warm, double first_extra_s = 0,
                             double max_s = 1e300, double noise_scale = 1.0);
  // The window with the step's simulated peak and the device's size.
  measure::Window with_memory(measure::Window w, const SimStep& p) const;
  // Seconds the first step under `c` spends compiling, once per compiled variant in this process.
  double compile_cost(const Config& c, std::set<std::string>& compiled);
  // The world's start-ups (costs.startup_s) of the knob values `c` sets and `from` has not (all: a new process).
  double startup_s(const Config& c, const Config* from) const;

  std::unique_ptr<SimModel> model_;
  std::mt19937_64 rng_;
  std::mt19937_64 analysis_rng_;  // the breakdown's error: its own stream, so that the windows' draws stay put
  SimOptions opt_;
  double e_ = 0;  // AR(1) state
  double drift_phase_ = 0;
  bool changed_ = true;
  double pending_compile_s_ = 0;
  std::set<std::string> compiled_;  // compiled variants this (simulated) process has built
  Config current_;
  Config before_apply_;  // the configuration before the last apply(): a compile given up returns to it
  double warmup_deadline_s_ = std::numeric_limits<double>::infinity();
  Config pinned_;  // --set: the baseline's values of these knobs
  double now_s_ = 0;
  int applies_ = 0;
  int steps_ = 0;
  mutable std::optional<Config> best_;
};

}  // namespace tb::engine
