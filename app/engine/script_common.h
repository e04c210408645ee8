// Helpers shared by the `--script` paths of run / tune / serve (a user's PyTorch script under
// python -m tunebench.launch, client/script_runner.h). Header-only, app/engine only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "client/inputs.h"
#include "client/script_runner.h"
#include "engine/run_json.h"
#include "engine/session.h"
#include "engine_cli_common.h"

namespace tb::cli {

// A `step` message as the engine's step record (throughput_json and the tuner read those).
inline engine::StepRecord step_record_of(const nlohmann::json& m) {
  engine::StepRecord r;
  r.index = m.value("i", int64_t(0));
  r.samples = m.value("samples", int64_t(0));
  r.evaluations = m.value("evaluations", int64_t(0));
  r.start_ns = m.value("t_ns", int64_t(0));
  r.wall_ns = m.value("wall_ns", int64_t(0));
  r.data_wait_ns = m.value("data_wait_ns", int64_t(0));
  r.h2d_ns = m.value("h2d_ns", int64_t(0));
  r.minor_faults = m.value("minor_faults", int64_t(0));
  r.config_rev = m.value("config_rev", int64_t(0));
  r.warmup = m.value("warmup", false);
  r.skipped = m.value("skipped", false);
  // A training iteration that made no optimizer step (an accumulation micro-batch, a hand-written update).
  if (m.contains("optimizer_steps")) r.optimizer_step = m.value("optimizer_steps", int64_t(1)) > 0;
  if (m.contains("loss") && m["loss"].is_number()) r.loss = m["loss"].get<double>();
  if (m.contains("memory")) r.memory = engine::memory_of_json(m["memory"]);
  return r;
}

// `--trace-detail LIST`: what torch.profiler records besides the ops (shapes, stack). "" when LIST is bad.
inline std::string trace_detail_of(const std::string& list) {
  std::stringstream ss(list);
  std::string item, out;
  while (std::getline(ss, item, ',')) {
    if (item != "shapes" && item != "stack") return "";
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

// One `outside` message in words: "3.0 s outside training after epoch 1: evaluation 2.1 s, checkpoint 900 ms".
inline std::string describe_outside(const nlohmann::json& m) {
  auto secs = [](int64_t ns) {
    char b[32];
    if (ns < 1'000'000'000) std::snprintf(b, sizeof b, "%.0f ms", double(ns) * 1e-6);
    else std::snprintf(b, sizeof b, "%.1f s", double(ns) * 1e-9);
    return std::string(b);
  };
  std::string s = secs(m.value("wall_ns", int64_t(0))) + " outside training";
  if (m.contains("epoch") && m["epoch"].is_number()) s += " after epoch " + std::to_string(m["epoch"].get<int64_t>());
  else if (m.contains("after_step") && m["after_step"].is_number())
    s += " after step " + std::to_string(m["after_step"].get<int64_t>());
  std::string parts;
  for (const char* k : {"evaluation", "checkpoint", "other"})
    if (const int64_t ns = m.value(std::string(k) + "_ns", int64_t(0)); ns >= 1'000'000)  // parts under 1 ms: noise
      parts += (parts.empty() ? "" : ", ") + std::string(k) + " " + secs(ns);
  return parts.empty() ? s : s + ": " + parts;
}

// The script's knob values from `hello` (or a config_applied's `knobs`).
inline nlohmann::json config_of_hello(const nlohmann::json& hello) {
  nlohmann::json c = nlohmann::json::object();
  if (hello.contains("knobs") && hello["knobs"].is_array())
    for (const auto& k : hello["knobs"])
      if (k.contains("id") && k.contains("value")) c[k["id"].get<std::string>()] = k["value"];
  return c;
}

// Splits argv at "--": the part after it belongs to the script. Returns the index of "--" or argc.
inline int script_args_split(int argc, char** argv, std::vector<std::string>& script_args) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      for (int k = i + 1; k < argc; ++k) script_args.push_back(argv[k]);
      return i;
    }
  return argc;
}

// Reads a script command's argv (argv[0] the command; what follows "--" is the script's own, into
// `script_args`): `option(a, value)` reads option `a`, its value through `value(out)` (false past the last
// option), and returns Ok or the one line saying what is wrong; the first such line ends the reading.
template <class ReadOption>
Status read_script_command_line(int argc, char** argv, std::vector<std::string>& script_args, ReadOption&& option) {
  const int end = script_args_split(argc, argv, script_args);
  for (int i = 1; i < end; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) { return next_arg(end, argv, i, out); };
    if (Status s = option(a, value); !s) return s;
  }
  return Status::Ok();
}

// --script FILE and --python P, read the same way by every command that runs a script (run, serve, tune):
// nothing when `a` is neither, else its value read into `so` by `value` and Ok, or what was missing.
template <class ReadValue>
std::optional<Status> script_source_option(const std::string& a, ReadValue&& value, client::ScriptOptions& so) {
  if (a == "--script") {
    if (!value(so.script) || so.script.empty()) return Status(Error{"--script needs a file"});
    return Status::Ok();
  }
  if (a == "--python") {
    if (!value(so.python) || so.python.empty()) return Status(Error{"--python needs an interpreter path"});
    return Status::Ok();
  }
  return std::nullopt;
}

// Which of the script options a command reads (script_option): tune takes the script and its knobs; run and
// serve also how long it runs and how it is traced, from their own least --steps (client/inputs.h).
struct ScriptOptionRules {
  bool run_options = true;  // --steps, --trace-every, --trace-share, --trace-steps, --trace-detail
  int64_t steps_min = client::inputs::kRunStepsMin;
};

// The options every command that runs a script reads the same way (run, serve and tune --script): --script,
// --python, --set and, where `rules` says, --steps, --trace-every, --trace-share, --trace-steps and --trace-detail
// (trace_steps_or_default then gives --trace-steps its default). Nothing when
// `a` is none of them, else its value read into `so` by `value` and Ok, or the one line saying what is wrong
// (the caller puts its own "run: " or "serve: " in front).
template <class ReadValue>
std::optional<Status> script_option(const std::string& a, ReadValue&& value, client::ScriptOptions& so,
                                    const ScriptOptionRules& rules) {
  if (auto source = script_source_option(a, value, so)) return source;
  std::string v;
  if (a == "--set") {
    // A malformed item is an error on every surface: a script serve once dropped it silently.
    if (!value(v)) return Status(Error{"--set needs k=v,..."});
    const auto items = client::inputs::parse_settings(v);
    if (!items) return Status(items.error());
    so.set.insert(so.set.end(), items->begin(), items->end());
    return Status::Ok();
  }
  if (!rules.run_options) return std::nullopt;
  if (a == "--steps") {
    value(v);  // none: parse_steps("") says the range alone
    const auto n = client::inputs::parse_steps(v, rules.steps_min);
    if (!n) return Status(n.error());
    so.steps = *n;
  } else if (a == "--trace-every") {
    const auto n = value(v) ? client::inputs::parse_integer(v, 1) : std::nullopt;
    if (!n) return Status(Error{"--trace-every needs a positive integer"});
    so.trace_every = int(*n);
  } else if (a == "--trace-share") {
    if (!value(v)) return Status(Error{"--trace-share needs a share of the run from 0 (trace every step) to 0.5"});
    const auto share = client::inputs::parse_trace_share(v);
    if (!share) return Status(share.error());
    so.trace_share = *share;
  } else if (a == "--trace-steps") {
    const auto n = value(v) ? client::inputs::parse_integer(v, 0) : std::nullopt;
    if (!n) return Status(Error{"--trace-steps needs a number of traced steps, 0 or more (0: no quota)"});
    so.trace_steps = *n;
  } else if (a == "--trace-detail") {
    if (!value(v) || (so.trace_detail = trace_detail_of(v)).empty())
      return Status(Error{"--trace-detail takes shapes, stack or shapes,stack"});
  } else {
    return std::nullopt;
  }
  return Status::Ok();
}

// The traced steps a script's trace holds at least when --trace-steps is not given: enough steps to read a
// step's detail beside its neighbours' (a run of 60 once held a single chunk of 3), and all of a shorter run's.
inline constexpr int64_t kTraceStepsDefault = 20;

// --trace-steps as given, else min(--steps N, kTraceStepsDefault), kTraceStepsDefault for a run of unknown length.
inline int64_t trace_steps_or_default(const client::ScriptOptions& so) {
  if (so.trace_steps >= 0) return so.trace_steps;
  return so.steps > 0 ? std::min(so.steps, kTraceStepsDefault) : kTraceStepsDefault;
}

// The script's prints go to our stderr, marked, so a user sees their own output but protocol stays clean.
inline client::ChildProcess::OutputFn script_output_to_stderr(bool quiet) {
  if (quiet) return {};
  return [](const std::string& line) { std::fprintf(stderr, "  | %s\n", line.c_str()); };
}

}  // namespace tb::cli
