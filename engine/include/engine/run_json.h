// The run protocol's JSON for what a run measures (docs/protocol.md): a configuration, a step record, the
// throughput of the measured steps with its noise verdict. One definition for `run --json`, `serve`'s step
// and done messages and the tuner, so a figure is computed one way wherever it appears.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "measure/noise.h"
#include "measure/window.h"

namespace tb::engine {

nlohmann::json config_json(const Config& c);
nlohmann::json step_json(const StepRecord& r);

// The measured steps (warm-up excluded; skipped steps keep their time) as the windowing sees them.
std::vector<measure::StepTiming> measured_timings(const std::vector<StepRecord>& steps);

// Steps per window for the noise verdict of a run.
inline constexpr int kVerdictWindow = 10;

// Throughput of the measured steps: samples over wall time (`samples_per_s`, the headline), the median of
// 10-step windows (`median`), the per-step median for reference, page faults per step, and the noise verdict
// over the windows. `load` may be unreadable.
nlohmann::json throughput_json(const std::vector<StepRecord>& steps, const measure::SystemLoad& load = {});

// `run --json`'s document of a finished run, the parts the session knows: what ran (model, data, input,
// device, versions, optimizer, allocator, threads), its configuration and revision, the throughput, the
// warm-up rule, the counters (skipped steps, NaN losses, optimizer steps, loader), the drift checks, the
// knobs that do not apply here and why, and every step. `describe` is session.describe() at the end.
nlohmann::json run_document(const Session& session, const nlohmann::json& describe,
                            const std::vector<StepRecord>& steps, const measure::SystemLoad& load);

}  // namespace tb::engine
