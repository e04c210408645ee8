// The auto-tuner (issue 5): measures every applicable knob before/after with statistics, accumulates the
// winners greedily, and keeps the evidence for the report (engine/report.h). Torch-free: the search runs over
// the abstract Workload below, so the same code drives a real Session (make_session_workload) and the
// deterministic simulation the tests use.
//
// Measuring protocol (DESIGN.md "Measuring before/after honestly"):
// - after every configuration change the workload runs `warmup_steps` unmeasured steps (autotune, graph
//   capture, allocator growth, loader refill);
// - a trial alternates A/B/A/B... (`rounds` pairs, A first) so slow drift (thermals, page cache, other
//   processes) hits both sides alike; each window yields per-step samples/s;
// - the effect is the ratio of medians after/before with a seeded percentile-bootstrap confidence interval;
//   an interval that covers 1 is "no effect", whatever the point estimate says;
// - a knob that may change numerics (KnobInfo::changes_numerics) must also pass the loss-drift guard: the
//   loss over the same seeded batches from the same initial weights must not get worse than the baseline's
//   by more than `drift_tolerance` (relative), and must stay finite;
// - a failure while applying or measuring (out of memory, a knob the device refuses) fails that trial only;
//   the workload is put back on the reference configuration and the search continues.
//
// Search: (1) screen every applicable knob alone from the baseline (workers scanned 1,2,4.. up to the core
// count, batch size doubled until OOM or no gain, enum knobs every choice, int knobs their recommended
// value); (2) accumulate the winners greedily in order of gain, each re-measured against the configuration
// accumulated so far; (3) revisit the knobs that did not pay (or were not the best scan value) on top of the
// accumulated configuration, because one knob often only pays after another (seed 003: the parallel loader
// only mattered once fp16 made the GPU fast); (4) measure the final configuration against the baseline.
// After the baseline and after each accepted change a short trace is analysed (Workload::snapshot) so the
// report shows where the bottleneck moved.
//
// Threading: run_tune() runs on the calling thread and calls the Workload and the progress callback from it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/knobs.h"
#include "engine/session.h"

