// Why the loader is slow, from what a traced script's run said: each loading process's parts
// (`done.summary.loader_parts`, docs/protocol.md) and the measured steps' wait for batches. The verdict a user
// staring at a loader stall needs: how input-bound the step is (XProf's grades: 20% of the step highly, 5%
// moderately), where a sample's time goes (the costliest part first), whether the loading processes are busy,
// waiting on reads or starved, and how many workers would feed the model - a prediction `run` can check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::client {

struct LoaderPart {
  std::string name;   // "read + decode (PIL)", "RandomResizedCrop", "collate", "dataset code", ...
  double ms = 0;      // per sample (collate: per batch)
  bool per_batch = false;
  double share = 0;   // of the loading processes' busy time
  std::string where;  // "path:line" of its code: the script's own definition, or the script's line that uses a
                      // library's (python/tunebench/hooks/loader_where.py); "" when not told
};

// A code change to the script that makes one part cheaper, in words, with the line to change and a bound on
// what it gives: the part made free, the loaders would supply `supply_sps`, and the run would reach at most
// `at_most` times its throughput (never past the model's own rate).
struct LoaderFix {
  std::string part, where, change;
  std::string knob, value;  // the knob that makes this change ("fast_decode", "on"), "" for a code change
  double ms = 0, share = 0;
  bool per_batch = false;
  double supply_sps = 0, at_most = 1;
};

// What the loader's model says a step that waits for its batches can gain: the loader knob to switch (none when
// no worker count helps here) and what it gives at most, counting the cores a worker takes from the training.
// Every voice that advises on a loader stall says this (the stall finding and its "Try it", analyze, run).
struct LoaderAdvice {
  bool known = false;      // the verdict had what the model needs (parts, a measured rate)
  std::string knob, value;  // "workers", "3"; "" when no loader knob helps
  std::vector<std::string> also;  // other knobs to set with it ("persistent_workers"); empty: the finding's own
  double at_most = 1;      // the run's throughput times this, at most
  std::string why;         // what holds and why, one clause
};

struct LoaderVerdict {
  bool valid = false;           // a loader's parts were reported and some steps measured
  double wait_share = 0;        // the training loop's wait for batches, share of the steps' wall time
  std::string grade;            // "highly input-bound", "moderately input-bound", "not input-bound"
  int workers = 0;              // worker processes (0: the training process loads)
  int64_t samples = 0, batches = 0;
  double busy_share = 0;        // workers: their busy time over their life (the main process: not said)
  double cpu_share = 0;         // of the busy time, the loading thread's CPU (the rest waits on reads, sleeps)
  // Of the busy time, the workers' wait for a CPU (runnable, not running: more workers than cores), apart from
  // their waits on reads or sleeps; -1 where not measured (no workers, or no schedstat).
  double cpu_wait_share = -1;
  double ms_per_sample = 0;     // one process's busy time a sample, collate included
  std::vector<LoaderPart> parts;  // costliest first
  int cores = 0;                // what the prediction counts on: the machine's, less what other work kept busy
  int machine_cores = 0;        // the machine's (0: not told apart)
  double train_cpu_ms = 0;      // the training process's own CPU a sample (its loading taken out)
  double consume_sps = 0;       // what the training loop takes when it never waits: samples over (wall - wait)
  // num_workers=0: what taking a batch from a worker would cost the training process (the launcher's probe on the
  // run's own batch, hooks/loader_receive.py; 0: not measured), and the model's rate once it pays that: what a
  // run with workers can reach at most. With workers the receiving is in the measured rate already: fed = consume.
  double receive_ms = 0;
  double fed_sps = 0;
  bool threads = false;         // the workers are threads of the training process (the engine's): no batch
                                // crosses a process, so a prediction from none counts no receiving
  double supply_sps = 0;        // what the loading processes supply at most now (model below)
  int need_workers = 0;         // the fewest workers that give expect_sps, supplying 15% more than the model
                                // takes where the cores allow (0: not input-bound, or not known)
  bool cores_bound = false;     // no count feeds the model: the cores bound the run below consume_sps
  double expect_sps = 0;        // what a run with need_workers should measure: min(consume, their supply)
  double run_sps = 0;           // what this run measured: samples over its wall time (0: not known)
  int feed_workers = 0;         // cores_bound: the workers, and the free cores, that would feed the model on a
  int feed_cores = 0;           // machine with more (0: not known, or past the knob's range)
  double pin_ms = 0;            // pin_memory's copy of a batch into page-locked memory (0: not pinned), in the
  int64_t pin_batches = 0;      // training process (its pin-memory thread with workers), over this many batches
  // The batches' copies to the device, share of the step's wall time (XProf's input time is the host's wait and
  // this transfer); -1: not measured (a script's run: its copies are seen only in a GPU trace).
  double transfer_share = -1;

