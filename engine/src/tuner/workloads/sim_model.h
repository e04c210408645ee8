// The machines and training jobs the simulated workload runs (sim_workload.h): what one steady step costs
// under a configuration, noise-free. The built-in ones:
//   "toy"        the small model with a known optimum and hidden interactions the search tests were written
//                against (sim_toy.cpp: invented, it claims nothing about any machine);
//   "gpu"        the engine's ResNet-50 on a JPEG folder on an H100, calibrated to the figures measured there;
//   "gpu-synthetic" the same on synthetic batches: the points with and without conv bias / zero_grad to None;
//   "script-gpu" a public ImageNet training script (torchvision ResNet-50, 4 DataLoader worker processes,
//                pinned memory, batch 64, loss.item() each step) on the same GPU, its knobs the launcher's.
// The three GPU ones are world files (engine/profiles/*.json, the "ops" shape of sim_world_ops.cpp), each
// figure with its source in docs/gpu-results.md; any other world is a user's file (sim_world.h).
// A model knows its knob catalog, its baseline, the configuration a person found by hand, and what a fresh
// process costs; SimulatedWorkload adds time, noise, drift, warm-up and fresh processes on top.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/knobs.h"
#include "engine/tuner.h"

namespace tb::engine {

// One steady step, in milliseconds (the parts a snapshot shows) and the memory it holds.
struct SimStep {
  double step = 0;       // wall time of a step
  double gpu = 0;        // device busy time (kernels)
  double launch = 0;     // host time to issue the step's work (the launch path)
  double data_wait = 0;  // time the training thread waits for a batch (loader stall)
  double h2d = 0;        // host-to-device copy on the training thread
  double sync = 0;       // host blocked on the device each step (loss.item())
  double peak_mb = 0;    // device (or host, on a CPU model) memory at its peak within a step
  double held_mb = 0;    // ... of it, what stays allocated between steps (weights, gradients, optimizer state)
};

// Costs of the machine around the steps (seconds): what a fresh process, a knob change and a compile take.
struct SimCosts {
  double process_start_s = 1.0;  // process start to its first step (imports, model build, CUDA and cuDNN set-up)
  double apply_s = 0.2;          // a live knob change
  double workers_apply_s = 0.5;  // ... that restarts the loader's workers
  double first_step_factor = 3.0;  // the first step after a change (autotune, allocator growth)
  double compile_s = 0;          // the first steps under torch.compile (0: no such knob)
  // A knob's own start-up when a live change sets it ("cuda_graphs=on": the capture), in seconds.
  std::map<std::string, double> startup_s;
  // Steps in a pass of the job's training loader whose first step the windows leave out (a script's long epochs):
  // a start-up of a loader whose workers are not persistent comes back every pass. 0: no passes said.
  int pass_steps = 0;
};

class SimModel {
 public:
  virtual ~SimModel() = default;
  virtual std::string name() const = 0;
  virtual std::string device() const = 0;  // for describe(): "simulated H100 (calibrated ...)"
  virtual std::string kind() const { return "cuda"; }  // device_info.kind
  virtual const std::vector<KnobInfo>& catalog() const = 0;
  // Applicability of a catalog knob here (every knob applies unless the model says otherwise).
  virtual Applicability applicability(const KnobInfo& k) const {
    (void)k;
    return {};
  }
  // The starting configuration: the catalog's defaults with the job's own settings (a script's 4 workers).
  virtual Config baseline() const;
  // `c` complete. `loader_slowdown` > 1: the loader's workers load that many times slower (a fresh process's
  // worker processes re-faulting their memory under glibc's defaults).
  virtual SimStep step(const Config& c, double loader_slowdown = 1.0) const = 0;
  // A fresh process's speed relative to the steady in-process one (the allocator it starts under).
  virtual double fresh_factor(const Config& c) const {
    (void)c;
    return 1.0;
  }
  // Relative worsening of the loss over the probe batches (the drift guard rejects > 10%).
  virtual double loss_penalty(const Config& c) const = 0;
  // The device's memory (MiB): what the peaks of step() are held against.
  virtual double memory_total_mb() const { return 80.0 * 1024; }
  // Why `c` cannot run (out of memory), or nullopt.
  virtual std::optional<std::string> out_of_memory(const Config& c) const = 0;
  // How many times the workload's window noise `c`'s windows carry: a step fed by loader workers jitters more
  // than one that decodes in the training thread (an H200's trials from one worker: 17.7% a pair, its
  // baseline's A/A 2.6%).
  virtual double window_noise_scale(const Config& c) const {
    (void)c;
    return 1.0;
  }
  // Why the job refuses `c` (a script's launcher refuses prefetch without loader workers), or nullopt.
  virtual std::optional<std::string> refuses(const Config& c) const {
    (void)c;
    return std::nullopt;
  }
  virtual int cores() const = 0;
  // The batch a configuration without batch_size runs at.
  virtual int default_batch() const { return 32; }
  virtual SimCosts costs() const { return {}; }
  // The best configuration a person found by hand (the measured sequence), complete; empty when none.
  virtual Config hand_config() const { return {}; }
  // Values the exhaustive search of best_config() tries per knob (the others stay at the baseline).
  virtual std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const = 0;
  // What makes two models behave alike ("" when the model cannot say: a test's own model): a world's JSON.
  // Models of equal identity share their exhaustive search's result (SimulatedWorkload::best_config).
  virtual std::string identity() const { return {}; }

  // The catalog's defaults.
  Config defaults() const;
  // The baseline overridden by `c`.
  Config complete(const Config& c) const;
  bool has(const std::string& id) const;
};

// A simulated catalog's knob, the fields every profile gives (a Bool with no choices gets off/on); each profile
// then adds its own (where it applies, its bounds, its snippets).
KnobInfo sim_knob(std::string id, std::string title, KnobType type, std::string def, std::string rec,
                  std::vector<std::string> choices, bool numerics, std::string pytorch_snippet);

// A knob's integer value in `c`, or `fallback` when it is missing or not an integer.
int sim_int(const Config& c, const std::string& knob, int fallback);

// "toy", or a built-in profile's name ("gpu", "gpu-synthetic", "script-gpu"); nullptr for another name (a
// world file: sim_world.h).
std::unique_ptr<SimModel> make_sim_model(const std::string& name);
// The names make_sim_model knows, for error messages.
std::vector<std::string> sim_model_names();

}  // namespace tb::engine
