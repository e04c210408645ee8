// Helpers shared by `run` and `serve` (engine commands of tunebench-cli): option parsing into
// SessionOptions, step records as JSON, throughput statistics, trace export. Header-only, app/cli only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "profiler/cupti_collector.h"
#include "profiler/recorder.h"
#include "profiler/trace.h"
#include "profiler/trace_io.h"

namespace tb::cli {

// Parses a non-negative integer option value; false when it is not one.
inline bool parse_int(const std::string& text, int64_t& out, int64_t min = 0) {
  if (text.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || v < min) return false;
  out = v;
  return true;
}

// "C,H,W" or "CxHxW".
inline bool parse_input_shape(std::string text, engine::SessionOptions& o) {
  std::replace(text.begin(), text.end(), 'x', ',');
  int64_t v[3];
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t comma = text.find(',', pos);
    if ((i < 2) != (comma != std::string::npos)) return false;
    if (!parse_int(text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos), v[i], 1)) return false;
    pos = comma + 1;
  }
  o.input_channels = v[0];
  o.input_height = v[1];
  o.input_width = v[2];
  return true;
}

// Session options shared by run/serve; returns "" or an error message. `i` is advanced past a value.
inline std::string parse_session_option(int argc, char** argv, int& i, engine::SessionOptions& o, bool& matched) {
  matched = true;
  const std::string a = argv[i];
  auto value = [&](std::string& out) -> bool {
    if (i + 1 >= argc) return false;
    out = argv[++i];
    return true;
  };
  std::string v;
  int64_t n = 0;
  if (a == "--model") {
    if (!value(o.model)) return "--model needs a value";
  } else if (a == "--data") {
    if (!value(o.data)) return "--data needs a value";
  } else if (a == "--set") {
    if (!value(v)) return "--set needs k=v,...";
    try {
      for (const auto& [k, val] : engine::parse_config_list(v)) o.knobs[k] = val;
    } catch (const std::exception& e) {
      return e.what();
    }
  } else if (a == "--warmup") {
    if (!value(v) || !parse_int(v, n)) return "--warmup needs a non-negative integer";
    o.warmup_steps = static_cast<int>(n);
  } else if (a == "--seed") {
    if (!value(v) || !parse_int(v, n)) return "--seed needs a non-negative integer";
    o.seed = static_cast<uint64_t>(n);
  } else if (a == "--device") {
    if (!value(o.device)) return "--device needs auto, cpu or cuda";
  } else if (a == "--input") {
    if (!value(v) || !parse_input_shape(v, o)) return "--input needs C,H,W (e.g. 3,224,224)";
  } else if (a == "--classes") {
    if (!value(v) || !parse_int(v, n, 1)) return "--classes needs a positive integer";
    o.num_classes = n;
  } else if (a == "--threads") {
    if (!value(v) || !parse_int(v, n)) return "--threads needs a non-negative integer";
    o.threads = static_cast<int>(n);
  } else if (a == "--drift-steps") {
    if (!value(v) || !parse_int(v, n)) return "--drift-steps needs a non-negative integer";
    o.drift_guard_steps = static_cast<int>(n);
  } else {
    matched = false;
  }
  return "";
}

inline nlohmann::json config_json(const engine::Config& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j;
}

