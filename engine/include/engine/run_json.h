// The run protocol's JSON for what a run measures (docs/protocol.md): a configuration, a step record, the
// throughput of the measured steps with its noise verdict. One definition for `run --json`, `serve`'s step
// and done messages and the tuner, so a figure is computed one way wherever it appears.
#pragma once

#include <algorithm>

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "measure/noise.h"
#include "measure/window.h"

namespace tb::engine {

nlohmann::json config_json(const Config& c);
nlohmann::json step_json(const StepRecord& r);
// A step's `memory` object (bytes; the fields measured) and back (missing fields -1).
nlohmann::json memory_json(const StepMemory& m);
StepMemory memory_of_json(const nlohmann::json& j);

// The run's memory in one object: the peaks over its steps (host RSS, device allocated and reserved, the
// largest step peak), the device's size and the headroom left at the peak, the allocator's retries and OOMs;
// null when no step measured memory.
nlohmann::json memory_summary_json(const std::vector<StepRecord>& steps);
// One line for a human: "memory: peak host RSS 1.2 GiB; device peak 9.8 of 79.1 GiB allocated (69.3 GiB free),
// 11.2 GiB reserved"; "" when nothing was measured.
std::string memory_summary_text(const nlohmann::json& summary);
// "device peak 9.81 GiB of 79.10 GiB" ("host RSS 1.20 GiB" on a CPU run); "" when not measured.
std::string memory_state_text(const StepMemory& m);
// "batch 64: device peak 9.81 GiB of 79.10 GiB"; "" when not measured.
std::string memory_fit_text(int64_t batch, const StepMemory& m);
// Folds a step's memory into a window: its peak (the device's peak allocation on CUDA, else the host's resident
// set) and the device's size.
void add_step_memory(measure::Window& w, const StepMemory& m);

// The measured steps (warm-up excluded; skipped steps keep their time) as the windowing sees them.
std::vector<measure::StepTiming> measured_timings(const std::vector<StepRecord>& steps);

// Steps per window for the noise verdict of a run.
inline constexpr int kVerdictWindow = 10;

// Throughput of the measured steps: samples over wall time (`samples_per_s`, the headline), the median of
// 10-step windows (`median`), the per-step median for reference, page faults per step, and the noise verdict
// over the windows. `load` may be unreadable.
nlohmann::json throughput_json(const std::vector<StepRecord>& steps, const measure::SystemLoad& load = {});

// Whether step `index` ran inside one of a script's trace chunks (`traced`: each chunk's first and last step).
inline bool in_traced(int64_t index, const std::vector<std::pair<int64_t, int64_t>>& traced) {
  return std::any_of(traced.begin(), traced.end(),
                     [&](const auto& t) { return index >= t.first && index <= t.second; });
}

// Tracing's own cost, where some measured steps ran untraced (run --script --trace: a run's first ones, or
// those between sampled chunks): the measured
// steps inside the traced step ranges `traced` (first, last) against those outside them, each side's typical
// step time (the mean without its slowest tenth). `traced_speed` is the untraced step time over the traced one (0.52: tracing halved the speed).
// Null when either side has fewer than 5 measured steps.
nlohmann::json tracing_cost_json(const std::vector<StepRecord>& steps,
                                 const std::vector<std::pair<int64_t, int64_t>>& traced);
// "tracing cost: the 90 traced steps ran at 0.52x the speed of the 10 untraced ones (...)", or ""
// when tracing cost 5% or less (or was not measured).
std::string tracing_cost_text(const nlohmann::json& cost);

// `run --json`'s document of a finished run, the parts the session knows: what ran (model, data, input,
// device, versions, optimizer, allocator, threads), its configuration and revision, the throughput, the
// warm-up rule, the counters (skipped steps, NaN losses, optimizer steps, loader), the drift checks, the
// knobs that do not apply here and why, and every step. `describe` is session.describe() at the end.
nlohmann::json run_document(const Session& session, const nlohmann::json& describe,
                            const std::vector<StepRecord>& steps, const measure::SystemLoad& load);

}  // namespace tb::engine
