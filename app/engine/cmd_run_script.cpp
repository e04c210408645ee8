// tunebench-cli run --script train.py [--python PY] [--set k=v,...] [--steps N | --measured-steps N]
//                   [--trace T.json] [--trace-every N] [--trace-share S] [--trace-steps K]
//                   [--trace-detail shapes,stack] [--json OUT.json]
//                   [--first-step-timeout S] [--quiet]
//                   [-- SCRIPT ARGS]
// Runs the user's script unmodified under python -m tunebench.launch and reports its throughput exactly as an
// engine run (same JSON document: config, throughput, steps, warnings), plus where the DataLoader and the
// optimizer were made (the lines a tuning report tells the user to edit).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <filesystem>

#include "client/inputs.h"
#include "commands.h"
#include "engine/cpu_allocator.h"
#include "measure/tree_cpu.h"
#include "profiler/trace_io.h"
#include "engine_cli_common.h"
#include "run_script_parts.h"
#include "script_common.h"
#include "client/compile_events.h"
#include "client/protocol.h"

namespace msg = tb::client::protocol::msg;

namespace tb::cli {
namespace {

// Measured steps a traced run makes untraced first: the reference its tracing cost is stated against.
constexpr int64_t kUntracedSteps = 10;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "tunebench-cli: error: run: %s\n", msg.c_str());
  return 2;
}

// What run --script was asked for.
struct RunScriptArgs {
  client::ScriptOptions so;
  int64_t measured_steps = 0;
  double first_step_timeout = 120;
  std::string json_path, trace_path;
  bool quiet = false;
};

// The allocator is the interpreter's process setting: its environment, not a launcher knob. Moves a
// cpu_allocator item of --set into `so.env`; Ok, or why that allocator cannot be had.
Status allocator_to_env(client::ScriptOptions& so) {
  for (auto it = so.set.begin(); it != so.set.end();)
    if (it->first == "cpu_allocator") {
      const auto normalized = engine::normalize_knob_value("cpu_allocator", it->second);
      if (!normalized) return normalized.error();
      const std::string& v = *normalized;
      if (auto why = engine::cpu_allocator_unavailable(v); !why.empty()) return Error{why};
      if (auto env = engine::cpu_allocator_env(v); !env.empty()) so.env.push_back(env);
      it = so.set.erase(it);
    } else {
      ++it;
    }
  return Status::Ok();
}

// argv of run --script (argv[0] "run"; the script's own arguments after "--"): the options, or the one line.
Result<RunScriptArgs> parse_args(int argc, char** argv) {
  RunScriptArgs r;
  client::ScriptOptions& so = r.so;
  const Status read = read_script_command_line(argc, argv, so.args, [&](const std::string& a, auto& value) -> Status {
    std::string v;
    int64_t n = 0;
    if (const auto s = script_option(a, value, so, {.steps_min = client::inputs::kRunStepsMin})) return *s;
    if (a == "--measured-steps") {
      if (!value(v) || !parse_int(v, n, 1)) return Error{"--measured-steps needs a positive integer"};
      r.measured_steps = n;
    } else if (a == "--json") {
      if (!value(r.json_path)) return Error{"--json needs a file path"};
    } else if (a == "--trace") {
      if (!value(r.trace_path)) return Error{"--trace needs a file path"};
    } else if (a == "--first-step-timeout") {
      if (!value(v) || !parse_int(v, n, 1)) return Error{"--first-step-timeout needs seconds"};
      r.first_step_timeout = double(n);
    } else if (a == "--warmup") {
      if (!value(v) || !parse_int(v, n)) return Error{"--warmup needs a non-negative integer"};
      so.warmup_steps = int(n);
    } else if (a == "--quiet" || a == "-q") {
      r.quiet = true;
    } else {
      return Error{"unknown option '" + a + "' for run --script (script arguments go after --)"};
    }
    return Status::Ok();
  });
  if (!read) return read.error();
  if (so.script.empty()) return Error{"--script needs a file"};
  so.trace_steps = trace_steps_or_default(so);
  // --steps N is N steps in all: warm-up until stable may take at most half of them, so a short run on a
  // noisy machine still measures something (it flagged all 12 steps of a test run as warm-up once).
  if (so.steps > 0)
    so.max_warmup_steps = std::min(so.max_warmup_steps, std::max(so.warmup_steps, static_cast<int>(so.steps / 2)));
  if (Status st = allocator_to_env(so); !st) return st.error();
  so.output = script_output_to_stderr(r.quiet);
  return r;
}

