// A training session: one model, one dataset, one configuration that may change at step boundaries.
// Torch-free public API used by the CLI (run/serve), the tuner and the tests. Implementation in
// session.cpp/trainer.cpp (LibTorch). All LibTorch exceptions are caught inside and rethrown as EngineError
// with a one-line message (a caller shows it as is).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/distributed.h"
#include "engine/knobs.h"

namespace tb::engine {

// A user-facing error (bad model/data/knob/value, unloadable file, OOM that could not be reverted...).
struct EngineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SessionOptions {
  std::string model = "mnist_cnn";  // mnist_cnn | resnet18 | resnet50 | vit_tiny | torchscript:PATH
  std::string data = "synthetic";   // synthetic | imagefolder:DIR | mnist:DIR
  Config knobs;                      // overrides of the defaults
  std::string device = "auto";      // auto | cpu | cuda
  uint64_t seed = 0;
  // Warm-up after start and after every change (docs/protocol.md): at least `warmup_steps` steps, then until
  // the step time is stable (measure/warmup.h), at most `max_warmup_steps`. warmup_steps = 0: none at all.
  int warmup_steps = 3;
  int max_warmup_steps = 30;
  // Input override, 0 = the model's natural input (mnist 1x28x28, others 3x224x224). Required for torchscript
  // models whose file does not declare `input_shape`/`num_classes`; also lets tests and quick runs use small
  // images (ResNets >= 32x32, vit_tiny with 4x4 patches below 112 px).
  int64_t input_channels = 0, input_height = 0, input_width = 0, num_classes = 0;
  bool profile = false;              // record ranges (and CUPTI on a GPU) for trace export
  // Loss-drift guard: when a numerics-changing knob changes (including at create), train this many seeded
  // steps from a snapshot with the old and with the new config on the same batches, compare the losses and
  // restore the snapshot. 0 disables it. Tolerance is relative: |new - old| <= tol * max(|old|, 1e-3).
  int drift_guard_steps = 2;
  double drift_tolerance = 0.1;
  // Intra-op CPU threads (the `intra_op_threads` knob's value when the knobs do not set it; 0 = auto).
  int threads = 0;
  // Test hook: the batch-size probe reports out-of-memory for batch sizes above this (0 = off).
  int64_t simulate_oom_above_batch = 0;
  // This process is one rank of a data-parallel group (engine/distributed.h): the session joins the Gloo
  // group, takes rank 0's weights, reduces gradients with DDP's Reducer and loads its own shard of the data.
  // The warm-up is then exactly `warmup_steps` steps on every rank (an until-stable rule could end it at
  // different steps on different ranks, and the ranks must take the same number of steps).
  DistOptions dist;
};

// What a step held in memory (docs/protocol.md "step"): -1 where not measured (the device fields on a CPU run).
struct StepMemory {
  int64_t host_rss_bytes = -1;          // the process's resident set after the step
  int64_t device_allocated_bytes = -1;  // CUDA caching allocator: tensors alive after the step
  int64_t device_reserved_bytes = -1;   // ... and what it holds from the device (allocated + cached free blocks)
  int64_t device_peak_bytes = -1;       // the most allocated at once during the step
  int64_t device_alloc_retries = -1;    // cudaMalloc failures it recovered from by freeing its cache (so far)
  int64_t device_ooms = -1;             // out-of-memory errors it raised (so far)
  int64_t device_total_bytes = -1;      // the device's memory
  bool measured() const { return host_rss_bytes >= 0 || device_allocated_bytes >= 0; }
};

struct StepRecord {
  int64_t index = 0;          // global step index
  int64_t samples = 0;
  // A script's step(closure) call evaluated its closure this many times (LBFGS), 0 when not counted: a rate
  // counts its batch once per evaluation (client/protocol.h evaluated_samples), the loader's figures once.
  int64_t evaluations = 0;
  int64_t start_ns = 0;       // tb::prof::now_ns() at step start
  int64_t wall_ns = 0;        // whole step including data wait
  int64_t data_wait_ns = 0;
  int64_t h2d_ns = 0;
  double loss = std::numeric_limits<double>::quiet_NaN();  // NaN when not read this step (sync_free_logging)
  int64_t config_rev = 0;
  bool warmup = false;        // excluded from throughput
  bool skipped = false;       // fp16: optimizer step skipped by dynamic loss scaling (inf/nan grads)
  bool optimizer_step = true; // false for a grad-accumulation micro-batch
  double loss_scale = 0;      // fp16 loss scale after this step (0 when not fp16)
  int64_t minor_faults = 0;   // minor page faults of the whole process during the step (getrusage)
  StepMemory memory;          // what the step held (host, device)
};

struct KnobState {
  KnobInfo info;
  std::string value;          // current value
  Applicability applicability;
};

class Session {
 public:
  virtual ~Session() = default;
  // Builds model, dataset, loader, optimizer; probes a batch. Throws EngineError.
  static std::unique_ptr<Session> create(const SessionOptions& options);

