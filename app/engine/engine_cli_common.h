// Helpers shared by `run` and `serve` (engine commands of tunebench-cli): option parsing into
// SessionOptions, step records as JSON, throughput statistics. Header-only, app/cli only.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/distributed.h"
#include "engine/recording.h"
#include "engine/session.h"
#include "measure/noise.h"
#include "measure/stats.h"
#include "measure/window.h"
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
    // Kept for scripts: the same as --set intra_op_threads=N.
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
  nlohmann::json j = {{"i", r.index},           {"samples", r.samples}, {"wall_ns", r.wall_ns}, {"minor_faults", r.minor_faults},
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

// The measured steps (warm-up excluded; skipped steps keep their time) as the windowing sees them.
inline std::vector<measure::StepTiming> measured_timings(const std::vector<engine::StepRecord>& steps) {
  std::vector<measure::StepTiming> out;
  for (const auto& r : steps)
    if (!r.warmup && r.wall_ns > 0) out.push_back({r.samples, r.start_ns, r.wall_ns, r.data_wait_ns, r.minor_faults});
  return out;
}

// Steps per window for the noise verdict of a run.
inline constexpr int kVerdictWindow = 10;

// Throughput of the measured steps (docs/protocol.md): samples over wall time (`samples_per_s`, the
// headline), the median of 10-step windows (`median`), the per-step median for reference, page faults per
// step, and the noise verdict over the windows. `load` may be unreadable.
inline nlohmann::json throughput_json(const std::vector<engine::StepRecord>& steps, const measure::SystemLoad& load = {}) {
  const auto timings = measured_timings(steps);
  std::vector<double> rates;
  double samples = 0, seconds = 0, faults = 0;
  for (const auto& t : timings) {
    rates.push_back(double(t.samples) * 1e9 / double(t.wall_ns));
    samples += double(t.samples);
    seconds += double(t.wall_ns) * 1e-9;
    faults += double(t.minor_faults);
  }
  const auto windows = measure::windows_of(timings, kVerdictWindow);
  std::vector<double> wt;
  for (const auto& w : windows) wt.push_back(w.throughput());
  const double overall = seconds > 0 ? samples / seconds : 0.0;
  nlohmann::json j = {{"samples_per_s", overall},
                      {"median", windows.empty() ? overall : measure::median(wt)},
                      {"step_median", rates.empty() ? 0.0 : measure::median(rates)},
                      {"unit", "samples/s"},
                      {"measured_steps", rates.size()},
                      {"window_steps", kVerdictWindow},
                      {"windows", wt},
                      {"page_faults_per_step", rates.empty() ? 0.0 : faults / double(rates.size())}};
  if (!rates.empty()) {
    j["p10"] = measure::quantile(rates, 0.1);
    j["p90"] = measure::quantile(rates, 0.9);
  }
  const auto noise = measure::assess_noise(windows, load);
  j["noise"] = {{"verdict", noise.verdict}, {"text", noise.text}, {"cv", noise.cv}, {"drift", noise.drift},
                {"windows", noise.windows}};
  if (load.readable())
    j["noise"]["load"] = {{"loadavg_1min", std::isfinite(load.loadavg_1min) ? nlohmann::json(load.loadavg_1min) : nlohmann::json()},
                          {"steal_share", std::isfinite(load.steal_share) ? nlohmann::json(load.steal_share) : nlohmann::json()},
                          {"cores", load.cores}};
  return j;
}

// The recording helpers live in the engine (engine/recording.h): serve, run and the tuner's snapshots share them.
using engine::collect_recorded_trace;
using engine::collector_plan;
using engine::start_recording;
using engine::trains_on_cuda;
using engine::write_recorded_trace;

}  // namespace tb::cli
