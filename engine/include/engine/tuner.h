// The auto-tuner: measures every applicable knob before/after on top of the winners so far, keeps each winner,
// checks every kept one again at the end, and keeps the evidence for the report (engine/report.h). Torch-free: the
// search runs over the abstract Workload below, so the same code drives a real Session
// (make_session_workload) and the deterministic simulation the tests use.
//
// Measuring protocol (docs/protocol.md; the statistics are measure/):
// - a window = warm-up until the step time is stable (after any configuration change), then `window`
//   measured steps timed as a whole (device-synced at both ends on CUDA); its throughput is samples over
//   wall time, so slow steps that belong to a configuration keep their time;
// - a trial runs the reference A and the candidate B in `rounds` pairs of windows, the order alternating
//   (AB, BA, AB, ...) so a linear drift cancels within a pair; the effect is the geometric mean of the
//   paired ratios with a Student-t interval whose spread is pooled with the A/A pairs of the tune;
// - every tune starts with an A/A trial (the baseline against itself): the machine's noise floor. A change
//   is a gain only when its interval excludes 1 AND it is larger than both `min_gain` and the floor's band;
// - one window length for every phase (planned once); every phase's baseline measurements are kept, and a
//   disagreement beyond the noise is reported as drift;
// - process knobs (KnobInfo::process_scope: cpu_allocator) are measured in fresh processes, alternating;
//   the in-process trials run under one steady allocator chosen by the workload;
// - the final alternation measures the baseline, the final configuration and the final configuration
//   without each kept knob, round-robin: a kept knob that does not hold there is dropped;
// - a knob that may change numerics must also pass the loss-drift guard (the same seeded batches from the
//   same initial weights must not get worse than the baseline's by more than `drift_tolerance`);
// - a failure while applying or measuring fails that trial only.
//
// Search: (1) screen every applicable knob on top of the winners so far, in the workload's order (the
// bottleneck's knobs first): workers climbed 1, 2, 4.. up to the core count together with the intra-op thread
// count, batch size doubled until OOM or no gain, enum knobs every choice, int knobs their recommended value;
// each winner is kept at once, so a knob that a bottleneck would mask (amp behind an inline loader) is
// measured where it can act; (2) accumulate what the screening left; (3) revisit the knobs that did not pay
// on top of the accumulated configuration (the parallel loader may only matter once fp16 has made the GPU
// fast); (4) the final alternation. After the baseline and after each accepted change a short trace is analysed
// (Workload::snapshot) so the report shows where the bottleneck moved.
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

#include "client/inputs.h"

#include "client/script_runner.h"
#include "engine/knobs.h"
#include "engine/session.h"
#include "measure/interval.h"
#include "measure/noise.h"
#include "measure/window.h"
#include "profiler/trace.h"