namespace tb::engine {

// ---------------------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------------------

// Median of the values (mean of the two middle ones for an even count); NaN when empty.
double median(std::vector<double> values);

// Ratio median(after)/median(before) with a percentile-bootstrap interval: both samples are resampled
// independently `resamples` times with a generator seeded by `seed`, so the same input gives the same
// interval.
struct RatioEstimate {
  double ratio = std::numeric_limits<double>::quiet_NaN();
  double ci_low = std::numeric_limits<double>::quiet_NaN();
  double ci_high = std::numeric_limits<double>::quiet_NaN();
  double confidence = 0.95;
  bool valid() const { return ratio == ratio && ci_low == ci_low && ci_high == ci_high; }
  // The interval covers 1: the data do not show a change (also true when invalid).
  bool no_effect() const { return !valid() || (ci_low <= 1.0 && ci_high >= 1.0); }
  bool faster() const { return valid() && ci_low > 1.0; }
  bool slower() const { return valid() && ci_high < 1.0; }
};
RatioEstimate bootstrap_median_ratio(const std::vector<double>& before, const std::vector<double>& after,
                                     int resamples = 2000, double confidence = 0.95, uint64_t seed = 1);

// ---------------------------------------------------------------------------------------------------------
// Workload: what the tuner measures
// ---------------------------------------------------------------------------------------------------------

// A trial's configuration could not run (out of memory, a knob refused by the device). The workload must be
// usable again after apply() of another configuration.
struct TrialFailure : std::runtime_error {
  TrialFailure(const std::string& message, bool out_of_memory) : std::runtime_error(message), oom(out_of_memory) {}
  bool oom = false;
};

// Where one step's time goes, from a short analysed trace (or from the step records when no trace exists).
struct Snapshot {
  std::string label;   // "baseline", "+ amp=bf16"
  Config config;       // the full configuration it was taken under
  double throughput = 0;  // samples/s over the snapshot steps (median)
  double step_ms = 0;     // median step wall time
  // Mean milliseconds per step for each part, in display order, partitioning the step (they sum to about
  // step_ms; the report stacks them): on a GPU "GPU busy", "loader stall", "launch gaps", "other idle"; on a
  // CPU "data wait", "h2d", "forward", "backward", "optimizer", "other".
  std::vector<std::pair<std::string, double>> breakdown_ms;
  double worst_stall_ms = 0;     // the longest single stall (loader wait or GPU idle interval) seen
  std::string worst_stall_kind;  // "loader stall", "launch gap", ...
  std::string bottleneck;        // one word: "loader", "compute", "launch", "sync", "h2d"
  std::vector<std::string> findings;  // one line each, from the profiler's analyses
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Every knob with its current applicability here (device, build, model).
  virtual std::vector<KnobState> knobs() = 0;
  // The starting configuration (defaults plus the user's --set overrides), complete for every knob.
  virtual Config baseline() = 0;
  // Switches to the full configuration `config`. Throws TrialFailure when it cannot run it.
  virtual void apply(const Config& config) = 0;
  // Runs `warmup` unmeasured steps, then `steps` measured ones; returns samples/s of each measured step.
  // Throws TrialFailure (e.g. OOM during the steps).
  virtual std::vector<double> measure(int warmup, int steps) = 0;
  // Loss of each of `steps` steps under `config`, from the same initial weights over the same seeded
  // batches every time it is called (the loss-drift guard compares two such curves). May leave the
  // workload in any configuration: the tuner re-applies before it measures again. Throws TrialFailure.
  virtual std::vector<double> loss_probe(const Config& config, int steps) = 0;
  // Analyses a short trace of `steps` steps under the current configuration. nullopt when not supported.
  virtual std::optional<Snapshot> snapshot(int steps) { (void)steps; return std::nullopt; }
  // Seconds on the clock the budget is counted in (wall clock for a real session, virtual in the
  // simulation). Monotonic.
  virtual double now_s() = 0;
  // CPU cores the loader may use (the workers scan stops there).
  virtual int cpu_cores() = 0;
  // {"device", "versions", "model", "data", ...} for the report.
  virtual nlohmann::json describe() = 0;
};

// ---------------------------------------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------------------------------------

struct TuneProgress {
  std::string phase;    // "calibrate", "screen", "accumulate", "revisit", "final", "done"
  std::string message;  // one line for a human
  double fraction = 0;  // 0..1 of the budget or of the plan, whichever is further
};

struct TuneOptions {
  double budget_s = 240;      // the whole tune, calibration and final measurement included
  int rounds = 2;             // A/B pairs per trial
  int warmup_steps = 3;       // unmeasured steps after every apply()
  int min_window = 4;         // measured steps per window: planned between these to fit the budget
  int max_window = 30;
  double min_gain = 0.02;     // a significant gain below this ratio-1 still counts as "no effect"
  double drift_tolerance = 0.10;  // loss-drift guard: relative worsening allowed
  int probe_steps = 8;        // steps of each loss probe
  int snapshot_steps = 6;     // steps of each analysed trace (0 = no snapshots)
  int resamples = 2000;
  double confidence = 0.95;
  uint64_t seed = 1;
  bool revisit = true;
  int max_batch_size = 4096;  // the batch-size doubling never goes past this
  std::vector<std::string> only_knobs;  // tune only these (empty = every applicable knob)
  std::vector<std::string> skip_knobs;  // never touch these (e.g. the user pinned them with --set)
  std::function<void(const TuneProgress&)> progress;
};

struct Trial {
  std::string phase;     // "screen", "accumulate", "revisit", "final"
  std::string knob;      // "" for the final baseline-vs-final trial
  std::string value;     // the value tried
  std::string from;      // the value in the reference configuration
  std::string reference; // label of the reference: "baseline", "accumulated", "workers=2"...
  double before = std::numeric_limits<double>::quiet_NaN();  // median samples/s, reference
  double after = std::numeric_limits<double>::quiet_NaN();   // median samples/s, candidate
  RatioEstimate estimate;
  bool accepted = false;  // screen: a winner; accumulate/revisit: kept; final: faster than baseline
  // "gain", "no effect", "slower", "oom", "failed", "drift"
  std::string outcome;
  std::string reason;     // a sentence for the report
  double loss_drift = std::numeric_limits<double>::quiet_NaN();  // relative, when the guard ran
  int window = 0;         // measured steps per window
  int rounds = 0;
  double seconds = 0;     // time the trial took on the workload's clock
};

struct SkippedTrial {
  std::string knob;
  std::string value;   // "" when the whole knob was skipped
  std::string reason;  // "not applicable here: no CUDA", "budget", "pinned by --set"...
};

struct TuneResult {
  nlohmann::json environment;      // Workload::describe()
  std::vector<KnobState> knobs;    // the catalog as the workload saw it (for snippets and titles)
  Config baseline;
  Config final_config;
  std::vector<Trial> trials;       // in the order they ran
  std::vector<SkippedTrial> skipped;
  std::vector<Snapshot> snapshots; // baseline first, then one after each accepted change
  // Accepted changes in order with the throughput estimate after each (baseline * product of ratios).
  std::vector<std::pair<std::string, double>> waterfall;
  double baseline_throughput = std::numeric_limits<double>::quiet_NaN();  // from the final trial
  double final_throughput = std::numeric_limits<double>::quiet_NaN();
  RatioEstimate speedup;           // final vs baseline, measured A/B
  double budget_s = 0;
  double elapsed_s = 0;
  int window = 0;                  // planned measured steps per window
  std::vector<std::string> notes;  // plan, warnings from the workload
};

// Runs the whole search. Throws TrialFailure only when the baseline itself cannot run; everything else is
// recorded in the result.
TuneResult run_tune(Workload& workload, const TuneOptions& options);

// The knobs whose value in `config` differs from `baseline`, in catalog order.
std::vector<std::string> changed_knobs(const Config& baseline, const Config& config);

// ---------------------------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------------------------

// A real training session (engine/session.h). `options.knobs` is the baseline; options.seed seeds the loss
// probes. Throws EngineError when the session cannot be created.
std::unique_ptr<Workload> make_session_workload(const SessionOptions& options);

// A deterministic simulation of a GPU training step with a known best configuration (tests, demos,
// `tunebench-cli tune --simulate`). `noise` is the relative per-step jitter; same seed, same numbers.
std::unique_ptr<Workload> make_simulated_workload(uint64_t seed = 7, double noise = 0.03);

}  // namespace tb::engine