// --trace: the launcher writes torch.profiler chunks into a private directory (returned); they become one file.
Result<std::filesystem::path> trace_chunks_dir(RunScriptArgs& args) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tunebench-script-trace-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Error{"cannot make a directory for the trace chunks"};
  client::ScriptOptions& so = args.so;
  so.trace_dir = tmpl;
  // The first measured steps of a long run run untraced, the reference for tracing's own cost ("tracing cost"
  // when it is above 5%: tracing once halved a fast script's speed and the run did not say so). A short run is
  // traced from its start: its steps are too few to spare. So is a run of unknown length (a script run to its
  // end): it may end after a few steps (an LBFGS fit, a forward-forward trainer's 6), and waiting for 10 left
  // it with no trace at all; its sampled chunks have untraced steps between them for the reference.
  so.trace_wait = so.steps > 0 ? so.steps >= 60 : args.measured_steps > 0 && args.measured_steps >= 40;
  return std::filesystem::path(tmpl);
}

// The script could not start: its one line, and a JSON that says why when one was asked for. The exit code.
int start_failed(const RunScriptArgs& args, const std::string& err) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", err.c_str());
  // A run that measured nothing still writes its JSON, with the reason.
  if (!args.json_path.empty())
    write_json_file(args.json_path, {{"model", "script:" + args.so.script}, {"error", err}, {"not_measured", err},
                                     {"steps", nlohmann::json::array()}});
  return err.rfind("script not found", 0) == 0 || err.find("python") != std::string::npos ? 2 : 1;
}

// What the script's messages said over the run.
struct Collected {
  std::vector<engine::StepRecord> records;
  // What the launcher's steps add to a step record (the phases, how the update was made, what `samples`
  // counts), kept for the run JSON: step_json writes only the record's fields.
  std::vector<nlohmann::json> step_extras;
  std::string unit = "samples";
  nlohmann::json warnings = nlohmann::json::array(), sources = nlohmann::json::array(), done, config;
  nlohmann::json outside = nlohmann::json::array();
  nlohmann::json compiles = nlohmann::json::array();  // the launcher's `compile` messages: what torch.compile did
  std::string failure, traceback;
  std::string stalled_at;  // where the launcher last saw the script stuck (its "stalled" warning)
  int64_t measured = 0;
  bool stop_sent = false, trace_started = false;
  std::vector<std::pair<int64_t, int64_t>> traced;  // the steps each trace chunk covers
  std::vector<std::string> chunks;
};

// A `step`: its record, and the trace's start or the run's stop when the measured steps call for them.
void take_step(Collected& c, client::ScriptRunner& runner, const RunScriptArgs& args, const nlohmann::json& m) {
  c.records.push_back(step_record_of(m));
  nlohmann::json extra = nlohmann::json::object();
  for (const char* k : {"forward_ns", "backward_ns", "optim_ns", "optimizer_steps", "update", "unit", "tokens",
                        "profiler_ns", "compile_ns"})
    if (m.contains(k)) extra[k] = m[k];
  c.step_extras.push_back(std::move(extra));
  c.unit = m.value("unit", std::string("samples"));
  if (!c.records.back().warmup) ++c.measured;
  if (args.so.trace_wait && !c.trace_started && c.measured >= kUntracedSteps) {
    runner.send({{"type", msg::trace}, {"action", "start"}});
    c.trace_started = true;
  }
  if (args.measured_steps > 0 && c.measured >= args.measured_steps && !c.stop_sent) {
    runner.send({{"type", msg::stop}});
    c.stop_sent = true;
  }
}

// The launcher's error: its message, and where and how full when it ran out of memory.
void take_error(Collected& c, const nlohmann::json& m) {
  c.failure = m.value("message", std::string("the script failed"));
  c.traceback = m.value("traceback", std::string());
  // An out-of-memory error says where and how full: the step after which it failed and what it held.
  if (m.contains("memory")) {
    const auto& after = m["after_step"];
    const std::string state = engine::memory_state_text(engine::memory_of_json(m["memory"]));
    c.failure += std::string(" [") + (after.is_number() ? "after step " + after.dump() : "before the first step") +
                 (state.empty() ? "" : "; " + state) + "]";
  }
}

