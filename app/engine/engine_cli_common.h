// Helpers shared by `run` and `serve` (engine commands of tunebench-cli): option parsing into
// SessionOptions. Header-only, app/engine only.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "client/inputs.h"
#include "engine/distributed.h"
#include "engine/recording.h"
#include "engine/run_json.h"
#include "engine/session.h"
#include "measure/noise.h"
#include "measure/stats.h"
#include "measure/window.h"
#include "profiler/cupti_collector.h"
#include "profiler/recorder.h"
#include "profiler/trace.h"
#include "profiler/trace_io.h"

namespace tb::cli {

// An integer option value of at least `min` (client/inputs.h's reader); false when it is not one.
inline bool parse_int(const std::string& text, int64_t& out, int64_t min = 0) {
  const auto v = client::inputs::parse_integer(text, min);
  if (v) out = *v;
  return v.has_value();
}

// Parses a finite number option value; false when it is not one.
inline bool parse_double(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v)) return false;
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

// The value after option argv[i] (argv[0..end) are the options): false at the end, else `i` moves onto it.
inline bool next_arg(int end, char** argv, int& i, std::string& out) {
  if (i + 1 >= end) return false;
  out = argv[++i];
  return true;
}

// The session's integer options: each a least value, what its error says it needs, and the field it sets.
struct SessionIntOption {
  const char* name;
  int64_t min;
  const char* needs;
  void (*set)(engine::SessionOptions&, int64_t);
};
inline constexpr SessionIntOption kSessionIntOptions[] = {
    {"--warmup", 0, "a non-negative integer",
     [](engine::SessionOptions& o, int64_t n) { o.warmup_steps = static_cast<int>(n); }},
    {"--seed", 0, "a non-negative integer",
     [](engine::SessionOptions& o, int64_t n) { o.seed = static_cast<uint64_t>(n); }},
    {"--classes", 1, "a positive integer", [](engine::SessionOptions& o, int64_t n) { o.num_classes = n; }},
    // Kept for scripts: the same as --set intra_op_threads=N.
    {"--threads", 0, "a non-negative integer",
     [](engine::SessionOptions& o, int64_t n) { o.threads = static_cast<int>(n); }},
    {"--drift-steps", 0, "a non-negative integer",
     [](engine::SessionOptions& o, int64_t n) { o.drift_guard_steps = static_cast<int>(n); }},
};

// Session options shared by run/serve/tune: Ok, or the one line saying what is wrong; `matched` says whether
// argv[i] was one of them. `i` is advanced past a value.
inline Status parse_session_option(int argc, char** argv, int& i, engine::SessionOptions& o, bool& matched) {
  matched = true;
  const std::string a = argv[i];
  auto value = [&](std::string& out) { return next_arg(argc, argv, i, out); };
  std::string v;
  for (const SessionIntOption& io : kSessionIntOptions) {
    if (a != io.name) continue;
    int64_t n = 0;
    if (!value(v) || !parse_int(v, n, io.min)) return Error{std::string(io.name) + " needs " + io.needs};
    io.set(o, n);
    return Status::Ok();
  }
  if (a == "--model") {
    if (!value(o.model)) return Error{"--model needs a value"};
  } else if (a == "--data") {
    if (!value(o.data)) return Error{"--data needs a value"};
  } else if (a == "--set") {
    if (!value(v)) return Error{"--set needs k=v,..."};
    try {
      for (const auto& [k, val] : engine::parse_config_list(v)) o.knobs[k] = val;
    } catch (const std::exception& e) {
      return Error{e.what()};
    }
  } else if (a == "--device") {
    if (!value(o.device)) return Error{"--device needs auto, cpu or cuda"};
  } else if (a == "--input") {
    if (!value(v) || !parse_input_shape(v, o)) return Error{"--input needs C,H,W (e.g. 3,224,224)"};
  } else {
    matched = false;
  }
  return Status::Ok();
}

// Writes `j` indented to `path`; false after saying why on stderr.
inline bool write_json_file(const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  if (f << j.dump(2) << "\n") return true;
  std::fprintf(stderr, "tunebench-cli: error: cannot write '%s'\n", path.c_str());
  return false;
}

// Step records and throughput as the run protocol's JSON (engine/run_json.h): run, serve and the tuner agree.
using engine::config_json;
using engine::step_json;
using engine::throughput_json;

// The recording helpers live in the engine (engine/recording.h): serve, run and the tuner's snapshots share them.
using engine::collect_recorded_trace;
using engine::collector_plan;
using engine::start_recording;
using engine::trains_on_cuda;
using engine::write_recorded_trace;

}  // namespace tb::cli