  // The transfer measured over the same steps (`h2d_ns` of `wall_ns`): the grade counts the input's two parts.
  void add_transfer(int64_t h2d_ns, int64_t wall_ns);
  // A script's: its launcher's hooks see no copy, its GPU trace does (prof::AnalysisResult::input_copy_ns() of
  // own_ns(), the figure the loader-stall finding states). Only where none was measured and the trace has copies.
  void add_trace_transfer(int64_t copy_ns, int64_t own_ns) {
    if (transfer_share < 0 && copy_ns > 0) add_transfer(copy_ns, own_ns);
  }

  // What W workers supply: each takes a sample's time without its wait for a CPU, and all of them together at
  // most what the cores give when every sample costs its loading CPU plus the training process's CPU (both share
  // the cores).
  double supply_with(int workers) const;
  // Whether the workers wait for a CPU more than on their reads: too many processes for the cores, not a slow disk.
  bool crowded() const;
  // With no workers now, what taking its batches from workers would cost the training process a sample, in ms
  // (receive_ms over a batch's samples; 0 with workers, or not measured).
  double receive_ms_a_sample() const;
  // The changes to the script's code for the costliest parts (10% of the loading or more), when the step is
  // input-bound (5%): what each part is, where, and its bound (LoaderFix).
  std::vector<LoaderFix> fixes() const;
  // The loader knob to switch and its bound, from the same model as lines() (LoaderAdvice).
  LoaderAdvice advice() const;
  // The verdict in lines, for the terminal ("loader: highly input-bound: ...").
  std::vector<std::string> lines() const;
  nlohmann::json to_json() const;
  // The verdict back from to_json()'s object (a run's JSON `loader`, or the "loader" document of its trace):
  // `analyze` and the GUI show the lines `run` printed. Not valid when `j` is not such an object.
  static LoaderVerdict from_json(const nlohmann::json& j);
  // The same from JSON text (a trace's "loader" document); not valid when the text is not JSON.
  static LoaderVerdict from_text(const std::string& text);
};

// `parts`: done.summary.loader_parts; the measured steps' samples, wall and data-wait totals; the machine's
// cores; the training process's own CPU ms a sample (0: not known, the cores bound only the loading). Not
// valid without parts or steps.
LoaderVerdict loader_verdict(const nlohmann::json& parts, int64_t samples, int64_t wall_ns, int64_t wait_ns,
                             int cores, double train_cpu_ms = 0);

// The verdict of a script's run, as `run --script` and the GUI's live view make it: `parts` (the loading
// processes' totals) and `cpu_ns` (the training process's CPU time after its first step: done.summary.cpu_ns, or a
// loader_parts message's) against the measured steps' samples, wall and wait; `samples_after_first`, the samples of
// every step after the first (what cpu_ns was spent on). The training process's own CPU a sample is cpu_ns less
// its own loading's, over those samples.
LoaderVerdict loader_verdict_of_run(const nlohmann::json& parts, int64_t cpu_ns, int64_t samples, int64_t wall_ns,
                                    int64_t wait_ns, int64_t samples_after_first, int cores);

// The cores a prediction can count on: the machine's `cores` less what other processes kept busy during the run
// (all of the machine's busy share, `busy_share` of `cores`, less the run's own CPU, `own_cores`), at least one.
// Beside another CPU-bound job on 2 cores a cores-bound prediction of 1397 samples/s got 820.
int cores_free(int cores, double busy_share, double own_cores);

}  // namespace tb::client