// One message of the launcher into `c`.
void take_message(Collected& c, client::ScriptRunner& runner, const RunScriptArgs& args, const nlohmann::json& m) {
  const std::string type = m.value("type", std::string());
  if (type == msg::step) {
    take_step(c, runner, args, m);
  } else if (type == msg::config_applied) {
    if (m.contains("knobs")) c.config = m["knobs"];
  } else if (type == msg::source) {
    c.sources.push_back(m);
  } else if (type == msg::trace || type == msg::trace_lanes) {  // a chunk, or the loader's lanes beside one
    c.chunks.push_back(m.value("path", std::string()));
    if (type == msg::trace) c.traced.push_back({m.value("first_step", int64_t(-1)), m.value("last_step", int64_t(-2))});
  } else if (type == msg::compile) {
    c.compiles.push_back(m);
  } else if (type == msg::outside) {
    // Time between training iterations (validation, checkpoints, logging): its own class, outside every
    // step and every throughput window.
    c.outside.push_back(m);
    // An epoch boundary with nothing between the loops takes microseconds: said in the JSON, not printed.
    if (m.value("wall_ns", int64_t(0)) >= 1'000'000) std::fprintf(stderr, "run: %s\n", describe_outside(m).c_str());
  } else if (type == msg::warning) {
    if (m.value("kind", std::string()) == "stalled")
      c.stalled_at = " (stuck at " + m.value("file", std::string("?")) + ":" + std::to_string(m.value("line", 0)) +
                     ": " + m.value("code", std::string()) + ")";
    c.warnings.push_back(m.value("message", std::string()));
    std::fprintf(stderr, "tunebench-cli: warning: %s\n", m.value("message", std::string()).c_str());
  } else if (type == msg::error) {
    take_error(c, m);
  } else if (type == msg::done) {
    c.done = m;
  }
}

// The launcher's messages until the script ends, or hangs (no first step in --first-step-timeout, no step for
// 600 s after it).
Collected collect(client::ScriptRunner& runner, const RunScriptArgs& args, const nlohmann::json& hello) {
  Collected c;
  c.config = config_of_hello(hello);
  for (;;) {
    // Training in child processes: the parent makes no step, and waits for them without a time-out.
    const double wait = runner.trains_elsewhere() ? 1.0
                        : c.records.empty()       ? args.first_step_timeout - runner.seconds_running()
                                                  : 600 - runner.seconds_since_step();
    if (wait <= 0) {
      c.failure = c.records.empty() ? client::first_step_timeout_text(args.first_step_timeout,
                                                                      runner.training_started_s(), "--first-step-timeout")
                                    : "no training step for 600 s: the script hangs" + c.stalled_at;
      break;
    }
    auto m = runner.next(std::min(wait, 1.0));
    if (!m) {
      if (runner.finished()) break;
      continue;
    }
    take_message(c, runner, args, *m);
  }
  return c;
}

// The run's document and what its lines are made of.
struct Outcome {
  nlohmann::json out;
  Figures figures;                          // the steps its throughput is of, and what was left out
  std::string not_measured;                 // why nothing was measured, or ""
  nlohmann::json tracing;                   // what tracing cost, or null
  client::LoaderVerdict loader;
  std::vector<std::string> compile_lines;   // what torch.compile did, from the written trace when there is one
};