  // One training step (or one micro-batch under grad_accumulation). Throws EngineError on an unrecoverable
  // failure; recoverable events (OOM revert, fp16 skip, NaN loss) are reported through warnings().
  virtual StepRecord step() = 0;

  // Applies knob changes at the next step boundary (i.e. now, between steps). Validates first: an unknown
  // knob or bad value throws EngineError and changes nothing. Returns the new config revision.
  virtual int64_t apply(const Config& changes) = 0;
  virtual const Config& config() const = 0;
  virtual int64_t revision() const = 0;
  virtual std::vector<KnobState> knobs() const = 0;

  // Waits until the device has finished all queued work (CUDA); nothing on the CPU. Measuring windows begin
  // and end with it, so a window's time is the device's time, not the launch time.
  virtual void synchronize() = 0;
  // True while the warm-up after the start or the last change is not over (the next step will be marked
  // `warmup`).
  virtual bool warming_up() const = 0;

  // Messages since the last call (OOM revert, fp16 overflow skip, NaN loss, knob not applicable...).
  virtual std::vector<std::string> take_warnings() = 0;

  // {"device":..., "versions":{"libtorch":..., "cuda":..., "cudnn":...}, "model":..., "data":..., "input":[C,H,W]}
  virtual nlohmann::json describe() const = 0;

  // Data-parallel runs (SessionOptions::dist): rank 0 gets every rank's `mine` in rank order (an empty string
  // for a rank that did not answer within the collective timeout), the other ranks get {}; a single process
  // gets {mine}. Goes through the rendezvous store, so it still works after a collective failed (a rank died).
  virtual std::vector<std::string> gather(const std::string& key, const std::string& mine) = 0;
  // A live data-parallel group (`serve --ranks N`, engine/live_group.h): rank 0 leads and the other ranks
  // do what it orders, one order at a time, numbered from 0. Orders go through the rendezvous store, not a
  // collective, so a follower can wait for the next one as long as rank 0 needs (a tune's fresh-process
  // trials, an idle GUI) and still learns at once when rank 0 ends (the store closes). post_order forgets
  // order n - 1024 (a follower is at most one synchronizing step, i.e. grad_accumulation micro-batches,
  // behind). await_order throws EngineError on a timeout or a closed store. A single process: post does
  // nothing, await throws.
  virtual void post_order(int64_t n, const std::string& order) = 0;
  virtual std::string await_order(int64_t n, std::chrono::seconds timeout) = 0;
  // A group across hosts: every rank calls this together before it collects a trace, and a rank on another
  // clock than rank 0's measures its offset again, so that its trace is moved by the offset of its own time
  // (RankClock::samples in describe()'s "distributed"). A failed exchange is a warning (take_warnings): the
  // earlier offsets stay and no later exchange is tried. Nothing in a single process or on one host.
  virtual void resync_clock() = 0;
  // A digest of the bytes of every trainable parameter: equal on all ranks while DDP keeps them in step.
  virtual std::string parameter_digest() const = 0;
};

// Knob applicability without building a session (for `tunebench-cli knobs`): device and build decide.
std::vector<KnobState> knob_states_here(const std::string& device = "auto");

// Versions and device for hello/describe without a model.
nlohmann::json environment_info();

// A knob as the protocol's hello/started and `knobs --json` describe it: the catalog's entry, the value now,
// whether it applies here and why not, the values unavailable here, the code that sets it.
nlohmann::json knob_state_json(const KnobState& state);
nlohmann::json knob_states_json(const std::vector<KnobState>& states);

}  // namespace tb::engine
