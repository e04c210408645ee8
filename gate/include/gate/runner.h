// The gate's run (docs/ci.md): a baseline and a candidate script, each run in fresh processes, alternately
// (AB BA AB ...), until measure/gate.h's rule decides or the time is spent. A process's figure is its measured
// steps' throughput (the warm-up rule of measure/warmup.h leaves out each process's first steps); one warm-up
// pair first is not counted (the page cache, bytecode compiled, the CPU's clocks).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "client/inputs.h"
#include "measure/gate.h"
#include "measure/noise.h"
#include "measure/window.h"

namespace tb::gate {

struct Side {
  std::string name;      // "baseline" or "candidate"
  std::string script;    // absolute path of the file run
  std::string describe;  // what it is: "3f2a9c1 Add dropout (v1.2)", "the working tree", "train_old.py"
  // The engine's own run instead of a script: `tunebench-cli run` with these arguments ("--model", "mnist_cnn",
  // "--data", "synthetic", "--set", "amp=bf16"), each process a fresh one.
  std::vector<std::string> engine;
  // A script's launcher knobs for every process of this side (`gate --set`, `--baseline-set`, `--candidate-set`):
  // the same script with and without a switch.
  std::vector<std::pair<std::string, std::string>> set;
};

struct GateOptions {
  Side baseline, candidate;
  std::vector<std::string> args;  // the script's own arguments, the same for both
  std::string python;             // "" = the runner's choice (client/script_runner.h)
  int64_t steps = 100;            // optimizer steps per process (the warm-up's among them)
  double max_time_s = client::inputs::kGateMaxTimeDefaultS;  // no pair is started that would end after this
  double first_step_timeout_s = 180;
  double step_timeout_s = 300;    // a process with no step for this long is hung
  int warmup_pairs = 1;
  bool why = true;                // a decided change: one traced process of each side, diffed (gate/why.h)
  std::string keep_traces;        // where those traces are kept ("": not kept)
  measure::GateRule rule;
  std::function<void(const std::string&)> progress;  // one line per process
  std::function<bool()> cancelled;                   // asked between steps: a CI's SIGTERM ends the gate cleanly
};

struct ProcessRun {
  std::string side;     // "baseline" / "candidate"
  int pair = 0;         // 0: the warm-up pair; then 1, 2, ...
  measure::Window window;
  double seconds = 0;   // the whole process, start to end
  std::vector<std::string> chunks;  // its trace chunks, when traced
};

// Why, beside how much (gate/why.h): filled after a gate that found a change.
struct GateWhy {
  bool tried = false;
  std::string error;                            // why there is no diff ("" when there is one)
  std::vector<std::string> lines;               // what changed, most first, for the log and the comment
  nlohmann::json diff;                          // the whole diff (the profiler's, as `diff --json` writes it)
  std::string baseline_trace, candidate_trace;  // the traces kept ("" when not asked)
};

struct GateResult {
  bool ran = false;             // false: could not run (failure says why), exit 3
  std::string failure;          // "candidate (3f2a9c1 ...): NameError: name 'x' is not defined"
  measure::GateLook look;       // the last look
  std::vector<ProcessRun> runs;
  std::string stopped;          // "decided at pair 6", "--max-time 600 s spent", ...
  double seconds = 0;
  double baseline_throughput = 0, candidate_throughput = 0;  // pooled over the counted pairs
  std::string unit = "samples/s";
  std::string python, torch_version;
  nlohmann::json hello;          // the first process's (versions, device)
  measure::SystemLoad load;
  GateWhy why;
  bool against = false;          // the baseline is a stored one (gate/stored.h): not alternated
  int stored_runs = 0;
  std::vector<std::string> warnings;  // said before the verdict (an environment that differs from the stored one)
  int exit_code() const { return ran ? measure::verdict_exit_code(look.verdict) : 3; }
};

GateResult run_gate(const GateOptions& options);

// One fresh process of `side` (its index in the result's runs: 0 warm-up, 1, 2, ...), noting in `result` the
// interpreter and the unit; or the side and the script's own error line. Asks o.cancelled between steps.
Result<ProcessRun> run_one(const GateOptions& options, const Side& side, int index, GateResult& result);

// One more fresh process of `side`, every step traced (torch.profiler chunks into `trace_dir`): the chunk files
// in order, or why not.
Result<std::vector<std::string>> traced_process(const GateOptions& options, const Side& side,
                                                const std::string& trace_dir);

}  // namespace tb::gate