// The run's JSON document: an engine run's fields (config, throughput, steps, warnings) and the script's.
Outcome document(const RunScriptArgs& args, const client::ScriptRunner& runner, const nlohmann::json& hello,
                 const Collected& c, int code, const measure::SystemLoad& during, double own_cores) {
  const client::ScriptOptions& so = args.so;
  Outcome o;
  nlohmann::json& out = o.out;
  out["model"] = "script:" + so.script;
  out["data"] = joined_args(so.args);
  out["script"] = {{"path", so.script}, {"args", so.args}, {"python", runner.python().path}};
  out["device"] = hello.value("device", nlohmann::json::object());
  out["versions"] = hello.value("versions", nlohmann::json::object());
  out["config"] = c.config;
  std::vector<bool> compiling;
  for (const nlohmann::json& x : c.step_extras) compiling.push_back(x.value("compile_ns", int64_t(0)) > 0);
  o.figures = steady_figures(c.records, compiling, c.traced);
  out["throughput"] = throughput_json(o.figures.steps, during);
  if (const std::string rate = rate_text(o.figures.steps); !rate.empty()) out["throughput"]["rate"] = rate;
  if (o.figures.traced_out > 0) out["throughput"]["traced_steps_left_out"] = o.figures.traced_out;
  if (o.figures.compiling_out > 0) out["throughput"]["compiling_steps_left_out"] = o.figures.compiling_out;
  if (!c.compiles.empty()) out["compiles"] = c.compiles;
  out["memory"] = engine::memory_summary_json(c.records);
  out["steps"] = nlohmann::json::array();
  for (size_t k = 0; k < c.records.size(); ++k) {
    nlohmann::json s = step_json(c.records[k]);
    for (auto it = c.step_extras[k].begin(); it != c.step_extras[k].end(); ++it) s[it.key()] = it.value();
    out["steps"].push_back(std::move(s));
  }
  // A sequence model's steps count its sequences (or, when its batch could not be told, its time steps).
  if (c.unit != "samples") out["throughput"]["unit"] = c.unit + "/s";
  out["outside"] = c.outside;
  out["source"] = c.sources;
  out["warnings"] = c.warnings;
  out["exit_code"] = code;
  if (!c.done.is_null()) out["done"] = c.done.value("summary", nlohmann::json::object());
  if (!c.traceback.empty()) out["traceback"] = c.traceback;
  if (c.measured > 0) {
    out["window"] = window_json(o.figures.steps);
    int64_t compile_ns = 0;  // a tuner's fresh window states its one-time cost (measure::Window::one_time_s)
    for (const nlohmann::json& x : c.step_extras) compile_ns += x.value("compile_ns", int64_t(0));
    if (compile_ns > 0) out["window"]["one_time_s"] = compile_ns * 1e-9;
  }
  // Nothing measured: why, in one line (the JSON's and stdout's), never "0.0 samples/s".
  if (c.measured == 0) o.not_measured = nothing_measured_text(c.done, c.failure, c.records.size(), so.warmup_steps);
  if (!o.not_measured.empty()) out["not_measured"] = o.not_measured;
  if (!so.trace_dir.empty()) {  // null: too few of a side; a step that compiled is neither side's
    std::vector<engine::StepRecord> compared;
    for (size_t k = 0; k < c.records.size(); ++k)
      if (!compiling[k]) compared.push_back(c.records[k]);
    o.tracing = engine::tracing_cost_json(compared, c.traced);
  }
  if (!o.tracing.is_null()) out["tracing_cost"] = o.tracing;
  int64_t run_wall_ns = 0;
  for (const auto& r : c.records) run_wall_ns += r.wall_ns;
  o.loader = script_loader_verdict(out, o.figures.steps, during, own_cores, run_wall_ns);
  return o;
}

// What the trace holds, for its line: the traced steps (against the quota when the run was too short to hold it),
// its chunks, every step on the step lane, and where tracing began.
std::string trace_line(const client::ScriptOptions& so, const std::vector<std::pair<int64_t, int64_t>>& traced) {
  int64_t held = 0;
  for (const auto& [a, b] : traced) held += std::max<int64_t>(0, b - a + 1);
  std::string s = std::to_string(held) + " traced step" + (held == 1 ? "" : "s");
  if (so.trace_steps > 0 && held < so.trace_steps)
    s += " of the " + std::to_string(so.trace_steps) + " asked: the run ended first;";
  s += " in " + std::to_string(traced.size()) + " chunk" + (traced.size() == 1 ? "" : "s") + " of up to " +
       std::to_string(so.trace_every) + " steps, every step on the step lane";
  if (so.trace_wait)
    s += ", from after " + std::to_string(kUntracedSteps) + " untraced measured steps, the reference for its cost";
  return s;
}

