#include "gate/stored.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <optional>

#include "gate_util.h"

namespace tb::gate {
namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

std::string text_of(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string progress_line(const ProcessRun& p, const std::string& unit) {
  return (p.pair == 0 ? std::string("warm-up: ") : "process " + std::to_string(p.pair) + ": ") + p.side + " " +
         fmt("%.1f ", p.window.throughput()) + unit + " (" + std::to_string(p.window.steps) + " steps measured, " +
         fmt("%.1f s)", p.seconds);
}

// This machine's NVIDIA driver ("580.159.04"), or "" without one: the gate's processes run here.
std::string machine_driver() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string word;
  while (f >> word)
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) && word.find('.') != std::string::npos)
      return word;
  return "";
}

}  // namespace

nlohmann::json environment_of(const GateResult& r) {
  const auto& h = r.hello.is_object() ? r.hello : nlohmann::json::object();
  const auto versions = h.value("versions", nlohmann::json::object());
  const auto device = h.value("device", nlohmann::json::object());
  nlohmann::json e;
  e["torch"] = versions.value("torch", r.torch_version);
  e["python"] = versions.value("python", std::string());
  e["cuda"] = versions.value("cuda", std::string());  // the CUDA torch was built with
  e["driver"] = device.value("driver", machine_driver());
  e["device"] = device.value("kind", std::string()) + ": " + device.value("name", std::string());
  e["cores"] = device.value("cores", r.load.cores);
  e["loadavg_1min"] = r.load.loadavg_1min == r.load.loadavg_1min ? nlohmann::json(r.load.loadavg_1min) : nlohmann::json();
  return e;
}

std::vector<std::string> environment_differences(const nlohmann::json& then, const nlohmann::json& now) {
  std::vector<std::string> out;
  for (const char* key : {"torch", "python", "cuda", "driver", "device", "cores"}) {
    const std::string a = text_of(then, key), b = text_of(now, key);
    if (!a.empty() && !b.empty() && a != b) out.push_back(std::string(key) + " " + a + " then, " + b + " now");
  }
  // The load: a machine busier now than then (or then than now) by more than one core's worth.
  if (then.contains("loadavg_1min") && now.contains("loadavg_1min") && then["loadavg_1min"].is_number() &&
      now["loadavg_1min"].is_number()) {
    const double a = then["loadavg_1min"].get<double>(), b = now["loadavg_1min"].get<double>();
    if (std::abs(a - b) > 1.0) out.push_back("load " + fmt("%.1f", a) + " then, " + fmt("%.1f", b) + " now");
  }
  return out;
}

nlohmann::json stored_baseline_json(const GateOptions& o, const GateResult& r) {
  nlohmann::json j;
  j["tunebench_gate_baseline"] = 1;
  j["describe"] = o.baseline.describe;
  j["args"] = o.args;
  j["steps"] = o.steps;
  j["unit"] = r.unit;
  j["stored_at"] = utc_now();
  j["environment"] = environment_of(r);
  auto& runs = j["runs"] = nlohmann::json::array();
  for (const auto& p : r.runs)
    if (p.pair > 0)
      runs.push_back({{"samples", p.window.samples}, {"wall_s", p.window.wall_s}, {"steps", p.window.steps},
                      {"seconds", p.seconds}, {"throughput", p.window.throughput()}});
  return j;
}

Result<StoredBaseline> load_stored_baseline(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Error{"cannot read the stored baseline " + path};
  const std::string text{std::istreambuf_iterator<char>(f), {}};
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("tunebench_gate_baseline", 0) != 1)
    return Error{path + " is not a stored gate baseline (made by gate --save-baseline)"};
  StoredBaseline b;
  try {
    b.describe = j.value("describe", std::string());
    b.args = j.value("args", std::vector<std::string>());
    b.steps = j.value("steps", int64_t(0));
    b.unit = j.value("unit", std::string("samples/s"));
    b.environment = j.value("environment", nlohmann::json::object());
    b.stored_at = j.value("stored_at", std::string());
    for (const auto& r : j.at("runs")) {
      measure::Window w;
      w.samples = r.at("samples").get<int64_t>();
      w.wall_s = r.at("wall_s").get<double>();
      w.steps = r.value("steps", 0);
      if (!(w.wall_s > 0) || w.samples <= 0) return Error{path + ": a run without samples or time"};
      b.windows.push_back(w);
    }
  } catch (const nlohmann::json::exception& e) {
    return Error{path + ": " + e.what()};
  }
  if (b.windows.size() < 3) return Error{path + " holds " + std::to_string(b.windows.size()) + " runs: 3 or more are needed"};
  return b;
}

namespace {

// One process of `side` (index i, warm-up ones below 1 counted as 0) kept in `res` and said; nullopt when it
// failed, its message in `res.failure`.
std::optional<ProcessRun> run_and_record(const GateOptions& o, const Side& side, int i, GateResult& res) {
  auto p = run_one(o, side, std::max(0, i), res);
  if (!p) {
    res.failure = p.error().message;
    return std::nullopt;
  }
  res.runs.push_back(*p);
  if (o.progress) o.progress(progress_line(*p, res.unit));
  return *p;
}

}  // namespace

GateResult run_baseline_only(const GateOptions& o, int runs) {
  GateResult res;
  const double t0 = now_s();
  const measure::LoadProbe probe;
  std::vector<measure::Window> windows;
  for (int i = 1 - o.warmup_pairs; i <= runs; ++i) {
    const auto p = run_and_record(o, o.baseline, i, res);
    if (!p) break;
    if (i > 0) windows.push_back(p->window);
  }
  res.ran = res.failure.empty();
  res.baseline_throughput = measure::pooled_throughput(windows);
  res.stopped = std::to_string(windows.size()) + " processes stored";
  res.seconds = now_s() - t0;
  res.load = probe.stop();
  return res;
}

GateResult run_against(const GateOptions& o, const StoredBaseline& stored) {
  GateResult res;
  res.unit = stored.unit;
  const double t0 = now_s();
  const measure::LoadProbe probe;
  std::vector<measure::Window> windows;
  const auto looks = measure::gate_looks(o.rule.min_pairs, 100000);
  double per_s = 0;
  for (int i = 1 - o.warmup_pairs;; ++i) {
    const double elapsed = now_s() - t0;
    if (!res.runs.empty()) per_s = elapsed / double(res.runs.size());
    if (elapsed + per_s > o.max_time_s) {
      res.stopped = "--max-time " + std::to_string(int(o.max_time_s)) + " s spent (a process takes about " +
                    fmt("%.0f s)", per_s);
      break;
    }
    const auto p = run_and_record(o, o.candidate, i, res);
    if (!p) break;
    if (i <= 0) continue;
    windows.push_back(p->window);
    if (std::find(looks.begin(), looks.end(), int(windows.size())) != looks.end()) {
      res.look = measure::look_unpaired(stored.windows, windows, o.rule);
      if (o.progress) o.progress("look at " + std::to_string(windows.size()) + " processes: " + res.look.text());
      if (res.look.verdict != measure::GateVerdict::kUndecided) {
        res.stopped = "decided at process " + std::to_string(windows.size());
        break;
      }
    }
  }
  if (res.failure.empty()) {
    res.ran = true;
    if (!windows.empty()) res.look = measure::look_unpaired(stored.windows, windows, o.rule);
  }
  res.baseline_throughput = measure::pooled_throughput(stored.windows);
  res.candidate_throughput = measure::pooled_throughput(windows);
  res.seconds = now_s() - t0;
  res.load = probe.stop();
  return res;
}

}  // namespace tb::gate