namespace tb::engine {

// The interval of a throughput ratio (measure/interval.h): valid(), faster(), slower(), no_effect().
using RatioEstimate = measure::RatioInterval;

// ---------------------------------------------------------------------------------------------------------
// Workload: what the tuner measures
// ---------------------------------------------------------------------------------------------------------

// A trial's configuration could not run (out of memory, a knob refused by the device). The workload must be
// usable again after apply() of another configuration.
struct TrialFailure : std::runtime_error {
  TrialFailure(const std::string& message, bool out_of_memory) : std::runtime_error(message), oom(out_of_memory) {}
  bool oom = false;
  // The window's warm-up (a compile) was still running at the tuner's deadline (Workload::give_up_warmup_at)
  // after this many seconds, and was given up: the workload is back at the configuration before its last
  // apply(). < 0: another failure.
  double gave_up_after_s = -1;
};

// The breakdown's part for TuneBench's own time (its pauses, recording work), never the program's.
inline constexpr const char* kProfilerPart = "profiler (TuneBench)";

// Where one step's time goes, from a short analysed trace (or from the step records when no trace exists).
struct Snapshot {
  std::string label;   // "baseline", "+ amp=bf16"
  Config config;       // the full configuration it was taken under
  double throughput = 0;  // samples/s over the snapshot steps (samples / wall time)
  double step_ms = 0;     // median step wall time
  // Mean milliseconds per step for each part, in display order, partitioning the step (they sum to about
  // step_ms; the report stacks them): on a GPU "GPU busy", "loader stall", "launch gaps", "other idle"; on a
  // CPU "data wait", "h2d", "forward", "backward", "optimizer", "other"; then kProfilerPart when TuneBench
  // took time (its pauses between steps included, so the parts may sum to a little more than step_ms).
  std::vector<std::pair<std::string, double>> breakdown_ms;
  double worst_stall_ms = 0;     // the longest single stall (loader wait or GPU idle interval) seen
  std::string worst_stall_kind;  // "loader stall", "launch gap", ...
  std::string bottleneck;        // one word: "loader", "compute", "launch", "sync", "h2d"
  std::vector<std::string> findings;  // one line each, from the profiler's analyses
  int ranks = 1;                      // processes whose traces were analysed (a group's ranks)
  // The switches the analyses name (a finding's knob, the loader verdict's advice and the knob a costly part has),
  // each with its bound: the tuner measures them before knobs with no evidence (docs/tuning.md "Order").
  struct Switch {
    std::string knob, value;
    double at_most = 1;
  };
  std::vector<Switch> switches;
  // The most a knob can give at any value, by the analyses' own models (the loader verdict's: no worker count
  // feeds the model past what the cores allow, each worker taking a core from the training): the tuner's prior
  // for the knob never promises more, as the stall finding never does (a finding's switch bounds its knob too).
  std::vector<std::pair<std::string, double>> caps;
  // The loader verdict of the snapshot's steps (client::LoaderVerdict::to_json()) where the loader timed its parts;
  // null where it did not. The tune report draws the baseline's (report_loader.h).
  nlohmann::json loader;
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
  // One window under the current configuration: unmeasured steps until the warm-up after the last change
  // is over (the workload's rule: stable step times, measure/warmup.h), then `steps` measured steps timed as
  // a whole. The window's start_s is on now_s()'s clock. Throws TrialFailure (e.g. OOM during the steps).
  virtual measure::Window measure(int steps) = 0;
  // The same, but its measured steps end once the window (warm-up included) has run `max_s` seconds, after at
  // least one measured step (the warm-up is never cut): a candidate several times slower says so in its first
  // step, and the rest of its window would cost that many windows (amp=bf16 on a CPU: 7x). The default
  // ignores the cap.
  virtual measure::Window measure_capped(int steps, double max_s) {
    (void)max_s;
    return measure(steps);
  }
  // A window of `steps` measured steps in a fresh process started with `config` (for process knobs: the
  // allocator takes effect at process start). nullopt when this workload cannot start processes. Throws
  // TrialFailure when the process fails.
  virtual std::optional<measure::Window> measure_fresh(const Config& config, int steps) {
    (void)config;
    (void)steps;
    return std::nullopt;
  }
  // A window of `steps` measured steps in a fresh process of the baseline with some of its files replaced by
  // patched copies (original, copy): a script's tune checks that the patch it wrote makes the plain script
  // faster (engine/patch_check.h). nullopt where the workload runs no script.
  virtual std::optional<measure::Window> measure_patched(const std::vector<std::pair<std::string, std::string>>& sources,
                                                         int steps) {
    (void)sources;
    (void)steps;
    return std::nullopt;
  }
  // The tune is over: stop what goes on running (a script's live process), so that what is measured next
  // runs alone.
  virtual void release() {}
  // Loss of each of `steps` steps under `config`, from the same initial weights over the same seeded
  // batches every time it is called (the loss-drift guard compares two such curves). May leave the
  // workload in any configuration: the tuner re-applies before it measures again. Throws TrialFailure.
  virtual std::vector<double> loss_probe(const Config& config, int steps) = 0;
  // False when the workload cannot replay seeded batches (a user's script): the tuner then keeps numerics
  // knobs on their speed alone and says in the trial that the loss was not checked.
  virtual bool has_loss_probe() const { return true; }
  // Analyses a short trace of `steps` steps under the current configuration. nullopt when not supported.
  virtual std::optional<Snapshot> snapshot(int steps) { (void)steps; return std::nullopt; }
  // Seconds on the clock the budget and the windows are counted in (wall clock for a real session, virtual
  // in the simulation). Monotonic.
  virtual double now_s() = 0;
  // CPU cores the loader may use (the workers scan stops there).
  virtual int cpu_cores() = 0;
  // {"device", "versions", "model", "data", ...} for the report; "measurement_allocator" says which steady
  // allocator the in-process windows ran under.
  virtual nlohmann::json describe() = 0;
  // The cpu_allocator value the in-process windows run under, "" when it is whatever the configuration
  // says. When it differs from the baseline's, in-process ratios are not what a user who starts the training
  // gets (a script's loader workers re-fault their memory under glibc's defaults), so the tuner measures its
  // headline again in fresh processes.
  virtual std::string measurement_allocator() const { return ""; }
  // Non-empty when every measure() runs in a fresh process or group of them, saying which ("a fresh group of
  // 2 ranks"): the tuner then counts the start-up in each window's cost, and the final alternation is
  // already what a user who starts the training gets (no separate fresh-process headline).
  virtual std::string fresh_windows() const { return ""; }
  // Seconds a fresh process takes before its first measured step (start-up and warm-up), as this workload's
  // own first start measured it; < 0 when unknown. The tuner plans its fresh-process trials with it before
  // it has run one.
  virtual double start_s() const { return -1; }
  // Knobs this workload exists for, screened before the others (in this order) so that a tight budget
  // spends itself on them: the DDP knobs of a data-parallel tune. Empty: catalog order.
  virtual std::vector<std::string> first_knobs() const { return {}; }
  // Steps in one pass (an epoch) of the training loader when the windows leave each pass's first step out (long
  // passes: measure/pass_rhythm.h), so that what a loader's start costs at every pass is in no window's rate; 0
  // when the passes are unknown or the windows hold whole passes (each window then pays its pass starts).
  virtual int pass_steps_outside_windows() const { return 0; }
  // The next windows' warm-up after an apply() (a compile: torch.compile's first steps) is given up once
  // now_s() passes `at_s`: the window throws TrialFailure with gave_up_after_s set, and the workload is back
  // at the configuration before that apply() (a script restarted under it). +infinity: never. A compile that
  // takes three times what the tuner planned otherwise ran the tune past its budget by that much. The
  // default never gives up.
  virtual void give_up_warmup_at(double at_s) { (void)at_s; }
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
  // The whole tune, calibration and final measurement included: every surface's default (client/inputs.h).
  double budget_s = client::inputs::kBudgetDefaultS;
  // --budget auto: `budget_s` only plans the calibration; after the noise floor the budget becomes what one pass
  // over every applicable knob costs (TuneResult::plan), within the input rule's range.
  bool budget_auto = false;
  // tune --plan: measure the calibration and the noise floor, price one pass (TuneResult::plan) and stop, nothing
  // tried or kept: what a budget buys, said before a tune is started (the GUI's "Price the auto-tune").
  bool plan_only = false;
  // The final's minimum (its first rounds, a fresh-process headline's first pairs) may run past the budget by
  // this share of it and no further; everything optional stays within the budget (tuner/search/budget.h).
  double overrun = 0.05;
  // An in-process trial stops after two pairs when its answer is already clear (a gain far beyond the
  // threshold, or a loss); the final alternation checks every kept knob again.
  bool early_decision = true;
  int rounds = 3;             // A/B pairs of windows per trial (order alternating AB, BA, ...)
  int aa_rounds = 4;          // A/A pairs at the start (the noise floor); as many again in the final alternation
  int min_window = 6;         // measured steps per window: planned once, between these, to fit the budget
  int max_window = 30;
  // ... and at least this long (a hiccup of a few hundred ms must not halve a window), however many steps.
  double min_window_s = 1.0;
  // A fresh process's window is at least this long: its start-up costs seconds anyway, and a short window
  // under glibc's defaults measures whenever its mmap threshold happens to move (11-step windows of a
  // script gave 0.92x [0.18, 4.81] for a change that measures 1.03x over 40 steps).
  double min_fresh_window_s = 3.0;
  // Fresh-process trials add pairs (AB, BA, ...) past `rounds` while their interval still covers 1 and is
  // wider than +-5%, up to this many pairs: process-to-process noise of +-10% needs 6-8 pairs to decide.
  int max_fresh_rounds = 8;
  // An in-process trial that measured faster but could not decide gets more pairs, up to this many, when the
  // search has nothing likelier to measure (a GPU's windows vary by 5-10%: three pairs resolve only ~8%).
  int max_trial_pairs = 6;
  // ... and the fresh-process final (its baseline and final arms, `rounds` rounds) is planned only when it fits
  // in this share of the budget: a ResNet-50 process starts in ~15 s on an H100, so three pairs take ~105 s;
  // a smaller budget measures its headline in this process and says what a fresh-start check would need.
  double max_fresh_share = 0.5;
  // The final alternation likewise adds rounds while a kept change is still undecided, up to this many.
  int max_final_rounds = 8;
  double min_gain = 0.02;     // a significant gain below this ratio-1 still counts as "no effect"
  // How many steps the user's run will take (tune --run-steps; 0: not said): a change with a one-time cost (a
  // compile) that pays itself back only after more steps than that is not kept ("not paid back").
  int64_t run_steps = 0;
  double drift_tolerance = 0.10;  // loss-drift guard: relative worsening allowed
  int probe_steps = 8;        // steps of each loss probe
  int snapshot_steps = 6;     // steps of each analysed trace (0 = no snapshots)
  double confidence = 0.95;
  uint64_t seed = 1;
  int max_batch_size = 4096;  // the batch-size doubling never goes past this
  std::vector<std::string> only_knobs;  // tune only these (empty = every applicable knob)
  std::vector<std::string> skip_knobs;  // never touch these (e.g. the user pinned them with --set)
  std::function<void(const TuneProgress&)> progress;
};

struct Trial {
  std::string phase;     // "noise floor", "process", "screen", "accumulate", "revisit", "final"
  std::string knob;      // "" for the final baseline-vs-final trial
  std::string value;     // the value tried
  std::string also;      // other knobs the candidate set with it ("intra_op_threads=2"), "" when none
  std::string from;      // the value in the reference configuration
  std::string reference; // label of the reference: "baseline", "accumulated", "workers=2"...
  double before = std::numeric_limits<double>::quiet_NaN();  // samples/s of the reference windows together
  double after = std::numeric_limits<double>::quiet_NaN();   // samples/s of the candidate windows together
  RatioEstimate estimate;
  std::vector<measure::Window> a, b;  // the paired windows: reference, candidate
  bool fresh_processes = false;       // each window was a fresh process (process knobs, a final headline)
  bool accepted = false;  // screen: a winner; accumulate/revisit: kept; final: faster than baseline
  // "gain", "no effect", "slower", "oom", "failed", "drift", "dropped" (kept earlier, did not hold at the end)
  std::string outcome;
  std::string reason;     // a sentence for the report
  double loss_drift = std::numeric_limits<double>::quiet_NaN();  // relative, when the guard ran
  int window = 0;         // measured steps per window
  int rounds = 0;
  double seconds = 0;     // time the trial took on the workload's clock
  // The most memory a step held on each side (bytes: the device's peak allocation on CUDA, else the host's
  // resident set; -1 not measured) and the device's size (-1 unknown).
  int64_t peak_before = -1, peak_after = -1, memory_total = -1;
  // One-time costs each side paid over its windows (torch.compile's compiles: measure::Window::one_time_s;
  // a fresh-process trial's: one process's, each of its windows paid them), in no window's rate; with them, the steps after which the candidate's pays for itself (NaN: never, or none).
  double one_time_before_s = 0, one_time_after_s = 0;
  double break_even_steps = std::numeric_limits<double>::quiet_NaN();
  // A start-up of the candidate's own (workers spawned, graphs captured, cuDNN's search): what switching to it
  // took before its first measured step against what switching back took (measure::Window::startup_s), in no
  // window's rate; NaN where the windows did not time it. Said beside the rate when it is more than an apply's jitter.
  double startup_before_s = std::numeric_limits<double>::quiet_NaN();
  double startup_after_s = std::numeric_limits<double>::quiet_NaN();
  double startup_s = 0;  // the start-up said (after - before), 0 when none was
  // When that start-up comes back at every pass of the training loader (workers that are not persistent spawn
  // again each epoch) and the windows leave the passes' starts out: the steps of a pass, which the break-even is
  // held against; 0 when it is paid once.
  int startup_each_pass_steps = 0;
};

struct SkippedTrial {
  std::string knob;
  std::string value;   // "" when the whole knob was skipped
  std::string reason;  // "not applicable here: no CUDA", "budget: ...", "pinned by --set"...
  double left_s = std::numeric_limits<double>::quiet_NaN();  // budget: seconds left when it was given up
  double need_s = std::numeric_limits<double>::quiet_NaN();  // budget: seconds its measurement needed
};

// What one pass over every applicable knob costs at this noise, said after the noise floor: the knobs in the
// order the search ranks them then, each one's first trial, the finals' reserve were they all kept, and how many
// of them (the first `fit`) the budget pays for.
struct PassPlan {
  std::vector<std::string> knobs;  // in priority order
  std::vector<double> trial_s;     // each knob's first trial, estimated
  double spent_s = 0;              // the calibration and the noise floor, already spent
  double reserve_s = 0;            // the finals, every knob of the pass kept
  double pass_s = 0;               // spent_s + the trials + reserve_s
  int fit = 0;                     // the first `fit` knobs fit the budget with their finals, every one kept
  // ... and with nothing kept (the finals of the baseline alone): the search tries between `fit` and this many,
  // fewer the more of them it keeps (each kept knob is one more arm of the finals).
  int fit_none_kept = 0;
  // The process knobs (a fresh process each, measured as arms of the fresh-process final on top of the winners):
  // after the in-process knobs, their arms' cost in pass_s; held from the start when the budget covers them.
  std::vector<std::string> process_knobs;
  double process_s = 0;
  bool process_fit = false;
  bool auto_budget = false;        // --budget auto set the budget to pass_s
  bool clamped = false;            // ... which the input rule's range changed
  int priced = 0;                  // the knobs the pass's figure prices (the process knobs' arms only beside a headline)
  std::string line;                // as said on the progress line
};

struct TuneResult {
  nlohmann::json environment;      // Workload::describe()
  std::vector<KnobState> knobs;    // the catalog as the workload saw it (for snippets and titles)
  Config baseline;
  Config final_config;
  // What the search kept but its headline could not confirm (verdict "undecided"): none of it is kept, the
  // final configuration is the baseline, and every output names these as "not confirmed". Empty otherwise.
  Config unconfirmed_config;
  std::vector<Trial> trials;       // in the order they ran
  std::vector<SkippedTrial> skipped;
  std::vector<Snapshot> snapshots; // baseline first, then one after each accepted change
  // Kept changes in order with the throughput estimate after each: the headline's baseline times the
  // product of the kept knobs' accepted ratios (estimates; the final bar of the report is measured).
  std::vector<std::pair<std::string, double>> waterfall;
  // The headline: baseline and final configuration measured alternately at the end (fresh processes when a
  // process knob changed, else in this process). Never the calibration.
  double baseline_throughput = std::numeric_limits<double>::quiet_NaN();
  double final_throughput = std::numeric_limits<double>::quiet_NaN();
  RatioEstimate speedup;
  bool speedup_fresh_processes = false;
  RatioEstimate speedup_in_process;  // the in-process final alternation (equal to speedup when that is it)
  // How the headline was confirmed, one line: "fresh processes (N pairs)", or why it is this process's final
  // alternation (no fresh start needed; fresh processes could not decide in N pairs and their interval holds
  // the in-process gain; a fresh-process check would need more time or pairs than were left). "" when nothing
  // was kept.
  std::string confirmation;
  // "faster" (the headline's interval lies above 1), "undecided" (the search kept changes but the headline's
  // interval covers 1: nothing is kept, they are `unconfirmed_config`), "none" (nothing beat the baseline).
  std::string verdict = "none";
  // The noise floor from the A/A pairs (start and end pooled), and the band of one trial at it.
  measure::NoiseFloor noise_floor;
  double noise_band = std::numeric_limits<double>::quiet_NaN();
  // The baseline as each phase measured it (in-process windows of the same length): "start" (A/A),
  // "screen", "final". A disagreement beyond the noise is stated in `drift_note`.
  struct PhaseBaseline {
    std::string phase;
    double throughput = std::numeric_limits<double>::quiet_NaN();
    int windows = 0;
    double at_s = 0;  // mid time of its windows on the tune's clock
  };
  std::vector<PhaseBaseline> baselines;
  measure::NoiseReport noise;      // verdict over every in-process baseline window of the tune, in time order
  std::string drift_note;          // "" or how far the baseline moved between the start and the end
  std::vector<measure::Window> baseline_windows;
  double budget_s = 0;
  double elapsed_s = 0;
  // Seconds each phase took, in order ("calibrate", "noise floor", "screen", "revisit", "deferred", "final",
  // "fresh final"): snapshots and loss probes count in the phase that asked for them.
  std::vector<std::pair<std::string, double>> budget_phases;
  // What the search held back for the finals (the final and the fresh-process final) when it ended: their
  // estimate without the reserve's margin (budget.h kReserveMargin), to set beside what they then took. NaN when
  // no search ran.
  double finals_reserved_s = std::numeric_limits<double>::quiet_NaN();
  // Of what the finals took, what was not reserved: the optional part (rounds past an alternation's minimum,
  // process-knob arms beyond the headline's, a recompiling arm, a fresh-process final the search had not
  // reserved, run in time it left) and the conditional one (the knobs that did not hold alone measured together,
  // which only such a final asks for; paid from the reserve's margin and the hard end). What they took less this
  // is what the reserve was for.
  double finals_extra_s = 0;
  // Why the search ended, one sentence: every knob tried, or the budget ran out with N knobs not tried, and
  // what the final did.
  std::string ended;
  int window = 0;                  // measured steps per window, every phase
  std::vector<std::string> notes;  // plan, warnings from the workload
  std::optional<PassPlan> plan;    // one pass's cost (none when the budget held no trial)
  bool plan_only = false;          // TuneOptions::plan_only: the plan is the result, nothing was tried
  // Each kept change of the training recipe (a bigger batch, gradient accumulation), one line: what it changes,
  // and the speed-up with and without it (also in `notes`).
  std::vector<std::string> recipe_changes;
};

// Runs the whole search. Throws TrialFailure only when the baseline itself cannot run; everything else is
// recorded in the result.
TuneResult run_tune(Workload& workload, const TuneOptions& options);

// Beyond this band (one trial at the A/A noise floor resolves only changes larger than ±50%) the machine is
// too noisy to tune: every output says so first.
constexpr double kTooNoisyBand = 0.5;

// The knobs whose value in `config` differs from `baseline`, in catalog order.
std::vector<std::string> changed_knobs(const Config& baseline, const Config& config);
// The changes the search kept but its headline could not confirm (TuneResult::unconfirmed_config); none when
// the result was decided.
std::vector<std::string> unconfirmed_knobs(const TuneResult& r);

// ---------------------------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------------------------

// A real training session (engine/session.h). `options.knobs` is the baseline; options.seed seeds the loss
// probes. Throws EngineError when the session cannot be created.
std::unique_ptr<Workload> make_session_workload(const SessionOptions& options);

// A data-parallel run of `ranks` processes on this machine (DDP over Gloo, docs/distributed.md): every
// window, loss probe and snapshot is a fresh `tunebench-cli run --ranks N` group, so all ranks change
// together and the protocol's alternation applies to the group; a window's throughput is the group's.
// Snapshots analyse rank 0 of the group's merged trace and add the straggler finding (profiler/ranks.h).
// Throws EngineError when this program cannot start tunebench-cli or the group cannot run its baseline.
std::unique_ptr<Workload> make_group_workload(const SessionOptions& options, int ranks, int dist_timeout_s = 0);

// How a live group's snapshots record every rank (engine/live_group.h does it with rank 0's orders):
// `start` starts the other ranks' recorders; `collect` stops them and returns their traces merged with rank 0's
// `mine`, each rank's process named "rank R" (TraceMetadata::process_names). Empty: rank 0 alone is analysed.
struct GroupRecording {
  std::function<void()> start;
  std::function<std::unique_ptr<prof::Trace>(std::unique_ptr<prof::Trace> mine)> collect;
};

// A live data-parallel group led by this process (`serve --ranks N`, `tune --ranks N`): `live` is rank 0's
// running session, which orders every step and change to all ranks (engine/live_group.h); it must outlive
// the workload. The windows run on the live group (no start-up per window, unlike make_group_workload); the
// loss probes and the process knobs run in fresh groups of `ranks`; snapshots record every rank through
// `recording` and lead with the straggler. options.knobs is the baseline.
std::unique_ptr<Workload> make_live_group_workload(Session& live, const SessionOptions& options, int ranks,
                                                   int dist_timeout_s = 0, GroupRecording recording = {});

// A deterministic simulation of a GPU training step with a known best configuration (tests, demos,
// `tunebench-cli tune --simulate`). `noise` is the relative per-step jitter (autocorrelated); same seed,
// same numbers.
std::unique_ptr<Workload> make_simulated_workload(uint64_t seed = 7, double noise = 0.03);
// The same with a calibrated profile: "toy" (the default above), "gpu" (the engine's ResNet-50 on a JPEG folder
// on an H100) or "script-gpu" (a public ImageNet training script there), with the noise, drift and process
// start-up measured on the lent GPUs; its describe() names the profile's hand configuration and speed-up.
// `profile` may also be a world file (docs/tuning.md "Simulated worlds") or "random:N", the seeded random world N
// the tests tune. `set`: knobs the user pinned (--set), the baseline's values and not tuned. Throws
// std::invalid_argument with one line for an unknown profile, a bad file, or a knob or value the job does not have.
std::unique_ptr<Workload> make_simulated_workload(uint64_t seed, const std::string& profile, const Config& set = {});
// Whether make_simulated_workload would take `profile`, or the one line why not.
Status check_simulation_profile(const std::string& profile);

// A user's script under python -m tunebench.launch (client/script_runner.h). Throws TrialFailure when it
// cannot start (the message says why: no interpreter with torch, script not found, a refused knob...).
std::unique_ptr<Workload> make_script_workload(const client::ScriptOptions& options);

}  // namespace tb::engine
