// A user's PyTorch script run unmodified under `python -m tunebench.launch` (python/tunebench/), as a child
// speaking the run protocol of docs/protocol.md on its fds 3 (to us) and 4 (from us). The runner adds what
// the engine's `serve` decides itself: the warm-up flag of each step (measure/warmup.h, restarted at every
// config revision), so scripts and engine runs are measured by one rule.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/child_process.h"
#include "measure/warmup.h"

namespace tb::client {

// The interpreter that runs scripts: the one asked for, else $TUNEBENCH_PYTHON, else the first `python3` on
// PATH that imports torch, else the one this build linked its torch from (the project's environment).
// Probed once per process and kept (a tune starts the script many times).
struct PythonChoice {
  std::string path;           // "" when none
  std::string torch_version;  // what `import torch` reported
  std::string error;          // one line naming what was tried, when path is ""
};
PythonChoice find_python(const std::string& requested = "");

// Where the `tunebench` Python package lives: $TUNEBENCH_PYTHON_DIR, else next to this executable's tree
// (build/app/tunebench-cli -> <source>/python, <prefix>/bin -> <prefix>/share/tunebench/python). "" if none.
std::string python_package_dir();

struct ScriptOptions {
  std::string script;
  std::vector<std::string> args;  // the script's own arguments
  std::string python;             // "" = find_python()
  std::vector<std::pair<std::string, std::string>> set;  // initial knobs
  int64_t steps = 0;              // end after this many optimizer steps (0 = the script's own end)
  std::string trace_dir;          // "" = no tracing
  int trace_every = 20;
  // A sampled trace: untraced steps between chunks, as many as keep watching under this share of the run's
  // time (python/tunebench/trace/tracer.py); 0 traces every step; < 0 the launcher's default (3%).
  double trace_share = -1;
  // A sampled trace's detail quota: at least this many traced steps where the run makes them (the launcher's
  // --trace-steps: spread over a run of known `steps`, every other step until held otherwise); 0 none, the
  // share alone; < 0 not asked (run and serve --script then ask theirs: app/engine/script_common.h).
  int64_t trace_steps = -1;
  std::string trace_detail;       // "shapes", "stack" or both, comma-separated: what torch.profiler also records
  bool trace_wait = false;        // trace from a `trace start` message on (run --trace's untraced reference steps)
  int warmup_steps = 3, max_warmup_steps = 30;  // the warm-up rule (measure/warmup.h), as for the engine
  ChildProcess::OutputFn output;  // the script's own prints (stdout+stderr), line by line
  // "K=V" added to (or replacing in) the inherited environment; the inherited one loses its allocator
  // settings first (LD_PRELOAD of jemalloc/tcmalloc, GLIBC_TUNABLES malloc entries), so that the
  // interpreter runs exactly the allocator these ask for (the cpu_allocator knob is a process setting).
  std::vector<std::string> env;
  // Files of the script run from patched copies, each as the original at its path (python/tunebench/patched.py):
  // the tuner's check that the patch it wrote makes the plain script faster.
  std::vector<std::pair<std::string, std::string>> sources;  // original, copy
  // The option that gives the first step more time, named when it runs out (the CLI's; the GUI names its own).
  std::string timeout_option = "--first-step-timeout";
  // Polled while start() waits for the first step: true stops the child and start() fails "cancelled" (a CI
  // cancelling a gate during a script's minutes-long first step).
  std::function<bool()> cancelled;
  // A script whose training runs in child processes is waited for to its end: a run's output is the run. A
  // tune or a live view has nothing to measure in it: false fails start() at the launcher's warning, the
  // child stopped (a hogwild script's tune had said so after 113 s, when its children were done).
  bool children_to_end = true;
};

// Why no first step came within `limit_s`: after the launcher said the first training iteration began
// (`training_at_s` >= 0, seconds after the start) the step is long, not missing (LBFGS's step(closure) runs up to
// 20 forward/backward passes); else the script may not train at all. Both name `option`.
std::string first_step_timeout_text(double limit_s, double training_at_s, const std::string& option);

class ScriptRunner {
 public:
  ~ScriptRunner();
  // Starts the interpreter and waits for `hello`, which the launcher sends at the script's first optimizer
  // step (at most `hello_timeout_s`), or says in one line why not (no interpreter with torch, no launcher
  // package, the launcher refused a knob, the script failed or made no optimizer step, ...). A script whose
  // training runs in child processes (the launcher's "children" warning) is waited for to its end without a
  // time-out (unless options.children_to_end is false); it succeeds without a hello (hello() is null) and the
  // messages it sent come from next().
  Status start(const ScriptOptions& options, double hello_timeout_s = 120);
  const nlohmann::json& hello() const { return hello_; }
  // Seconds after the start at which the launcher said the first training iteration began (-1: not yet).
  double training_started_s() const { return training_at_s_; }
  // The launcher said the training runs in child processes (torch.multiprocessing) it does not follow.
  bool trains_elsewhere() const { return elsewhere_; }
  const PythonChoice& python() const { return python_; }

  // The next message, waiting at most `timeout_s`; nullopt on timeout or when the child closed the channel
  // (then finished()). Steps carry "warmup" from the rule; malformed lines become warnings.
  std::optional<nlohmann::json> next(double timeout_s);
  bool finished() const { return child_.eof(); }
  bool send(const nlohmann::json& message);
  // Stops the script and its loader workers where they are (SIGSTOP to its process group), and lets them go
  // on: while the tuner measures a fresh process beside it, the live script must not run (it trained until
  // its unread step messages filled the pipe, taking a core from the process being measured).
  bool pause();
  void resume();
  // When the last resume() was, on the launcher's clock (CLOCK_MONOTONIC ns; 0: never): a step that began
  // before it spanned the pause and was not a step of one configuration alone.
  int64_t resumed_ns() const { return resumed_ns_; }
  // Asks the child to stop and reaps it (SIGTERM/SIGKILL after `timeout_s`). Returns its exit code.
  int stop(double timeout_s = 10);
  std::optional<int> exit_code() { return child_.exited() ? child_.exit_code() : std::nullopt; }
  std::vector<std::string> output_tail() const { return child_.output_tail(); }
  // Seconds since the start, and since the last step arrived (the "is this a training script?" check).
  double seconds_running() const;
  double seconds_since_step() const;
  int64_t steps_seen() const { return steps_; }

 private:
  ChildProcess child_;
  PythonChoice python_;
  nlohmann::json hello_;
  std::vector<nlohmann::json> early_;  // messages read while waiting for hello
  ScriptOptions opts_;
  measure::WarmupDetector warmup_{0};
  int64_t rev_ = -1;
  int64_t steps_ = 0;
  double started_s_ = 0, last_step_s_ = 0;
  double training_at_s_ = -1;
  bool elsewhere_ = false;
  bool paused_ = false;
  int64_t resumed_ns_ = 0;
  // Notes what a message says of the run's shape (training began, training in children).
  void note(const nlohmann::json& m);
};

}  // namespace tb::client
