// The `tune` message (protocol.md: {"type":"tune","budget_s":N,"knobs":[...]}) read once, for every live run that
// takes one: serve (the engine's run) and serve-script (a user's script). Torch-free.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/result.h"
#include "engine/tuner.h"

namespace tb::engine {

// TuneOptions of a `tune` message: its budget under every surface's rule (client/inputs.h; the default without
// one), its knobs[] as only_knobs (as `tune --knobs`), each one that `is_knob` knows, and its run_steps (as
// `tune --run-steps`). One line saying what is wrong otherwise, "tune: ..." as the protocol's error says it.
Result<TuneOptions> tune_request(const nlohmann::json& msg, const std::function<bool(const std::string&)>& is_knob);

}  // namespace tb::engine