// --trace: the chunks made one trace (the loader's verdict may take its transfer from it), and its line; Ok, or
// why there is no trace.
Status write_trace(const RunScriptArgs& args, const Collected& c, Outcome& o) {
  const client::ScriptOptions& so = args.so;
  if (so.trace_wait && !c.trace_started && c.chunks.empty())
    return Error{"the script ended after " + std::to_string(c.measured) +
                 " measured steps, before tracing began (after " + std::to_string(kUntracedSteps) +
                 " untraced ones, the reference for its cost): pass --steps N under 60 to trace it whole"};
  std::unique_ptr<prof::Trace> merged;
  const auto compiles = client::lane_compiles(c.compiles);
  if (std::string err = merge_chunks(c.chunks, args.trace_path, o.loader, lane_steps(c.records, c.step_extras, c.traced),
                                     lane_outside(c.outside), compiles, &merged);
      !err.empty())
    return Error{err};
  // The run's compile lines are `analyze`'s of this file: what a graph break cost the traced steps included.
  o.compile_lines = client::compile_lines(*merged, compiles, o.figures.compiling_out);
  std::fprintf(stderr, "trace: %s (%s)\n", args.trace_path.c_str(), trace_line(so, c.traced).c_str());
  if (const std::string cost = engine::tracing_cost_text(o.tracing); !cost.empty()) std::printf("%s\n", cost.c_str());
  return Status::Ok();
}

// The JSON file and the run's lines on stdout (its failure on stderr); the exit code.
int finish(const RunScriptArgs& args, const Collected& c, Outcome& o) {
  nlohmann::json& out = o.out;
  // After the trace: on a GPU the verdict's transfer comes from it; a trace that could not be written is said.
  if (o.loader.valid) out["loader"] = o.loader.to_json();
  if (!c.failure.empty()) out["error"] = c.failure;
  if (!args.json_path.empty() && !write_json_file(args.json_path, out)) return 1;
  print_script_throughput(args.so.script, out["throughput"], c.unit, c.records.size(), o.figures, o.not_measured);
  if (o.compile_lines.empty() && !c.compiles.empty()) {
    const auto compiles = client::lane_compiles(c.compiles);
    const auto lanes = client::lanes_trace(lane_steps(c.records, c.step_extras, c.traced), compiles);
    o.compile_lines = client::compile_lines(*lanes, compiles, o.figures.compiling_out);
  }
  for (const std::string& line : o.compile_lines) std::printf("%s\n", line.c_str());
  if (const std::string mem = engine::memory_summary_text(out["memory"]); !mem.empty()) std::printf("%s\n", mem.c_str());
  for (const std::string& line : o.loader.lines()) std::printf("%s\n", line.c_str());
  if (c.unit == "time steps")
    std::fprintf(stderr, "run: samples = time steps: the batch dimension of the script's model could not be told\n");
  if (!c.failure.empty()) {
    if (!c.traceback.empty()) std::fprintf(stderr, "%s", c.traceback.c_str());
    std::fprintf(stderr, "tunebench-cli: error: %s\n", c.failure.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int cmd_run_script(int argc, char** argv) {
  auto parsed = parse_args(argc, argv);
  if (!parsed) return usage_error(parsed.error().message);
  RunScriptArgs& args = *parsed;
  std::filesystem::path chunk_dir;
  if (!args.trace_path.empty()) {
    auto dir = trace_chunks_dir(args);
    if (!dir) return usage_error(dir.error().message);
    chunk_dir = *dir;
  }
  const RemoveDir remove_chunks{chunk_dir};

  client::ScriptRunner runner;
  if (Status st = runner.start(args.so, args.first_step_timeout); !st) return start_failed(args, st.error().message);
  // No hello when the training ran in child processes (client/script_runner.h): an empty one.
  const nlohmann::json hello = runner.hello().is_object() ? runner.hello() : nlohmann::json::object();
  std::fprintf(stderr, "run: %s under %s (torch %s), %s\n", args.so.script.c_str(), runner.python().path.c_str(),
               runner.python().torch_version.c_str(),
               hello.value(nlohmann::json::json_pointer("/device/kind"), std::string("cpu")).c_str());
  measure::LoadProbe load;
  measure::TreeCpuProbe own;  // the run's own CPU: this process's, the script's and its workers'
  Collected c = collect(runner, args, hello);
  const int code = runner.stop(c.failure.empty() ? 10 : 2);
  const measure::SystemLoad during = load.stop();
  const double own_cores = own.cores();

  Outcome o = document(args, runner, hello, c, code, during, own_cores);
  if (!args.trace_path.empty())
    if (Status st = write_trace(args, c, o); !st) {
      // Said once: as the run's failure (finish() prints it), or on its own beside an earlier failure.
      if (c.failure.empty()) c.failure = "--trace: " + st.error().message;
      else std::fprintf(stderr, "tunebench-cli: error: --trace: %s\n", st.error().message.c_str());
    }
  return finish(args, c, o);
}

}  // namespace tb::cli
