// What torch.compile did in a script's run, from the launcher's `compile` messages (docs/protocol.md): the
// compile lane's records (profiler/compile_lane.h) and the run's lines about them. One reader for the CLI and
// the GUI.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/compile_lane.h"
#include "profiler/step_lane.h"

namespace tb::client {

// One `compile` message as the compile lane's record (fields it lacks stay empty or 0).
prof::LaneCompile lane_compile_of(const nlohmann::json& m);
// The records of an array of them (other entries skipped).
std::vector<prof::LaneCompile> lane_compiles(const nlohmann::json& compiles);

// What torch.compile did over the run, in lines: its time and the steps it was paid in (`compiling_out` of them
// left out of the figures), then the compile lane's findings as `analyze` of `trace` gives them (its share of
// the run, recompiles, graph breaks with what they cost the traced steps), indented. `trace`: the run's merged
// trace when it wrote one, else the lanes alone (lanes_trace). None when nothing compiled.
std::vector<std::string> compile_lines(const prof::Trace& trace, const std::vector<prof::LaneCompile>& compiles,
                                       size_t compiling_out);
// The step lane and the compile lane alone, finalized: what a run without a trace analyses.
std::unique_ptr<prof::Trace> lanes_trace(const std::vector<prof::LaneStep>& steps,
                                         const std::vector<prof::LaneCompile>& compiles);

}  // namespace tb::client