inline nlohmann::json step_json(const engine::StepRecord& r) {
  nlohmann::json j = {{"i", r.index},           {"samples", r.samples}, {"wall_ns", r.wall_ns},
                      {"data_wait_ns", r.data_wait_ns}, {"h2d_ns", r.h2d_ns}, {"config_rev", r.config_rev},
                      {"warmup", r.warmup},     {"skipped", r.skipped}, {"optimizer_step", r.optimizer_step},
                      {"t_ns", r.start_ns}};
  if (std::isfinite(r.loss))
    j["loss"] = r.loss;
  else
    j["loss"] = nullptr;
  if (r.loss_scale > 0) j["loss_scale"] = r.loss_scale;
  return j;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Throughput of the measured (non-warm-up, non-skipped) steps: samples/s per step including data loading.
inline nlohmann::json throughput_json(const std::vector<engine::StepRecord>& steps) {
  std::vector<double> rates;
  double samples = 0, seconds = 0;
  for (const auto& r : steps) {
    if (r.warmup || r.skipped || r.wall_ns <= 0) continue;
    rates.push_back(double(r.samples) * 1e9 / double(r.wall_ns));
    samples += double(r.samples);
    seconds += double(r.wall_ns) * 1e-9;
  }
  nlohmann::json j = {{"median", median(rates)},
                      {"mean", seconds > 0 ? samples / seconds : 0.0},
                      {"unit", "samples/s"},
                      {"measured_steps", rates.size()}};
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    j["p10"] = rates[rates.size() / 10];
    j["p90"] = rates[std::min(rates.size() - 1, rates.size() * 9 / 10)];
  }
  return j;
}

// Collects what the recorder holds and writes it as Chrome trace JSON. Returns "" or an error message.
// True when a session with this --device setting trains on a CUDA device here.
inline bool trains_on_cuda(const std::string& device_option) {
  if (device_option == "cpu") return false;
  return engine::environment_info().value(nlohmann::json::json_pointer("/device/kind"), std::string()) == "cuda";
}

// Starts the range recorder and, when training on a CUDA device, the CUPTI collector, so traces hold the GPU's
// kernels, copies and API calls. TUNEBENCH_CUPTI_OFF=1 keeps the collector off (the profiler-overhead
// comparison of scripts/gpu-check.sh). Returns "" or why the GPU collector did not start (the CPU ranges are
// recorded either way; the caller tells the user).
inline std::string start_recording(bool cuda) {
  std::string why;
  if (cuda && !std::getenv("TUNEBENCH_CUPTI_OFF")) {
    auto& collector = prof::CuptiCollector::instance();
    if (!collector.running())
      if (auto st = collector.start(); !st.ok()) why = "GPU collector (CUPTI) did not start: " + st.error().to_string();
  }
  prof::Recorder::instance().start();
  return why;
}

// The hello's collector line: whether GPU activity will be in the traces, and if not, why.
inline std::pair<bool, std::string> collector_plan(bool cuda, bool tracing) {
  if (!cuda) return {false, "no CUDA device: CPU-only timeline"};
  if (std::getenv("TUNEBENCH_CUPTI_OFF")) return {false, "TUNEBENCH_CUPTI_OFF=1 keeps the GPU collector off"};
  if (!tracing) return {false, "not tracing (no --trace-dir)"};
  return {true, ""};
}

inline std::string write_recorded_trace(const std::string& path, const nlohmann::json& describe) {
  auto trace = prof::Recorder::instance().collect();
  if (!trace) return "the recorder returned no trace";
  // GPU side: flushed at this chunk boundary. The training step reads the loss (a device sync) unless
  // sync_free_logging defers it, so at most the last step's tail can land in the next chunk.
  auto& collector = prof::CuptiCollector::instance();
  if (collector.running())
    if (auto gpu = collector.collect()) trace->merge(*gpu);
  auto& m = trace->meta();
  m.source_format = "tunebench";
  m.device = describe.value(nlohmann::json::json_pointer("/device/name"), std::string("cpu"));
  if (describe.contains("versions"))
    for (auto& [k, v] : describe["versions"].items())
      if (v.is_string()) m.versions[k] = v.get<std::string>();
  if (m.collector_state.empty()) {
    m.collector_state = "off";
    m.collector_reason = "no CUDA device: CPU-only timeline";
  }
  if (describe.contains("model")) m.extra["model"] = describe["model"].get<std::string>();
  if (describe.contains("data")) m.extra["data"] = describe["data"].get<std::string>();
  trace->finalize();
  auto st = prof::write_chrome_trace(*trace, path);
  if (!st.ok()) return st.error().to_string();
  return "";
}

}  // namespace tb::cli
