#include "tuner/workloads/fresh_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "client/child_process.h"
#include "engine/run_json.h"
#include "engine/tuner.h"
#include "tuner/workloads/deadline_child.h"

namespace tb::engine {

bool mentions_oom(const std::string& s) {
  return s.find("out of memory") != std::string::npos || s.find("can't allocate memory") != std::string::npos;
}

std::string config_arg(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

Config loss_probe_config(const Config& baseline, const Config& config) {
  Config probe = baseline;
  for (const auto& [k, v] : config) {
    const KnobInfo* info = find_knob(k);
    if (info && info->changes_numerics) probe[k] = v;
  }
  probe["sync_free_logging"] = "1";
  return probe;
}

std::string tunebench_cli_path() {
  if (const char* e = std::getenv("TUNEBENCH_CLI"); e && *e) return e;
  // tunebench-cli execs tunebench-engine for its engine commands (run among them), so either can run `run`.
  const std::string self = client::self_exe();
  if (self.empty()) return "";
  for (const std::string name : {"/tunebench-cli", "/tunebench-engine"})
    if (self.size() >= name.size() && self.compare(self.size() - name.size(), name.size(), name) == 0) return self;
  return "";
}

nlohmann::json run_fresh(const std::string& cli, const SessionOptions& o, const Config& config, const FreshRun& spec,
                         double* seconds) {
  char json_path[] = "/tmp/tunebench-fresh-XXXXXX";
  const int fd = mkstemp(json_path);
  if (fd < 0) throw TrialFailure("cannot create a temporary file", false);
  close(fd);
  const int warmup = spec.warmup >= 0 ? spec.warmup : o.warmup_steps;
  // A configuration with ranks=N is a group (run reads --set ranks=N as --ranks N).
  int ranks = spec.ranks;
  if (auto it = config.find("ranks"); it != config.end()) ranks = std::max(ranks, std::atoi(it->second.c_str()));
  std::vector<std::string> argv = {cli, "run", "--model", o.model, "--data", o.data, "--device", o.device,
                                   "--seed", std::to_string(o.seed), "--warmup", std::to_string(warmup),
                                   "--drift-steps", "0", "--json", json_path, "--set", config_arg(config)};
  if (spec.measured_steps > 0) argv.insert(argv.end(), {"--measured-steps", std::to_string(spec.measured_steps)});
  else argv.insert(argv.end(), {"--steps", std::to_string(std::max(1, spec.steps))});
  if (ranks > 1) argv.insert(argv.end(), {"--ranks", std::to_string(ranks)});
  if (spec.dist_timeout_s > 0) argv.insert(argv.end(), {"--dist-timeout", std::to_string(spec.dist_timeout_s)});
  if (!spec.trace_path.empty()) argv.insert(argv.end(), {"--trace", spec.trace_path});
  if (o.input_channels > 0)
    argv.insert(argv.end(), {"--input", std::to_string(o.input_channels) + "," + std::to_string(o.input_height) + "," +
                                            std::to_string(o.input_width)});
  if (o.num_classes > 0) argv.insert(argv.end(), {"--classes", std::to_string(o.num_classes)});
  // Without the allocator this process runs (the child's own --set cpu_allocator decides) and without
  // torchrun's variables (a live group's tune must not start a second rank 0 of its group).
  ChildResult r = run_child(argv, client::inherited_environment({.rank_variables = true, .allocator = true}), spec.timeout_s);
  if (seconds) *seconds = r.seconds;
  nlohmann::json j;
  {
    std::ifstream f(json_path);
    if (f) j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  }
  unlink(json_path);
  const std::string what = ranks > 1 ? "fresh group of " + std::to_string(ranks) + " ranks" : "fresh process";
  if (!r.started) throw TrialFailure(what + ": " + r.error, false);
  if (r.timed_out)
    throw TrialFailure(what + ": no result within " + std::to_string(int(spec.timeout_s)) + " s (stopped)", false);
  if (r.exit_code != 0 || !j.is_object()) {
    std::string why = j.is_object() ? j.value("error", std::string()) : std::string();
    if (why.empty()) why = r.stderr_tail.empty() ? "exit code " + std::to_string(r.exit_code) : r.stderr_tail;
    throw TrialFailure(what + ": " + why, mentions_oom(why));
  }
  return j;
}

measure::Window window_of_run(const nlohmann::json& doc) {
  if (!doc.contains("window") || !doc["window"].is_object())
    throw TrialFailure("the run measured no window" +
                           (doc.contains("error") ? ": " + doc["error"].get<std::string>() : std::string()),
                       false);
  const auto& jw = doc["window"];
  measure::Window w;
  w.steps = jw.value("steps", 0);
  w.samples = jw.value("samples", int64_t(0));
  w.wall_s = jw.value("wall_s", 0.0);
  w.warmup_steps = jw.value("warmup_steps", 0);
  w.minor_faults = jw.value("minor_faults", int64_t(0));
  w.one_time_s = jw.value("one_time_s", 0.0);
  if (doc.contains("memory") && doc["memory"].is_object()) {
    const auto& m = doc["memory"];
    w.peak_memory_bytes = m.value("device_step_peak", m.value("host_rss_peak", int64_t(-1)));
    w.held_memory_bytes = m.value("device_allocated_peak", int64_t(-1));
    w.memory_total_bytes = m.value("device_total", int64_t(-1));
  }
  if (doc.contains("ranks") && doc["ranks"].is_array() && doc["ranks"].size() > 1) {
    int64_t samples = 0, faults = 0;
    double wall = 0;
    for (const auto& r : doc["ranks"]) {
      if (!r.contains("window")) throw TrialFailure("rank " + r.value("rank", nlohmann::json()).dump() + " measured no window", false);
      samples += r["window"].value("samples", int64_t(0));
      faults += r["window"].value("minor_faults", int64_t(0));
      wall = std::max(wall, r["window"].value("wall_s", 0.0));
    }
    w.samples = samples;
    w.minor_faults = faults;
    w.wall_s = wall;
  }
  return w;
}

nlohmann::json report_environment(nlohmann::json j) {
  if (j.contains("device") && j["device"].is_object()) {
    const auto d = j["device"];
    std::string kind = d.value("kind", std::string("?")), name = d.value("name", std::string());
    std::string line = kind + (name.empty() ? "" : ": " + name);
    if (d.contains("cores")) line += " (" + d["cores"].dump() + " cores)";
    if (d.contains("sm")) line += " (sm " + d["sm"].dump() + ")";
    j["device_info"] = d;
    j["device"] = line;
  }
  for (const char* k : {"loader", "skipped_steps", "nan_losses", "optimizer_steps", "drift_checks", "parameters"})
    j.erase(k);
  return j;
}

}  // namespace tb::engine
