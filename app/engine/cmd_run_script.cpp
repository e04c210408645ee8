// tunebench-cli run --script train.py [--python PY] [--set k=v,...] [--steps N | --measured-steps N]
//                   [--trace T.json] [--trace-every N] [--trace-detail shapes,stack] [--json OUT.json]
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
}  // namespace

int cmd_run_script(int argc, char** argv) {
  client::ScriptOptions so;
  std::vector<std::string> script_args;
  const int end = script_args_split(argc, argv, script_args);
  so.args = script_args;
  int64_t measured_steps = 0;
  double first_step_timeout = 120;
  std::string json_path, trace_path;
  bool quiet = false;
  for (int i = 1; i < end; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) { return next_arg(end, argv, i, out); };
    std::string v;
    int64_t n = 0;
    if (const auto s = script_source_option(a, value, so)) {
      if (!*s) return usage_error(s->error().message);
    } else if (a == "--set") {
      if (!value(v)) return usage_error("--set needs k=v,...");
      const auto items = client::inputs::parse_settings(v);
      if (!items) return usage_error(items.error().message);
      for (const auto& kv : *items) so.set.push_back(kv);
    } else if (a == "--steps") {
      if (!value(v) || !parse_int(v, n, 1)) return usage_error("--steps needs a positive integer");
      so.steps = n;
    } else if (a == "--measured-steps") {
      if (!value(v) || !parse_int(v, n, 1)) return usage_error("--measured-steps needs a positive integer");
      measured_steps = n;
    } else if (a == "--json") {
      if (!value(json_path)) return usage_error("--json needs a file path");
    } else if (a == "--trace") {
      if (!value(trace_path)) return usage_error("--trace needs a file path");
    } else if (a == "--trace-every") {
      if (!value(v) || !parse_int(v, n, 1)) return usage_error("--trace-every needs a positive integer");
      so.trace_every = int(n);
    } else if (a == "--trace-share") {
      if (!value(v)) return usage_error("--trace-share needs a share of the run from 0 (trace every step) to 0.5");
      const auto share = client::inputs::parse_trace_share(v);
      if (!share) return usage_error(share.error().message);
      so.trace_share = *share;
    } else if (a == "--trace-detail") {
      if (!value(v) || (so.trace_detail = trace_detail_of(v)).empty())
        return usage_error("--trace-detail takes shapes, stack or shapes,stack");
    } else if (a == "--first-step-timeout") {
      if (!value(v) || !parse_int(v, n, 1)) return usage_error("--first-step-timeout needs seconds");
      first_step_timeout = double(n);
    } else if (a == "--warmup") {
      if (!value(v) || !parse_int(v, n)) return usage_error("--warmup needs a non-negative integer");
      so.warmup_steps = int(n);
    } else if (a == "--quiet" || a == "-q") {
      quiet = true;
    } else {
      return usage_error("unknown option '" + a + "' for run --script (script arguments go after --)");
    }
  }
  if (so.script.empty()) return usage_error("--script needs a file");
  // --steps N is N steps in all: warm-up until stable may take at most half of them, so a short run on a
  // noisy machine still measures something (it flagged all 12 steps of a test run as warm-up once).
  if (so.steps > 0)
    so.max_warmup_steps = std::min(so.max_warmup_steps, std::max(so.warmup_steps, static_cast<int>(so.steps / 2)));
  // The allocator is the interpreter's process setting: its environment, not a launcher knob.
  for (auto it = so.set.begin(); it != so.set.end();)
    if (it->first == "cpu_allocator") {
      const auto normalized = engine::normalize_knob_value("cpu_allocator", it->second);
      if (!normalized) return usage_error(normalized.error().message);
      const std::string& v = *normalized;
      if (auto why = engine::cpu_allocator_unavailable(v); !why.empty()) return usage_error(why);
      if (auto env = engine::cpu_allocator_env(v); !env.empty()) so.env.push_back(env);
      it = so.set.erase(it);
    } else {
      ++it;
    }
  so.output = script_output_to_stderr(quiet);
  // --trace: the launcher writes torch.profiler chunks into a private directory; they become one file.
  std::filesystem::path chunk_dir;
  if (!trace_path.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tunebench-script-trace-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return usage_error("cannot make a directory for the trace chunks");
    chunk_dir = tmpl;
    so.trace_dir = chunk_dir.string();
    // The first measured steps run untraced, the reference for tracing's own cost ("tracing cost" when it is
    // above 5%: tracing once halved a fast script's speed and the run did not say so). A short run is traced
    // whole: its steps are too few to spare.
    so.trace_wait = so.steps > 0 ? so.steps >= 60 : measured_steps > 0 ? measured_steps >= 40 : true;
  }
  const RemoveDir remove_chunks{chunk_dir};
  std::vector<std::string> chunks;

  client::ScriptRunner runner;
  if (Status st = runner.start(so, first_step_timeout); !st) {
    const std::string& err = st.error().message;
    std::fprintf(stderr, "tunebench-cli: error: %s\n", err.c_str());
    // A run that measured nothing still writes its JSON, with the reason.
    if (!json_path.empty())
      write_json_file(json_path, {{"model", "script:" + so.script}, {"error", err}, {"not_measured", err},
                                  {"steps", nlohmann::json::array()}});
    return err.rfind("script not found", 0) == 0 || err.find("python") != std::string::npos ? 2 : 1;
  }
  // No hello when the training ran in child processes (client/script_runner.h): an empty one.
  const nlohmann::json hello = runner.hello().is_object() ? runner.hello() : nlohmann::json::object();
  std::fprintf(stderr, "run: %s under %s (torch %s), %s\n", so.script.c_str(), runner.python().path.c_str(),
               runner.python().torch_version.c_str(),
               hello.value(nlohmann::json::json_pointer("/device/kind"), std::string("cpu")).c_str());

  std::vector<engine::StepRecord> records;
  // What the launcher's steps add to a step record (the phases, how the update was made, what `samples`
  // counts), kept for the run JSON: step_json writes only the record's fields.
  std::vector<nlohmann::json> step_extras;
  std::string unit = "samples";
  nlohmann::json warnings = nlohmann::json::array(), sources = nlohmann::json::array(), done;
  nlohmann::json config = config_of_hello(hello);
  std::string failure, traceback;
  std::string stalled_at;  // where the launcher last saw the script stuck (its "stalled" warning)
  nlohmann::json outside = nlohmann::json::array();
  measure::LoadProbe load;
  measure::TreeCpuProbe own;  // the run's own CPU: this process's, the script's and its workers'
  int64_t measured = 0;
  bool stop_sent = false, trace_started = false;
  std::vector<std::pair<int64_t, int64_t>> traced;  // the steps each trace chunk covers
  for (;;) {
    // Training in child processes: the parent makes no step, and waits for them without a time-out.
    const double wait = runner.trains_elsewhere() ? 1.0
                        : records.empty()         ? first_step_timeout - runner.seconds_running()
                                                  : 600 - runner.seconds_since_step();
    if (wait <= 0) {
      failure = records.empty() ? client::first_step_timeout_text(first_step_timeout, runner.training_started_s(),
                                                                  "--first-step-timeout")
                                : "no training step for 600 s: the script hangs" + stalled_at;
      break;
    }
    auto m = runner.next(std::min(wait, 1.0));
    if (!m) {
      if (runner.finished()) break;
      continue;
    }
    const std::string type = m->value("type", std::string());
    if (type == msg::step) {
      records.push_back(step_record_of(*m));
      nlohmann::json extra = nlohmann::json::object();
      for (const char* k : {"forward_ns", "backward_ns", "optim_ns", "optimizer_steps", "update", "unit", "tokens",
                            "profiler_ns"})
        if (m->contains(k)) extra[k] = (*m)[k];
      step_extras.push_back(std::move(extra));
      unit = m->value("unit", std::string("samples"));
      if (!records.back().warmup) ++measured;
      if (so.trace_wait && !trace_started && measured >= kUntracedSteps) {
        runner.send({{"type", msg::trace}, {"action", "start"}});
        trace_started = true;
      }
      if (measured_steps > 0 && measured >= measured_steps && !stop_sent) {
        runner.send({{"type", msg::stop}});
        stop_sent = true;
      }
    } else if (type == msg::config_applied) {
      if (m->contains("knobs")) config = (*m)["knobs"];
    } else if (type == msg::source) {
      sources.push_back(*m);
    } else if (type == msg::trace || type == msg::trace_lanes) {  // a chunk, or the loader's lanes beside one
      chunks.push_back(m->value("path", std::string()));
      if (type == msg::trace) traced.push_back({m->value("first_step", int64_t(-1)), m->value("last_step", int64_t(-2))});
    } else if (type == msg::outside) {
      // Time between training iterations (validation, checkpoints, logging): its own class, outside every
      // step and every throughput window.
      outside.push_back(*m);
      // An epoch boundary with nothing between the loops takes microseconds: said in the JSON, not printed.
      if (m->value("wall_ns", int64_t(0)) >= 1'000'000) std::fprintf(stderr, "run: %s\n", describe_outside(*m).c_str());
    } else if (type == msg::warning) {
      if (m->value("kind", std::string()) == "stalled")
        stalled_at = " (stuck at " + m->value("file", std::string("?")) + ":" + std::to_string(m->value("line", 0)) +
                     ": " + m->value("code", std::string()) + ")";
      warnings.push_back(m->value("message", std::string()));
      std::fprintf(stderr, "tunebench-cli: warning: %s\n", m->value("message", std::string()).c_str());
    } else if (type == msg::error) {
      failure = m->value("message", std::string("the script failed"));
      traceback = m->value("traceback", std::string());
      // An out-of-memory error says where and how full: the step after which it failed and what it held.
      if (m->contains("memory")) {
        const auto& after = (*m)["after_step"];
        const std::string state = engine::memory_state_text(engine::memory_of_json((*m)["memory"]));
        failure += std::string(" [") + (after.is_number() ? "after step " + after.dump() : "before the first step") +
                   (state.empty() ? "" : "; " + state) + "]";
      }
    } else if (type == msg::done) {
      done = *m;
    }
  }
  const int code = runner.stop(failure.empty() ? 10 : 2);

  nlohmann::json out;
  out["model"] = "script:" + so.script;
  out["data"] = joined_args(so.args);
  out["script"] = {{"path", so.script}, {"args", so.args}, {"python", runner.python().path}};
  out["device"] = hello.value("device", nlohmann::json::object());
  out["versions"] = hello.value("versions", nlohmann::json::object());
  out["config"] = config;
  size_t traced_out = 0;
  const std::vector<engine::StepRecord> figures = untraced_figures(records, traced, traced_out);
  const measure::SystemLoad during = load.stop();
  const double own_cores = own.cores();
  out["throughput"] = throughput_json(figures, during);
  if (traced_out > 0) out["throughput"]["traced_steps_left_out"] = traced_out;
  out["memory"] = engine::memory_summary_json(records);
  out["steps"] = nlohmann::json::array();
  for (size_t k = 0; k < records.size(); ++k) {
    nlohmann::json s = step_json(records[k]);
    for (auto it = step_extras[k].begin(); it != step_extras[k].end(); ++it) s[it.key()] = it.value();
    out["steps"].push_back(std::move(s));
  }
  // A sequence model's steps count its sequences (or, when its batch could not be told, its time steps).
  if (unit != "samples") out["throughput"]["unit"] = unit + "/s";
  out["outside"] = outside;
  out["source"] = sources;
  out["warnings"] = warnings;
  out["exit_code"] = code;
  if (!done.is_null()) out["done"] = done.value("summary", nlohmann::json::object());
  if (!traceback.empty()) out["traceback"] = traceback;
  if (measured > 0) out["window"] = window_json(figures);
  // Nothing measured: why, in one line (the JSON's and stdout's), never "0.0 samples/s".
  const std::string not_measured =
      measured == 0 ? nothing_measured_text(done, failure, records.size(), so.warmup_steps) : "";
  if (!not_measured.empty()) out["not_measured"] = not_measured;
  const nlohmann::json tracing = so.trace_wait ? engine::tracing_cost_json(records, traced) : nlohmann::json();
  if (!tracing.is_null()) out["tracing_cost"] = tracing;
  int64_t run_wall_ns = 0;
  for (const auto& r : records) run_wall_ns += r.wall_ns;
  client::LoaderVerdict loader = script_loader_verdict(out, figures, during, own_cores, run_wall_ns);
  if (!trace_path.empty()) {
    if (so.trace_wait && !trace_started && chunks.empty()) {
      const std::string err = "the script ended after " + std::to_string(measured) +
                              " measured steps, before tracing began (after " + std::to_string(kUntracedSteps) +
                              " untraced ones, the reference for its cost): pass --steps N under 60 to trace it whole";
      std::fprintf(stderr, "tunebench-cli: error: --trace: %s\n", err.c_str());
      if (failure.empty()) failure = "--trace: " + err;
    } else if (std::string err = merge_chunks(chunks, trace_path, loader); !err.empty()) {
      std::fprintf(stderr, "tunebench-cli: error: --trace: %s\n", err.c_str());
      if (failure.empty()) failure = "--trace: " + err;
    } else {
      std::fprintf(stderr, "trace: %s (%zu chunk%s of up to %d steps%s)\n", trace_path.c_str(), traced.size(),
                   traced.size() == 1 ? "" : "s", so.trace_every,
                   so.trace_wait ? (", from after " + std::to_string(kUntracedSteps) +
                                    " untraced measured steps, the reference for its cost").c_str() : "");
      if (const std::string cost = engine::tracing_cost_text(tracing); !cost.empty())
        std::printf("%s\n", cost.c_str());
    }
  }
  // After the trace: on a GPU the verdict's transfer comes from it; a trace that could not be written is said.
  if (loader.valid) out["loader"] = loader.to_json();
  if (!failure.empty()) out["error"] = failure;
  if (!json_path.empty() && !write_json_file(json_path, out)) return 1;
  print_script_throughput(so.script, out["throughput"], unit, records.size(), figures, traced_out, not_measured);
  if (const std::string mem = engine::memory_summary_text(out["memory"]); !mem.empty()) std::printf("%s\n", mem.c_str());
  for (const std::string& line : loader.lines()) std::printf("%s\n", line.c_str());
  if (unit == "time steps")
    std::fprintf(stderr, "run: samples = time steps: the batch dimension of the script's model could not be told\n");
  if (!failure.empty()) {
    if (!traceback.empty()) std::fprintf(stderr, "%s", traceback.c_str());
    std::fprintf(stderr, "tunebench-cli: error: %s\n", failure.c_str());
    return 1;
  }
  return 0;
}

}  // namespace tb::cli
