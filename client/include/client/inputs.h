// What a user types for a run or a tune, checked in one place: the tune budget (the CLI's --budget, a serve's
// and a script serve's "tune" message, the GUI's spin box), knob settings ("k=v,..." of --set) and steps. Each
// surface once had its own rule: the CLI took 5 s and more, `serve` 10-86400, a script serve anything, the GUI
// 10-3600; a script serve dropped a malformed --set item silently. Errors are one line (base/result.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tb::client::inputs {

// The tune budget in seconds: what the tuner needs to measure a baseline, an A/A floor and one trial at
// the least, and a day at the most.
inline constexpr double kBudgetMinS = 10;
inline constexpr double kBudgetMaxS = 24 * 3600;
// The default everywhere (the README's demo tune, the GUI's spin box, a serve's tune without one).
inline constexpr double kBudgetDefaultS = 120;

// `seconds` within [kBudgetMinS, kBudgetMaxS], else "budget must be between 10 and 86400 seconds, got X".
Result<double> tune_budget(double seconds);
// The same from text ("120", "90.5"); "budget needs seconds, got 'abc'" for anything else.
Result<double> parse_tune_budget(const std::string& text);
// The same, or "auto" (nullopt): the tuner sets the budget to one pass over every applicable knob, finals
// included, once its noise floor has measured what a trial costs (engine/tuner.h PassPlan).
Result<std::optional<double>> parse_tune_budget_or_auto(const std::string& text);

// The CI gate's time limit in seconds (no pair starts that would end after it): the CLI's --max-time and the
// GUI's gate dialog. Once the CLI took anything over 0 (default 1200) and the GUI 30-7200 (default 600).
inline constexpr double kGateMaxTimeMinS = 1;
inline constexpr double kGateMaxTimeMaxS = 24 * 3600;
inline constexpr double kGateMaxTimeDefaultS = 1200;
// `seconds` within [kGateMaxTimeMinS, kGateMaxTimeMaxS], else "--max-time must be between 1 and 86400 seconds, got X".
Result<double> gate_max_time(double seconds);

// The share of a script's run that watching it by a sampled trace may take (run --script and serve --script's
// --trace-share, the launcher's own --trace-share: python/tunebench/launch.py's TRACE_SHARE_MAX, held to this by
// python/tests/test_launch_steps.py): 0 traces every step.
inline constexpr double kTraceShareMax = 0.5;
// "0.01" -> 0.01 within [0, kTraceShareMax], else "--trace-share needs a share of the run from 0 (trace every
// step) to 0.5, got 'x'".
Result<double> parse_trace_share(const std::string& text);

// Steps of a run (--steps N of run, serve, their --script forms and the gate; the GUI's spin box): each surface
// once had its own range (run 1 and up, serve 0 and up with a bad value a mere "bad option", the gate 5 and up as a
// decimal number, the GUI up to a million). Now one integer range, from a command's least to kStepsMax.
inline constexpr int64_t kStepsMax = 1'000'000;
// The least of each surface: run needs a step to measure; serve's 0 runs until it is stopped.
inline constexpr int64_t kRunStepsMin = 1;
inline constexpr int64_t kServeStepsMin = 0;
// The gate's least: a gate process is judged on 3 or more steps past its warm-up (gate/src/runner.cpp), so a
// count that cannot hold them beside a warm-up is refused before any process starts. With the default warm-up
// (3 steps or more) a count just over it may still fall short: the runner then says so, naming --steps.
inline constexpr int64_t kGateStepsMin = 5;
// "50" -> 50 within [min, kStepsMax], else "--steps needs an integer from 1 to 1000000, got 'x'" (with min 0:
// "from 0 (until stopped) to 1000000"); without ", got ..." when `text` is empty (the option had no value).
Result<int64_t> parse_steps(const std::string& text, int64_t min);

// A whole decimal integer within [min, max] ("12", "-3"; not "12x", " 12", "1e3"), or nothing. The one integer
// reader of every option and value: the CLI's, make-dataset's, the tuner's knob values.
std::optional<int64_t> parse_integer(std::string_view text, int64_t min = INT64_MIN, int64_t max = INT64_MAX);

// "k=v,k2=v2" -> {{k, v}, {k2, v2}}, in order, blanks around each trimmed; empty items are skipped. An item
// without '=' or with an empty key is an error naming it ("bad knob setting 'x': expected knob=value"); a
// value may be empty ("k="). Whether a knob and its value exist is the run's to say (the engine's catalog,
// the launcher's knobs).
using Settings = std::vector<std::pair<std::string, std::string>>;
Result<Settings> parse_settings(const std::string& text);

}  // namespace tb::client::inputs
